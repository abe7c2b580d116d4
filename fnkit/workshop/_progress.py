"""`workshop.progress()` and `kit.py progress PATH...`: which exercises a learner has passed.

A learner's working copy is read, never changed: each notebook that holds a check cell
(`workshop.check("id", handler)`) is executed as an in-memory copy with nbclient (the
learner's file is not written), or, with `stored=True`, only its saved outputs are read
(instant, but as old as the learner's last run). Every registered exercise gets one row:
passed, not done, failing (with the check's first sentence), or not in the copy.
"""

from __future__ import annotations

import csv
import io
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._registry import CheckResult, exercises

PASSED, NOT_DONE, FAILING, MISSING = "passed", "not done", "failing", "not in this copy"
MARKS = {PASSED: "✔", NOT_DONE: "…", FAILING: "✘", MISSING: "-"}
RANK = {MISSING: 0, NOT_DONE: 1, FAILING: 2, PASSED: 3}
CELL_TIMEOUT_S = 120
# learners run at once by `kit.py progress PATH...`: kernels mostly wait (start-up, the checks' workers), so two at
# once took 36.7 s where one after the other took 53.9 s (two learners, 2 shared cores at a load average of 12)
DEFAULT_JOBS = 4
_CHECK_CALL = re.compile(r"""\bcheck\(\s*(?P<q>["'])(?P<id>[^"']+)(?P=q)""")
# folders of a working copy that hold no learner's work: backups, checkpoints, the released solutions
SKIPPED_FOLDERS = {".backup", ".ipynb_checkpoints", "solutions"}


@dataclass
class ExerciseProgress:
    """One exercise in one learner's copy: `status` (passed, not done, failing, not in this copy) and why."""

    exercise: str
    title: str
    status: str
    detail: str = ""
    notebook: str = ""


@dataclass
class Progress:
    """Every exercise of one learner's working copy (`rows`), and how long reading it took."""

    learner: str
    rows: list[ExerciseProgress] = field(default_factory=list)
    seconds: float = 0.0
    stored: bool = False

    @property
    def passed(self) -> int:
        return sum(1 for r in self.rows if r.status == PASSED)

    def headline(self) -> str:
        how = "saved outputs" if self.stored else f"run as a copy in {self.seconds:.1f} s"
        return f"{self.learner}: {self.passed} of {len(self.rows)} exercises passed ({how})"

    def __str__(self) -> str:
        lines = [self.headline()]
        width = max((len(r.exercise) for r in self.rows), default=0)
        for r in self.rows:
            text = f"{MARKS[r.status]} {r.exercise.ljust(width)}  {r.status}"
            lines.append(text + (f": {r.detail}" if r.detail else ""))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        from .._cells import panel_html

        rows = [
            {
                "": MARKS[r.status],
                "exercise": r.exercise,
                "status": r.status,
                "detail": r.detail,
                "notebook": r.notebook,
            }
            for r in self.rows
        ]
        tone = "good" if self.passed == len(self.rows) else "mixed"
        return panel_html(self.headline(), tone=tone, rows=rows, css_class="fnkit-progress")


def first_sentence(text: str) -> str:
    """The first sentence of a check's finding (up to its first '. ' or the end)."""
    text = " ".join(text.split())
    cut = text.find(". ")
    return text if cut < 0 else text[: cut + 1]


_STATUS_CLASS = re.compile(r"\bfnkit-check-(?P<status>[a-z-]+)")


def read_check(text: str, exercise_id: str, html: str = "") -> tuple[str, str]:
    """(status, detail) from a check's output: its status from the HTML's class (`CheckResult._repr_html_`), else
    from its text (`str(CheckResult)`); the detail is the text's first sentence that says why."""
    lines = text.splitlines()
    head = lines[0].removeprefix(f"{exercise_id}: ") if lines else ""
    problems = [line.strip().removeprefix("- ") for line in lines[1:] if line.strip().startswith("- ")]
    marked = _STATUS_CLASS.search(html)
    status = marked["status"].replace("-", " ") if marked else CheckResult.status_of(head)
    if status == "passed":
        return PASSED, head
    if status == "not done yet":
        return NOT_DONE, first_sentence(head)
    return FAILING, first_sentence(problems[0] if problems else head)


def _output_text(output: Any) -> str:
    if output.get("output_type") == "error":
        return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
    data = output.get("data") or {}
    text = data.get("text/plain", "") if output.get("output_type") != "stream" else output.get("text", "")
    return text if isinstance(text, str) else "".join(text)


def checks_in(nb: Any) -> list[tuple[str, Any]]:
    """(exercise id, cell) for each check cell of a notebook, in order."""
    found: list[tuple[str, Any]] = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = source if isinstance(source, str) else "".join(source)
        found.extend((match["id"], cell) for match in _CHECK_CALL.finditer(source))
    return found


def cell_result(cell: Any, exercise_id: str) -> tuple[str, str]:
    """(status, detail) of one check cell from its outputs (executed or saved)."""
    outputs = cell.get("outputs") or []
    for output in outputs:
        if output.get("output_type") == "error":
            why = f"the check cell raised {_output_text(output)}"
            return FAILING, first_sentence(why + (". Run the cells above it first." if "NameError" in why else ""))
    for output in outputs:
        text = _output_text(output)
        if text.startswith(f"{exercise_id}: "):
            html = (output.get("data") or {}).get("text/html", "")
            return read_check(text, exercise_id, html if isinstance(html, str) else "".join(html))
    return NOT_DONE, "its check cell has not been run"


def notebooks_of(copy: Path) -> list[Path]:
    """The learner's notebooks of a working copy that hold a check cell (solutions and backups left out)."""
    found = []
    for path in sorted(copy.rglob("*.ipynb")):
        if SKIPPED_FOLDERS & set(path.relative_to(copy).parts[:-1]):
            continue
        found.append(path)
    return found


def _execute_copy(path: Path, timeout_s: float) -> Any:
    """The notebook at `path` executed in memory (its file untouched); cells that raise do not stop it."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=timeout_s,
        allow_errors=True,
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    return nb


def learner_progress(copy: str | Path, *, stored: bool = False, name: str | None = None) -> Progress:
    """Every registered exercise in the working copy `copy`: its status, read as `progress` says."""
    import json

    copy = Path(copy)
    started = time.monotonic()
    results: dict[str, ExerciseProgress] = {}
    titles = exercises()
    for path in notebooks_of(copy):
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            for exercise_id in titles:
                results.setdefault(
                    exercise_id,
                    ExerciseProgress(exercise_id, titles[exercise_id], MISSING, f"{path.name} unreadable: {exc}"),
                )
            continue
        if not checks_in(saved):
            continue
        nb = saved if stored else _execute_copy(path, CELL_TIMEOUT_S)
        rel = path.relative_to(copy).as_posix()
        for exercise_id, cell in checks_in(nb):
            if exercise_id not in titles:
                continue
            status, detail = cell_result(cell, exercise_id)
            found = results.get(exercise_id)
            # the same exercise in two notebooks (a copy beside yours after `kit.py update`): the further one counts
            if found is None or RANK[status] >= RANK[found.status]:
                results[exercise_id] = ExerciseProgress(exercise_id, titles[exercise_id], status, detail, rel)
    rows = [
        results.get(exercise_id)
        or ExerciseProgress(exercise_id, title, MISSING, "no notebook of this copy checks it: python3 kit.py update")
        for exercise_id, title in titles.items()
    ]
    return Progress(name or copy.name, rows, time.monotonic() - started, stored)


def progress(path: str | Path | None = None, *, stored: bool = False) -> Progress:
    """Which exercises of your working copy (work/, or `path`) pass, are not done, or fail, and why (one table).

    Your notebooks are executed as copies in memory, each in a kernel of its own: your files and your
    kernel are left as they are (save first: the saved notebooks are what is read). `stored=True` reads
    the outputs as saved instead (instant; as old as your last run).
    """
    from ._environment import find_root

    if path is None:
        root = find_root()
        path = (root / "work") if root is not None else Path.cwd()
    return learner_progress(path, stored=stored)


def learner_copies(paths: Iterable[str | Path]) -> list[Path]:
    """The working copies under `paths`: a folder holding notebooks is one; otherwise each sub-folder that does."""
    copies = []
    for given in map(Path, paths):
        if not given.is_dir():
            raise ValueError(f"{given} is not a folder (give a learner's working copy, or a folder of them)")
        if any(given.glob("*.ipynb")) or (given / "exercises").is_dir():
            copies.append(given)
            continue
        found = [sub for sub in sorted(given.iterdir()) if sub.is_dir() and notebooks_of(sub)]
        if not found:
            raise ValueError(f"{given} holds no notebook, nor folders of notebooks")
        copies.extend(found)
    return copies


def class_progress(copies: Sequence[Path], *, stored: bool = False, jobs: int = DEFAULT_JOBS) -> list[Progress]:
    """Each working copy's progress, `jobs` learners at a time (each notebook in a kernel of its own), in order."""
    from concurrent.futures import ThreadPoolExecutor

    def one(copy: Path) -> Progress:
        result = learner_progress(copy, stored=stored)
        print(f"== {result.headline()}", flush=True)
        return result

    with ThreadPoolExecutor(max(1, min(jobs, len(copies)))) as pool:
        return list(pool.map(one, copies))


def class_table(progresses: Sequence[Progress]) -> str:
    """One line per learner, one column per exercise (✔ passed, … not done, ✘ failing, - missing)."""
    ids = [r.exercise for r in progresses[0].rows] if progresses else []
    width = max((len(p.learner) for p in progresses), default=7)
    lines = [" ".join(["learner".ljust(width), "passed", *ids])]
    for p in progresses:
        marks = [MARKS[r.status].center(len(r.exercise)) for r in p.rows]
        lines.append(" ".join([p.learner.ljust(width), f"{p.passed}/{len(p.rows)}".center(6), *marks]))
    return "\n".join(lines)


def class_csv(progresses: Sequence[Progress]) -> str:
    """One row per learner and exercise: learner, exercise, status, detail, notebook."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["learner", "exercise", "status", "detail", "notebook"])
    for p in progresses:
        for r in p.rows:
            writer.writerow([p.learner, r.exercise, r.status, r.detail, r.notebook])
    return out.getvalue()


def progress_main(argv: list[str]) -> int:
    """`python -m fnkit.workshop progress [--stored] [--jobs N] [--csv FILE] [PATH...]` (no PATH: work/ here)."""
    stored = "--stored" in argv
    args = [a for a in argv if a != "--stored"]
    jobs = DEFAULT_JOBS
    if "--jobs" in args:
        at = args.index("--jobs")
        if at + 1 >= len(args) or not args[at + 1].isdigit() or int(args[at + 1]) < 1:
            print("kit.py progress: --jobs takes a number of learners to run at once, e.g. --jobs 4")
            return 2
        jobs = int(args[at + 1])
        del args[at : at + 2]
    csv_path = None
    if "--csv" in args:
        at = args.index("--csv")
        if at + 1 >= len(args):
            print("usage: python3 kit.py progress [--stored] [--csv FILE] [PATH...]")
            return 2
        csv_path = Path(args[at + 1])
        del args[at : at + 2]
    if not args:
        results = [progress(stored=stored)]
    else:
        try:
            copies = learner_copies(args)
        except ValueError as exc:
            print(f"kit.py progress: {exc}")
            return 2
        results = class_progress(copies, stored=stored, jobs=jobs)
    if len(results) == 1:
        print(results[0])
    else:
        print(class_table(results))
        failing = [(p.learner, r) for p in results for r in p.rows if r.status == FAILING]
        for learner, r in failing:
            print(f"✘ {learner} {r.exercise}: {r.detail}")
    if csv_path is not None:
        csv_path.write_text(class_csv(results), encoding="utf-8")
        print(f"wrote {csv_path} (one row per learner and exercise)")
    return 0
