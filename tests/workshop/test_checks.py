"""Checks and "try it" (fnkit/workshop/_registry.py): results, "not done yet", nonsense in, sentences out."""

from __future__ import annotations

import json
import linecache
from pathlib import Path
from typing import Any

import pytest

import fnkit
from fnkit import queue, workshop
from fnkit.workshop import BadOrder, process_order

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


def run_notebook_code(path: Path) -> tuple[dict[str, Any], list[Any]]:
    """Execute a notebook's code cells in one namespace (each cell a 'file' inspect can read); the check results."""
    results = []
    real_check = workshop.check

    def recording_check(exercise_id, handler):
        result = real_check(exercise_id, handler)
        results.append(result)
        return result

    namespace: dict[str, Any] = {"__name__": "__notebook__"}
    cells = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    workshop.check = recording_check
    try:
        for n, cell in enumerate(cells):
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            name = f"<notebook {path.name} cell {n}>"
            linecache.cache[name] = (len(source), None, source.splitlines(True), name)
            exec(compile(source, name, "exec"), namespace)
    finally:
        workshop.check = real_check
    return namespace, results


def notebook_pairs() -> list[str]:
    return sorted(p.name for p in (NOTEBOOKS / "solutions").glob("*.ipynb"))


@pytest.mark.parametrize("name", notebook_pairs())
def test_every_solution_passes_its_checks(name):
    _, results = run_notebook_code(NOTEBOOKS / "solutions" / name)
    assert results, "a solution notebook without check cells"
    for result in results:
        assert result.passed, str(result)


@pytest.mark.parametrize("name", notebook_pairs())
def test_every_learner_version_runs_and_names_each_placeholder(name):
    _, results = run_notebook_code(NOTEBOOKS / "exercises" / name)
    assert results
    for result in results:
        assert result.status == "not done yet", str(result)
        assert "placeholder" in result.message and "replace" in result.message
        assert result.problems and all("line " in p and "(in " in p for p in result.problems), str(result)


def test_at_least_three_exercises_per_source_each_checked_in_a_notebook():
    ids = workshop.exercises()
    for source in ("queue", "mail", "alb"):
        assert sum(1 for i in ids if i.startswith(source + "-")) >= 3
    # in an exercises notebook, or (a lesson's first task, such as 01's) in a lesson
    found = [*(NOTEBOOKS / "exercises").glob("*.ipynb"), *NOTEBOOKS.glob("*.ipynb")]
    text = "".join(p.read_text(encoding="utf-8") for p in found)
    for exercise_id in ids:
        assert f'workshop.check(\\"{exercise_id}\\"' in text, exercise_id


# --- "not done yet" and wrong input ------------------------------------------------------------


def test_every_placeholder_is_named_with_its_line():
    def half_done(event, context):  # a learner's cell, half written
        failures: Any = []
        for record in event["Records"]:  # noqa: B007 - not read yet
            failures += ...
        return ...

    result = workshop.check("queue-partial", half_done)
    assert result.status == "not done yet" and not result.passed
    assert result.message.startswith("not done yet: half_done still holds 2 placeholders (...); replace each")
    first_line = half_done.__code__.co_firstlineno
    assert result.problems == [
        f"line {first_line + 3} (in half_done): failures += ...",
        f"line {first_line + 4} (in half_done): return ...",
    ]


def test_one_placeholder_is_it():
    def untouched(event, context): ...

    result = workshop.check("queue-partial", untouched)
    assert "holds a placeholder (...); replace it with your code" in result.message
    assert len(result.problems) == 1


def test_nonsense_is_answered_in_a_sentence_not_an_exception():
    assert workshop.check("queue-partial", None).status == "not done yet"
    assert "not a function" in workshop.check("queue-partial", 42).message
    result = workshop.check("no-such-exercise", lambda e, c: None)
    assert result.status == "failed" and "queue-partial" in result.message


def test_a_hanging_handler_stops_the_check_after_one_case():
    def forever(event, context):
        while True:
            pass

    result = workshop.check("alb-upper", forever)
    assert result.status == "failed"
    assert result.message.startswith("the check stopped at hidden case 1 of")
    assert "did not return within 2 s, so it was stopped and the other cases were not run" in result.problems[0]


def swallows_everything(event, context):
    import time

    while True:
        try:
            time.sleep(1)
        except BaseException:  # noqa: BLE001 - the learner's mistake: even a stop request is swallowed
            pass


@pytest.mark.parametrize("exercise", ["queue-poison", "mail-executables"])  # alb: the test above
def test_a_handler_that_swallows_every_exception_is_killed_in_its_worker_process(exercise):
    before = fnkit.isolation.stats()
    result = workshop.check(exercise, swallows_everything)
    after = fnkit.isolation.stats()
    assert result.status == "failed" and len(result.problems) == 1
    assert result.problems[0].endswith(
        "so it was stopped and the other cases were not run: look for a loop that never ends."
    )
    assert result.problems[0].count(". ") == 0  # one sentence
    assert after["workers_killed"] == before["workers_killed"] + 1  # a hard stop of its worker process
    assert after["abandoned_threads_total"] == before["abandoned_threads_total"]  # no thread of ours left spinning


def test_queue_checks_read_the_calls_from_the_worker_process():
    def processes_after_a_failure(event, context):  # lists the rest of the group, but processed them first
        failures, stopped = [], set()
        for record in event["Records"]:
            group = record["attributes"]["MessageGroupId"]
            try:
                process_order(record["body"])
            except BadOrder:
                stopped.add(group)
            if group in stopped:
                failures.append({"itemIdentifier": record["messageId"]})
        return {"batchItemFailures": failures}

    before = fnkit.isolation.stats()["calls"]
    result = workshop.check("queue-fifo", processes_after_a_failure)
    assert fnkit.isolation.stats()["calls"] > before  # the cases ran in worker processes
    assert any("processed message" in p and "after that customer's earlier order failed" in p for p in result.problems)


def test_results_render_as_text_and_html():
    result = workshop.check("queue-partial", lambda e, c: None)
    # no order processed at all: even the batch of good orders fails (nothing was done with them)
    assert str(result).startswith("queue-partial: 6 of 6 hidden cases fail:")
    assert "your handler never called process_order" in str(result)
    html = result._repr_html_()
    assert "fnkit-check-failed" in html and "overflow-wrap:anywhere" in html


def test_findings_beyond_three_are_counted_not_listed():
    def everything_wrong(event, context):
        return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"][:1]]}

    result = workshop.check("queue-partial", everything_wrong)
    assert len(result.problems) <= 4
    if len(result.problems) == 4:
        assert result.problems[-1].startswith("… and ")


# --- try it ------------------------------------------------------------------------------------------


def report_failures(event, context):
    failures = []
    for record in event["Records"]:
        try:
            process_order(record["body"])
        except BadOrder:
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


def test_try_it_gives_the_outcome_of_a_finished_handler():
    batch = queue.build_event(['{"order": 1, "qty": 2}', '{"order": 2, "qty": 0}'], seed=5)
    outcome = workshop.try_it(report_failures, batch)
    assert outcome.kind == "partial" and list(outcome.failed_ids) == [batch["Records"][1]["messageId"]]
    assert workshop.try_it(report_failures, json.dumps(batch)).kind == "partial"  # JSON text works too


def test_try_it_says_not_done_yet_instead_of_running_an_unfinished_handler():
    def unfinished(event, context):
        return ...

    result = workshop.try_it(unfinished, queue.build_event(["a"]))
    assert result.status == "not done yet" and "unfinished still holds a placeholder" in result.message


def test_try_it_locates_invalid_json():
    result = workshop.try_it(report_failures, '{"Records": [\n  {"body": "x",}\n]}')
    assert result.status == "failed"
    assert "line 2, column 16" in result.message and "not valid JSON" in result.message
    assert 'the line reads: {"body": "x",}' in result.message


def test_try_it_explains_what_is_not_an_event():
    assert "not an event of the queue" in workshop.try_it(report_failures, {"hello": 1}).message
    result = workshop.try_it(report_failures, {"Records": [{"body": "x"}]})
    assert "never sends an event like this queue event" in result.message
    assert any("messageId" in p for p in result.problems)
    assert "empty" in workshop.try_it(report_failures, "  ").message
