"""`pip install fnkit` without extras: the wheel alone in a fresh venv does the core's work, and every extra's edge
fails with the one-line pip command that installs it.

The wheel is built from this checkout and installed with its core dependencies only (the
versions this .venv holds, offline from the wheelhouse that tools/wheel_smoke.py keeps);
a script then runs in that venv, from a folder outside the checkout. Marked `wheel`:
`pytest -m "not wheel"` leaves it out of a quick run; `python3 kit.py test` runs it once.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools import wheel_smoke  # noqa: E402

pytestmark = pytest.mark.wheel

# What `pip install fnkit` may bring, and the measure of a core install.
CORE = {"fnkit", "msgspec", "cloudpickle"}
CORE_SITE_PACKAGES_MB = 40

# Runs inside the core venv. It prints one JSON object: what the core did and what each edge said.
SCRIPT = r"""
import json, subprocess, sys, sysconfig
from importlib import metadata
from pathlib import Path

import fnkit

out = {"heavy_at_import": sorted(m for m in ("pandas", "numpy", "hypothesis", "pytest") if m in sys.modules)}
out["distributions"] = sorted(d.metadata["Name"].lower() for d in metadata.distributions())
site = Path(sysconfig.get_paths()["purelib"])
out["site_packages_bytes"] = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())
out["fnkit_file"] = fnkit.__file__

from fnkit import alb, mail, queue
from fnkit.testing import assert_outcome, assert_valid

# validate
event = queue.build_event(["ok", "poison", "ok too"], seed=1)
ids = queue.correlation_ids(event)
out["valid"] = [fnkit.validate(event).ok, fnkit.validate({"Records": [{"body": 1}]}).ok]
assert_valid(event)

# outcome of a response
decided = queue.outcome(event, {"batchItemFailures": [{"itemIdentifier": ids[1]}]})
out["outcome"] = [decided.kind, list(decided.failed_ids) == [ids[1]]]

# run, in the caller's thread
def poison(event, context):
    failed = [r["messageId"] for r in event["Records"] if r["body"] == "poison"]
    return {"batchItemFailures": [{"itemIdentifier": i} for i in failed]}

def web(event, context):
    return {"statusCode": 201, "headers": {"content-type": "text/plain"}, "body": "made"}

def rule(event, context):
    return {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}]}

out["run"] = [
    queue.run(poison, event, isolation="none").kind,
    alb.run(web, alb.build_event("POST", "/items", body=b"{}", seed=1), isolation="none").status,
    mail.run(rule, mail.build_event(mail_from="a@example.org", recipients=["b@example.com"], seed=1),
             isolation="none").headline,
]

# a simulator over time
sim = queue.QueueSim(max_receive_count=2, visibility_timeout_s=30, seed=0)
for i in range(6):
    sim.send("poison" if i == 3 else f"order {i}")
summary = sim.run(poison, isolation="none").summary()
out["sim"] = {k: summary[k] for k in ("deleted", "dead-lettered", "invocations")}

# fnkit.testing's assertions: one that holds, one that fails with the outcome's table (no pandas here)
passed = assert_outcome(poison, event, kind="partial", failed_ids=[ids[1]])
out["assert_outcome"] = [passed.kind]
try:
    assert_outcome(poison, event, kind="success")
except AssertionError as exc:
    lines = str(exc).splitlines()
    out["assert_outcome"].append(next((line.split() for line in lines if line.startswith("item ")), None))

# each extra's edge: the exception's type and message
def hint(call):
    try:
        call()
    except ImportError as exc:
        return [type(exc).__name__, str(exc)]
    return None

import fnkit.rules
alb_run = alb.run(web, alb.build_event("GET", "/", seed=1), isolation="none")
log = Path("access.log")
log.write_text("")
out["hints"] = {
    "tabulate": hint(lambda: fnkit.tabulate(decided)),
    "replay": hint(lambda: fnkit.replay(poison, [event])),
    "to_frame": hint(lambda: fnkit.validate(event).to_frame()),
    "sim to_frame": hint(lambda: sim.run(poison, isolation="none").to_frame()),
    "rules.table": hint(lambda: fnkit.rules.table()),
    "strategies": hint(lambda: __import__("fnkit.testing.strategies")),
    "dask": hint(lambda: fnkit.replay(poison, [event], engine="dask")),
    "alb.serve": hint(lambda: alb.serve(web, isolation="none")),
    "mail.serve": hint(lambda: mail.serve(rule, domains=["example.com"], isolation="none")),
    "widgets": hint(lambda: fnkit.widgets.EventBuilder("queue")),
    "progress": hint(lambda: list(alb.events_from_access_log(log, progress=True))),
}

# the command line: one line on standard error, exit 2
Path("handlers.py").write_text("def poison(event, context):\n    return {}\n")
Path("event.json").write_text(json.dumps(event))
cli = subprocess.run(
    [str(Path(sys.executable).parent / "fnkit"), "replay", "handlers:poison", "event.json"],
    capture_output=True, text=True,
)
out["cli_replay"] = [cli.returncode, cli.stderr]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    """What the script saw in a fresh venv holding the wheel and its core dependencies only."""
    work = tmp_path_factory.mktemp("core-wheel")
    env = wheel_smoke.clean_env()
    deps = wheel_smoke.resolved_dependencies(())
    wheel_smoke.fill_wheelhouse([*wheel_smoke.build_requirements(), *deps], env)
    wheel = wheel_smoke.build_wheel(work / "dist", env)
    python = wheel_smoke.fresh_venv(work / "venv", wheel, deps, env)
    (work / "run").mkdir()
    done = subprocess.run(
        [python, "-I", "-c", SCRIPT], cwd=work / "run", env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    seen["deps"] = deps
    seen["venv"] = str(work / "venv")
    return seen


def test_the_core_installs_msgspec_and_cloudpickle_only(core):
    assert {name.split("==")[0] for name in core["deps"]} == CORE - {"fnkit"}
    assert set(core["distributions"]) == CORE, "the venv holds more than the core (pip itself is left out on purpose)"
    assert core["site_packages_bytes"] <= CORE_SITE_PACKAGES_MB * 1024 * 1024, core["site_packages_bytes"]
    assert core["fnkit_file"].startswith(core["venv"])
    assert core["heavy_at_import"] == []


def test_the_core_validates_decides_runs_simulates_and_asserts(core):
    assert core["valid"] == [True, False]
    assert core["outcome"] == ["partial", True]
    assert core["run"] == ["partial", 201, "applied: 1 DEFAULT"]
    assert core["sim"] == {"deleted": 5, "dead-lettered": 1, "invocations": 2}
    kind, header = core["assert_outcome"]
    assert kind == "partial"
    assert header is not None and header[:2] == ["item", "index"] and "action" in header


EXTRA_OF = {
    "tabulate": ("fnkit.tabulate", "pandas", "frames"),
    "replay": ("fnkit.replay", "pandas", "frames"),
    "to_frame": ("Report.to_frame()", "pandas", "frames"),
    "sim to_frame": ("QueueRun.to_frame()", "pandas", "frames"),
    "rules.table": ("fnkit.rules.table()", "pandas", "frames"),
    "strategies": ("fnkit.testing.strategies", "hypothesis", "testing"),
    "dask": ("replay(engine='dask')", "dask", "dask"),
    "alb.serve": ("fnkit.alb.serve", "h11", "serve"),
    "mail.serve": ("fnkit.mail.serve", "aiosmtpd", "serve"),
    "widgets": ("fnkit.widgets.EventBuilder", "ipywidgets", "widgets"),
    "progress": ("progress bars (progress=True)", "tqdm", "lab"),
}


@pytest.mark.parametrize("edge", sorted(EXTRA_OF))
def test_each_extra_edge_says_the_pip_command_that_installs_it(core, edge):
    feature, package, extra = EXTRA_OF[edge]
    assert core["hints"][edge] == ["MissingDependency", f"{feature} needs {package}: pip install 'fnkit[{extra}]'"]


def test_every_extra_but_the_projects_own_is_named_by_an_edge():
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    assert extras - {"dev", "bench"} == {extra for _, _, extra in EXTRA_OF.values()}


def test_the_command_line_says_it_in_one_line_and_exits_2(core):
    code, stderr = core["cli_replay"]
    assert code == 2
    assert stderr == "fnkit replay: fnkit.replay needs pandas: pip install 'fnkit[frames]'\n"


_HOLD_THE_LOCK = """
import sys, time
from pathlib import Path
from tools import wheel_smoke
wheel_smoke.WHEELHOUSE = Path(sys.argv[1])
with wheel_smoke._wheelhouse_lock():
    start = time.monotonic_ns()
    time.sleep(0.3)
    print(start, time.monotonic_ns())
"""


def test_one_process_at_a_time_fills_the_wheelhouse(tmp_path):
    # `kit.py test` runs the smoke test beside this module: both fill the wheelhouse of a fresh .venv
    env = {**wheel_smoke.clean_env(), "PYTHONPATH": str(ROOT)}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", _HOLD_THE_LOCK, str(tmp_path / "wheelhouse")], stdout=subprocess.PIPE, env=env
        )
        for _ in range(3)
    ]
    spans = sorted(tuple(map(int, run.communicate(timeout=60)[0].split())) for run in runs)
    assert len(spans) == 3 and all(run.returncode == 0 for run in runs)
    assert all(earlier[1] <= later[0] for earlier, later in itertools.pairwise(spans)), spans
