"""Source detection and the source-independent entry points (fnkit/_sources.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fnkit
from fnkit import queue


@pytest.fixture
def event():
    return queue.build_event(["one", "two", "three"], seed=4)


def test_detect_queue_event(event):
    assert fnkit.detect_source(event) == "queue"


def test_detect_from_json_text_and_bytes(event):
    text = json.dumps(event)
    assert fnkit.detect_source(text) == "queue"
    assert fnkit.detect_source(text.encode()) == "queue"
    assert fnkit.detect_source(fnkit.Raw(text)) == "queue"


def test_detect_aws_spelling(event):
    assert fnkit.detect_source(queue.build_event(["x"], dialect="aws")) == "queue"


def test_detect_a_broken_queue_event_is_still_queue():
    # validation then says what is wrong with it, instead of "unknown source"
    assert fnkit.detect_source({"Records": []}) == "queue"
    assert fnkit.detect_source({"Records": [{"body": 1}]}) == "queue"


@pytest.mark.parametrize(
    "value", [None, 3, "not json", b"\xff", [], [{"Records": []}], {}, {"records": []}, {1, 2}, object()]
)
def test_detect_unknown(value):
    assert fnkit.detect_source(value) is None


def test_validate_detects_then_validates(event):
    report = fnkit.validate(event)
    assert report.ok and report.source == "queue" and report.dialect == "provider"


def test_validate_json_text_and_bytes(event):
    assert fnkit.validate(json.dumps(event)).ok
    assert fnkit.validate(json.dumps(event).encode()).ok


def test_validate_finds_queue_problems(event):
    event["Records"][1]["md5OfBody"] = "0" * 32
    report = fnkit.validate(event)
    assert not report.ok and report.source == "queue"
    assert [(i.path, i.rule) for i in report.errors] == [("$.Records[1].md5OfBody", "Q13")]


@pytest.mark.parametrize("value", [{"hello": "world"}, [1, 2], 42, None, {1, 2}, object(), {("a",): 1}])
def test_unknown_objects_are_a_g3_issue(value):
    report = fnkit.validate(value)
    assert not report.ok
    [issue] = report
    assert issue.rule == "G3" and issue.path == "$" and issue.code == "unknown"
    assert "Records" in issue.message  # says what a known event looks like
    assert report.source is None


def test_invalid_json_text_is_a_g0_issue():
    report = fnkit.validate('{"Records": [')
    [issue] = report
    assert issue.rule == "G0" and not report.ok


def test_correlation_ids_of_a_queue_event_are_its_message_ids(event):
    ids = fnkit.correlation_ids(event)
    assert ids == [r["messageId"] for r in event["Records"]]
    assert len(set(ids)) == 3


def test_correlation_ids_from_text_and_bytes(event):
    ids = [r["messageId"] for r in event["Records"]]
    assert fnkit.correlation_ids(json.dumps(event)) == ids
    assert fnkit.correlation_ids(json.dumps(event).encode()) == ids


def test_correlation_ids_skip_records_without_a_string_id(event):
    event["Records"][0]["messageId"] = 5
    assert fnkit.correlation_ids(event) == [r["messageId"] for r in event["Records"][1:]]


@pytest.mark.parametrize("value", [{}, None, "nope", {"a": 1}, [1]])
def test_correlation_ids_of_unknown_values_are_empty(value):
    assert fnkit.correlation_ids(value) == []


def test_source_module_refuses_unknown_names():
    from fnkit._sources import source_module

    assert source_module("queue") is queue
    with pytest.raises(ValueError, match="unknown source"):
        source_module("kafka")


# --- events users mistake for the three sources (issue 11) --------------------------------------------

API_GATEWAY_REST = {
    "resource": "/items/{id}",
    "path": "/items/7",
    "httpMethod": "GET",
    "headers": {"accept": "*/*"},
    "queryStringParameters": None,
    "pathParameters": {"id": "7"},
    "stageVariables": None,
    "requestContext": {"apiId": "abc123", "stage": "prod", "resourcePath": "/items/{id}"},
    "body": None,
    "isBase64Encoded": False,
}
API_GATEWAY_HTTP = {
    "version": "2.0",
    "routeKey": "GET /items/{id}",
    "rawPath": "/items/7",
    "rawQueryString": "",
    "headers": {},
    "requestContext": {"http": {"method": "GET"}},
    "isBase64Encoded": False,
}
LOOKALIKES = [
    (API_GATEWAY_REST, "an API Gateway proxy event, not a load balancer event", "pathParameters"),
    (API_GATEWAY_HTTP, "an API Gateway proxy event, not a load balancer event", "rawPath"),
    (
        {"requestContext": {"connectionId": "c1", "routeKey": "$connect", "eventType": "CONNECT"}},
        "WebSocket",
        "connectionId",
    ),
    (
        {"Records": [{"EventSource": "aws:sns", "Sns": {"Message": "hi"}}]},
        "an SNS notification event, not a queue event",
        "Records[0].Sns",
    ),
    (
        {"Records": [{"eventSource": "aws:s3", "s3": {"bucket": {"name": "b"}}}]},
        "S3 event notification, not a queue event",
        "Records[0].s3",
    ),
    (
        {"Records": [{"eventSource": "aws:ses", "ses": {"mail": {}}}]},
        "SES receipt-rule event, not a mail-flow event",
        "Records[0].ses",
    ),
    ({"Records": [{"eventSource": "aws:kinesis", "kinesis": {"data": "aGk="}}]}, "Kinesis", "Records[0].kinesis"),
    ({"Records": [{"eventSource": "aws:dynamodb", "dynamodb": {}}]}, "DynamoDB", "Records[0].dynamodb"),
    (
        {"version": "0", "detail-type": "Order Placed", "source": "shop", "detail": {}},
        "EventBridge",
        "detail-type 'Order Placed'",
    ),
    ({"Messages": [{"MessageId": "m", "ReceiptHandle": "r", "Body": "b"}]}, "ReceiveMessage", "Messages[0].MessageId"),
    ({"messageId": "m", "receiptHandle": "r", "body": "b"}, "a single queue record", "receiptHandle"),
    ({"batchItemFailures": []}, "a queue response, not an event", "--response"),
    ({"statusCode": 200}, "a load balancer response, not an event", "--response"),
    ({"actions": []}, "a mail-flow response, not an event", "--response"),
]


@pytest.mark.parametrize(("value", "what", "landmark"), LOOKALIKES)
def test_another_kind_of_event_is_named_as_what_it_is(value, what, landmark):
    assert fnkit.detect_source(value) is None
    assert fnkit.detect_source(json.dumps(value).encode()) is None
    report = fnkit.validate(value)
    [issue] = report
    assert (issue.path, issue.code, issue.severity, issue.rule) == ("$", "other-source", "error", "G3")
    assert what in issue.message and landmark in issue.message
    assert report.source is None


def test_the_three_sources_are_still_recognised_beside_their_lookalikes():
    from fnkit import alb, mail

    queue_event = queue.build_event(["x"])
    queue_event["Records"][0]["eventSource"] = "aws:sns"  # a queue record naming another service: still a queue record
    assert fnkit.detect_source(queue_event) == "queue"
    assert fnkit.detect_source(alb.build_event()) == "alb" and fnkit.detect_source(alb.health_check_event()) == "alb"
    assert fnkit.detect_source(mail.build_event(mail_from="a@example.org", recipients=["b@example.com"])) == "mail"
    broken = alb.build_event()
    del broken["requestContext"]["elb"]  # type: ignore[misc]
    assert fnkit.detect_source(broken) == "alb"  # no API Gateway landmark: a broken load balancer event


_KEYS = [
    "Records",
    "httpMethod",
    "requestContext",
    "version",
    "detail-type",
    "detail",
    "Messages",
    "messageId",
    "receiptHandle",
    "md5OfBody",
    "body",
    "batchItemFailures",
    "statusCode",
    "actions",
    "envelope",
    "summaryVersion",
    "invocationId",
    "path",
    "isBase64Encoded",
    "resource",
    "rawPath",
    "routeKey",
    "rawQueryString",
    "pathParameters",
    "stageVariables",
    "other",
]
_WORDS = ["2.0", "aws:sns", "aws:s3", "aws:ses", "aws:kinesis", "aws:dynamodb", "aws:sqs", "x"]
_LEAF = st.one_of(st.sampled_from(_WORDS), st.integers(0, 3), st.none())
_MAP = st.dictionaries(
    st.sampled_from([*_KEYS, "elb", "connectionId", "apiId", "eventSource", "EventSource", "Sns", "s3", "MessageId"]),
    st.one_of(_LEAF, st.dictionaries(st.sampled_from(["elb", "routeKey", "name"]), _LEAF, max_size=2)),
    max_size=4,
)
_VALUE = st.dictionaries(
    st.sampled_from(_KEYS),
    st.one_of(st.just("2.0"), _LEAF, _MAP, st.lists(st.one_of(_MAP, _LEAF), min_size=1, max_size=2)),
    max_size=6,
)


def _every_lookalike(value):
    """What detection said before it looked at keys first: every lookalike asked, in order."""
    from fnkit._sources import LOOKALIKES

    for known in LOOKALIKES:
        try:
            found = known.landmarks(value)
        except Exception:  # noqa: BLE001 - as detection does
            continue
        if found:
            return known, found
    return None


@given(_VALUE)
@settings(deadline=None)
def test_detection_that_looks_at_keys_first_names_what_asking_every_lookalike_names(value):
    from fnkit._sources import lookalike

    assert lookalike(value) == _every_lookalike(value)


def test_detection_that_looks_at_keys_first_agrees_on_the_corpus_and_the_lookalikes():
    from fnkit import corpus
    from fnkit._sources import lookalike

    values = [v for v, _, _ in LOOKALIKES] + corpus.load()[:600]
    assert [lookalike(v) for v in values] == [_every_lookalike(v) for v in values]
    assert sum(lookalike(v) is not None for v in values) == len(LOOKALIKES)


def test_validate_keeps_the_byte_order_mark_warning(event):
    report = fnkit.validate(b"\xef\xbb\xbf" + json.dumps(event).encode())
    assert report.ok and report.source == "queue" and [i.rule for i in report] == ["G0"]


# --- responses ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "source"),
    [
        ({"batchItemFailures": []}, "queue"),
        ({"BatchItemFailures": []}, "queue"),
        ({"statusCode": 200}, "alb"),
        ({"actions": []}, "mail"),
        ('{"statusCode": 404}', "alb"),
        (None, None),
        ({}, None),
        ([], None),
        ({"statusCode": 200, "actions": []}, None),
        ("{nope", None),
    ],
)
def test_detect_response_source(response, source):
    from fnkit._sources import detect_response_source

    assert detect_response_source(response) == source


def test_validate_response_matches_item_identifiers_against_the_event(event):
    ids = fnkit.correlation_ids(event)
    assert fnkit.validate_response({"batchItemFailures": [{"itemIdentifier": ids[1]}]}, event=event).ok
    report = fnkit.validate_response({"batchItemFailures": [{"itemIdentifier": "other"}]}, event=json.dumps(event))
    assert [(i.path, i.rule) for i in report.errors] == [("$.batchItemFailures[0].itemIdentifier", "Q8")]


def test_validate_response_reads_the_mode_and_direction_from_the_event():
    from fnkit import alb, mail

    multi = alb.build_event(multi_value=True)
    answer = {"statusCode": 200, "multiValueHeaders": {"set-cookie": ["a=1", "b=2"]}}
    assert len(fnkit.validate_response(answer, event=multi)) == 0
    assert [i.rule for i in fnkit.validate_response(answer, event=alb.build_event())] == ["A7"]
    outbound = mail.build_event(mail_from="a@example.org", recipients=["b@example.com"], flow_direction="OUTBOUND")
    many = {"actions": [{"action": {"type": "DROP"}, "recipients": [f"r{i}@example.com" for i in range(501)]}]}
    assert [i.rule for i in fnkit.validate_response(many, event=outbound).errors] == ["M6"]
    assert fnkit.validate_response(many, source="mail").ok
    assert [i.rule for i in fnkit.validate_response({"actions": []}, source="mail", mode="async")] == ["M8", "M4"]


def test_validate_response_says_when_the_shape_does_not_show_the_source():
    [issue] = fnkit.validate_response(None)
    assert issue.rule == "G3" and "--source" in issue.message and "--event" in issue.message
    assert fnkit.validate_response(None, source="queue").ok


def test_the_event_decides_how_a_response_is_read(event):
    report = fnkit.validate_response({"statusCode": 200}, event=event)
    assert report.source == "queue" and report.ok
    assert [(i.rule, i.code) for i in report] == [("G3", "other-source"), ("G1", "unknown")]
    assert "the event is a queue event" in report[0].message
