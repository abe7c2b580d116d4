"""tools/slides.py: the lessons as slides (one per `##` section, or as their cells are tagged) and a PDF handout
printed by the installed Chromium."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("fnkit_slides_tool", ROOT / "tools" / "slides.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _tool()
LESSON = ROOT / "notebooks" / "01_queue_batch.ipynb"


def test_a_lesson_without_slide_tags_gets_one_slide_per_section_not_one_long_slide(tmp_path):
    before = LESSON.read_bytes()
    nb = nbformat.read(str(LESSON), as_version=4)
    headings = sum(1 for c in nb.cells if c.cell_type == "markdown" and c.source.lstrip().startswith("## "))
    typed = tool.with_slide_types(nb)
    kinds = [c.metadata["slideshow"]["slide_type"] for c in typed.cells]
    assert kinds.count("slide") == headings + 1  # the title, then each section
    assert "slideshow" not in nb.cells[0].metadata  # an in-memory copy: the lesson itself is not changed
    html = tool.make_slides(LESSON, tmp_path).read_text(encoding="utf-8")
    assert len(re.findall(r"<section", html)) >= headings + 1
    assert LESSON.read_bytes() == before


def test_cells_tagged_as_slides_decide_where_slides_start():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Title", metadata={"tags": ["slide"]}),
        nbformat.v4.new_markdown_cell("## not a new slide here"),
        nbformat.v4.new_code_cell("1 + 1", metadata={"tags": ["fragment"]}),
        nbformat.v4.new_markdown_cell("notes for me", metadata={"tags": ["notes"]}),
    ]
    kinds = [c.metadata["slideshow"]["slide_type"] for c in tool.with_slide_types(nb).cells]
    assert kinds == ["slide", "-", "fragment", "notes"]


def test_the_handout_is_a_pdf_printed_by_the_installed_chromium(tmp_path):
    pdf = tool.make_handout([ROOT / "notebooks" / "00_start_here.ipynb", LESSON], tmp_path)
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-")
    pages = len(re.findall(rb"/Type\s*/Page\b", data))
    assert pages >= 4, pages  # two lessons, with their outputs
    html = (tmp_path / "handout.html").read_text(encoding="utf-8")
    assert html.index("00 · Start here") < html.index("01 · The queue batch")  # in order, one document
    ids = [c["id"] for c in json.loads(nbformat.writes(tool.handout_notebook([LESSON, LESSON])))["cells"]]
    assert len(ids) == len(set(ids))  # unique, even with a lesson twice
