"""fnkit.queue.events_from_messages: ReceiveMessage output in the API's spelling, batch events out."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import pytest

from fnkit import queue
from fnkit.queue import md5_of_body

ARN = "arn:aws:sqs:eu-west-1:123456789012:orders"


def message(n: int, body: str | None = None, **extra) -> dict[str, Any]:
    body = body if body is not None else json.dumps({"order": n})
    out = {
        "MessageId": f"00000000-0000-4000-8000-{n:012d}",
        "ReceiptHandle": f"AQEB{n:08d}",
        "MD5OfBody": md5_of_body(body),
        "Body": body,
        "Attributes": {
            "SenderId": "AIDAEXAMPLE",
            "ApproximateFirstReceiveTimestamp": str(1767225600100 + n),
            "ApproximateReceiveCount": "1",
            "SentTimestamp": str(1767225600000 + n),
        },
    }
    out.update(extra)
    return out


def test_messages_become_records_in_the_events_spelling_batched_and_valid():
    answer = {"Messages": [message(n) for n in range(12)]}
    stream = queue.events_from_messages(answer, queue_arn=ARN, batch_size=5)
    events = list(stream)
    assert [len(e["Records"]) for e in events] == [5, 5, 2]
    assert all(queue.validate_event(e).ok for e in events)
    record = events[0]["Records"][0]
    assert set(record) == {
        "messageId",
        "receiptHandle",
        "body",
        "attributes",
        "messageAttributes",
        "md5OfBody",
        "eventSource",
        "eventSourceARN",
        "awsRegion",
    }
    assert (record["eventSource"], record["eventSourceARN"], record["awsRegion"]) == ("aws:sqs", ARN, "eu-west-1")
    assert stream.summary() == "queue messages: read 12 messages, yielded 3 events, reported 0 messages"


def test_message_attributes_of_every_type_are_translated_and_their_md5_checked():
    attrs = {
        "Priority": {"StringValue": "2", "DataType": "Number"},
        "Signature": {"BinaryValue": base64.b64encode(b"\x00\x01sig").decode(), "DataType": "Binary"},
        "Channel": {"StringValue": "app", "DataType": "String.mobile"},
    }
    expected = queue.md5_of_message_attributes(queue._messages.message_attributes_to_event(attrs))
    stream = queue.events_from_messages(
        [message(1, MessageAttributes=attrs, MD5OfMessageAttributes=expected)], queue_arn=ARN
    )
    (event,) = list(stream)
    record = event["Records"][0]
    assert record["messageAttributes"]["Priority"] == {
        "stringValue": "2",
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "Number",
    }
    assert record["messageAttributes"]["Signature"]["binaryValue"] == base64.b64encode(b"\x00\x01sig").decode()
    assert record["md5OfMessageAttributes"] == expected and queue.validate_event(event).ok
    # an SDK hands binary values as bytes: the same record
    sdk = message(
        1,
        MessageAttributes={**attrs, "Signature": {"BinaryValue": b"\x00\x01sig", "DataType": "Binary"}},
        MD5OfMessageAttributes=expected,
    )
    assert list(queue.events_from_messages({"Messages": [sdk]}, queue_arn=ARN)) == [event]


def test_inconsistencies_are_reported_and_kept_so_validation_shows_them_too():
    bad_body = message(1)
    bad_body["Body"] = "edited"
    bad_attrs = message(
        2, MessageAttributes={"A": {"StringValue": "x", "DataType": "String"}}, MD5OfMessageAttributes="0" * 32
    )
    no_attributes = message(3)
    del no_attributes["Attributes"]
    stream = queue.events_from_messages({"Messages": [bad_body, bad_attrs, no_attributes]}, queue_arn=ARN)
    (event,) = list(stream)
    assert [i.path for i in stream.issues] == ["$.Messages[0]", "$.Messages[1]", "$.Messages[2]"]
    assert "MD5OfBody is" in stream.issues[0].message and "MD5OfMessageAttributes is" in stream.issues[1].message
    assert "AttributeNames=All" in stream.issues[2].message
    report = queue.validate_event(event)
    assert {i.rule for i in report.errors} >= {"Q13", "QS3"}
    assert event["Records"][0]["md5OfBody"] == bad_body["MD5OfBody"]  # kept as the output said


def test_entries_that_cannot_be_records_are_reported_not_yielded():
    stream = queue.events_from_messages(
        {"Messages": [message(1), "text", {"MessageId": "x"}, message(2)]}, queue_arn=ARN
    )
    events = list(stream)
    assert [len(e["Records"]) for e in events] == [2]
    assert [i.path for i in stream.issues] == ["$.Messages[1]", "$.Messages[2]"]
    assert "lacks ReceiptHandle, Body" in stream.issues[1].message


def test_a_message_received_twice_starts_a_new_batch_and_fifo_queues_batch_by_ten():
    again = message(1, Attributes={**message(1)["Attributes"], "ApproximateReceiveCount": "2"})
    events = list(
        queue.events_from_messages([{"Messages": [message(1), message(2)]}, {"Messages": [again]}], queue_arn=ARN)
    )
    assert [len(e["Records"]) for e in events] == [2, 1] and all(queue.validate_event(e).ok for e in events)
    fifo_attrs = {"MessageGroupId": "g1", "MessageDeduplicationId": "d", "SequenceNumber": "18000000000000000001"}
    fifo = [message(n, Attributes={**message(n)["Attributes"], **fifo_attrs}) for n in range(12)]
    events = list(queue.events_from_messages({"Messages": fifo}, batch_size=50))
    assert [len(e["Records"]) for e in events] == [10, 2]
    assert events[0]["Records"][0]["eventSourceARN"].endswith(".fifo")
    assert all(queue.validate_event(e).ok for e in events)


def test_files_report_the_line_where_each_message_starts(tmp_path):
    pretty = tmp_path / "answer.json"
    pretty.write_text(json.dumps({"Messages": [message(1), "oops", message(2)]}, indent=4))
    stream = queue.events_from_messages(pretty, queue_arn=ARN)
    list(stream)
    lines = pretty.read_text().splitlines()
    (issue,) = stream.issues
    where = int(issue.path.rsplit(":", 1)[1])
    assert lines[where - 1].strip() == '"oops",'
    packed = tmp_path / "dump.jsonl.gz"
    packed.write_bytes(
        gzip.compress(
            (
                json.dumps({"Messages": [message(1)]}) + "\n{broken\n" + json.dumps({"Messages": [message(2)]}) + "\n"
            ).encode()
        )
    )
    stream = queue.events_from_messages(packed, queue_arn=ARN)
    assert [len(e["Records"]) for e in stream] == [2]
    assert [i.path.rsplit(":", 1)[1] for i in stream.issues] == ["2"] and "not valid JSON" in stream.issues[0].message


def test_bad_arguments_are_refused_at_once():
    with pytest.raises(ValueError, match="not a queue ARN"):
        queue.events_from_messages({"Messages": []}, queue_arn="orders")
    with pytest.raises(ValueError, match="batch_size"):
        queue.events_from_messages({"Messages": []}, batch_size=0)
    with pytest.raises(FileNotFoundError):
        queue.events_from_messages("no/such/dump.json")
    stream = queue.events_from_messages({"Hello": 1})
    assert list(stream) == [] and "not ReceiveMessage output" in stream.issues[0].message
