"""One decision per source: equivalent responses get identical outcomes (rule, reason, what happens).

A returned value, its exact JSON text as `Raw` (text or bytes), and an `Invocation` that returned
it are the same answer to the platform; so are None, Raw("null"), Raw(b"null") and an Invocation
whose handler returned None.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fnkit import Invocation, Raw, alb, mail, queue
from fnkit._engine.codec import encode_response

QUEUE_EVENT = queue.build_event(["a", "b", "c"], seed=4)
QUEUE_IDS = queue.correlation_ids(QUEUE_EVENT)
MAIL_EVENT = mail.build_event(mail_from="s@example.org", recipients=["a@example.com", "b@example.com"], seed=4)
ALB_EVENT = alb.build_event("GET", "/x", seed=4)


def _queue_view(o):
    return (o.kind, o.failed_ids, o.deleted_ids, o.rule, o.reason, [(i.path, i.code, i.rule) for i in o.issues])


def _mail_view(o):
    return (
        o.status,
        o.rule,
        o.reason,
        {r: (d.action, d.via, d.rule, d.bounce_message) for r, d in o.decisions.items()},
        [(i.path, i.code, i.rule) for i in o.issues],
    )


def _alb_view(o):
    return (o.status, o.rule, o.explanation, o.headers, o.body, [(i.path, i.code, i.rule) for i in o.issues])


SOURCES = {
    "queue": (lambda r: queue.outcome(QUEUE_EVENT, r), _queue_view),
    "mail": (lambda r: mail.outcome(MAIL_EVENT, r), _mail_view),
    "alb": (lambda r: alb.outcome(ALB_EVENT, r), _alb_view),
}


def _forms(value):
    """The equivalent ways of giving the platform one answer."""
    text, _ = encode_response(value)
    assert text is not None
    forms = [value, Raw(text), Raw(text.encode("utf-8")), Invocation(returned=value, response_text=text)]
    return forms


@pytest.mark.parametrize("source", SOURCES)
def test_null_is_one_answer_however_it_is_given(source):
    decide, view = SOURCES[source]
    views = [
        view(decide(form))
        for form in (None, Raw("null"), Raw(b"null"), Invocation(returned=None, response_text="null"))
    ]
    assert all(v == views[0] for v in views), views


def test_a_null_queue_response_reads_as_no_failures_reported():
    result = queue.outcome(QUEUE_EVENT, None)
    assert result.kind == "success" and result.rule == "Q8"
    assert result.reason == "Complete success: no failures reported, so every message is deleted."


_ids = st.sampled_from([*QUEUE_IDS, "", "nope", "A"])
queue_responses = st.one_of(
    st.none(),
    st.just({}),
    st.just([]),
    st.integers(),
    st.text(max_size=4),
    st.builds(
        lambda xs: {"batchItemFailures": xs},
        st.one_of(
            st.none(),
            st.lists(
                st.one_of(
                    st.builds(lambda i: {"itemIdentifier": i}, st.one_of(_ids, st.none(), st.integers())),
                    st.just({"id": "x"}),
                    st.just("x"),
                ),
                max_size=4,
            ),
        ),
    ),
    st.builds(lambda k, xs: {k: xs}, st.sampled_from(["BatchItemFailures", "other"]), st.just([])),
)
mail_responses = st.one_of(
    st.none(),
    st.just({}),
    st.just({"actions": []}),
    st.text(max_size=3),
    st.builds(
        lambda t, who, everyone: {"actions": [{"action": {"type": t}, "recipients": who, "allRecipients": everyone}]},
        st.sampled_from(["DROP", "BOUNCE", "DEFAULT", "NOPE"]),
        st.lists(st.sampled_from(["a@example.com", "b@example.com", "c@example.com", "x"]), max_size=2),
        st.booleans(),
    ),
)
alb_responses = st.one_of(
    st.none(),
    st.just({}),
    st.integers(),
    st.text(max_size=3),
    st.builds(
        lambda code, body, encoded: {"statusCode": code, "body": body, "isBase64Encoded": encoded},
        st.one_of(st.integers(0, 700), st.just("200")),
        st.one_of(st.text(max_size=5), st.just("aGk="), st.none()),
        st.booleans(),
    ),
)


@pytest.mark.parametrize(
    ("source", "responses"), [("queue", queue_responses), ("mail", mail_responses), ("alb", alb_responses)]
)
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(data=st.data())
def test_equivalent_responses_give_identical_outcomes(source, responses, data):
    value = data.draw(responses)
    decide, view = SOURCES[source]
    views = [view(decide(form)) for form in _forms(value)]
    assert all(v == views[0] for v in views), (value, views)
    assert json.loads(json.dumps(value)) == value  # the generated answers are JSON as they are
