"""tests/conftest.py keeps the suite's bytecode in the venv when the machine forbids __pycache__: every worker,
kernel and subprocess of a run would otherwise compile all it imports again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYCACHE = Path(sys.prefix, "pycache")

# what a process started by the suite sees, after tests/conftest.py was imported the way pytest imports it
PROBE = """
import json, subprocess, sys
import tests.conftest
child = "import json, sys; print(json.dumps([sys.dont_write_bytecode, sys.pycache_prefix]))"
seen = json.loads(subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True).stdout)
print(json.dumps({"here": [sys.dont_write_bytecode, sys.pycache_prefix], "child": seen}))
"""


def _probe(**env: str) -> dict[str, list[object]]:
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, list[object]] = json.loads(done.stdout)
    return seen


def test_a_machine_that_forbids_bytecode_gets_it_kept_in_the_venv_by_the_suite_and_what_it_starts():
    assert sys.prefix != sys.base_prefix  # the suite runs in a venv (.venv, as kit.py makes it)
    seen = _probe(PYTHONDONTWRITEBYTECODE="1")
    assert seen == {"here": [False, str(PYCACHE)], "child": [False, str(PYCACHE)]}


def test_a_prefix_of_the_users_own_or_no_prohibition_is_left_as_it_is(tmp_path):
    mine = str(tmp_path / "mine")
    assert _probe(PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=mine) == {
        "here": [True, mine],
        "child": [True, mine],
    }
    assert _probe() == {"here": [False, None], "child": [False, None]}  # Python's own __pycache__, as always


def test_the_bytecode_of_temporary_modules_goes_at_the_start_of_a_run_and_the_checkouts_stays():
    temporary = PYCACHE.joinpath(*Path(os.path.abspath(tempfile.gettempdir())).parts[1:])
    stale = temporary / "fnkit-bytecode-probe" / "__gone__.cpython-311.pyc"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_bytes(b"")
    _probe(PYTHONDONTWRITEBYTECODE="1")
    assert not stale.parent.exists()
    compiled = PYCACHE.joinpath(*ROOT.parts[1:], "tests")  # the probe imported tests.conftest: compiled once, kept
    assert any(path.name.startswith("conftest.") for path in compiled.iterdir())
