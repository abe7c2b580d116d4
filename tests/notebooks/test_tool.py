"""tools/notebooks.py: a code cell edited since its outputs were made is found; `check` says what it checked."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("fnkit_notebook_tool_hash", ROOT / "tools" / "notebooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _tool()


def _lesson(folder: Path) -> Path:
    nb: dict[str, Any] = {
        "cells": [
            {"cell_type": "markdown", "id": "m0", "metadata": {}, "source": "# a lesson"},
            {
                "cell_type": "code",
                "execution_count": None,
                "id": "c1",
                "metadata": {},
                "outputs": [],
                "source": "1 + 1",
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = folder / "99_lesson.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def test_run_stores_each_cells_source_hash_and_check_finds_a_cell_edited_since(tmp_path):
    path = _lesson(tmp_path)
    tool.execute(path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    cell = nb["cells"][1]
    assert "".join(cell["outputs"][0]["data"]["text/plain"]) == "2"
    assert cell["metadata"]["fnkit"]["source"] == tool.source_hash("1 + 1")
    assert tool.problems(path) == []
    # the instructor edits the cell in JupyterLab and saves without running it: the old output stays
    cell["source"] = "1 + 2"
    path.write_text(tool.render(nb), encoding="utf-8")
    found = tool.problems(path)
    assert len(found) == 1
    assert "code cell 1 (1 + 2) changed since its outputs were made" in found[0]
    assert "tools/notebooks.py run 99_lesson.ipynb" in found[0]


def test_outputs_that_run_did_not_make_are_found_too(tmp_path):
    path = _lesson(tmp_path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    nb["cells"][1]["execution_count"] = 1
    nb["cells"][1]["outputs"] = [
        {"data": {"text/plain": "2"}, "execution_count": 1, "metadata": {}, "output_type": "execute_result"}
    ]
    path.write_text(tool.render(tool.normalise(nb, path)), encoding="utf-8")
    assert any("has outputs `run` did not make" in p for p in tool.problems(path))


def test_an_exercise_keeps_no_hash_of_its_solutions_sources():
    solution = json.loads((ROOT / "notebooks" / "solutions" / "01_queue.ipynb").read_text(encoding="utf-8"))
    exercise = tool.exercise_of(solution, ROOT / "notebooks" / "solutions" / "01_queue.ipynb")
    assert not any("fnkit" in c["metadata"] for c in exercise["cells"])


def test_check_says_what_it_checked_when_all_is_clean():
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "notebooks.py"), "check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout
    line = done.stdout.strip()
    assert line.startswith("checked ") and "notebooks (" in line and "executed code cells" in line
    assert line.endswith("All clean.")
