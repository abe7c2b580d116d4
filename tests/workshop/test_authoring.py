"""The instructor's authoring loop: `kit.py test -k workshop` runs the exercises' notebooks, and a notebook cell
that fails under nbval says where it is and how to re-run it (tests/notebook_items.py)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _kit():
    spec = importlib.util.spec_from_file_location("fnkit_kit_authoring", ROOT / "kit.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pytest(argv: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", *argv], capture_output=True, text=True, timeout=300, cwd=cwd, check=False
    )


def test_the_readmes_k_workshop_selects_the_exercises_notebooks_too():
    argv = [str(a) for a in _kit().suite_argv(["-k", "workshop", "--collect-only", "-q"], parallel=False)]
    assert "python3 kit.py test -k workshop" in (ROOT / "README.md").read_text(encoding="utf-8")
    # the README's command, collected over the folders that hold the workshop (the whole suite takes 30 s more)
    at = argv.index("tests")
    argv[at : at + 1] = ["tests/workshop", "tests/notebooks"]
    done = _pytest(argv[3:])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    files = {line.split("::")[0] for line in done.stdout.splitlines() if "::" in line}
    for kind in ("exercises", "solutions"):
        for name in ("01_queue", "02_mail", "03_load_balancer"):
            assert f"notebooks/{kind}/{name}.ipynb" in files
    assert "tests/notebooks/test_notebooks.py" in files  # exercises = solutions minus their answers
    assert not any(f.startswith("notebooks/0") for f in files)  # the lessons are not the workshop's exercises


def _stale_notebook(folder: Path) -> Path:
    nb = {
        "cells": [
            {"cell_type": "markdown", "id": "m0", "metadata": {}, "source": "# a solution"},
            {
                "cell_type": "code",
                "execution_count": 1,
                "id": "c1",
                "metadata": {},
                "outputs": [{"name": "stdout", "output_type": "stream", "text": "old\n"}],
                "source": 'print("new")\nx = 1',
            },
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = folder / "notebooks" / "solutions" / "stale.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def test_a_failing_notebook_cell_names_its_cell_first_line_and_the_command_that_re_runs_it(tmp_path):
    path = _stale_notebook(tmp_path)
    alone = ["-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir", str(tmp_path)]
    done = _pytest(["-p", "tests.notebook_items", str(path), "--nbval", "--nbval-current-env", *alone])
    assert done.returncode == 1, done.stdout[-3000:]
    assert "stale.ipynb, cell 1 of the notebook (its code cell 0, nbval's 'Cell 0'): print(\"new\")" in done.stdout
    assert ".venv/bin/python tools/notebooks.py run solutions/stale" in done.stdout
