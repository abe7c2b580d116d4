"""`workshop.progress()` and `kit.py progress`: which exercises a learner passed (fnkit/workshop/_progress.py)."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fnkit import workshop
from fnkit.workshop import _progress

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


def _code_cells(nb: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The code cells that define a handler, by its name."""
    out = {}
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and source.startswith("def "):
            out[source.split("(")[0].removeprefix("def ")] = cell
    return out


def learner_copy(folder: Path) -> Path:
    """A working copy with 01's exercises: the first solved, the second wrong, the third untouched."""
    (folder / "exercises").mkdir(parents=True)
    shutil.copy(NOTEBOOKS / "00_start_here.ipynb", folder / "00_start_here.ipynb")
    exercise = json.loads((NOTEBOOKS / "exercises" / "01_queue.ipynb").read_text(encoding="utf-8"))
    solution = json.loads((NOTEBOOKS / "solutions" / "01_queue.ipynb").read_text(encoding="utf-8"))
    mine = _code_cells(exercise)
    mine["report_failures"]["source"] = _code_cells(solution)["report_failures"]["source"]
    mine["keep_order"]["source"] = 'def keep_order(event, context):\n    return {"batchItemFailures": []}\n'
    path = folder / "exercises" / "01_queue.ipynb"
    path.write_text(json.dumps(exercise, indent=1), encoding="utf-8")
    return path


def test_progress_runs_a_copy_and_says_each_exercise_without_changing_the_learners_notebook(tmp_path):
    path = learner_copy(tmp_path / "work")
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    started = time.monotonic()
    result = workshop.progress(tmp_path / "work")
    taken = time.monotonic() - started
    rows = {r.exercise: r for r in result.rows}
    assert list(rows) == list(workshop.exercises())  # every exercise, in the registry's order
    assert rows["queue-partial"].status == "passed"
    assert rows["queue-fifo"].status == "failing"
    assert rows["queue-fifo"].detail.startswith("case") and rows["queue-fifo"].detail.endswith(".")
    assert rows["queue-poison"].status == "not done" and "placeholder" in rows["queue-poison"].detail
    assert rows["mail-executables"].status == "not in this copy" and "kit.py update" in rows["mail-executables"].detail
    assert rows["queue-partial"].notebook == "exercises/01_queue.ipynb"
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime  # the learner's file untouched
    text = str(result)
    assert text.splitlines()[0].startswith("work: 1 of ") and "✘ queue-fifo" in text
    assert "fnkit-progress" in result._repr_html_()
    assert result.seconds <= taken
    print(f"progress of one learner (01's three exercises run as a copy): {taken:.1f} s")


def test_the_saved_outputs_are_read_without_running_anything(tmp_path):
    work = tmp_path / "work"
    (work / "exercises").mkdir(parents=True)
    shutil.copy(NOTEBOOKS / "solutions" / "02_mail.ipynb", work / "exercises" / "02_mail.ipynb")
    started = time.monotonic()
    result = workshop.progress(work, stored=True)
    assert time.monotonic() - started < 2
    rows = {r.exercise: r.status for r in result.rows}
    assert rows["mail-executables"] == rows["mail-former-staff"] == rows["mail-full-mailboxes"] == "passed"
    assert rows["queue-partial"] == "not in this copy"
    assert "saved outputs" in result.headline()


@pytest.mark.parametrize(
    ("text", "status", "detail"),
    [
        ("queue-fifo: done: all 5 hidden cases pass.", "passed", "done: all 5 hidden cases pass."),
        (
            "queue-fifo: not done yet: keep_order still holds a placeholder (...); replace it. Then more.",
            "not done",
            "not done yet: keep_order still holds a placeholder (...); replace it.",
        ),
        (
            "queue-fifo: 2 of 5 hidden cases fail:\n  - case 'a': the queue gives it again. Change x.\n  - case 'b': y",
            "failing",
            "case 'a': the queue gives it again.",
        ),
    ],
)
def test_a_checks_text_is_read_back(text, status, detail):
    assert _progress.read_check(text, "queue-fifo") == (status, detail)


def test_the_status_is_read_from_the_checks_html_class_when_the_text_does_not_say_it():
    # a check that first says the handler's cell changed since it ran: "not done yet", in other words
    result = workshop.CheckResult("queue-fifo", "not done yet", "keep_order's cell changed since it ran: run it.")
    status, detail = _progress.read_check(str(result), "queue-fifo", result._repr_html_())
    assert (status, detail) == ("not done", "keep_order's cell changed since it ran: run it.")


def test_a_check_cell_that_raised_or_never_ran_is_said_so():
    raised = {"outputs": [{"output_type": "error", "ename": "NameError", "evalue": "name 'f' is not defined"}]}
    status, detail = _progress.cell_result(raised, "queue-fifo")
    assert status == "failing" and "NameError" in detail
    assert _progress.cell_result({"outputs": []}, "queue-fifo") == ("not done", "its check cell has not been run")


def _collected(folder: Path) -> Path:
    """Two learners' copies, collected by the instructor into one folder (saved outputs)."""
    for learner, source in (("ada", "solutions"), ("bob", "exercises")):
        (folder / learner / "exercises").mkdir(parents=True)
        shutil.copy(NOTEBOOKS / source / "01_queue.ipynb", folder / learner / "exercises" / "01_queue.ipynb")
    (folder / "bob" / "solutions").mkdir()  # released solutions are not the learner's work
    shutil.copy(NOTEBOOKS / "solutions" / "01_queue.ipynb", folder / "bob" / "solutions" / "01_queue.ipynb")
    return folder


def test_the_instructors_view_of_collected_copies_is_one_table_and_a_csv(tmp_path):
    collected = _collected(tmp_path / "collected")
    out = tmp_path / "class.csv"
    done = subprocess.run(
        [sys.executable, "-m", "fnkit.workshop", "progress", "--stored", "--csv", str(out), str(collected)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    ids = list(workshop.exercises())
    header = next(line for line in lines if line.startswith("learner"))
    assert header.split() == ["learner", "passed", *ids]
    queue = [ids.index(i) + 2 for i in ("queue-partial", "queue-fifo", "queue-poison")]
    ada = next(line for line in lines if line.startswith("ada ")).split()
    bob = next(line for line in lines if line.startswith("bob ")).split()
    assert ada[1] == f"3/{len(ids)}" and [ada[i] for i in queue] == ["✔", "✔", "✔"]
    assert bob[1] == f"0/{len(ids)}" and [bob[i] for i in queue] == ["…", "…", "…"]
    assert {ada[i] for i in range(2, len(ada)) if i not in queue} == {"-"}  # the other notebooks are not collected
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert len(rows) == 2 * len(workshop.exercises())
    exercises_01 = ("queue-partial", "queue-fifo", "queue-poison")  # exercises/01_queue.ipynb's (not lesson 01's task)
    assert {r["status"] for r in rows if r["learner"] == "ada" and r["exercise"] in exercises_01} == {"passed"}


def test_a_path_that_is_no_working_copy_is_one_sentence(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "fnkit.workshop", "progress", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "is not a folder" in done.stdout and "Traceback" not in done.stderr


def test_several_learners_run_at_once_and_come_back_in_order(tmp_path):
    for learner, source in (("ada", "solutions"), ("bob", "exercises"), ("cy", "solutions")):
        (tmp_path / learner / "exercises").mkdir(parents=True)
        shutil.copy(NOTEBOOKS / source / "02_mail.ipynb", tmp_path / learner / "exercises" / "02_mail.ipynb")
    results = _progress.class_progress(_progress.learner_copies([tmp_path]), jobs=3)
    assert [p.learner for p in results] == ["ada", "bob", "cy"]
    mail = [[r.status for r in p.rows if r.exercise.startswith("mail")] for p in results]
    assert mail == [["passed"] * 3, ["not done"] * 3, ["passed"] * 3]
    assert all(not p.stored for p in results)
