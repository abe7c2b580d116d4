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
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


def _tool():
    spec = importlib.util.spec_from_file_location("fnkit_notebook_tool", ROOT / "tools" / "notebooks.py")
    assert spec is not None and spec.loader is not None
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


@pytest.mark.workshop
def test_exercises_and_solutions_are_twins():
    assert tool.twins() == []
    assert sorted(p.name for p in (NOTEBOOKS / "exercises").glob("*.ipynb"))


@pytest.mark.workshop
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


# --- what a committed notebook may show ----------------------------------------------------------------


def _nb(*cells: dict[str, Any]) -> dict[str, Any]:
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _code(source: str, *outputs: dict[str, Any], count: int = 1, tags: list[Any] | None = None) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "source": source,
        "metadata": {"tags": tags} if tags else {},
        "execution_count": count,
        "outputs": list(outputs),
    }


def _result(data: dict[str, Any], metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"output_type": "execute_result", "execution_count": 1, "data": data, "metadata": metadata or {}}


WIDGET = _result({"text/plain": "IntSlider(value=3)", "application/vnd.jupyter.widget-view+json": {"model_id": "x"}})
MACHINE = _result({"text/plain": "✔ python: needs >=3.11; found 3.11.2"}, {"fnkit": {"varies": "with the machine"}})
TEACHES = _result({"text/plain": "BatchOutcome(kind='partial')"})


def test_outputs_of_a_live_widget_or_of_the_machine_are_cleared_and_their_cell_tagged(tmp_path):
    nb = tool.normalise(
        _nb(_code("slider", WIDGET), _code("check_environment()", MACHINE), _code("outcome", TEACHES)),
        tmp_path / "lesson.ipynb",
    )
    widget, machine, teaches = nb["cells"]
    for cell in (widget, machine):
        assert cell["outputs"] == [] and cell["metadata"]["tags"] == [tool.IGNORE_TAG]
        # no `[1]:` over an empty cell: it reads as not run yet (nbval runs it all the same, without comparing)
        assert cell["execution_count"] is None
    assert teaches["outputs"] and "tags" not in teaches["metadata"]
    teaches["metadata"][tool.HASH_KEY] = {"source": tool.source_hash("outcome")}  # as `run` leaves it
    path = tmp_path / "lesson.ipynb"
    path.write_text(tool.render(nb), encoding="utf-8")
    assert tool.problems(path) == []  # an emptied cell is not taken for one never executed


@pytest.mark.parametrize(
    ("output", "why"),
    [
        (WIDGET, "a live widget"),
        (MACHINE, "varies"),
        (
            _result({"text/plain": "EventBuilder('queue': 3 record(s), valid queue event, from the form)"}),
            "text stand-in of a widget",
        ),
        (_result({"text/plain": "IntSlider(value=3, description='Widgets:', max=10)"}), "text stand-in of a widget"),
        (_result({"text/html": "<div class='fnkit-environment'>✔</div>"}), "shows this machine"),
        (
            {"output_type": "stream", "name": "stdout", "text": "/home/ada/fnkit/.venv/lib/python3.11/site-packages\n"},
            "shows this machine",
        ),
    ],
)
def test_a_committed_notebook_holding_a_misleading_output_fails_the_check(tmp_path, output, why):
    path = tmp_path / "lesson.ipynb"
    path.write_text(json.dumps(_nb(_code("x", output))), encoding="utf-8")
    found = tool.problems(path)
    assert any(why in p and "cell 0 holds" in p for p in found), found


def test_a_tagged_cell_holds_no_output():
    nb = tool.normalise(_nb(_code("x", TEACHES, tags=[tool.IGNORE_TAG])), NOTEBOOKS / "lesson.ipynb")
    assert nb["cells"][0]["outputs"] == []


@pytest.mark.parametrize(
    "path",
    sorted(NOTEBOOKS.glob("*.ipynb")) + sorted((NOTEBOOKS / "solutions").glob("*.ipynb")),
    ids=lambda p: str(p.relative_to(NOTEBOOKS)),
)
def test_every_lesson_still_compares_the_outputs_that_teach(path):
    cells = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    compared = [c for c in cells if tool.IGNORE_TAG not in c["metadata"].get("tags", []) and c["outputs"]]
    assert len(compared) >= len(cells) // 2, f"{len(compared)} of {len(cells)} code cells compared"


def test_the_first_notebook_commits_neither_its_environment_check_nor_its_widgets():
    cells = json.loads((NOTEBOOKS / "00_start_here.ipynb").read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        if cell["cell_type"] == "code" and (
            "check_environment" in "".join(cell["source"]) or "IntSlider" in "".join(cell["source"])
        ):
            assert cell["outputs"] == [] and tool.IGNORE_TAG in cell["metadata"]["tags"]


# --- exercises from their solutions ------------------------------------------------------------------


def test_marked_answers_become_placeholders():
    solution = (
        "def handler(event, context):\n"
        "    name = event.get('name')  # answer\n"
        "    total: int = 0  # answer: start from zero\n"
        "    for r in event['Records']:\n"
        "        # answer: count each record\n"
        "        total += 1\n"
        "        # end answer\n"
        "    print(total)  # answer\n"
        "    # answer\n"
        "    x = 1\n"
        "    # end answer\n"
        "    return {'n': total}  # answer\n"
    )
    assert tool.strip_answers(solution) == (
        "def handler(event, context):\n"
        "    name = ...\n"
        "    total = ...  # start from zero\n"
        "    for r in event['Records']:\n"
        "        ...  # count each record\n"
        "    ...\n"
        "    ...\n"
        "    return ...\n"
    )


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("    # answer: x\n    y = 1\n", "without its '# end answer'"),
        ("    # end answer\n", "without its '# answer'"),
        ("    if x:  # answer\n", "not one whole statement"),
    ],
)
def test_a_broken_marker_is_named_with_its_line(source, says):
    with pytest.raises(tool.MarkerError, match=says):
        tool.strip_answers(source, "solutions/x.ipynb cell 3")


def test_an_exercise_that_drifts_from_its_solution_is_caught(tmp_path, monkeypatch):
    for folder in ("exercises", "solutions"):
        (tmp_path / folder).mkdir()
    solution = _nb(_code("def h(e, c):\n    return 1  # answer", TEACHES))
    (tmp_path / "solutions" / "a.ipynb").write_text(json.dumps(solution), encoding="utf-8")
    monkeypatch.setattr(tool, "NOTEBOOKS", tmp_path)
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    tool.write_exercises()
    exercise = json.loads((tmp_path / "exercises" / "a.ipynb").read_text(encoding="utf-8"))
    assert "".join(exercise["cells"][0]["source"]) == "def h(e, c):\n    return ..."
    assert exercise["cells"][0]["outputs"] == [] and exercise["cells"][0]["execution_count"] is None
    assert tool.twins() == []
    exercise["cells"][0]["source"] = "def h(e, c):\n    return 2"
    (tmp_path / "exercises" / "a.ipynb").write_text(tool.render(exercise), encoding="utf-8")
    assert tool.twins() == [
        (
            "exercises/a.ipynb is not solutions/a.ipynb minus its marked answers "
            "(run: .venv/bin/python tools/notebooks.py exercises a.ipynb)"
        )
    ]
    unmarked = _nb(_code("def h(e, c):\n    return 1", TEACHES))
    (tmp_path / "solutions" / "a.ipynb").write_text(json.dumps(unmarked), encoding="utf-8")
    assert tool.twins() == ["solutions/a.ipynb: no answer is marked (# answer ... # end answer)"]
