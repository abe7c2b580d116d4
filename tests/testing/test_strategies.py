"""fnkit.testing.strategies: every drawn event and response is valid, and the knobs narrow what is drawn."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import fnkit
from fnkit import alb, mail, queue
from fnkit.testing import strategies


def _clean(report) -> bool:
    return report.ok and list(report) == []


@given(strategies.queue_events(), st.data())
def test_queue_events_and_responses_are_valid(event, data):
    assert _clean(queue.validate_event(event))
    response = data.draw(strategies.queue_responses(event))
    assert _clean(queue.validate_response(response))
    result = queue.outcome(event, response)
    assert set(result.failed_ids) | set(result.deleted_ids) == set(queue.correlation_ids(event))


@given(strategies.mail_events(), st.data())
def test_mail_events_and_responses_are_valid(event, data):
    assert _clean(mail.validate_event(event))
    response = data.draw(strategies.mail_responses(event))
    assert _clean(mail.validate_response(response, flow_direction=event["flowDirection"]))
    assert mail.outcome(event, response).status == "applied"


@given(strategies.alb_events(), st.data())
def test_alb_events_and_responses_are_valid(event, data):
    assert _clean(alb.validate_event(event))
    response = data.draw(strategies.alb_responses(event=event))
    assert _clean(alb.validate_response(response, multi_value="multiValueHeaders" in event))
    assert alb.outcome(event, response).status == response["statusCode"]


@settings(max_examples=30)
@given(
    strategies.queue_events(
        fifo=True,
        dialect="aws",
        min_records=2,
        max_records=3,
        bodies=st.sampled_from(["x", "y"]),
        message_attributes=False,
        receive_counts=False,
    )
)
def test_queue_events_can_be_narrowed(event):
    records = event["Records"]
    assert 2 <= len(records) <= 3 and {r["body"] for r in records} <= {"x", "y"}
    assert queue.is_fifo(event) and fnkit.validate(event).dialect == "aws"
    assert all(r["messageAttributes"] == {} and r["attributes"]["ApproximateReceiveCount"] == "1" for r in records)


@settings(max_examples=30)
@given(
    strategies.mail_events(
        flow_direction="OUTBOUND",
        max_recipients=2,
        subject=st.just("Hi"),
        addresses=st.sampled_from(["a@example.com", "b@example.com", "c@example.com"]),
    )
)
def test_mail_events_can_be_narrowed(event):
    assert event["flowDirection"] == "OUTBOUND" and event["subject"] == "Hi"
    assert 1 <= len(event["envelope"]["recipients"]) <= 2


@settings(max_examples=30)
@given(strategies.alb_events(methods=st.just("POST"), multi_value=True, dialect="aws", bodies=st.just(b"\x00\xff")))
def test_alb_events_can_be_narrowed(event):
    assert event["httpMethod"] == "POST" and "multiValueHeaders" in event and event["isBase64Encoded"]
    assert fnkit.validate(event).dialect == "aws"


@settings(max_examples=40)
@given(strategies.queue_events(), strategies.alb_events(), strategies.mail_events(dialect="aws"))
def test_each_strategy_draws_one_spelling_the_projects_default(queue_event, alb_event, mail_event):
    assert fnkit.validate(queue_event).dialect == "provider"  # this repository sets no [tool.fnkit]
    assert fnkit.validate(alb_event).dialect == "provider"
    assert mail.validate_event(mail_event).ok


def test_dialect_both_draws_both_spellings_over_a_run():
    seen: set[str | None] = set()

    @settings(max_examples=60, database=None)
    @given(strategies.alb_events(dialect="both"))
    def collect(event):
        seen.add(fnkit.validate(event).dialect)

    collect()
    assert seen == {"aws", "provider"}


def test_a_bad_dialect_of_a_strategy_is_refused():
    import pytest

    @settings(max_examples=1, database=None)
    @given(strategies.mail_events(dialect="amazon"))
    def draw(event):
        pass

    with pytest.raises(ValueError, match="dialect is 'amazon'"):
        draw()
