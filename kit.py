#!/usr/bin/env python3
"""fnkit's quick start, standard library only.

    python3 kit.py lab  [jupyter lab args...]   set up .venv, open the notebooks
    python3 kit.py test [pytest args...]        set up .venv and Chromium, run every test (with coverage)
    python3 kit.py bench [script args...]       set up .venv with benchmarks, run them

Set-up: .venv is made with `python -m venv` when missing, and the project is
installed into it editable (`pip install -e .[dev]`); the install is skipped
while pyproject.toml is unchanged since the last one.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / "fnkit-install.json"
CHROMIUM = Path("/usr/bin/chromium")
PIP_FOR_EDITABLE_PYPROJECT = (21, 3)  # PEP 660 editable installs
MIN_PYTHON = (3, 11)

USAGE = __doc__.split("\n\n")[1]


def say(line: str) -> None:
    """One short progress line."""
    print(f"== {line}", flush=True)


def run(argv: list, **kwargs) -> None:
    """Run a command; stop kit.py with its exit code when it fails."""
    code = subprocess.call([str(a) for a in argv], **kwargs)
    if code != 0:
        print(f"kit.py: command failed with exit code {code}: {' '.join(map(str, argv))}",
              file=sys.stderr)
        sys.exit(code)


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def venv_env() -> dict:
    """The environment of a shell with .venv activated."""
    env = dict(os.environ)
    env["VIRTUAL_ENV"] = str(VENV)
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    env.pop("PYTHONHOME", None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def read_stamp() -> dict:
    try:
        return json.loads(STAMP.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def venv_works() -> bool:
    if not PYTHON.exists():
        return False
    return subprocess.call([str(PYTHON), "-c", "import sys"], stderr=subprocess.DEVNULL) == 0


def ensure_venv() -> None:
    """Make .venv, or make it again when it is broken or was made for another folder."""
    stamp = read_stamp()
    if VENV.exists() and stamp.get("root") not in (None, str(ROOT)):
        say(f".venv was made in {stamp['root']}: making it again here")
        shutil.rmtree(VENV)
    elif VENV.exists() and not venv_works():
        say(".venv is broken: making it again")
        shutil.rmtree(VENV)
    if not VENV.exists():
        say(f"creating .venv (Python {sys.version.split()[0]})")
        run([sys.executable, "-m", "venv", VENV])


def pip_version() -> tuple[int, ...]:
    out = subprocess.run([str(PYTHON), "-m", "pip", "--version"], capture_output=True,
                         text=True, env=venv_env()).stdout
    try:
        return tuple(int(part) for part in out.split()[1].split(".")[:2])
    except (IndexError, ValueError):
        return (0,)


def ensure_installed(extras: list[str]) -> None:
    """pip install -e .[extras] into .venv, unless pyproject.toml is unchanged since."""
    ensure_venv()
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    stamp = read_stamp()
    same = stamp.get("pyproject_sha256") == digest and stamp.get("root") == str(ROOT)
    if same and set(extras) <= set(stamp.get("extras", [])):
        say(f"fnkit[{','.join(extras)}] already installed (pyproject.toml unchanged)")
        return
    env = venv_env()
    if pip_version() < PIP_FOR_EDITABLE_PYPROJECT:
        say("upgrading pip in .venv (too old for editable pyproject installs)")
        run([PYTHON, "-m", "pip", "install", "-q", "--upgrade", "pip"], env=env)
    wanted = sorted(set(extras) | (set(stamp.get("extras", [])) if same else set()))
    say(f"installing fnkit[{','.join(wanted)}] into .venv (editable; takes a few minutes the first time)")
    started = time.monotonic()
    STAMP.unlink(missing_ok=True)
    run([PYTHON, "-m", "pip", "install", "-q", "-e", f".[{','.join(wanted)}]"], cwd=ROOT, env=env)
    STAMP.write_text(json.dumps({"root": str(ROOT), "pyproject_sha256": digest,
                                 "extras": wanted}, indent=1) + "\n", encoding="utf-8")
    say(f"installed in {time.monotonic() - started:.0f} s")


def ensure_chromium() -> None:
    """The browser tests drive Debian's Chromium; install it when we may."""
    if CHROMIUM.exists():
        return
    apt = ["apt-get", "install", "-y", "-q", "chromium"]
    if not is_root() or shutil.which("apt-get") is None:
        print(f"kit.py: the browser tests need Chromium at {CHROMIUM}, which is missing.\n"
              f"Install it, then run this command again:\n"
              f"    sudo apt-get update && sudo {' '.join(apt)}", file=sys.stderr)
        sys.exit(1)
    say("installing Chromium for the browser tests (apt-get)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run(["apt-get", "update", "-q"], env=env, stdout=subprocess.DEVNULL)
    run(apt, env=env, stdout=subprocess.DEVNULL)


def replace_with(argv: list) -> None:
    """Become the command (its exit code is ours), run from the repo root inside .venv."""
    argv = [str(a) for a in argv]
    say("running: " + " ".join([os.path.relpath(argv[0], ROOT), *argv[1:]]))
    sys.stdout.flush()
    os.chdir(ROOT)
    if os.name == "nt":
        sys.exit(subprocess.call(argv, env=venv_env()))
    os.execve(argv[0], argv, venv_env())


def has_notebooks() -> bool:
    return any(".ipynb_checkpoints" not in p.parts for p in (ROOT / "notebooks").rglob("*.ipynb"))


def cmd_lab(args: list[str]) -> None:
    ensure_installed(["dev"])
    extra = ["--allow-root"] if is_root() and "--allow-root" not in args else []
    replace_with([PYTHON, "-m", "jupyterlab", "notebooks/", *extra, *args])


def cmd_test(args: list[str]) -> None:
    ensure_installed(["dev"])
    ensure_chromium()
    argv = [PYTHON, "-m", "pytest", "tests"]
    if has_notebooks():
        argv += ["notebooks", "--nbval", "--nbval-current-env"]
        if (ROOT / "notebooks" / "sanitize.cfg").exists():
            argv += ["--nbval-sanitize-with", "notebooks/sanitize.cfg"]
    # coverage of fnkit, worker processes and notebook kernels included (pyproject's
    # [tool.coverage]); the figure closes the run. `--no-cov` turns it off.
    argv += ["--cov=fnkit", "--cov-report=term"]
    argv += ["-p", "no:cacheprovider", *args]
    for stale in ROOT.glob(".coverage.*"):  # data a killed run left behind must not count
        stale.unlink(missing_ok=True)
    replace_with(argv)


def cmd_bench(args: list[str]) -> None:
    scripts = sorted((ROOT / "tests" / "benchmarks").glob("bench_*.py"))
    if not scripts:
        print("kit.py: no benchmarks found (tests/benchmarks/bench_*.py)", file=sys.stderr)
        sys.exit(1)
    ensure_installed(["dev", "bench"])
    failed = []
    for script in scripts:
        name = script.relative_to(ROOT)
        say(f"{name}")
        started = time.monotonic()
        code = subprocess.call([str(PYTHON), str(script), *args], cwd=ROOT, env=venv_env())
        say(f"{name}: exit {code} after {time.monotonic() - started:.1f} s")
        if code != 0:
            failed.append(str(name))
    if failed:
        print(f"kit.py: {len(failed)} benchmark(s) failed: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


COMMANDS = {"lab": cmd_lab, "test": cmd_test, "bench": cmd_bench}


def main(argv: list[str]) -> None:
    if sys.version_info < MIN_PYTHON:
        sys.exit(f"kit.py: fnkit needs Python {'.'.join(map(str, MIN_PYTHON))} or newer; "
                 f"this is {sys.version.split()[0]}")
    if not argv or argv[0] not in COMMANDS:
        print(f"usage:\n{USAGE}", file=sys.stderr)
        sys.exit(0 if argv and argv[0] in ("-h", "--help", "help") else 2)
    COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
