"""Build fnkit's wheel, install it into a fresh venv outside the checkout, and try it there.

    .venv/bin/python tools/wheel_smoke.py [--keep]

What an engineer who runs `pip install fnkit` gets, checked where the checkout cannot help:
the wheel is built (`pip wheel`), a new venv is made in a temporary folder, the wheel and
its dependencies go in, and from that folder the smoke test imports fnkit, validates a
built event of each source, replays the bundled corpus, runs `fnkit --help`, and runs
`pytest examples/` (a copy) with the pytest plugin that the wheel registers.

Fast on purpose (it runs in every `python3 kit.py test`): nothing is resolved again and
nothing is fetched twice. The wheel goes in with `--no-deps`, next to the exact versions
this .venv already resolved from the lock (constraints.txt); their wheels, and the build
backend's, are kept in `.venv/fnkit-wheelhouse/` (fetched once, through pip's cache, when
that list changes), so building and installing run offline (`--no-index`). The venv gets no
pip of its own (this .venv's pip installs into it with `--python`) and no bytecode up front
(`--no-compile`: imports compile what they use). `pip check` then proves that the wheel's
own metadata is satisfied.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import venv
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = ("testing",)  # what the examples need besides the core: pytest and hypothesis
WHEELHOUSE = Path(sys.prefix) / "fnkit-wheelhouse"  # inside .venv: made again with it

# Runs inside the fresh venv, from the temporary folder: nothing of the checkout is importable.
SMOKE = r"""
import subprocess, sys, sysconfig
from pathlib import Path

import fnkit
from fnkit import alb, corpus, mail, queue

site = Path(sysconfig.get_paths()["purelib"]).resolve()
package = Path(fnkit.__file__).resolve().parent
assert package.parent == site, f"fnkit was imported from {package}, not from the venv's {site}"
assert (package / "py.typed").is_file(), "the wheel lacks fnkit/py.typed"
assert "pandas" not in sys.modules, "import fnkit imported pandas"

events = {
    "queue": queue.build_event(["order 1", "order 2"], seed=1),
    "mail": mail.build_event(mail_from="a@example.org", recipients=["b@example.com"], subject="hi", seed=1),
    "alb": alb.build_event("POST", "/items", body=b'{"id": 1}', seed=1),
}
for source, event in events.items():
    report = fnkit.validate(event)
    assert report.ok and report.source == source, (source, list(report))
assert not fnkit.validate({"Records": [{"body": 1}]}).ok

bundled = corpus.path().resolve()
assert bundled.is_file() and bundled.is_relative_to(package), f"the bundled corpus is not in the package: {bundled}"

def handler(event, context):
    if "Records" in event:
        return {"batchItemFailures": []}
    if "envelope" in event:
        return {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}]}
    return {"statusCode": 200, "headers": {"content-type": "text/plain"}, "body": "ok"}

frame = fnkit.replay(handler, corpus.path())
assert set(frame["source"].dropna()) == {"queue", "mail", "alb"}, set(frame["source"])
assert len(frame) > len(corpus.load()), len(frame)

cli = subprocess.run([str(Path(sys.executable).parent / "fnkit"), "--help"], capture_output=True, text=True)
assert cli.returncode == 0 and "validate" in cli.stdout, (cli.returncode, cli.stdout, cli.stderr)
print(f"smoke: fnkit {fnkit.__version__} from {package}: 3 sources validated, "
      f"{len(frame):,} rows replayed from the bundled corpus, fnkit --help works")
"""


def say(line: str) -> None:
    """One short progress line."""
    print(f"== wheel: {line}", flush=True)


def run(argv: list[Any], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run a command; on failure print its output and stop with its exit code."""
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=False, **kwargs)
    if done.returncode != 0:
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        print(
            f"wheel_smoke: command failed with exit code {done.returncode}: {' '.join(map(str, argv))}", file=sys.stderr
        )
        sys.exit(done.returncode or 1)
    return done


def closure(extras: tuple[str, ...] = EXTRAS, root: str = "fnkit") -> dict[str, str]:
    """Every distribution `root[extras]` needs, as installed here: canonical name -> version."""
    found: dict[str, str] = {}
    todo: list[tuple[str, frozenset[str]]] = [(root, frozenset(extras))]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, wanted = todo.pop()
        if (name, wanted) in seen:
            continue
        seen.add((name, wanted))
        dist = metadata.distribution(name)
        if name != root:
            found[name] = dist.version
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in ("", *wanted)):
                continue
            inner = canonicalize_name(req.name)
            if inner != root:
                todo.append((inner, frozenset(req.extras)))
    return found


def resolved_dependencies(extras: tuple[str, ...] = EXTRAS) -> list[str]:
    """`name==version` of everything fnkit[extras] needs, as this environment resolved it."""
    return [f"{name}=={version}" for name, version in sorted(closure(extras).items())]


def build_requirements() -> list[str]:
    """What pyproject.toml's build backend needs (setuptools)."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        return list(tomllib.load(f)["build-system"]["requires"])


def fill_wheelhouse(wanted: list[str], env: dict[str, Any]) -> bool:
    """Fetch the wheels of `wanted` (through pip's cache) unless the wheelhouse already holds exactly them."""
    listing = WHEELHOUSE / "wanted.txt"
    text = "\n".join(wanted) + "\n"
    if listing.exists() and listing.read_text(encoding="utf-8") == text:
        return False
    shutil.rmtree(WHEELHOUSE, ignore_errors=True)
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--dest",
            WHEELHOUSE,
            *wanted,
        ],
        env=env,
    )
    listing.write_text(text, encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    """Build, install, try; 0 when every step passed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and say where it is")
    args = parser.parse_args(argv)

    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    work = Path(tempfile.mkdtemp(prefix="fnkit-wheel-"))
    timings: dict[str, float] = {}
    started = clock = time.monotonic()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.monotonic()
        timings[name] = now - clock
        clock = now

    deps = resolved_dependencies()
    offline = ["--no-index", "--find-links", WHEELHOUSE]
    try:
        if fill_wheelhouse([*build_requirements(), *deps], env):
            lap("fetch (once per lock)")
        run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *offline, "--wheel-dir", work / "dist", ROOT],
            env=env,
        )
        wheel = next((work / "dist").glob("fnkit-*.whl"))
        lap("build")
        venv.EnvBuilder(with_pip=False).create(work / "venv")
        python = (
            work / "venv" / ("Scripts" if os.name == "nt" else "bin") / ("python.exe" if os.name == "nt" else "python")
        )
        pip = [sys.executable, "-m", "pip", "--python", python]
        run([*pip, "install", "-q", "--no-deps", "--no-compile", *offline, wheel, *deps], env=env)
        run([*pip, "check"], env=env)
        lap("venv and install")
        done = run([python, "-I", "-c", SMOKE], cwd=work, env=env)
        sys.stdout.write(done.stdout)
        lap("smoke")
        shutil.copytree(ROOT / "examples", work / "examples", ignore=shutil.ignore_patterns("__pycache__"))
        done = run([python, "-I", "-m", "pytest", "examples", "-q", "-p", "no:cacheprovider"], cwd=work, env=env)
        print("pytest examples/: " + done.stdout.strip().splitlines()[-1])
        lap("examples")
    finally:
        if args.keep:
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    spent = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in timings.items())
    say(
        f"{wheel.name} with {len(deps)} dependencies works outside the checkout "
        f"({time.monotonic() - started:.1f} s: {spent})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
