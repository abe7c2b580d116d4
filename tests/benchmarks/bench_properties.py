"""Soak: every property test of the suite with 2,000 examples each (the "long" hypothesis profile).

    .venv/bin/python tests/benchmarks/bench_properties.py

`python3 kit.py test` runs each property test (a test with `@given`) with the "suite" profile
of tests/conftest.py: 100 examples, or fewer where a test asks. This runs the files that hold
them (found by their `@given`) with the "long" profile (a test that sets its own count keeps
it; test_fuzz.py's soak is bench_fuzz.py) and prints the time taken. Exit status: pytest's.
The arguments `kit.py bench` passes to every script (such as --quick) are not for this one.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def property_test_files() -> list[str]:
    """The suite's test files that hold a property test, relative to the repository."""
    tests = ROOT / "tests"
    found = [
        p
        for p in sorted(tests.rglob("test_*.py"))
        if "benchmarks" not in p.parts and "browser" not in p.parts and "@given(" in p.read_text(encoding="utf-8")
    ]
    return [str(p.relative_to(ROOT)) for p in found if p.name != "test_fuzz.py"]


def main() -> int:
    files = property_test_files()
    argv = [sys.executable, "-m", "pytest", *files, "-q", "-p", "no:cacheprovider", "--hypothesis-profile=long"]
    print(f"bench_properties: {len(files)} files with property tests, 2,000 examples each", flush=True)
    started = time.monotonic()
    code = subprocess.call([*argv, "-m", "not browser and not wheel"], cwd=ROOT)
    print(f"bench_properties: exit {code} after {time.monotonic() - started:.1f} s", flush=True)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
