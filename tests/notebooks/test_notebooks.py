"""The notebooks are committed clean, numbered as a course, and their exercises have solution twins.

nbval itself (in the same pytest run) executes every notebook; these checks keep what it
compares meaningful: lessons and solutions executed (nbval skips cells without an
execution count), learner versions empty and tagged `nbval-ignore-output`, no widget state.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


def _tool():
    spec = importlib.util.spec_from_file_location("fnkit_notebook_tool", ROOT / "tools" / "notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _tool()
ALL = tool.all_notebooks()


def test_the_lessons_read_as_a_numbered_course():
    lessons = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert lessons[0] == "00_start_here.ipynb"
    assert [name[:2] for name in lessons] == [f"{n:02d}" for n in range(len(lessons))]
    assert {"01_queue_batch.ipynb", "02_mail_flow.ipynb", "03_load_balancer.ipynb"} <= set(lessons)


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(NOTEBOOKS)))
def test_each_notebook_is_clean(path):
    assert tool.problems(path) == []


def test_exercises_and_solutions_are_twins():
    assert tool.twins() == []
    assert sorted(p.name for p in (NOTEBOOKS / "exercises").glob("*.ipynb"))


@pytest.mark.parametrize("path", sorted((NOTEBOOKS / "exercises").glob("*.ipynb")), ids=lambda p: p.name)
def test_each_placeholder_is_followed_by_a_check_cell(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]) for c in cells]
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "code" and re.search(r"(^|\s|=\s*)\.\.\.(\s|$)", sources[i]):
            assert i + 1 < len(cells) and "workshop.check(" in sources[i + 1], f"cell {i} of {path.name}"
        if cell["cell_type"] == "code":
            assert "nbval-ignore-output" in cell["metadata"].get("tags", [])


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(NOTEBOOKS)))
def test_no_output_holds_a_varying_value(path):
    text = path.read_text(encoding="utf-8")
    assert "widget-view+json" not in text and '"widgets"' not in text
    assert not re.search(r"0x[0-9a-f]{8,}", text), "a memory address in an output"
    assert not re.search(r"/tmp/|ipykernel_\d+", text), "a temporary path in an output"
