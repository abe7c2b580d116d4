"""`fnkit.check` and `fnkit check`: valid events drawn, the handler run, and per rule broken the smallest event.

The kit's own handlers and the exercises' right answers keep their contract; the exercises' wrong answers
(tests/workshop/test_wrong_answers.py) that break it are each found with a shrunk event, the same with the
same seed.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

import fnkit
from fnkit.cli import main
from fnkit.testing import strategies
from tests.workshop import test_wrong_answers as wrong

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "orders_service.py"
# the exercises' bodies: orders good and bad, and any other text (a poison message)
ORDERS = st.builds(lambda n, q: json.dumps({"order": n, "qty": q}), st.integers(1, 99), st.integers(-1, 3))
BODIES = st.one_of(ORDERS, strategies.QUEUE_BODIES)
FEW = 40  # examples for a handler that keeps its contract: enough to meet every shape, quick on two cores


def _orders_service() -> Any:
    spec = importlib.util.spec_from_file_location("orders_service_for_check", EXAMPLES)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _records(finding: Any) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = finding.event["Records"]
    return records


@pytest.mark.parametrize(
    ("name", "source"), [("process_orders", "queue"), ("orders_api", "alb"), ("screen_mail", "mail")]
)
def test_the_kits_example_handlers_keep_their_contract(name, source):
    result = fnkit.check(getattr(_orders_service(), name), source, examples=FEW, seed=3, isolation="none")
    assert result.ok, str(result)
    assert "no finding" in str(result)


@pytest.mark.parametrize(
    ("handler", "events"),
    [
        (wrong.partial_with_a_comprehension, strategies.queue_events(bodies=BODIES, fifo=False)),
        (wrong.stops_the_whole_batch_at_the_first_failure, strategies.queue_events(bodies=BODIES, fifo=True)),
        (wrong.bad_orders_in_a_comprehension, strategies.queue_events(bodies=ORDERS, fifo=False)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_the_exercises_right_answers_keep_their_contract(handler, events):
    assert fnkit.check(handler, "queue", examples=FEW, seed=1, isolation="none", events=events).ok


def test_a_handler_that_raises_on_a_bad_order_is_shown_the_smallest_batch_that_makes_it_raise():
    result = fnkit.check(wrong.lets_bad_order_escape, "queue", examples=30, seed=0, isolation="none")
    assert len(result) == 1, str(result)
    finding = result[0]
    assert finding.answer.startswith("raised BadOrder"), finding.answer
    assert "whole batch returns" in finding.platform
    records = _records(finding)
    assert len(records) == 1 and len(records[0]["body"]) <= 2, records  # shrunk: one record, a body of 0-2 chars


@pytest.mark.parametrize(
    ("handler", "words"),
    [
        (wrong.returns_the_receipt_handle, "looks like a receiptHandle"),
        (wrong.lists_bare_ids, "this one is a string"),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_a_response_the_poller_cannot_use_is_found_with_one_record(handler, words):
    result = fnkit.check(handler, "queue", examples=20, seed=0, isolation="none")
    assert len(result) == 1, str(result)
    assert words in result[0].says
    assert "whole batch" in result[0].says or "Every message returns" in result[0].says
    assert len(_records(result[0])) == 1


def test_a_fifo_group_that_goes_on_after_a_failure_is_found_with_two_messages_of_one_group():
    events = strategies.queue_events(bodies=BODIES, fifo=True)
    result = fnkit.check(wrong.not_fifo_safe, "queue", examples=60, seed=0, isolation="none", events=events)
    assert len(result) == 1, str(result)
    records = _records(result[0])
    groups = [r["attributes"]["MessageGroupId"] for r in records]
    assert len(records) == 2 and len(set(groups)) == 1, records
    assert "group" in result[0].says


@pytest.mark.parametrize(
    ("handler", "words"),
    [
        (wrong.status_as_a_string, "502 Bad Gateway"),
        (wrong.returns_bytes, "502 Bad Gateway"),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_an_answer_the_load_balancer_turns_into_502_is_found(handler, words):
    result = fnkit.check(handler, "alb", examples=30, seed=0, isolation="none")
    assert result.findings, str(result)
    assert any(words in f.platform for f in result), str(result)


def test_a_mail_answer_the_service_cannot_use_is_found_with_one_recipient():
    result = fnkit.check(wrong.lower_case_action_type, "mail", examples=30, seed=0, isolation="none")
    assert len(result) == 1, str(result)
    assert "fallback action" in result[0].platform
    assert len(result[0].event["envelope"]["recipients"]) == 1


def test_the_same_seed_gives_the_same_findings_and_events():
    first = fnkit.check(wrong.not_fifo_safe, "queue", examples=60, seed=7, isolation="none")
    again = fnkit.check(wrong.not_fifo_safe, "queue", examples=60, seed=7, isolation="none")
    assert [(f.rule, f.event, f.answer) for f in first] == [(f.rule, f.event, f.answer) for f in again]


def test_in_a_worker_a_handler_that_raises_is_found_as_in_this_process():
    here = fnkit.check(wrong.lets_bad_order_escape, "queue", examples=5, seed=4, isolation="none")
    worker = fnkit.check(wrong.lets_bad_order_escape, "queue", examples=5, seed=4, isolation="process")
    assert len(worker) == 1 and worker[0].answer.startswith("raised BadOrder"), str(worker)
    assert [(f.rule, f.event, f.answer) for f in worker] == [(f.rule, f.event, f.answer) for f in here]


def test_without_a_seed_a_found_case_is_kept_in_the_database_and_tried_first_next_time(tmp_path):
    first = fnkit.check(wrong.lists_bare_ids, "queue", examples=20, seed=None, isolation="none", database=tmp_path)
    assert len(first) == 1 and any(tmp_path.iterdir())
    # one example, drawn afresh (its ids would differ): the same event comes back only from the database
    again = fnkit.check(wrong.lists_bare_ids, "queue", examples=1, seed=None, isolation="none", database=tmp_path)
    assert [f.event for f in again] == [f.event for f in first]


def test_check_says_what_is_wrong_with_its_arguments():
    with pytest.raises(ValueError, match="source must be one of queue, mail, alb"):
        fnkit.check(wrong.lists_bare_ids, "sqs")
    with pytest.raises(ValueError, match="at least 1"):
        fnkit.check(wrong.lists_bare_ids, examples=0)


# --- the command line ----------------------------------------------------------------------------------------


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv, "--isolation", "none", "--no-database"])
    out, err = capsys.readouterr()
    return code, out, err


def test_fnkit_check_exits_1_with_the_shrunk_event_and_0_on_a_handler_that_keeps_its_contract(capsys):
    code, out, _ = _cli(capsys, "tests.workshop.test_wrong_answers:lists_bare_ids", "--examples", "5", "--seed", "0")
    assert code == 1
    assert "1 finding(s)" in out and "event:" in out and "answer:" in out
    code, out, _ = _cli(capsys, "tests.workshop.test_wrong_answers:partial_with_a_comprehension", "--examples", "5")
    assert code == 0, out
    assert "no finding" in out


def test_fnkit_check_writes_validates_formats(capsys):
    spec = "tests.workshop.test_wrong_answers:returns_the_receipt_handle"
    code, out, _ = _cli(capsys, spec, "--examples", "3", "--seed", "0", "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["command"] == "check" and doc["exit_code"] == 1
    (record,) = doc["records"]
    assert record["issues"][0]["rule"] == record["findings"][0]["rule"]
    assert len(record["findings"][0]["event"]["Records"]) == 1
    code, out, _ = _cli(capsys, spec, "--examples", "3", "--seed", "0", "--format", "sarif")
    assert code == 1 and json.loads(out)["runs"][0]["results"]
    code, out, _ = _cli(capsys, spec, "--examples", "3", "--seed", "0", "--format", "junit")
    assert code == 1 and "<failure" in out
    code, out, _ = _cli(capsys, spec, "--examples", "3", "--seed", "0", "--format", "github")
    assert code == 1 and out.startswith("::error")


def test_fnkit_check_exits_2_on_a_handler_it_cannot_import_or_a_bad_count(capsys):
    code, _, err = _cli(capsys, "no_such_module_here:handler")
    assert code == 2 and "cannot import the handler" in err
    with pytest.raises(SystemExit) as exited:
        main(["check", "tests.workshop.test_wrong_answers:lists_bare_ids", "--examples", "0"])
    assert exited.value.code == 2
    assert "at least 1" in capsys.readouterr().err


# --- inside a test -------------------------------------------------------------------------------------------


def test_check_handler_passes_a_handler_that_keeps_its_contract_and_fails_showing_the_event():
    from fnkit.testing import check_handler

    assert check_handler(wrong.partial_with_a_comprehension, examples=10).ok
    with pytest.raises(AssertionError) as failed:
        check_handler(wrong.returns_the_receipt_handle, examples=10)
    said = str(failed.value)
    assert "looks like a receiptHandle" in said and '"Records": [{' in said and "answer:" in said


# --- unmodified real handlers ------------------------------------------------------------------------------------


def allrecipients_as_text(event, context):  # as three WorkMail templates write it
    return {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": "true"}]}


def a_number_as_a_header_value(event, context):
    mode = "multiValueHeaders" if "multiValueHeaders" in event else "headers"
    return {"statusCode": 200, "body": "ok", mode: {"x-count": [3] if mode == "multiValueHeaders" else 3}}


def test_a_workmail_template_that_says_true_as_text_falls_back_to_default():
    result = fnkit.check(allrecipients_as_text, "mail", examples=20, seed=0, isolation="none")
    assert result.findings, str(result)
    first = result[0]
    assert "Expected a boolean" in first.sentence and "fallback action DEFAULT" in first.platform
    assert len(first.event["envelope"]["recipients"]) == 1


def test_a_number_as_a_header_value_is_a_502_shown_on_a_plain_get():
    result = fnkit.check(a_number_as_a_header_value, "alb", examples=20, seed=0, isolation="none")
    assert len(result) == 1 and "502 Bad Gateway" in result[0].platform, str(result)
    assert result[0].event["httpMethod"] == "GET" and result[0].event["path"] == "/"


def test_a_powertools_batch_processor_whose_every_record_fails_retries_the_whole_batch():
    from tests.interop import test_powertools as powertools

    events = strategies.queue_events(fifo=False, dialect="aws")
    first, again = (
        fnkit.check(powertools.batch_handler, "queue", examples=20, seed=0, isolation="none", events=events)
        for _ in range(2)
    )
    assert len(first) == 1 and first[0].answer.startswith("raised BatchProcessingError"), str(first)
    assert "whole batch returns" in first[0].platform
    assert [f.event for f in first] == [f.event for f in again]


def test_a_mangum_app_run_unchanged_keeps_the_load_balancer_contract_on_every_drawn_request(tmp_path, monkeypatch):
    from tests.interop.test_asgi import APP

    (tmp_path / "fnkit_check_asgi_app.py").write_text(APP)
    monkeypatch.syspath_prepend(str(tmp_path))
    app = importlib.import_module("fnkit_check_asgi_app")
    seen: list[str] = []

    def counted(event: Any, context: Any) -> Any:
        seen.append(event["path"])
        return app.handler(event, context)

    events = strategies.alb_events(dialect="aws")
    first = fnkit.check(counted, "alb", examples=FEW, seed=0, isolation="none", events=events)
    assert first.ok, str(first)
    drawn, seen[:] = list(seen), []
    again = fnkit.check(counted, "alb", examples=FEW, seed=0, isolation="none", events=events)
    assert again.ok and seen == drawn and len(set(drawn)) > 5
