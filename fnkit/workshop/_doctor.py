"""`python3 kit.py doctor`: notebook 00's environment check, headless, and what a workshop needs besides.

It adds to `check_environment` (Python, the packages the notebooks need, fnkit from this
repository, the widgets and their JupyterLab extension): every installed package at the
version pinned in constraints.txt, the operating system, and a handler run in a worker
process, as every exercise's check runs one. One line per problem, with its fix; the exit
code says whether the machine is ready.
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path
from typing import Any

from ..types import QueueEvent
from ._environment import EnvCheck, check_environment

LOCK_NAME = "constraints.txt"
# where the suite, the notebooks and the browser test run; the others run the same code paths untested
TESTED_SYSTEMS = ("Linux",)
WORKER_TIMEOUT_S = 30.0


def pinned_versions(lock: Path) -> list[tuple[str, str]]:
    """(name, version) of every pin of `lock` (name==version) whose marker holds on this machine."""
    from packaging.requirements import InvalidRequirement, Requirement

    pins = []
    for line in lock.read_text(encoding="utf-8").splitlines():
        text = line.split("#", 1)[0].strip()
        if not text or text.startswith("-"):
            continue
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        exact = [s.version for s in req.specifier if s.operator == "=="]
        if exact and (req.marker is None or req.marker.evaluate()):
            pins.append((req.name, exact[0]))
    return pins


def _installed() -> dict[str, str]:
    from importlib import metadata

    from packaging.utils import canonicalize_name

    found: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found.setdefault(canonicalize_name(name), dist.version)
    return found


def pins_check(root: Path) -> EnvCheck:
    """Every installed package at its version in constraints.txt (the versions the workshop was tested with)."""
    from packaging.utils import canonicalize_name

    lock = root / LOCK_NAME
    if not lock.is_file():
        return EnvCheck("pinned versions", f"{LOCK_NAME} in {root}", "missing", False, "git checkout constraints.txt")
    installed = _installed()
    pins = pinned_versions(lock)
    off = [
        (name, version, installed[canonicalize_name(name)])
        for name, version in pins
        if canonicalize_name(name) in installed and installed[canonicalize_name(name)] != version
    ]
    held = sum(1 for name, _ in pins if canonicalize_name(name) in installed)
    if not off:
        return EnvCheck(
            "pinned versions", f"the versions of {LOCK_NAME}", f"{held} installed packages, each at its pin", True
        )
    shown = ", ".join(f"{name} {have} (pinned {version})" for name, version, have in off[:5])
    more = f" and {len(off) - 5} more" if len(off) > 5 else ""
    wanted = " ".join(f'"{name}=={version}"' for name, version, _ in off)
    return EnvCheck(
        "pinned versions",
        f"the versions of {LOCK_NAME}",
        shown + more,
        False,
        f"{Path(sys.executable).name} -m pip install -c {LOCK_NAME} {wanted}   (from the repository's folder)",
    )


def system_check() -> EnvCheck:
    """The operating system: tested, or one the workshop's code runs on without a test here."""
    system = platform.system() or sys.platform
    ok = system in TESTED_SYSTEMS
    return EnvCheck(
        "operating system",
        " or ".join(TESTED_SYSTEMS) + " (tested); macOS and Windows run untested",
        f"{system} {platform.release()}".strip(),
        ok,
        "" if ok else "run every notebook once before the day (python3 kit.py lab), or use a Linux machine",
        "error" if ok else "warning",
    )


def _doctor_event() -> QueueEvent:
    from .. import queue

    return queue.build_event(bodies=['{"order": 1}'], seed=1)


def worker_check(timeout_s: float = WORKER_TIMEOUT_S) -> EnvCheck:
    """A handler defined here (no import path: sent as a notebook cell's would be) runs in a worker process."""
    from .. import isolation

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"batchItemFailures": [], "seen": len(event["Records"])}

    needed = "a handler runs in a worker process (every exercise's check does)"
    started = time.monotonic()
    try:
        result = isolation.invoke(handler, _doctor_event(), isolation="process", timeout_s=timeout_s)
    except Exception as exc:  # noqa: BLE001 - the doctor reports, it never crashes
        why = f"{type(exc).__name__}: {exc}"
    else:
        why = ""
        if result.timed_out:
            why = f"no answer within {timeout_s:g} s"
        elif result.error is not None:
            why = f"{result.error.type}: {result.error.message}"
        elif not isinstance(result.returned, dict) or result.returned.get("seen") != 1:
            why = f"it returned {result.returned!r}"
    taken = time.monotonic() - started
    if not why:
        return EnvCheck("handler in a worker", needed, f"ran in {taken:.1f} s", True)
    return EnvCheck(
        "handler in a worker",
        needed,
        f"failed ({why})",
        False,
        "python3 kit.py lab to set up again; if it still fails, send this line to the workshop's teacher",
    )


def doctor_checks(root: str | Path | None = None, worker: bool = True) -> list[EnvCheck]:
    """Every check of `kit.py doctor`, in the order they are said."""
    report = check_environment(root)
    checks = list(report.checks)
    if report.root is None:
        return checks
    checks.append(pins_check(report.root))
    checks.append(system_check())
    if worker:
        checks.append(worker_check())
    return checks


def problem_line(check: EnvCheck) -> str:
    """One line: what is wrong, and its fix."""
    mark = "✘" if check.severity == "error" else "⚠"
    fix = f" -> fix: {check.fix}" if check.fix else ""
    return f"{mark} {check.what}: needs {check.needed}; found {check.found}{fix}"


def doctor(argv: list[str]) -> int:
    """`python -m fnkit.workshop doctor [--root PATH] [-v]`: one line per problem with its fix; 0 when ready, else 1."""
    verbose = "-v" in argv or "--verbose" in argv
    root: str | None = None
    if "--root" in argv:
        at = argv.index("--root")
        if at + 1 >= len(argv):
            print("usage: python3 kit.py doctor [-v]", file=sys.stderr)
            return 2
        root = argv[at + 1]
    checks = doctor_checks(root)
    errors = [c for c in checks if not c.ok and c.severity == "error"]
    for c in checks:
        if not c.ok:
            print(problem_line(c))
        elif verbose:
            print(f"✔ {c.what}: {c.found}")
    if errors:
        print(f"doctor: {len(errors)} problem(s) to fix before the workshop (above, one line each, with its fix)")
        return 1
    found = {c.what: c.found for c in checks}
    print(
        f"doctor: ready for the workshop ({len(checks)} checks: Python {found.get('python')}, "
        f"JupyterLab {found.get('jupyterlab')} with the widgets' extension, {found.get('pinned versions')}, "
        f"fnkit from this repository, {found.get('operating system')}, a handler in a worker: "
        f"{found.get('handler in a worker')})"
    )
    return 0
