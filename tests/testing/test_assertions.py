"""assert_valid and assert_outcome: they pass when fnkit agrees, and fail saying everything a user needs."""

from __future__ import annotations

import json
import time

import pytest

import fnkit
from fnkit import queue
from fnkit.testing import assert_outcome, assert_valid


def fail_message(check, *args, **kwargs) -> str:
    with pytest.raises(AssertionError) as caught:
        check(*args, **kwargs)
    return str(caught.value)


# --- assert_valid -----------------------------------------------------------------------------


def test_valid_events_of_every_source_pass_and_return_their_report(queue_event, mail_event, alb_event):
    for event, source in ((queue_event(), "queue"), (mail_event(), "mail"), (alb_event(), "alb")):
        report = assert_valid(event)
        assert report.ok and report.source == source and report.subject == "event"


def test_an_invalid_event_fails_listing_every_issue(queue_event):
    event = queue_event(["a", "b"])
    event["Records"][0]["md5OfBody"] = "0" * 32
    del event["Records"][1]["receiptHandle"]
    expected = list(queue.validate_event(event))
    assert len(expected) == 2
    message = fail_message(assert_valid, event)
    assert message.startswith("fnkit.testing.assert_valid: this queue event is not valid: 2 error(s), 0 warning(s).")
    for issue in expected:
        assert str(issue) in message


def test_source_forces_how_an_event_is_read(queue_event):
    message = fail_message(assert_valid, queue_event(), source="alb")
    assert message.startswith("fnkit.testing.assert_valid: this load balancer event is not valid")


def test_something_that_is_no_event_nor_response_fails():
    assert "mail response" in fail_message(assert_valid, {"actions": []})
    message = fail_message(assert_valid, "{not json")
    assert "not valid" in message and "JSON" in message


@pytest.mark.parametrize(
    ("response", "source"),
    [
        ({"batchItemFailures": [{"itemIdentifier": "m-1"}]}, "queue response"),
        ({"actions": [{"action": {"type": "DROP"}, "allRecipients": True}]}, "mail response"),
        ({"statusCode": 204, "headers": {}}, "load balancer response"),
        (
            {"statusCode": 200, "multiValueHeaders": {"set-cookie": ["a=1", "b=2"]}, "body": ""},
            "load balancer response",
        ),
    ],
)
def test_a_response_is_recognised_by_the_fields_it_uses(response, source):
    report = assert_valid(response)
    assert report.ok and report.subject == "response"


def test_an_invalid_response_fails_as_its_own_source():
    message = fail_message(assert_valid, {"statusCode": "200", "headers": {}})
    assert "this load balancer response is not valid" in message
    assert "$.statusCode: error:" in message
    message = fail_message(assert_valid, {"batchItemFailures": [{"itemIdentifer": "m-1"}]})
    assert "this queue response is not valid" in message and "itemIdentifer" in message


def test_the_event_says_whose_response_it_is_and_in_which_mode(alb_event, mail_event):
    multi = alb_event("GET", "/", multi_value=True)
    single_form = {"statusCode": 200, "headers": {"content-type": "text/plain"}, "body": "ok"}
    assert list(assert_valid(single_form, event=alb_event())) == []
    # in multi-value mode the load balancer ignores `headers` (A7): a warning, which strict=True fails on
    assert [w.rule for w in assert_valid(single_form, event=multi).warnings] == ["A7"]
    message = fail_message(assert_valid, single_form, event=multi, strict=True)
    assert "this load balancer response has warnings (strict=True)" in message and "[A7]" in message
    outbound = mail_event(flow_direction="OUTBOUND")
    assert assert_valid({"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}]}, event=outbound).ok
    with pytest.raises(ValueError, match="not an event of a known source"):
        assert_valid({}, event={"hello": 1})


def test_strict_turns_warnings_into_failures():
    response = {"batchItemFailures": [], "note": "extra"}
    report = assert_valid(response, source="queue")
    assert report.ok and report.warnings
    message = fail_message(assert_valid, response, source="queue", strict=True)
    assert "has warnings (strict=True)" in message and "'note'" in message


# --- assert_outcome ---------------------------------------------------------------------------------


def poison_handler(event, context):
    return {
        "batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"] if r["body"] == "poison"]
    }


def test_a_matching_outcome_passes_and_is_returned(queue_event):
    event = queue_event(["ok", "poison", "ok too"])
    ids = queue.correlation_ids(event)
    result = assert_outcome(
        poison_handler,
        event,
        kind="partial",
        failed_ids=[ids[1]],
        deleted_ids=[ids[2], ids[0]],
        rule="Q8",
        source="queue",  # a type checker then knows the outcome is a BatchOutcome
    )
    assert result.failed_ids == (ids[1],)


def test_a_differing_outcome_prints_what_differs_and_the_outcome_table(queue_event):
    event = queue_event(["ok", "poison"])
    ids = queue.correlation_ids(event)
    message = fail_message(assert_outcome, poison_handler, event, kind="success", failed_ids=[])
    lines = message.splitlines()
    assert lines[0] == "fnkit.testing.assert_outcome: the queue outcome is not what the test expects:"
    assert lines[1] == "  kind: expected 'success', got 'partial'"
    assert lines[2] == f"  failed_ids: expected [] (in any order), got ['{ids[1]}']; not expected ['{ids[1]}']"
    assert lines[3].startswith("Outcome: partial, rule Q8: Partial failure: 1 listed message returns")
    header = lines[4].split()
    assert header[:2] == ["item", "index"] and "action" in header
    assert lines[5].split()[0] == ids[0] and "delete" in lines[5].split()
    assert lines[6].split()[0] == ids[1] and "retry" in lines[6].split()


def test_a_raising_handler_shows_its_traceback_and_output(queue_event):
    def broken(event, context):
        print("reading", len(event["Records"]), "records")
        return event["Records"][0]["no such key"]

    message = fail_message(assert_outcome, broken, queue_event(), kind="success")
    assert "kind: expected 'success', got 'failure'" in message
    assert "Outcome: failure, rule Q6: The function raised KeyError" in message
    assert "Traceback (most recent call last):" in message and "in broken" in message
    assert "The handler's output:\nreading 1 records" in message


def test_run_keywords_go_to_run(queue_event, alb_event):
    event = queue_event(["ok", "poison"])
    assert_outcome(poison_handler, event, report_batch_item_failures=False, kind="success", rule="Q7", failed_ids=[])

    def slow(event, context):
        time.sleep(2)

    message = fail_message(assert_outcome, slow, alb_event(), status=200, timeout_s=0.2)
    assert "status: expected 200, got 502" in message and "The handler timed out after 0.2 s." in message


def test_load_balancer_expectations(alb_event):
    def hello(event, context):
        return {
            "statusCode": 200,
            "multiValueHeaders": {"set-cookie": ["a=1", "b=2"], "content-type": ["text/plain"]},
            "body": "héllo",
        }

    event = alb_event("GET", "/hello", multi_value=True)
    assert_outcome(
        hello, event, status=200, body="héllo", headers={"content-type": "text/plain", "set-cookie": ["a=1", "b=2"]}
    )
    assert_outcome(hello, event, body="héllo".encode())
    message = fail_message(
        assert_outcome, hello, event, status=201, body="hello", headers={"set-cookie": ["a=1"], "x-missing": "v"}
    )
    assert "status: expected 201, got 200" in message
    assert "body: expected 'hello', got 'héllo'" in message
    assert "headers: set-cookie: expected ['a=1'], got ['a=1', 'b=2']; x-missing: expected 'v', got None" in message
    assert "Outcome: 200 OK, rule AS4:" in message and "GET /hello" in message


def test_mail_expectations(mail_event):
    def bounce_first(event, context):
        first = event["envelope"]["recipients"][0]["address"]
        return {
            "actions": [
                {"action": {"type": "BOUNCE"}, "recipients": [first]},
                {"action": {"type": "DEFAULT"}, "allRecipients": True},
            ]
        }

    event = mail_event(recipients=["ana@example.com", "ben@example.com"])
    assert_outcome(
        bounce_first, event, status="applied", actions={"ana@example.com": "BOUNCE", "ben@example.com": "DEFAULT"}
    )
    message = fail_message(assert_outcome, bounce_first, event, actions="DEFAULT")
    assert "actions: expected 'DEFAULT' for every recipient" in message
    assert "ana@example.com" in message.splitlines()[4] or "ana@example.com" in message
    assert_outcome(bounce_first, event, mode="async", status="ignored")


def test_an_expectation_of_another_source_is_a_type_error(alb_event, queue_event):
    with pytest.raises(TypeError, match="failed_ids= does not apply to a load balancer outcome"):
        assert_outcome(lambda e, c: {"statusCode": 200}, alb_event(), failed_ids=[])
    with pytest.raises(TypeError, match="status=, body= does not apply to a queue outcome"):
        assert_outcome(poison_handler, queue_event(), status=200, body="x")


def test_kind_applies_to_every_source(alb_event, mail_event):
    assert_outcome(lambda e, c: {"statusCode": 200}, alb_event(), kind="delivered")
    message = fail_message(assert_outcome, lambda e, c: {"statusCode": 200}, alb_event(), kind="success")
    assert "kind: expected 'success', got 'delivered'" in message
    assert_outcome(lambda e, c: None, mail_event(), kind="fallback")


def test_an_invalid_event_fails_before_the_handler_runs(queue_event):
    called = []
    event = queue_event(["a"])
    event["Records"][0]["md5OfBody"] = "0" * 32
    message = fail_message(assert_outcome, lambda e, c: called.append(1), event, kind="success")
    assert "the queue event is not valid, so the platform would never send it" in message and "[Q13]" in message
    assert called == []
    message = fail_message(assert_outcome, lambda e, c: None, {"hello": 1})
    assert "not an event of a known source" in message and "[G3]" in message


def test_json_text_events_work_too(queue_event):
    event = queue_event(["poison"])
    assert_outcome(poison_handler, json.dumps(event), kind="partial", failed_ids=queue.correlation_ids(event))
    assert fnkit.validate(json.dumps(event)).ok
