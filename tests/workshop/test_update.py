"""`kit.py update` and `kit.py release` (fnkit/workshop/_update.py), and an exercise added to a learner's working
copy that `workshop.progress()` then shows, the learner's edits untouched."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fnkit import workshop
from fnkit.workshop import _update

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


def _kit():
    spec = importlib.util.spec_from_file_location("fnkit_kit_update", ROOT / "kit.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kit = _kit()


def _read(path: Path) -> dict[str, Any]:
    nb: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return nb


def _write(path: Path, nb: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")


def _cell(nb: dict[str, Any], start: str) -> dict[str, Any]:
    return next(c for c in nb["cells"] if "".join(c["source"]).startswith(start))


def _update_cli(pristine: Path, work: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fnkit.workshop", "update", "--pristine", str(pristine), "--work", str(work), *more],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def course(tmp_path: Path) -> tuple[Path, Path]:
    """The instructor's notebooks before the mail flow's third exercise was written, and a learner's working copy
    of them (made as `kit.py lab` makes it), with the first exercise solved and a cell of the learner's own."""
    pristine, work = tmp_path / "notebooks", tmp_path / "work"
    exercise = _read(NOTEBOOKS / "exercises" / "02_mail.ipynb")
    exercise["cells"] = exercise["cells"][:10]  # no "3. Bounce full mailboxes" yet
    _write(pristine / "exercises" / "02_mail.ipynb", exercise)
    kit.prepare_work_copy(pristine, work)
    assert _update_cli(pristine, work, "--check").stdout == ""  # as `kit.py lab` runs it: nothing changed yet
    mine = _read(work / "exercises" / "02_mail.ipynb")
    solution = _read(NOTEBOOKS / "solutions" / "02_mail.ipynb")
    _cell(mine, "def filter_mail")["source"] = _cell(solution, "def filter_mail")["source"]
    own = {"cell_type": "markdown", "id": "my-note", "metadata": {}, "source": "my note: the attachments come first"}
    mine["cells"].insert(5, own)
    _write(work / "exercises" / "02_mail.ipynb", mine)
    return pristine, work


def test_an_exercise_added_reaches_the_learners_copy_and_progress_shows_it_edits_untouched(course):
    pristine, work = course
    learner = work / "exercises" / "02_mail.ipynb"
    before = workshop.progress(work)
    assert {r.exercise: r.status for r in before.rows}["mail-full-mailboxes"] == "not in this copy"
    # the instructor adds the exercise (its judge is in fnkit; its cells in the notebook), the learner updates
    _write(pristine / "exercises" / "02_mail.ipynb", _read(NOTEBOOKS / "exercises" / "02_mail.ipynb"))
    done = _update_cli(pristine, work)
    assert done.returncode == 0, done.stderr
    assert "work/exercises/02_mail.ipynb: merged - 3 cell(s) new or changed; your edits kept" in done.stdout
    merged = _read(learner)
    solution = _read(NOTEBOOKS / "solutions" / "02_mail.ipynb")
    assert _cell(merged, "def filter_mail")["source"] == _cell(solution, "def filter_mail")["source"]  # the edit
    ids = [c["id"] for c in merged["cells"]]
    assert ids.index("my-note") == 5  # the learner's own cell, where it was
    assert "".join(merged["cells"][-1]["source"]) == 'workshop.check("mail-full-mailboxes", full_mailboxes)'
    backups = list((work / ".backup").rglob("02_mail.ipynb"))
    assert len(backups) == 1 and "my-note" in backups[0].read_text(encoding="utf-8")  # the previous version kept
    after = {r.exercise: r for r in workshop.progress(work).rows}
    assert after["mail-executables"].status == "passed"
    assert after["mail-full-mailboxes"].status == "not done"  # the new exercise, shown
    assert _read(learner) == merged  # progress changed nothing
    assert "up to date" in _update_cli(pristine, work).stdout  # nothing new since


def test_a_cell_both_changed_gets_the_new_version_beside_the_learners_never_over_it(course):
    pristine, work = course
    learner = work / "exercises" / "02_mail.ipynb"
    mine = learner.read_bytes()
    new = _read(pristine / "exercises" / "02_mail.ipynb")
    cell = _cell(new, "def filter_mail")
    cell["source"] = "".join(cell["source"]) + "\n    # hint: EXECUTABLE_EXTENSIONS holds lower-case names"
    _write(pristine / "exercises" / "02_mail.ipynb", new)
    checked = _update_cli(pristine, work, "--check")  # what `kit.py lab` says
    assert "changed since your copy (exercises/02_mail.ipynb): python3 kit.py update" in checked.stdout
    assert learner.read_bytes() == mine
    done = _update_cli(pristine, work)
    assert "side by side - you and the instructor both changed cell c03-54e16712 (def filter_mail" in done.stdout
    assert learner.read_bytes() == mine  # never overwritten
    beside = work / "exercises" / "02_mail.updated.ipynb"
    assert "lower-case names" in beside.read_text(encoding="utf-8")


def test_a_change_to_a_cell_the_learner_left_alone_is_merged_in(course):
    pristine, work = course
    new = _read(pristine / "exercises" / "02_mail.ipynb")
    cell = _cell(new, "def former_staff")
    cell["source"] = "".join(cell["source"]) + "  # gone: a set"
    _write(pristine / "exercises" / "02_mail.ipynb", new)
    planned = _update.update(pristine, work)
    assert [(p.notebook, p.action) for p in planned] == [("exercises/02_mail.ipynb", "merged")]
    merged = _read(work / "exercises" / "02_mail.ipynb")
    assert "".join(_cell(merged, "def former_staff")["source"]).endswith("# gone: a set")
    assert "my-note" in [c["id"] for c in merged["cells"]]


def test_solutions_are_hidden_until_released(tmp_path):
    pristine, work = tmp_path / "notebooks", tmp_path / "work"
    for name in ("01_queue", "02_mail"):
        for kind in ("exercises", "solutions"):
            (pristine / kind).mkdir(parents=True, exist_ok=True)
            shutil.copy(NOTEBOOKS / kind / f"{name}.ipynb", pristine / kind)
    assert _update.release(pristine, []) == []  # before the day: every solution hidden
    copied = kit.prepare_work_copy(pristine, work)
    assert sorted(p.as_posix() for p in copied) == ["exercises/01_queue.ipynb", "exercises/02_mail.ipynb"]
    assert _update.release(pristine, ["02_mail"]) == ["02_mail"]
    planned = _update.update(pristine, work)
    assert [(p.notebook, p.action) for p in planned] == [("solutions/02_mail.ipynb", "copied")]
    assert not (work / "solutions" / "01_queue.ipynb").exists()
    with pytest.raises(ValueError, match="no solution is called 09_nothing"):
        _update.release(pristine, ["09_nothing"])
    # without a RELEASED file, every solution is the learner's (self-study, as before)
    (pristine / "solutions" / "RELEASED").unlink()
    assert kit.copy_new_notebooks(pristine, work) == [Path("solutions/01_queue.ipynb")]
