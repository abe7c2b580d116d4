#!/usr/bin/env python3
"""fnkit's quick start, standard library only.

    python3 kit.py lab  [jupyter lab args...]   set up .venv, open your working copy (work/) on 00_start_here
                        [--with dask]           (also install an extra: dask for 05's Dask part)
    python3 kit.py reset [NOTEBOOK...]          a fresh copy of a notebook in work/ (all: no name, asked)
    python3 kit.py doctor [-v]                  set up .venv, then say whether this machine is ready (exit 0/1)
    python3 kit.py progress [PATH...]           which exercises each working copy passed [--csv FILE] [--stored]
    python3 kit.py update | release [NAME...]   the instructor's changes into work/ | a solution learners then get
    python3 kit.py test [pytest args...]        set up .venv and Chromium, run the gates and every test
    python3 kit.py cover [pytest args...]       every test, with coverage (workers and kernels too)
    python3 kit.py lint [--fix]                 run the gates: ruff (lint, format), mypy, import-linter
    python3 kit.py bench [script args...]       set up .venv with benchmarks, run them
    python3 kit.py lock [uv pip compile args...] pin every dependency again into constraints.txt

Set-up: .venv is made with `python -m venv` when missing, and the project is installed into it editable, with the
versions pinned in constraints.txt (`pip install --no-compile -c constraints.txt -e .[EXTRAS]`, plain pip); the
install is skipped while pyproject.toml and constraints.txt are unchanged since the last one. `lab` installs the
extras the notebooks need (LAB_EXTRAS below); `test`, `lint` and `bench` add the tools (DEV_EXTRAS), into the same
.venv.

Working copy: `lab` copies notebooks/ into work/ (git ignores it), then each new notebook, never over yours: `update`
merges changes in, `reset` puts the pristine one back (yours kept in work/.backup/). Instructors edit notebooks/.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / "fnkit-install.json"
LOCK = ROOT / "constraints.txt"  # every dependency of every extra, pinned (python3 kit.py lock)
PRISTINE = ROOT / "notebooks"
WORK = ROOT / "work"
BACKUP_DIR = ".backup"
CHROMIUM = Path("/usr/bin/chromium")
PIP_FOR_EDITABLE_PYPROJECT = (21, 3)  # PEP 660 editable installs
MIN_PYTHON = (3, 11)
# The extras of pyproject.toml each command installs, by name only: what each extra holds is
# pyproject.toml's business. `lab` is what the notebooks import (a learner's .venv); `dev`
# adds the tests, the browser, the gates and their type stubs.
LAB_EXTRAS = ["lab"]
DEV_EXTRAS = ["dev"]
# pip writes no bytecode at install: Python compiles a module the first time it is imported (and keeps
# it in __pycache__), so only what is used gets compiled. Compiling everything at install took 121 MB of
# a learner's .venv; running every notebook compiles 38 MB (the rest is pandas' and NumPy's own tests
# and the like, which nothing imports).
INSTALL_OPTIONS = ["--no-compile"]
START_NOTEBOOK = "00_start_here.ipynb"  # what `lab` opens
# JupyterLab's options for a learner: no news feed fetched
LAB_OPTIONS = ["--LabApp.news_url=None"]
# ... nor the popup that asks whether to fetch it: JupyterLab asks while this setting is unset, so
# .venv's JupyterLab gets it as a default (its settings/overrides.json; the learner's own settings win);
# the file browser shows names only (no "Last Modified" column), so that "03_load_balancer.ipynb" is not cut
LAB_SETTINGS: dict[str, dict[str, Any]] = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/filebrowser-extension:browser": {"showLastModifiedColumn": False},
}

USAGE = __doc__.split("\n\n")[1]


def say(line: str) -> None:
    """One short progress line."""
    print(f"== {line}", flush=True)


def run(argv: Sequence[str | Path], **kwargs: Any) -> None:
    """Run a command; stop kit.py with its exit code when it fails."""
    code = subprocess.call([str(a) for a in argv], **kwargs)
    if code != 0:
        print(f"kit.py: command failed with exit code {code}: {' '.join(map(str, argv))}", file=sys.stderr)
        sys.exit(code)


def is_root() -> bool:
    """Whether kit.py runs as root (it may then install Chromium with apt-get)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def venv_env() -> dict[str, str]:
    """The environment of a shell with .venv activated."""
    env = dict(os.environ)
    env["VIRTUAL_ENV"] = str(VENV)
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    env.pop("PYTHONHOME", None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def read_stamp() -> dict[str, Any]:
    """What the last install recorded in .venv (empty when there is none or it is unreadable)."""
    try:
        stamp = json.loads(STAMP.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return stamp if isinstance(stamp, dict) else {}


def venv_works() -> bool:
    """Whether .venv's Python starts."""
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
    """The (major, minor) of .venv's pip, (0,) when it cannot tell."""
    out = subprocess.run(
        [str(PYTHON), "-m", "pip", "--version"], capture_output=True, text=True, env=venv_env(), check=False
    ).stdout
    try:
        return tuple(int(part) for part in out.split()[1].split(".")[:2])
    except (IndexError, ValueError):
        return (0,)


def install_digest() -> str:
    """What the install depends on: pyproject.toml and the lock."""
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes())
    if LOCK.exists():
        digest.update(LOCK.read_bytes())
    return digest.hexdigest()


def lock_arguments() -> list[str | Path]:
    """pip's arguments that hold the install to the lock (none when there is no lock)."""
    return ["-c", LOCK] if LOCK.exists() else []


def ensure_installed(extras: list[str]) -> None:
    """pip install --no-compile -c constraints.txt -e .[extras] into .venv, unless nothing changed since."""
    ensure_venv()
    digest = install_digest()
    stamp = read_stamp()
    same = stamp.get("pyproject_sha256") == digest and stamp.get("root") == str(ROOT)
    if same and set(extras) <= set(stamp.get("extras", [])):
        say(f"fnkit[{','.join(extras)}] already installed (pyproject.toml and constraints.txt unchanged)")
        return
    env = venv_env()
    if pip_version() < PIP_FOR_EDITABLE_PYPROJECT:
        say("upgrading pip in .venv (too old for editable pyproject installs)")
        run([PYTHON, "-m", "pip", "install", "-q", "--upgrade", "pip"], env=env)
    wanted = sorted(set(extras) | (set(stamp.get("extras", [])) if same else set()))
    say(
        f"installing fnkit[{','.join(wanted)}] into .venv (editable, versions from {LOCK.name}; "
        f"takes {'about a minute' if wanted == LAB_EXTRAS else 'several minutes'} the first time)"
    )
    started = time.monotonic()
    STAMP.unlink(missing_ok=True)
    run(
        [PYTHON, "-m", "pip", "install", "-q", *INSTALL_OPTIONS, *lock_arguments(), "-e", f".[{','.join(wanted)}]"],
        cwd=ROOT,
        env=env,
    )
    STAMP.write_text(
        json.dumps({"root": str(ROOT), "pyproject_sha256": digest, "extras": wanted}, indent=1) + "\n", encoding="utf-8"
    )
    say(f"installed in {time.monotonic() - started:.0f} s")


def ensure_chromium() -> None:
    """The browser tests drive Debian's Chromium; install it when we may."""
    if CHROMIUM.exists():
        return
    apt = ["apt-get", "install", "-y", "-q", "chromium"]
    if not is_root() or shutil.which("apt-get") is None:
        print(
            f"kit.py: the browser tests need Chromium at {CHROMIUM}, which is missing.\n"
            f"Install it, then run this command again:\n"
            f"    sudo apt-get update && sudo {' '.join(apt)}",
            file=sys.stderr,
        )
        sys.exit(1)
    say("installing Chromium for the browser tests (apt-get)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run(["apt-get", "update", "-q"], env=env, stdout=subprocess.DEVNULL)
    run(apt, env=env, stdout=subprocess.DEVNULL)


def replace_with(argv: Sequence[str | Path]) -> None:
    """Become the command (its exit code is ours), run from the repo root inside .venv."""
    words = [str(a) for a in argv]
    say("running: " + " ".join([os.path.relpath(words[0], ROOT), *words[1:]]))
    sys.stdout.flush()
    os.chdir(ROOT)
    if os.name == "nt":
        sys.exit(subprocess.call(words, env=venv_env()))
    os.execve(words[0], words, venv_env())


def has_notebooks() -> bool:
    """Whether notebooks/ holds any notebook (nbval then runs them)."""
    return any(".ipynb_checkpoints" not in p.parts for p in (ROOT / "notebooks").rglob("*.ipynb"))


# --- the learner's working copy -----------------------------------------------------


def notebooks_in(folder: Path) -> list[Path]:
    """The notebooks under `folder`, as paths relative to it (checkpoints and backups left out)."""
    if not folder.is_dir():
        return []
    found = [p.relative_to(folder) for p in folder.rglob("*.ipynb")]
    return sorted(p for p in found if ".ipynb_checkpoints" not in p.parts and BACKUP_DIR not in p.parts)


def hidden_solution(pristine: Path, rel: Path) -> bool:
    """A solution not released yet: notebooks/solutions/RELEASED, when there is one, lists those learners get."""
    listed = pristine / "solutions" / "RELEASED"
    lines = listed.read_text("utf-8").splitlines() if rel.parts[0] == "solutions" and listed.is_file() else None
    return lines is not None and rel.stem not in [line.split("#")[0].strip().removesuffix(".ipynb") for line in lines]


def copy_new_notebooks(pristine: Path, work: Path) -> list[Path]:
    """Copy into `work` each notebook of `pristine` it does not have yet; never overwrite one. The copied paths."""
    copied = []
    for rel in notebooks_in(pristine):
        target = work / rel
        if target.exists() or hidden_solution(pristine, rel):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(pristine / rel, target)
        copied.append(rel)
    if (pristine / "kit.py").is_file() and not (work / "kit.py").exists():  # runs ../kit.py: JupyterLab's terminal
        shutil.copy2(pristine / "kit.py", work / "kit.py")  # opens in work/, and `python3 kit.py reset` works there
    return copied


def match_notebooks(pristine: Path, names: list[str]) -> list[Path]:
    """The pristine notebooks named (path, file name or stem, with or without .ipynb); ValueError saying why not."""
    known = notebooks_in(pristine)
    if not names:
        return known
    chosen: list[Path] = []
    for name in names:
        wanted = name.replace("\\", "/").strip("/")
        for prefix in ("work/", "notebooks/"):
            wanted = wanted.removeprefix(prefix)
        wanted = wanted.removesuffix(".ipynb")
        exact = [p for p in known if p.with_suffix("").as_posix() == wanted]
        by_name = [p for p in known if p.stem == wanted]
        partial = [p for p in known if wanted in p.with_suffix("").as_posix()]
        found = exact or by_name or partial
        if not found:
            raise ValueError(
                f"no notebook is called {name!r}; the notebooks are: " + ", ".join(p.as_posix() for p in known)
            )
        if len(found) > 1:
            raise ValueError(
                f"{name!r} could be any of " + ", ".join(p.as_posix() for p in found) + ": name one of them"
            )
        chosen.extend(p for p in found if p not in chosen)
    return chosen


def reset_notebooks(pristine: Path, work: Path, chosen: list[Path], stamp: str) -> list[tuple[Path, Path | None]]:
    """Put the pristine copy of each chosen notebook into `work`, keeping the learner's in work/.backup/STAMP/.

    Returns (notebook, backup or None when there was no copy to keep) for each.
    """
    done = []
    backup_root = work / BACKUP_DIR / stamp
    for rel in chosen:
        target = work / rel
        kept = None
        if target.exists():
            kept = backup_root / rel
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(target), kept)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(pristine / rel, target)
        done.append((rel, kept))
    return done


def _stamp(work: Path) -> str:
    """A backup folder name not used yet: the local time, to the second."""
    base = time.strftime("%Y-%m-%d_%H%M%S")
    stamp, n = base, 1
    while (work / BACKUP_DIR / stamp).exists():
        n += 1
        stamp = f"{base}_{n}"
    return stamp


def prepare_work_copy(pristine: Path | None = None, work: Path | None = None) -> list[Path]:
    """Make work/ (first run) or add the notebooks it lacks; say what was copied, and return it.

    What `lab` does before it starts JupyterLab, callable alone (the browser test makes its working copy
    with it, in a folder of its own): `pristine` and `work` default to notebooks/ and work/.
    """
    pristine = PRISTINE if pristine is None else pristine
    work = WORK if work is None else work
    first = not work.exists()
    copied = copy_new_notebooks(pristine, work)
    if first:
        say(f"made your working copy: {len(copied)} notebooks in work/ (git ignores it; kit.py reset NAME: anew)")
    elif copied:
        say(f"work/: {len(copied)} new notebook(s) copied in: {', '.join(p.as_posix() for p in copied)}")
    return copied


_SERVER_URL = re.compile(
    r"(?P<base>https?://(?:127\.0\.0\.1|localhost|\[::1\]|[\w.-]+):\d+/(?:[^\s?]*/)?)lab(?P<query>\?token=\w+)?"
)


def notebook_url(log_line: str, notebook: str) -> str | None:
    """The URL opening `notebook` (relative to the server's root) from a log line naming the server's URL, or None."""
    found = _SERVER_URL.search(log_line)
    if found is None:
        return None
    return f"{found['base']}lab/tree/{notebook}{found['query'] or ''}"


def boxed(*lines: str) -> str:
    """`lines` in a box of their own, so they stand out at the end of a server's log."""
    width = max(len(line) for line in lines)
    bar = "+" + "-" * (width + 2) + "+"
    return "\n".join(["", bar, *(f"| {line.ljust(width)} |" for line in lines), bar, ""])


def run_lab(argv: Sequence[str | Path], notebook: str, quiet_s: float = 1.0) -> int:
    """Run JupyterLab, passing its log through; once it has said its URL and gone quiet, print the notebook's URL boxed.

    The exit code is JupyterLab's. Ctrl-C goes to JupyterLab (it asks before it stops), not to kit.py.
    """
    import queue
    import threading

    words = [str(a) for a in argv]
    say("running: " + " ".join([os.path.relpath(words[0], ROOT), *words[1:]]))
    child = subprocess.Popen(words, cwd=ROOT, env=venv_env(), stderr=subprocess.PIPE, text=True, bufsize=1)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert child.stderr is not None
        for line in child.stderr:
            sys.stderr.write(line)
            sys.stderr.flush()
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    if os.name != "nt":
        # kit.py stopped (a closed terminal, `kill`): JupyterLab stops with it, not left running alone
        def stop_child(signum: int, frame: Any) -> None:
            child.send_signal(signum)
            sys.exit(child.wait())

        for stop in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(stop, stop_child)
    url: str | None = None
    shown = False
    while True:
        try:
            line = lines.get(timeout=quiet_s)
        except queue.Empty:
            if url is not None and not shown:
                print(boxed(f"JupyterLab is ready: open {notebook} at", url), flush=True)
                shown = True
            continue
        except KeyboardInterrupt:
            continue
        if line is None:
            break
        found = notebook_url(line, notebook)
        if found is not None and (url is None or "127.0.0.1" in found):
            url = found
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            continue


def quiet_lab_settings(venv: Path) -> Path:
    """Write LAB_SETTINGS into `venv`'s JupyterLab defaults (settings/overrides.json), keeping what else it holds."""
    path = venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    try:
        current = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        current = {}
    if not isinstance(current, dict):
        current = {}
    for plugin, values in LAB_SETTINGS.items():
        section = current.get(plugin)
        current[plugin] = {**(section if isinstance(section, dict) else {}), **values}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(current, indent=2) + "\n", encoding="utf-8")
    return path


def cmd_lab(args: list[str]) -> None:
    """Set up, copy the notebooks the learner lacks into work/, open JupyterLab there on 00_start_here."""
    pristine = "--pristine" in args
    args = [a for a in args if a != "--pristine"]
    extras = list(LAB_EXTRAS)
    while "--with" in args:  # `--with dask`: an extra of pyproject.toml on top (05's Dask part)
        at = args.index("--with")
        if at + 1 >= len(args) or args[at + 1].startswith("-"):
            print("kit.py lab: --with needs an extra's name, e.g. --with dask", file=sys.stderr)
            sys.exit(2)
        extras.append(args[at + 1])
        del args[at : at + 2]
    ensure_installed(extras)
    quiet_lab_settings(VENV)
    if not pristine:
        prepare_work_copy()
        subprocess.call([str(PYTHON), "-m", "fnkit.workshop", "update", "--check"], env=venv_env())  # changed ones
    extra = ["--allow-root"] if is_root() and "--allow-root" not in args else []
    folder = PRISTINE if pristine else WORK
    say(f"opening JupyterLab on {folder.name}/{START_NOTEBOOK}")
    # a file as JupyterLab's argument: its folder is the root, and the browser opens on the file
    argv: list[str | Path] = [PYTHON, "-m", "jupyterlab", folder / START_NOTEBOOK, *LAB_OPTIONS, *extra, *args]
    sys.exit(run_lab(argv, START_NOTEBOOK))


def cmd_reset(args: list[str]) -> None:
    """Put the pristine copy of the named notebooks (all: no name, asked first) into work/, keeping the learner's."""
    yes, args = "--yes" in args, [a for a in args if a != "--yes"]
    try:
        if any(a.startswith("-") for a in args):
            print("usage: python3 kit.py reset [--yes] [NOTEBOOK...]   (no name: every notebook)", file=sys.stderr)
            sys.exit(0 if args[0] in ("-h", "--help") else 2)
        chosen = match_notebooks(PRISTINE, args)
        mine = [rel for rel in chosen if (WORK / rel).exists()]
        ask = not args and mine and not yes  # every notebook: yours would all be replaced
        if ask and input(f"Reset all {len(mine)} notebooks of work/? [y/N] ").strip().lower() not in ("y", "yes"):
            raise EOFError  # an answer other than yes is a no
    except ValueError as exc:
        print(f"kit.py reset: {exc}", file=sys.stderr)
        sys.exit(2)
    except EOFError:  # no one at the terminal to ask, or Ctrl-D
        sys.exit("kit.py reset: nothing was reset (name the notebook to reset, or add --yes to reset every one)")
    for rel, kept in reset_notebooks(PRISTINE, WORK, chosen, _stamp(WORK)):
        kept_in = f"replaced by a fresh copy; yours is kept in {kept.relative_to(ROOT).as_posix()}" if kept else ""
        say(f"work/{rel.as_posix()}: {kept_in or 'a fresh copy (there was none)'}")
    print(
        "A notebook you reset that is open in JupyterLab still shows your old version there: in its tab, choose "
        "File → Reload Notebook from Disk (saving the tab first would write your old version back).",
        flush=True,
    )


def start_wheel_smoke_test(log: Any) -> subprocess.Popen[bytes]:
    """Start building the wheel, installing it into a fresh venv outside the checkout and trying it there;
    its output goes to `log` (an open file)."""
    return subprocess.Popen(
        [str(PYTHON), str(ROOT / "tools" / "wheel_smoke.py")], cwd=ROOT, env=venv_env(), stdout=log, stderr=log
    )


def wait_through_ctrl_c(child: subprocess.Popen[bytes]) -> int:
    """Wait for `child`; Ctrl-C reaches it too (the same process group), so keep waiting for it to finish."""
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            continue


def run_suite_beside_wheel_smoke(argv: Sequence[str | Path]) -> int:
    """The test suite (`argv`) in the foreground, the wheel smoke test beside it; pytest's exit code, else 1 when
    the wheel smoke test failed (its output is then shown). Each takes cores the other leaves idle."""
    import tempfile

    with tempfile.TemporaryFile() as log:
        say("wheel smoke test started (tools/wheel_smoke.py); its result comes after the tests'")
        smoke = start_wheel_smoke_test(log)
        words = [str(a) for a in argv]
        say("running: " + " ".join([os.path.relpath(words[0], ROOT), *words[1:]]))
        suite = subprocess.Popen(words, cwd=ROOT, env=venv_env())

        # kit.py stopped (`kill`, a CI's time limit): the suite and the smoke test stop with it
        def stop_children(signum: int, frame: Any) -> None:
            for child in (suite, smoke):
                if child.poll() is None:
                    child.send_signal(signum)
            sys.exit(128 + signum)

        stops = [] if os.name == "nt" else [signal.SIGTERM, signal.SIGHUP]
        before = {stop: signal.signal(stop, stop_children) for stop in stops}
        try:
            code = wait_through_ctrl_c(suite)
            if code in (2, 3, 4):  # interrupted (Ctrl-C), an internal error, a usage error: the smoke test is moot
                return code
            smoked = wait_through_ctrl_c(smoke)
        finally:
            for stop, handler in before.items():
                signal.signal(stop, handler)
            if smoke.poll() is None:
                smoke.kill()
                smoke.wait()
        log.seek(0)
        output = log.read().decode("utf-8", "replace").rstrip()
    if smoked != 0:
        print(output, flush=True)
        say(f"wheel smoke test failed (exit code {smoked})")
        return code or 1
    say(output.splitlines()[-1].removeprefix("== ") if output else "wheel smoke test passed")
    return code


# --- the gates ----------------------------------------------------------------------
# Each gate reads its settings (and, in the first pass, which files it holds) from
# pyproject.toml; kit.py only runs them and counts what they find.


class Gate(NamedTuple):
    """One quality gate: the command that runs it and how to count its findings in its output."""

    name: str
    argv: tuple[str, ...]
    finding: re.Pattern[str]  # a line of the output that is one finding
    fix: tuple[str, ...] = ()  # the command that fixes what it can (`kit.py lint --fix`)


GATES = (
    Gate(
        "ruff check",
        ("ruff", "check", "--output-format", "concise", "--no-fix"),
        re.compile(r"^\S.*?:\d+:\d+: [A-Z]+\d+ "),
        fix=("ruff", "check", "--fix"),
    ),
    Gate(
        "ruff format",
        ("ruff", "format", "--check", "--output-format", "concise"),
        re.compile(r"^\S.*?:\d+:\d+: unformatted: "),
        fix=("ruff", "format"),
    ),
    Gate("mypy", ("mypy",), re.compile(r"^\S.*?:\d+: error: ")),
    Gate("import-linter", ("lint-imports", "--no-cache"), re.compile(r" BROKEN$")),
)


def run_gate(gate: Gate) -> tuple[int, str]:
    """Run one gate in .venv from the repo root: (findings, output). A gate that fails without a finding counts one."""
    argv = [str(BIN / gate.argv[0]), *gate.argv[1:]]
    try:
        done = subprocess.run(argv, cwd=ROOT, env=venv_env(), capture_output=True, text=True, check=False)
    except OSError as exc:  # not installed in .venv
        return 1, f"kit.py: cannot run {gate.name}: {exc}"
    output = done.stdout + done.stderr
    findings = sum(1 for line in output.splitlines() if gate.finding.search(line))
    if done.returncode != 0 and findings == 0:
        findings = 1  # it failed to run (a bad setting, a crash): that is a finding too
    return findings, output


def run_gates(fix: bool = False) -> int:
    """Run every gate, show the output of those with findings, say each count; the total."""
    if fix:
        for gate in GATES:
            if gate.fix:
                subprocess.call([str(BIN / gate.fix[0]), *gate.fix[1:]], cwd=ROOT, env=venv_env())
    from concurrent.futures import ThreadPoolExecutor

    def timed(gate: Gate) -> tuple[int, str, float]:
        started = time.monotonic()
        findings, output = run_gate(gate)
        return findings, output, time.monotonic() - started

    # all at once (each is one process; together they take about as long as mypy alone), said in order
    with ThreadPoolExecutor(len(GATES)) as pool:
        results = list(pool.map(timed, GATES))
    counts = []
    for gate, (findings, output, seconds) in zip(GATES, results, strict=True):
        if findings:
            print(output.rstrip(), flush=True)
        counts.append(findings)
        say(f"{gate.name}: {findings} finding(s) ({seconds:.1f} s)")
    total = sum(counts)
    say(
        "gates: "
        + ", ".join(f"{gate.name} {n}" for gate, n in zip(GATES, counts, strict=True))
        + (" - all clear" if total == 0 else f" - {total} finding(s) to fix (`python3 kit.py lint --fix` fixes some)")
    )
    return total


def cmd_lint(args: list[str]) -> None:
    """Run the gates; exit 1 on any finding."""
    if any(a != "--fix" for a in args):
        print(
            "usage: python3 kit.py lint [--fix]   (--fix: let ruff fix and format what it can first)", file=sys.stderr
        )
        sys.exit(0 if args[0] in ("-h", "--help") else 2)
    ensure_installed(DEV_EXTRAS)
    if run_gates(fix="--fix" in args):
        sys.exit(1)


# pytest's own arguments after which the tests run in one process: the user chose the workers, or debugs
ONE_PROCESS_ARGS = ("-n", "--numprocesses", "--dist", "--pdb", "--trace", "no:xdist")


def parallel_argv(args: list[str]) -> list[str]:
    """pytest-xdist's arguments: one worker per core, a file (a notebook, a module) at a time; none when `args`
    choose otherwise (`-n 0`, `-n 4`, `--pdb`, `-p no:xdist`). tests/conftest.py orders the files, longest first."""
    if any(arg.startswith(ONE_PROCESS_ARGS) for arg in args):
        return []
    return ["-n", "auto", "--dist", "loadfile"]


def suite_argv(args: list[str], parallel: bool = True) -> list[str | Path]:
    """pytest over tests/ and the notebooks (nbval), in one run, over the cores when `parallel`; `args` last."""
    argv: list[str | Path] = [PYTHON, "-m", "pytest", "tests"]
    if has_notebooks():
        argv += ["notebooks", "--nbval", "--nbval-current-env"]
        if (ROOT / "notebooks" / "sanitize.cfg").exists():
            argv += ["--nbval-sanitize-with", "notebooks/sanitize.cfg"]
    workers = parallel_argv(args) if parallel else []
    return [*argv, "-p", "no:cacheprovider", *workers, *args]


def drop_stale_coverage() -> None:
    """Remove the data files a killed run left behind: they must not count."""
    for stale in ROOT.glob(".coverage.*"):
        stale.unlink(missing_ok=True)


def cmd_test(args: list[str]) -> None:
    """The README's test command: set-up, the gates, the wheel smoke test, then pytest and nbval."""
    ensure_installed([*LAB_EXTRAS, *DEV_EXTRAS])
    if run_gates():
        print("kit.py test: the gates found something to fix (above); no test ran", file=sys.stderr)
        sys.exit(1)
    ensure_chromium()
    # no coverage: its tracer doubles the time of the CPU-bound tests; `kit.py cover` measures it
    sys.exit(run_suite_beside_wheel_smoke(suite_argv(args)))


def cmd_cover(args: list[str]) -> None:
    """The suite with coverage of fnkit in every process (pyproject's [tool.coverage]); no gates, no wheel."""
    ensure_installed([*LAB_EXTRAS, *DEV_EXTRAS])
    ensure_chromium()
    drop_stale_coverage()
    replace_with(suite_argv(["--cov=fnkit", "--cov-report=term", *args], parallel=False))


def cmd_bench(args: list[str]) -> None:
    """Run every tests/benchmarks/bench_*.py script; exit 1 when any fails."""
    scripts = sorted((ROOT / "tests" / "benchmarks").glob("bench_*.py"))
    if not scripts:
        print("kit.py: no benchmarks found (tests/benchmarks/bench_*.py)", file=sys.stderr)
        sys.exit(1)
    ensure_installed([*DEV_EXTRAS, "bench"])
    failed: list[str] = []
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


def cmd_lock(args: list[str]) -> None:
    """Resolve every extra of pyproject.toml again and pin it in constraints.txt (uv, installed into .venv)."""
    ensure_venv()
    uv = BIN / ("uv.exe" if os.name == "nt" else "uv")
    if not uv.exists():
        say("installing uv into .venv (it resolves the lock; installs use plain pip)")
        run([PYTHON, "-m", "pip", "install", "-q", "uv"], env=venv_env())
    # --universal: one lock for every platform and Python the project supports (markers say
    # which pin applies where); pins already in constraints.txt are kept unless they must move
    # (pass --upgrade to move them all, or --upgrade-package NAME for one).
    universal = ["--all-extras", "--universal", "--python-version", ".".join(map(str, MIN_PYTHON)), "--quiet"]
    named = ["--custom-compile-command", "python3 kit.py lock", "--output-file", LOCK.name]
    run([uv, "pip", "compile", "pyproject.toml", *universal, *named, *args], cwd=ROOT, env=venv_env())
    say(f"wrote {LOCK.name}: the next `python3 kit.py test` or `lab` installs from it")


def cmd_workshop(command: str, args: list[str]) -> None:
    """doctor, progress, update, release: set up .venv, then `python -m fnkit.workshop COMMAND` there, from here."""
    ensure_installed(LAB_EXTRAS)
    sys.exit(subprocess.call([str(PYTHON), "-m", "fnkit.workshop", command, *args], env=venv_env()))


COMMANDS: dict[str, Callable[[list[str]], None]] = {
    **{name: functools.partial(cmd_workshop, name) for name in ("doctor", "progress", "update", "release")},
    "lab": cmd_lab,
    "test": cmd_test,
    "cover": cmd_cover,
    "lint": cmd_lint,
    "bench": cmd_bench,
    "lock": cmd_lock,
    "reset": cmd_reset,
}


def main(argv: list[str]) -> None:
    """Run the command named first; the usage when there is none."""
    if sys.version_info < MIN_PYTHON:
        sys.exit(
            f"kit.py: fnkit needs Python {'.'.join(map(str, MIN_PYTHON))} or newer; this is {sys.version.split()[0]}"
        )
    if argv and argv[0] in ("-h", "--help", "help"):
        try:
            print(f"usage:\n{USAGE}", flush=True)
        except BrokenPipeError:  # `python3 kit.py --help | head`: the reader has what it wanted
            sys.stdout = None  # nothing more to flush at exit
        sys.exit(0)
    if not argv or argv[0] not in COMMANDS:
        print(f"usage:\n{USAGE}", file=sys.stderr)
        sys.exit(2)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # started in the background (`cmd &`, nohup, some CI runners): Ctrl-C is ignored and every
        # process started from here would inherit that, so a server, a kernel or a test that sends
        # it (as a user's Ctrl-C and Jupyter's interrupt do) would be ignored too. Handled here,
        # children start with the default again.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
