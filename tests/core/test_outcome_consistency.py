"""The three sources agree where they should: invalid events are refused, outcomes share names, one timeout name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import fnkit
from fnkit import ContractError, alb, mail, queue

pd = pytest.importorskip("pandas")


def queue_event():
    return queue.build_event(['{"id": 1}', '{"id": 2}'], seed=3)


def mail_event():
    return mail.build_event(mail_from="a@example.org", recipients=["b@example.com", "c@example.com"], seed=3)


def alb_event():
    return alb.build_event("GET", "/orders", seed=3)


EVENTS = {"queue": queue_event, "mail": mail_event, "alb": alb_event}
RUN: dict[str, Callable[..., Any]] = {"queue": queue.run, "mail": mail.run, "alb": alb.run}
GOOD = {
    "queue": lambda e, c: {"batchItemFailures": []},
    "mail": lambda e, c: {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}]},
    "alb": lambda e, c: {"statusCode": 200, "body": "ok"},
}


@pytest.mark.parametrize(
    ("source", "other"), [(s, o) for s in ("queue", "mail", "alb") for o in ("queue", "mail", "alb") if s != o]
)
def test_every_run_refuses_another_sources_event_without_calling_the_handler(source, other):
    calls = []
    with pytest.raises(ContractError):
        RUN[source](lambda e, c: calls.append(e), EVENTS[other]())
    assert calls == []


@pytest.mark.parametrize("source", ["queue", "mail", "alb"])
def test_every_run_refuses_text_that_is_not_json(source):
    calls = []
    with pytest.raises(ContractError):
        RUN[source](lambda e, c: calls.append(e), "{not json")
    assert calls == []


def test_a_request_the_load_balancer_answers_itself_is_still_an_outcome_not_an_error():
    event = alb.build_event("GET", "/chat", headers={"accept": "*/*"}, seed=1)
    event["headers"]["upgrade"] = "websocket"
    out = alb.run(lambda e, c: {"statusCode": 200}, event)
    assert (out.status, out.kind, out.ok, out.invoked) == (400, "refused", False, False)


@pytest.mark.parametrize("source", ["queue", "mail", "alb"])
def test_every_outcome_has_kind_ok_issues_event_issues_rows_and_a_frame(source):
    out = RUN[source](GOOD[source], EVENTS[source]())
    assert out.ok is True
    assert out.kind == {"queue": "success", "mail": "applied", "alb": "delivered"}[source]
    assert out.issues.ok and out.event_issues is not None and out.event_issues.ok
    rows = out.rows()
    assert len(rows) == {"queue": 2, "mail": 2, "alb": 1}[source]
    frame = out.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == len(rows) and "item" in frame.columns


def test_a_failure_is_not_ok_in_any_source():
    def boom(e, c):
        raise RuntimeError("down")

    batch = queue.run(boom, queue_event())
    assert (batch.kind, batch.ok) == ("failure", False)
    letter = mail.run(boom, mail_event())
    assert (letter.kind, letter.status, letter.ok) == ("fallback", "fallback", False)
    request = alb.run(boom, alb_event())
    assert (request.kind, request.status, request.ok) == ("error", 502, False)


def test_a_partial_batch_is_not_ok():
    event = queue_event()
    first = event["Records"][0]["messageId"]
    out = queue.run(lambda e, c: {"batchItemFailures": [{"itemIdentifier": first}]}, event)
    assert (out.kind, out.ok, out.failed_ids) == ("partial", False, (first,))


def test_an_asynchronous_mail_rule_is_ok_unless_its_function_fails():
    def boom(e, c):
        raise RuntimeError("down")

    assert mail.run(lambda e, c: None, mail_event(), mode="async").ok
    failed = mail.run(boom, mail_event(), mode="async")
    assert (failed.kind, failed.ok) == ("ignored", False)


def test_the_function_timeout_is_timeout_s_in_the_queue_config_too():
    config = queue.QueueConfig(timeout_s=5)
    assert config.function_timeout_s == config.timeout_s == 5
    assert queue.QueueConfig(function_timeout_s=4).timeout_s == 4  # the old name stays
    assert queue.QueueSim(timeout_s=7).function_timeout_s == 7
    with pytest.raises(TypeError, match="timeout_s and function_timeout_s are one setting"):
        queue.QueueConfig(timeout_s=5, function_timeout_s=4)
    with pytest.raises(TypeError, match="one setting"):
        queue.QueueSim(timeout_s=5, function_timeout_s=4)
    with pytest.raises(ValueError, match="Q2"):  # checked under either name
        queue.QueueConfig(timeout_s=60, visibility_timeout_s=30)


def test_a_queue_run_past_timeout_s_is_cut_by_the_config_or_the_keyword():
    import time

    def slow(e, c):
        time.sleep(0.3)

    assert queue.run(slow, queue_event(), timeout_s=0.05).kind == "failure"
    assert queue.run(slow, queue_event(), config=queue.QueueConfig(timeout_s=0.05)).kind == "failure"
    assert queue.run(slow, queue_event(), config=queue.QueueConfig(timeout_s=2)).kind == "success"


def test_outcomes_still_answer_to_their_old_names():
    request = alb.run(GOOD["alb"], alb_event())
    assert request.status == 200 and request.invoked
    letter = mail.run(GOOD["mail"], mail_event())
    assert letter.status == "applied" and letter.actions == {"b@example.com": "DEFAULT", "c@example.com": "DEFAULT"}
    assert fnkit.tabulate([queue.run(GOOD["queue"], queue_event())]).shape[0] == 2
