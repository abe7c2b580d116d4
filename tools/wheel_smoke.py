"""Build fnkit's wheel, install it into a fresh venv outside the checkout, and try it there.

    .venv/bin/python tools/wheel_smoke.py [--keep]

What an engineer who runs `pip install fnkit` gets, checked where the checkout cannot help:
the wheel is built (`pip wheel`), a new venv is made in a temporary folder, the wheel and
its dependencies go in, and from that folder the smoke test imports fnkit, validates a
built event of each source, replays the bundled corpus, runs `fnkit --help`, and runs
`pytest examples/` (a copy) with the pytest plugin that the wheel registers: the suite's only
run of examples/, which checks that pytest's header names that plugin.

Fast on purpose (it runs in every `python3 kit.py test`): nothing is resolved again and
nothing is fetched twice. The wheel goes in with `--no-deps`, next to the exact versions
this .venv already resolved from the lock (constraints.txt) for what pyproject.toml asks;
their wheels, and the build backend's, are kept in `.venv/fnkit-wheelhouse/` (fetched once,
through pip's cache, the first time a version is wanted), so building and installing run
offline (`--no-index`). tests/test_wheel_core.py uses the same steps for the core alone. The venv gets no
pip of its own (this .venv's pip installs into it with `--python`) and no bytecode up front
(`--no-compile`: imports compile what they use). `pip check` then proves that the wheel's
own metadata is satisfied.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import venv
import zipfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = ("testing", "frames")  # what the examples and the replay need besides the core
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


def project_requires(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The checkout's own requirement lines (as a wheel's metadata states them), from pyproject.toml.

    The installed fnkit's metadata may be older than the checkout (an editable install
    keeps the metadata of its last install): the wheel is built from pyproject.toml.
    """
    with pyproject.open("rb") as f:
        project = tomllib.load(f)["project"]
    lines = list(project.get("dependencies", []))
    for extra, reqs in project.get("optional-dependencies", {}).items():
        for line in reqs:
            req = Requirement(line)
            marker = f"({req.marker}) and " if req.marker is not None else ""
            req.marker = None
            lines.append(f"{req}; {marker}extra == {extra!r}")
    return lines


def closure(extras: tuple[str, ...] = EXTRAS, root: str = "fnkit", requires: list[str] | None = None) -> dict[str, str]:
    """Every distribution `root[extras]` needs, as installed here: canonical name -> version.

    `requires`: the root's requirement lines, when not those of the installed root.
    """
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
        lines = requires if name == root and requires is not None else dist.requires
        for line in lines or []:
            req = Requirement(line)
            if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in ("", *wanted)):
                continue
            inner = canonicalize_name(req.name)
            if inner != root:
                todo.append((inner, frozenset(req.extras)))
    return found


def resolved_dependencies(extras: tuple[str, ...] = EXTRAS) -> list[str]:
    """`name==version` of everything the checkout's fnkit[extras] needs, as this environment resolved it."""
    return [f"{name}=={version}" for name, version in sorted(closure(extras, requires=project_requires()).items())]


def build_requirements() -> list[str]:
    """What pyproject.toml's build backend needs (setuptools)."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        return list(tomllib.load(f)["build-system"]["requires"])


def fill_wheelhouse(wanted: list[str], env: dict[str, Any]) -> bool:
    """Fetch the wheels of `wanted` (through pip's cache) that the wheelhouse has not fetched before.

    The wheelhouse only grows (the core's install and the smoke's share it, and installs name
    exact versions), so two runs wanting different lists never undo each other's fetch.
    """
    listing = WHEELHOUSE / "wanted.txt"
    with _wheelhouse_lock():  # `kit.py test` runs this script beside tests/test_wheel_core.py, which fills it too
        fetched = set(listing.read_text(encoding="utf-8").split()) if listing.exists() else set()
        missing = [w for w in wanted if w not in fetched]
        if not missing:
            return False
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
                *missing,
            ],
            env=env,
        )
        listing.write_text("\n".join(sorted(fetched | set(missing))) + "\n", encoding="utf-8")
    return True


@contextlib.contextmanager
def _wheelhouse_lock() -> Iterator[None]:
    """One process at a time fills the wheelhouse (an exclusive lock on a file in it, where the OS has one)."""
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    with (WHEELHOUSE / ".lock").open("a") as lock:
        try:
            import fcntl
        except ImportError:  # Windows: no flock; two runs at once there may fetch a wheel twice
            yield
            return
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def offline() -> list[Any]:
    """pip's options that install from the wheelhouse only."""
    return ["--no-index", "--find-links", WHEELHOUSE]


def _backend_path() -> list[Path]:
    """The build requirements' wheels from the wheelhouse, each unpacked once beside it (a wheel is a zip to unpack)."""
    paths = []
    for line in build_requirements():
        req = Requirement(line)
        found = []
        for wheel in WHEELHOUSE.glob("*.whl"):
            name, version = wheel.name.split("-")[:2]
            if canonicalize_name(name) == canonicalize_name(req.name) and req.specifier.contains(version):
                found.append((Version(version), wheel))
        if not found:
            raise SystemExit(f"wheel_smoke: the wheelhouse {WHEELHOUSE} holds no wheel for {line!r}")
        wheel = max(found)[1]
        unpacked = WHEELHOUSE / "unpacked" / wheel.stem
        if not unpacked.is_dir():
            partial = unpacked.with_name(f"{unpacked.name}.{os.getpid()}")
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(partial)
            try:
                partial.replace(unpacked)
            except OSError:  # another run (the suite beside this script) unpacked it first
                shutil.rmtree(partial, ignore_errors=True)
                if not unpacked.is_dir():
                    raise
        paths.append(unpacked)
    return paths


def _sources(dest: Path) -> Path:
    """A copy in `dest` of what the build backend reads: pyproject.toml, the readme, the licence, the packages."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        pyproject = tomllib.load(f)
    project = pyproject["project"]
    names = {"pyproject.toml", project["readme"], *project.get("license-files", [])}
    find = pyproject["tool"]["setuptools"]["packages"]["find"]
    packages = {pattern.split(".")[0] for pattern in find["include"]}
    dest.mkdir(parents=True)
    for name in sorted(names):
        shutil.copy2(ROOT / name, dest / name)
    for package in sorted(packages):
        shutil.copytree(ROOT / package, dest / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def build_wheel(dest: Path, env: dict[str, Any]) -> Path:
    """fnkit's wheel, built into `dest` by pyproject.toml's build backend, offline and outside the checkout.

    The backend runs in a fresh interpreter (no site-packages) from its wheels in the
    wheelhouse, on a copy of the sources: what `pip wheel` does, without the seconds it
    spends making an isolated environment, and without a `build/` left in the checkout.
    """
    with (ROOT / "pyproject.toml").open("rb") as f:
        backend = tomllib.load(f)["build-system"]["build-backend"]
    source = _sources(dest.parent / "src")
    dest.mkdir(parents=True, exist_ok=True)
    hook = (
        "import importlib, sys; sys.path[:0] = sys.argv[3:]; "
        "print(importlib.import_module(sys.argv[1]).build_wheel(sys.argv[2]))"
    )
    run([sys.executable, "-I", "-S", "-c", hook, backend, dest, *_backend_path()], cwd=source, env=env)
    return next(dest.glob("fnkit-*.whl"))


def fresh_venv(folder: Path, wheel: Path, deps: list[str], env: dict[str, Any]) -> Path:
    """A new venv in `folder` without pip, holding the wheel and exactly `deps` (checked by `pip check`): its python."""
    venv.EnvBuilder(with_pip=False).create(folder)
    python = folder / ("Scripts" if os.name == "nt" else "bin") / ("python.exe" if os.name == "nt" else "python")
    pip = [sys.executable, "-m", "pip", "--python", python]
    run([*pip, "install", "-q", "--no-deps", "--no-compile", *offline(), wheel, *deps], env=env)
    run([*pip, "check"], env=env)
    return python


def clean_env() -> dict[str, str]:
    """This environment without the checkout on the path, and pip quiet about its version."""
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    return env


def examples(python: Path, wheel: Path, work: Path, env: dict[str, Any]) -> None:
    """`pytest examples/` (a copy) in the fresh venv: the fixtures come from the plugin the wheel registers.

    The suite's one run of examples/ (tests/testing/test_plugin.py runs the plugin on tests of
    its own): every example passes, and pytest's header names the wheel's plugin.
    """
    if list((ROOT / "examples").glob("conftest.py")):
        raise SystemExit("wheel_smoke: examples/ holds a conftest.py: its fixtures must come from the plugin")
    shutil.copytree(ROOT / "examples", work / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    # not -q: the header names the plugin
    done = run([python, "-I", "-m", "pytest", "examples", "-p", "no:cacheprovider"], cwd=work, env=env)
    version = wheel.name.split("-")[1]
    header = f"fnkit {version}: fixtures queue_event, mail_event, alb_event"
    last = done.stdout.strip().splitlines()[-1]
    if header not in done.stdout or " passed" not in last or "failed" in last:
        sys.stdout.write(done.stdout)
        raise SystemExit(f"wheel_smoke: pytest examples/ did not show {header!r} and pass everything")
    print("pytest examples/: " + last.strip("= "))


def main(argv: list[str] | None = None) -> int:
    """Build, install, try; 0 when every step passed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and say where it is")
    args = parser.parse_args(argv)

    env = clean_env()
    work = Path(tempfile.mkdtemp(prefix="fnkit-wheel-"))
    timings: dict[str, float] = {}
    started = clock = time.monotonic()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.monotonic()
        timings[name] = now - clock
        clock = now

    deps = resolved_dependencies()
    try:
        if fill_wheelhouse([*build_requirements(), *deps], env):
            lap("fetch (once per lock)")
        wheel = build_wheel(work / "dist", env)
        lap("build")
        python = fresh_venv(work / "venv", wheel, deps, env)
        lap("venv and install")
        done = run([python, "-I", "-c", SMOKE], cwd=work, env=env)
        sys.stdout.write(done.stdout)
        lap("smoke")
        examples(python, wheel, work, env)
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
