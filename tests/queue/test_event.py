"""The queue batch event (fnkit/queue/_event.py, _contents.py, _build.py): shape, rule checks, builder, parse, md5s."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from typing import Any, cast

import pytest

import fnkit
from fnkit import queue
from fnkit.queue._event import EVENT_CONTRACT
from fnkit.types import QueueEvent

GOLDEN_ATTRIBUTES = {
    "Title": {"dataType": "String", "stringValue": "The Whistler"},
    "Author": {"dataType": "String", "stringValue": "John Grisham"},
    "WeeksOn": {"dataType": "Number", "stringValue": "6"},
}


def _errors(report) -> list[tuple[str, str]]:
    return [(i.path, i.rule) for i in report.errors]


def _fires(report, rule: str, path: str | None = None, severity: str = "error") -> None:
    hits = [i for i in report if i.rule == rule and i.severity == severity and (path is None or i.path == path)]
    assert hits, f"expected a {severity} citing {rule}{' at ' + path if path else ''}, got {list(report)}"


def _with_record(event: Any, n: int) -> Any:
    """The event grown to n records by copying the first with fresh ids."""
    out = copy.deepcopy(event)
    first = out["Records"][0]
    while len(out["Records"]) < n:
        rec = dict(first)
        rec["messageId"] = f"m-{len(out['Records'])}"
        out["Records"].append(rec)
    return out


# --- valid events ------------------------------------------------------------------------


def test_built_event_is_valid_and_says_its_dialect(event):
    report = queue.validate_event(event)
    assert report.ok and len(report) == 0
    assert report.source == "queue" and report.dialect == "provider"
    assert all(r["eventSource"] == "provider:queue" for r in event["Records"])
    assert all(r["eventSourceARN"].startswith("arn:provider:sqs:") for r in event["Records"])


def test_real_documented_event_validates(real_event):
    report = queue.validate_event(real_event)
    assert report.ok and len(report) == 0, list(report)
    assert report.dialect == "aws"


def test_real_documented_event_validates_as_text_and_bytes(real_event):
    text = json.dumps(real_event)
    assert queue.validate_event(text).ok and queue.validate_event(text.encode()).ok


def test_real_documented_fifo_event_validates(real_fifo_event):
    report = queue.validate_event(real_fifo_event)
    assert report.ok and len(report) == 0, list(report)
    assert queue.is_fifo(real_fifo_event)


def test_real_event_parses(real_event):
    parsed = queue.parse_event(real_event)
    record = parsed.records[0]
    assert record.message_id == "059f36b4-87a3-44ab-83d2-661975830a7d"
    assert record.body == "Test message."
    assert record.md5_of_body == "e4e68fb7bd0e697a0ae8f1bb342846b3"
    assert record.event_source == "aws:sqs"
    assert record.event_source_arn == "arn:aws:sqs:us-east-2:123456789012:my-queue"
    assert record.aws_region == "us-east-2"
    assert record.attributes.approximate_receive_count == "1"
    assert record.attributes.sender_id == "AIDAIENQZJOLO23YVJ4VO"
    assert record.attributes.sequence_number is None
    assert record.message_attributes == {}


# --- dialects --------------------------------------------------------------------------------


def test_aws_dialect_is_produced_and_accepted():
    event = queue.build_event(["x", "y"], dialect="aws", trace_header="Root=1-5759e988-bd862e3fe1be46a994272793")
    rec = event["Records"][0]
    assert rec["eventSource"] == "aws:sqs"
    assert rec["eventSourceARN"].startswith("arn:aws:sqs:")
    assert rec["attributes"]["AWSTraceHeader"].startswith("Root=")
    assert "ProviderTraceHeader" not in rec["attributes"]
    report = queue.validate_event(event)
    assert report.ok and len(report) == 0 and report.dialect == "aws"


def test_provider_trace_header_spelling():
    event = queue.build_event(["x"], trace_header="Root=1-abc")
    assert event["Records"][0]["attributes"]["ProviderTraceHeader"] == "Root=1-abc"
    assert queue.validate_event(event).dialect == "provider"


def test_mixed_spellings_are_a_g2_warning(event):
    event["Records"][1]["eventSource"] = "aws:sqs"
    report = queue.validate_event(event)
    assert report.ok  # each spelling alone is fine
    _fires(report, "G2", "$", severity="warning")
    assert report.dialect is None


def test_aws_trace_header_in_a_provider_event_is_mixed(event):
    event["Records"][0]["attributes"]["AWSTraceHeader"] = "Root=1-abc"
    report = queue.validate_event(event)
    _fires(report, "G2", severity="warning")


def test_both_trace_header_spellings_in_one_record_conflict(event):
    attrs = event["Records"][0]["attributes"]
    attrs["AWSTraceHeader"] = attrs["ProviderTraceHeader"] = "Root=1-abc"
    _fires(queue.validate_event(event), "G2", "$.Records[0].attributes.AWSTraceHeader")


def test_unknown_dialect_is_refused_by_the_builder():
    with pytest.raises(ValueError, match="dialect"):
        queue.build_event(["x"], dialect="azure")  # type: ignore[arg-type]


# --- QS1: the top level ---------------------------------------------------------------------


@pytest.mark.parametrize("value", [[], '"a JSON string"', 3, None, {"records": []}, {1, 2}])
def test_qs1_the_event_is_an_object_with_records(value):
    report = queue.validate_event(value)
    assert not report.ok
    _fires(report, "QS1")


def test_qs1_records_must_be_a_list():
    _fires(queue.validate_event({"Records": {"0": {}}}), "QS1", "$.Records")


def test_qs1_an_empty_batch_is_never_delivered():
    report = queue.validate_event({"Records": []})
    assert _errors(report) == [("$.Records", "QS1")]
    assert "empty" in report.errors[0].message


def test_qs1_records_from_two_queues_warn(event):
    event["Records"][2]["eventSourceARN"] = "arn:provider:sqs:us-east-1:123456789012:other"
    _fires(queue.validate_event(event), "QS1", "$.Records", severity="warning")


def test_g1_unknown_top_level_key_warns(event):
    event["Recordz"] = []
    report = queue.validate_event(event)
    assert report.ok
    _fires(report, "G1", "$.Recordz", severity="warning")


# --- QS2: record fields ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field", ["messageId", "receiptHandle", "body", "messageAttributes", "md5OfBody", "eventSourceARN", "awsRegion"]
)
def test_qs2_every_record_field_is_required(event, field):
    del event["Records"][1][field]
    report = queue.validate_event(event)
    assert ("$.Records[1]." + field, "QS2") in _errors(report)
    assert report.errors[0].code == "missing"


@pytest.mark.parametrize(
    ("field", "value"),
    [("messageId", 12), ("body", {"a": 1}), ("body", None), ("md5OfBody", None), ("awsRegion", ["us-east-1"])],
)
def test_qs2_record_fields_have_their_types(event, field, value):
    event["Records"][0][field] = value
    report = queue.validate_event(event)
    _fires(report, "QS2", f"$.Records[0].{field}")
    assert any(i.code == "type" for i in report.errors)


def test_qs2_a_record_is_an_object(event):
    event["Records"][1] = "not a record"
    _fires(queue.validate_event(event), "QS2", "$.Records[1]")


def test_qs2_event_source_arn_is_a_queue_arn(event):
    event["Records"][0]["eventSourceARN"] = "my-queue"
    report = queue.validate_event(event)
    _fires(report, "QS2", "$.Records[0].eventSourceARN")
    assert "arn:provider:sqs:" in report.errors[0].message


def test_unknown_record_key_warns_with_a_case_hint(event):
    event["Records"][0]["MessageId"] = event["Records"][0].pop("messageId")
    report = queue.validate_event(event)
    warning = next(i for i in report.warnings if i.rule == "G1")
    assert "Did you mean 'messageId'?" in warning.message


# --- QS3 / Q4: attributes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", ["ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"]
)
def test_qs3_the_four_attributes_are_present(event, key):
    del event["Records"][0]["attributes"][key]
    _fires(queue.validate_event(event), "QS3", f"$.Records[0].attributes.{key}")


def test_qs3_attribute_values_are_strings(event):
    event["Records"][0]["attributes"]["SentTimestamp"] = 1545082649183
    report = queue.validate_event(event)
    _fires(report, "QS3", "$.Records[0].attributes.SentTimestamp")
    assert "Expected a string, got a number" in report.errors[0].message


def test_qs3_timestamps_are_epoch_milliseconds(event):
    event["Records"][0]["attributes"]["SentTimestamp"] = "2019-01-01T00:00:00Z"
    _fires(queue.validate_event(event), "QS3", "$.Records[0].attributes.SentTimestamp")


def test_qs3_first_receive_before_send_warns(event):
    attrs = event["Records"][0]["attributes"]
    attrs["ApproximateFirstReceiveTimestamp"] = str(int(attrs["SentTimestamp"]) - 1000)
    report = queue.validate_event(event)
    assert report.ok
    _fires(report, "QS3", "$.Records[0].attributes.ApproximateFirstReceiveTimestamp", severity="warning")


@pytest.mark.parametrize("count", ["0", "one", "-1", "1.5", ""])
def test_q4_receive_count_is_a_positive_whole_number(event, count):
    event["Records"][2]["attributes"]["ApproximateReceiveCount"] = count
    report = queue.validate_event(event)
    assert _errors(report) == [("$.Records[2].attributes.ApproximateReceiveCount", "Q4")]


def test_q4_receive_counts_from_the_builder(event):
    event = queue.build_event(["a", "b"], receive_counts=[1, 4])
    assert [r["attributes"]["ApproximateReceiveCount"] for r in event["Records"]] == ["1", "4"]
    assert queue.validate_event(event).ok


def test_q4_first_delivery_says_one(event):
    assert {r["attributes"]["ApproximateReceiveCount"] for r in event["Records"]} == {"1"}


# --- QS4: eventSource --------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["aws:sns", "provider:queues", "AWS:SQS", ""])
def test_qs4_event_source_names_the_queue(event, value):
    event["Records"][1]["eventSource"] = value
    report = queue.validate_event(event)
    assert _errors(report) == [("$.Records[1].eventSource", "QS4")]


# --- QS5: FIFO attributes present exactly for FIFO queues --------------------------------------


def test_qs5_fifo_records_carry_the_three_attributes(fifo_event):
    for rec in fifo_event["Records"]:
        assert set(rec["attributes"]) >= {"SequenceNumber", "MessageGroupId", "MessageDeduplicationId"}
        assert rec["attributes"]["SequenceNumber"].isdigit()
    assert [r["attributes"]["MessageGroupId"] for r in fifo_event["Records"]] == ["g", "g", "h", "g"]
    assert fifo_event["Records"][0]["eventSourceARN"].endswith(".fifo")
    assert queue.validate_event(fifo_event).ok


def test_qs5_standard_records_carry_none_of_them(event):
    for rec in event["Records"]:
        assert not set(rec["attributes"]) & {"SequenceNumber", "MessageGroupId", "MessageDeduplicationId"}


def test_qs5_sequence_numbers_increase(fifo_event):
    numbers = [int(r["attributes"]["SequenceNumber"]) for r in fifo_event["Records"]]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)


@pytest.mark.parametrize("key", ["SequenceNumber", "MessageGroupId", "MessageDeduplicationId"])
def test_qs5_a_fifo_record_missing_one_is_an_error(fifo_event, key):
    del fifo_event["Records"][1]["attributes"][key]
    report = queue.validate_event(fifo_event)
    assert ("$.Records[1].attributes." + key, "QS5") in _errors(report)


@pytest.mark.parametrize("key", ["SequenceNumber", "MessageDeduplicationId"])
def test_qs5_a_standard_record_carrying_one_is_an_error(event, key):
    event["Records"][0]["attributes"][key] = "1"
    report = queue.validate_event(event)
    assert _errors(report) == [("$.Records[0].attributes." + key, "QS5")]
    assert "FIFO" in report.errors[0].message


def test_qs5_fifo_sequence_number_is_digits(fifo_event):
    fifo_event["Records"][0]["attributes"]["SequenceNumber"] = "abc"
    assert _errors(queue.validate_event(fifo_event)) == [("$.Records[0].attributes.SequenceNumber", "QS5")]


def test_qs5_the_builder_refuses_group_ids_for_standard_queues():
    with pytest.raises(ValueError, match="FIFO"):
        queue.build_event(["a"], group_ids=["g"])


def test_fifo_deduplication_id_defaults_to_sha256_of_the_body():
    import hashlib

    event = queue.build_event(["hello"], fifo=True)
    assert event["Records"][0]["attributes"]["MessageDeduplicationId"] == hashlib.sha256(b"hello").hexdigest()


# --- QS7: unique ids ---------------------------------------------------------------------------


def test_qs7_a_batch_never_holds_one_message_twice(event):
    event["Records"][2]["messageId"] = event["Records"][0]["messageId"]
    report = queue.validate_event(event)
    assert _errors(report) == [("$.Records[2].messageId", "QS7")]
    assert "$.Records[0]" in report.errors[0].message


def test_qs7_ids_are_unique_in_a_big_built_batch():
    event = queue.build_event(["x"] * 500, seed=9)
    assert len({r["messageId"] for r in event["Records"]}) == 500


# --- Q1: batch sizes ----------------------------------------------------------------------------


def test_q1_ten_records_is_the_default_batch():
    report = queue.validate_event(queue.build_event(["x"] * 10))
    assert report.ok and len(report) == 0


def test_q1_more_than_ten_records_warns_about_the_default():
    report = queue.validate_event(queue.build_event(["x"] * 11))
    assert report.ok
    _fires(report, "Q1", "$.Records", severity="warning")
    assert "batching window" in report.warnings[0].message


def test_q1_configured_batch_size_is_enforced():
    event = queue.build_event(["x"] * 6)
    assert queue.validate_event(event, batch_size=6).ok
    assert len(queue.validate_event(event, batch_size=6)) == 0
    _fires(queue.validate_event(event, batch_size=5), "Q1", "$.Records")


def test_q1_a_configured_larger_batch_size_silences_the_warning():
    report = queue.validate_event(queue.build_event(["x"] * 50), batch_size=100)
    assert report.ok and len(report) == 0


def test_q1_fifo_batches_hold_at_most_ten(fifo_event):
    big = _with_record(queue.build_event(["x"] * 10, fifo=True), 11)
    report = queue.validate_event(big)
    assert ("$.Records", "Q1") in _errors(report)
    assert "FIFO" in report.errors[0].message


def test_q1_the_builder_refuses_oversized_fifo_batches():
    with pytest.raises(ValueError, match="Q1"):
        queue.build_event(["x"] * 11, fifo=True)


def test_q1_ten_thousand_records_is_the_most():
    event = queue.build_event(["x"] * 10_000, seed=3)
    assert queue.validate_event(event, batch_size=10_000).ok
    report = queue.validate_event(_with_record(event, 10_001))
    assert ("$.Records", "Q1") in _errors(report)
    assert "10,000" in report.errors[0].message


def test_q1_the_builder_refuses_more_than_ten_thousand():
    with pytest.raises(ValueError, match="10000"):
        queue.build_event(["x"] * 10_001)


# --- Q12: record keys, regions, message attributes ---------------------------------------------


def test_q12_aws_region_is_the_region_of_the_arn(event):
    event["Records"][1]["awsRegion"] = "eu-west-1"
    report = queue.validate_event(event)
    assert _errors(report) == [("$.Records[1].awsRegion", "Q12")]
    assert "us-east-1" in report.errors[0].message


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:sqs:us-east-1 :123456789012:orders",  # a space after the region
        "arn:aws:sqs: us-east-1:123456789012:orders",  # a space before it
        "arn:aws:sqs:us-east-1\t:123456789012:orders queue",  # a tab, and a space in the queue name
        "arn:aws:SQS:us-east-1:123456789012:orders",  # a service in capitals
    ],
)
def test_q12_the_region_of_a_malformed_arn_that_can_be_read_is_compared(event, arn):
    for record in event["Records"]:
        record["eventSourceARN"] = arn
    event["Records"][1]["awsRegion"] = "eu-west-1"
    report = queue.validate_event(event)
    # the ARN's form is named for each record (QS2), and the one region that disagrees with it (Q12)
    assert [r for _p, r in _errors(report)].count("QS2") == len(event["Records"])
    [q12] = [i for i in report.errors if i.rule == "Q12"]
    assert q12.path == "$.Records[1].awsRegion" and "eu-west-1" in q12.message and "'us-east-1'" in q12.message


def test_q12_an_arn_whose_region_cannot_be_read_is_compared_with_nothing(event):
    for arn in ("arn:aws:sqs:us-east-1:orders", "arn:aws:sqs:us east 1:123456789012:orders", "sqs:us-east-1:1:q:x:y"):
        for record in event["Records"]:
            record["eventSourceARN"] = arn
        event["Records"][1]["awsRegion"] = "eu-west-1"
        report = queue.validate_event(event)
        assert {r for _p, r in _errors(report)} == {"QS2"}, (arn, list(report))


def test_q12_the_builder_takes_the_region_from_the_arn():
    event = queue.build_event(["x"], queue_arn="arn:aws:sqs:ap-south-1:111122223333:jobs")
    assert event["Records"][0]["awsRegion"] == "ap-south-1"
    assert queue.validate_event(event).ok


def test_q12_message_attributes_in_the_event_shape():
    event = queue.build_event(["x"], message_attributes={"Title": "The Whistler", "Raw": b"\x00\x01", "N": 6})
    attrs = event["Records"][0]["messageAttributes"]
    assert attrs["Title"] == {
        "stringValue": "The Whistler",
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "String",
    }
    assert attrs["Raw"]["binaryValue"] == "AAE=" and attrs["Raw"]["dataType"] == "Binary"
    assert attrs["N"]["dataType"] == "Number" and attrs["N"]["stringValue"] == "6"
    assert queue.validate_event(event).ok


def test_q12_md5_of_message_attributes_only_when_there_are_some(event):
    assert all("md5OfMessageAttributes" not in r for r in event["Records"])
    with_attrs = queue.build_event(["x"], message_attributes=GOLDEN_ATTRIBUTES)
    assert "md5OfMessageAttributes" in with_attrs["Records"][0]


def test_q12_missing_md5_of_message_attributes_is_an_error():
    event = queue.build_event(["x"], message_attributes=GOLDEN_ATTRIBUTES)
    del event["Records"][0]["md5OfMessageAttributes"]
    report = queue.validate_event(event)
    assert _errors(report) == [("$.Records[0].md5OfMessageAttributes", "Q12")]
    assert "d25a6aea97eb8f585bfa92d314504a92" in report.errors[0].message


def test_q12_md5_of_message_attributes_without_attributes_warns(event):
    event["Records"][0]["md5OfMessageAttributes"] = "d25a6aea97eb8f585bfa92d314504a92"
    report = queue.validate_event(event)
    assert report.ok
    _fires(report, "Q12", "$.Records[0].md5OfMessageAttributes", severity="warning")


def test_q12_null_md5_of_message_attributes_is_accepted_when_there_are_none(event):
    # the shape allows null here (Nullable) for messages without attributes
    event["Records"][0]["md5OfMessageAttributes"] = None
    assert queue.validate_event(event).ok


def test_q12_a_string_attribute_carries_string_value():
    event = queue.build_event(["x"], message_attributes={"Title": "T"})
    attr = event["Records"][0]["messageAttributes"]["Title"]
    del attr["stringValue"]
    attr["binaryValue"] = "VA=="
    report = queue.validate_event(event)
    _fires(report, "Q12", "$.Records[0].messageAttributes.Title.stringValue")


def test_q12_binary_value_is_base64():
    event = queue.build_event(["x"], message_attributes={"Blob": b"abc"})
    event["Records"][0]["messageAttributes"]["Blob"]["binaryValue"] = "not base64!"
    _fires(queue.validate_event(event), "Q12", "$.Records[0].messageAttributes.Blob.binaryValue")


def test_q12_message_attribute_fields_have_types():
    event = queue.build_event(["x"], message_attributes={"Title": "T"})
    event["Records"][0]["messageAttributes"]["Title"]["stringListValues"] = "nope"  # type: ignore[typeddict-item]
    _fires(queue.validate_event(event), "Q12", "$.Records[0].messageAttributes.Title.stringListValues")


# --- Q13: md5s ----------------------------------------------------------------------------------


def test_q13_md5_of_body_golden_value():
    assert queue.md5_of_body("Test message.") == "e4e68fb7bd0e697a0ae8f1bb342846b3"


def test_q13_md5_of_body_is_of_the_utf8_bytes():
    import hashlib

    assert queue.md5_of_body("héllo ✓") == hashlib.md5("héllo ✓".encode()).hexdigest()


def test_q13_md5_of_message_attributes_golden_value():
    event_shaped = {
        name: {**a, "stringListValues": [], "binaryListValues": []} for name, a in GOLDEN_ATTRIBUTES.items()
    }
    assert queue.md5_of_message_attributes(event_shaped) == "d25a6aea97eb8f585bfa92d314504a92"


def test_q13_md5_of_message_attributes_does_not_depend_on_order():
    reordered = dict(reversed(list(GOLDEN_ATTRIBUTES.items())))
    assert queue.md5_of_message_attributes(reordered) == "d25a6aea97eb8f585bfa92d314504a92"


def test_q13_md5_of_no_attributes_is_none():
    assert queue.md5_of_message_attributes({}) is None


def test_q13_built_event_carries_the_golden_md5s():
    event = queue.build_event(["Test message."], message_attributes=GOLDEN_ATTRIBUTES)
    rec = event["Records"][0]
    assert rec["md5OfBody"] == "e4e68fb7bd0e697a0ae8f1bb342846b3"
    assert rec["md5OfMessageAttributes"] == "d25a6aea97eb8f585bfa92d314504a92"


def test_q13_a_wrong_md5_of_body_is_a_mismatch(event):
    event["Records"][1]["body"] = "tampered"
    report = queue.validate_event(event)
    assert _errors(report) == [("$.Records[1].md5OfBody", "Q13")]
    assert report.errors[0].code == "mismatch"
    assert queue.md5_of_body("tampered") in report.errors[0].message


def test_q13_a_wrong_md5_of_message_attributes_is_a_mismatch():
    event = queue.build_event(["x"], message_attributes=GOLDEN_ATTRIBUTES)
    event["Records"][0]["messageAttributes"]["WeeksOn"]["stringValue"] = "7"
    report = queue.validate_event(event)
    assert _errors(report) == [("$.Records[0].md5OfMessageAttributes", "Q13")]


def test_q13_binary_attributes_use_transport_byte_two():
    import base64
    import hashlib
    import struct

    value = b"\x00\xffdata"
    attrs = {"Blob": {"dataType": "Binary", "binaryValue": base64.b64encode(value).decode()}}
    buf = (
        struct.pack(">I", 4)
        + b"Blob"
        + struct.pack(">I", 6)
        + b"Binary"
        + b"\x02"
        + struct.pack(">I", len(value))
        + value
    )
    assert queue.md5_of_message_attributes(attrs) == hashlib.md5(buf).hexdigest()


# --- Q14: attribute names and types --------------------------------------------------------------


def test_q14_at_most_ten_message_attributes():
    event = queue.build_event(["x"], message_attributes={f"a{i}": "v" for i in range(11)})
    report = queue.validate_event(event)
    assert ("$.Records[0].messageAttributes", "Q14") in _errors(report)


def test_q14_ten_message_attributes_are_fine():
    assert queue.validate_event(queue.build_event(["x"], message_attributes={f"a{i}": "v" for i in range(10)})).ok


@pytest.mark.parametrize("name", [".lead", "trail.", "dou..ble", "spa ce", "x" * 257, "ümlaut"])
def test_q14_attribute_names(name):
    event = queue.build_event(["x"], message_attributes={name: "v"})
    report = queue.validate_event(event)
    assert any(i.rule == "Q14" and i.code == "format" for i in report.errors), list(report)


@pytest.mark.parametrize("name", ["a", "A.b-c_d", "x" * 256])
def test_q14_good_attribute_names(name):
    assert queue.validate_event(queue.build_event(["x"], message_attributes={name: "v"})).ok


@pytest.mark.parametrize("dtype", ["Str", "string", "Number.", "Binary "])
def test_q14_data_type_is_string_number_or_binary(dtype):
    event = queue.build_event(["x"], message_attributes={"k": {"dataType": "String", "stringValue": "v"}})
    event["Records"][0]["messageAttributes"]["k"]["dataType"] = dtype
    report = queue.validate_event(event)
    _fires(report, "Q14", "$.Records[0].messageAttributes.k.dataType")


def test_q14_data_type_may_carry_a_suffix():
    event = queue.build_event(["x"], message_attributes={"k": {"dataType": "Number.float", "stringValue": "1.5"}})
    assert queue.validate_event(event).ok


def test_q14_a_number_attribute_holds_a_number():
    event = queue.build_event(["x"], message_attributes={"k": {"dataType": "Number", "stringValue": "six"}})
    _fires(queue.validate_event(event), "Q14", "$.Records[0].messageAttributes.k.stringValue")


# --- the builder -----------------------------------------------------------------------------------


def test_builder_is_deterministic_per_seed():
    assert queue.build_event(["a", "b"], seed=5) == queue.build_event(["a", "b"], seed=5)
    assert queue.build_event(["a", "b"], seed=5) != queue.build_event(["a", "b"], seed=6)


def test_builder_output_is_json_ready():
    event = queue.build_event(["a"], fifo=True, message_attributes={"b": b"\x00"})
    assert json.loads(json.dumps(event)) == event


def test_builder_turns_non_string_bodies_into_json_text():
    event = queue.build_event([{"order": 1}, "plain", b"bytes"])
    assert [r["body"] for r in event["Records"]] == ['{"order": 1}', "plain", "bytes"]


def test_builder_takes_one_body_as_a_string():
    assert len(queue.build_event("only")["Records"]) == 1


def test_builder_message_attributes_per_body():
    event = queue.build_event(["a", "b"], message_attributes=[{"k": "1"}, {}])
    assert event["Records"][0]["messageAttributes"]["k"]["stringValue"] == "1"
    assert event["Records"][1]["messageAttributes"] == {}
    assert "md5OfMessageAttributes" not in event["Records"][1]
    assert queue.validate_event(event).ok


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_builder_refuses_a_number_attribute_that_is_not_finite(number):
    # it would build an event its own validator rejects (Q14: a Number holds a number)
    with pytest.raises(ValueError, match="finite"):
        queue.build_event(["x"], message_attributes={"n": number})


def test_builder_checks_lengths_of_per_body_lists():
    with pytest.raises(ValueError, match="one mapping per body"):
        queue.build_event(["a", "b"], message_attributes=[{}])
    with pytest.raises(ValueError, match="group_ids"):
        queue.build_event(["a", "b"], fifo=True, group_ids=["g"])


def test_queue_arn_helper():
    assert queue.queue_arn() == "arn:provider:sqs:us-east-1:123456789012:orders"
    assert queue.queue_arn(fifo=True, dialect="aws", name="jobs") == "arn:aws:sqs:us-east-1:123456789012:jobs.fifo"


# --- parse ------------------------------------------------------------------------------------------


def test_parse_gives_frozen_dataclasses_with_snake_case_fields(fifo_event):
    parsed = queue.parse_event(fifo_event)
    assert type(parsed).__name__ == "QueueEvent"
    record = parsed.records[1]
    assert record.message_id == fifo_event["Records"][1]["messageId"]
    assert record.receipt_handle.startswith("AQEB")
    assert record.attributes.message_group_id == "g"
    assert record.attributes.approximate_first_receive_timestamp.isdigit()
    names = {f.name for f in dataclasses.fields(cast(Any, record))}
    assert names == {
        "message_id",
        "receipt_handle",
        "body",
        "attributes",
        "message_attributes",
        "md5_of_message_attributes",
        "md5_of_body",
        "event_source",
        "event_source_arn",
        "aws_region",
    }
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.body = "x"
    with pytest.raises(dataclasses.FrozenInstanceError):
        parsed.records = ()
    assert dataclasses.is_dataclass(parsed)


def test_parse_message_attributes():
    parsed = queue.parse_event(queue.build_event(["x"], message_attributes=GOLDEN_ATTRIBUTES))
    title = parsed.records[0].message_attributes["Title"]
    assert title.string_value == "The Whistler" and title.data_type == "String" and title.binary_value is None
    assert parsed.records[0].md5_of_message_attributes == "d25a6aea97eb8f585bfa92d314504a92"


@pytest.mark.parametrize(
    "wrap",
    [
        json.dumps,
        lambda e: json.dumps(e).encode(),
        lambda e: fnkit.Raw(json.dumps(e)),
        lambda e: memoryview(json.dumps(e).encode()),
    ],
)
def test_parse_reads_json_text_bytes_and_raw(event, wrap):
    assert queue.parse_event(wrap(event)).records[2].body == "third"


def test_parse_raises_contract_error_with_the_report(event):
    event["Records"][0]["md5OfBody"] = "wrong"
    with pytest.raises(fnkit.ContractError) as info:
        queue.parse_event(event)
    assert isinstance(info.value, ValueError)
    assert info.value.report.source == "queue"
    assert [i.rule for i in info.value.report.errors] == ["Q13"]
    assert "$.Records[0].md5OfBody" in str(info.value)


def test_parse_accepts_warnings(event):
    event["extra"] = 1
    assert queue.parse_event(event).records[0].body == "first"


@pytest.mark.parametrize("value", [None, "{", b"\xff", [], {"Records": []}, object()])
def test_parse_of_junk_raises_contract_error(value):
    with pytest.raises(fnkit.ContractError):
        queue.parse_event(value)


# --- detection and ids ------------------------------------------------------------------------------


def test_looks_like_and_correlation_ids(event, ids):
    assert queue.looks_like(event)
    assert not queue.looks_like({"envelope": {}})
    assert queue.correlation_ids(event) == ids


def test_is_fifo(event, fifo_event):
    assert queue.is_fifo(fifo_event) and not queue.is_fifo(event)


def test_report_frame_of_a_broken_event(event):
    event["Records"][0]["eventSource"] = "aws:sns"
    event["Records"][1]["md5OfBody"] = "x"
    frame = queue.validate_event(event).to_frame()
    assert list(frame["rule"]) == ["QS4", "Q13"]
    assert list(frame["path"]) == ["$.Records[0].eventSource", "$.Records[1].md5OfBody"]


# --- real-world events (issue 11): the right verdict for the right reason ---------------------------


@pytest.mark.parametrize(
    ("arn", "words"),
    [
        ("arn:provider:sqs:us-east-1:123456789012:my queue", "a space at position 42"),
        ("arn:provider:sqs:us-east-1:123456789012:orders\n", "a line break"),
        ("arn:provider:sqs:us-east-1:orders", "5 colon-separated part(s)"),
        ("arn:provider:sqs::123456789012:orders", "no region"),
        ("arn:provider:sqs:us-east-1::orders", "no account"),
        ("arn:provider:sqs:us-east-1:123456789012:", "no queue name"),
    ],
)
def test_qs2_an_arn_with_whitespace_or_missing_parts_is_an_error_that_says_which(event, arn, words):
    event["Records"][1]["eventSourceARN"] = arn
    report = queue.validate_event(event)
    assert _errors(report) == [("$.Records[1].eventSourceARN", "QS2")]
    assert words in report.errors[0].message and arn in report.errors[0].message


def test_qs2_an_arn_of_another_account_form_is_accepted(event):
    for record in event["Records"]:  # account ids of emulators and samples: not 12 digits
        record["eventSourceARN"] = "arn:provider:sqs:us-east-1:000000000:orders"
    assert len(queue.validate_event(event)) == 0


def _placeholder_fifo(n: int = 3) -> QueueEvent:
    event = queue.build_event([f"m{i}" for i in range(n)], fifo=True, group_ids=["g"] * n, seed=5)
    for record in event["Records"]:
        record["eventSourceARN"] = "arn:provider:sqs:us-east-1:123456789012:orders"
    return event


def test_q15_fifo_attributes_under_a_plain_arn_warn_once_for_the_batch():
    event = _placeholder_fifo()
    report = queue.validate_event(event)
    assert report.ok
    assert [(i.path, i.severity, i.rule) for i in report] == [("$.Records[0].eventSourceARN", "warning", "Q15")]
    assert "'arn:provider:sqs:us-east-1:123456789012:orders' does not end in .fifo" in report[0].message
    assert queue.is_fifo(event) and queue.is_fifo(json.loads(json.dumps(event)))


def test_q15_the_batch_is_then_checked_as_fifo():
    event = _placeholder_fifo()
    del event["Records"][2]["attributes"]["MessageDeduplicationId"]
    report = queue.validate_event(event)
    assert _errors(report) == [("$.Records[2].attributes.MessageDeduplicationId", "QS5")]
    assert [i.rule for i in report.warnings] == ["Q15"]
    eleven = queue.build_event([f"m{i}" for i in range(10)], fifo=True, seed=5)
    eleven["Records"].append(copy.deepcopy(eleven["Records"][0]))
    eleven["Records"][10]["messageId"] = "another"
    for record in eleven["Records"]:
        record["eventSourceARN"] = "arn:provider:sqs:us-east-1:123456789012:orders"
    assert ("$.Records", "Q1") in _errors(queue.validate_event(eleven))  # at most 10 in a FIFO batch


def test_q15_a_group_id_alone_does_not_make_a_standard_queue_fifo(event):
    event["Records"][0]["attributes"]["MessageGroupId"] = "g"
    report = queue.validate_event(event)
    assert _errors(report) == [("$.Records[0].attributes.MessageGroupId", "QS5")]
    assert not queue.is_fifo(event)


def test_q12_non_empty_reserved_lists_are_named_and_left_out_of_the_digest():
    event = queue.build_event(["x"], message_attributes=GOLDEN_ATTRIBUTES)
    attrs = copy.deepcopy(event["Records"][0]["messageAttributes"])
    attrs["Title"]["stringListValues"] = ["one", "two"]
    attrs["WeeksOn"]["binaryListValues"] = ["AAE="]
    event["Records"][0]["messageAttributes"] = attrs
    report = queue.validate_event(event)
    assert report.ok  # the digest covers stringValue, as the platform's algorithm does while a value is present
    assert [(i.path, i.severity, i.rule) for i in report] == [
        ("$.Records[0].messageAttributes.Title.stringListValues", "warning", "Q12"),
        ("$.Records[0].messageAttributes.WeeksOn.binaryListValues", "warning", "Q12"),
    ]
    assert "holds 2 value(s)" in report[0].message and "md5OfMessageAttributes" in report[0].message
    event["Records"][0]["md5OfMessageAttributes"] = "0" * 32
    report = queue.validate_event(event)
    [mismatch] = report.errors
    assert (
        mismatch.rule == "Q13"
        and "without the reserved lists (Title.stringListValues, WeeksOn.binaryListValues)" in mismatch.message
    )


def test_q12_a_missing_digest_is_said_to_be_missing():
    event = queue.build_event(["x"], message_attributes=GOLDEN_ATTRIBUTES)
    del event["Records"][0]["md5OfMessageAttributes"]
    [issue] = queue.validate_event(event)
    assert issue.message.startswith("md5OfMessageAttributes is missing")
    assert "d25a6aea97eb8f585bfa92d314504a92" in issue.message


def test_g0_a_byte_order_mark_is_named_and_the_content_still_checked(event):
    event["Records"][2]["md5OfBody"] = "0" * 32
    for data in (
        b"\xef\xbb\xbf" + json.dumps(event).encode(),
        "\ufeff" + json.dumps(event),
        fnkit.Raw(b"\xef\xbb\xbf" + json.dumps(event, indent=2).replace("\n", "\r\n").encode()),
    ):
        report = queue.validate_event(data)
        assert [(i.path, i.severity, i.rule) for i in report] == [
            ("$", "warning", "G0"),
            ("$.Records[2].md5OfBody", "error", "Q13"),
        ]
        assert "byte-order mark" in report[0].message
        assert report == EVENT_CONTRACT.located(data)


# --- Q16, Q17: what the platform refuses to carry --------------------------------------------


def _limits(report):
    return [(i.rule, i.severity, i.path) for i in report if i.rule in ("Q16", "Q17")]


def test_q16_q17_a_50_mb_body_is_a_message_and_an_invocation_the_platform_refuses():
    report = fnkit.validate(queue.build_event(["x" * 50_000_000], seed=1))
    assert report.ok  # the shape is right: what the platform would refuse is a warning
    assert _limits(report) == [("Q16", "warning", "$.Records[0].body"), ("Q17", "warning", "$.Records")]
    assert "50,000,000 bytes" in report.warnings[0].message and "1,048,576" in report.warnings[0].message
    assert "6,291,456" in report.warnings[1].message


def test_q17_seven_1_mb_messages_make_an_event_over_6_mb():
    bodies = ["y" * 1_000_000] * 7
    report = fnkit.validate(json.dumps(queue.build_event(bodies, seed=2)))
    assert _limits(report) == [("Q17", "warning", "$.Records")]
    assert "7,00" in report.warnings[0].message and "7 record(s)" in report.warnings[0].message
    six = queue.build_event(bodies[:6], seed=2)  # 6,000,000 bytes of bodies and their records: within 6,291,456
    assert _limits(queue.validate_event(six)) == []


def test_q16_counts_utf8_bytes_and_message_attributes():
    limit = queue.MAX_MESSAGE_BYTES
    assert limit == 1_048_576 and queue.MAX_PAYLOAD_BYTES == 6 * 1_048_576
    at_limit = "é" * (limit // 2)  # two bytes each: exactly the limit
    assert _limits(queue.validate_event(queue.build_event([at_limit]))) == []
    over = queue.build_event([at_limit], message_attributes={"n": 1})  # + "n", "Number", "1"
    assert queue.message_size(at_limit, {"n": 1}) == limit + 8
    report = queue.validate_event(over)
    assert _limits(report) == [("Q16", "warning", "$.Records[0].body")]
    assert f"{limit + 8:,} bytes (body {limit:,}, message attributes 8)" in report.warnings[0].message


def test_q16_a_binary_attribute_counts_its_decoded_bytes():
    assert queue.message_size("", {"b": b"\x00" * 30}) == 1 + len("Binary") + 30


def test_q16_q17_an_ordinary_batch_says_nothing_and_a_broken_one_is_still_measured():
    assert _limits(queue.validate_event(queue.build_event(["x" * 100_000] * 10))) == []
    event = queue.build_event(["z" * 1_100_000, "ok"], seed=4)
    event["Records"][1]["body"] = 7  # type: ignore[typeddict-item]  # the lenient path: the other record is still measured
    report = queue.validate_event(event)
    assert not report.ok and ("Q16", "warning", "$.Records[0].body") in _limits(report)


def test_q16_the_simulated_queue_refuses_a_message_over_1_mib():
    sim = queue.QueueSim()
    with pytest.raises(ValueError, match=r"1,048,577 bytes .*\(Q16\)"):
        sim.send("x" * 1_048_577)
    with pytest.raises(ValueError, match="Q16"):
        sim.send("x" * 1_048_570, message_attributes={"colour": "blue"})
    assert sim.send("x" * 1_048_576) is not None


def test_a_body_of_a_str_subclass_is_hashed_whether_or_not_another_record_is_broken():
    class Text(str):
        __slots__ = ()

    event: Any = queue.build_event(["a", "b"], seed=3)
    event["Records"][0]["body"] = Text("changed")
    alone = [(i.path, i.rule) for i in queue.validate_event(event)]
    event["Records"][1]["body"] = 5
    broken = [(i.path, i.rule) for i in queue.validate_event(event)]
    assert alone == [("$.Records[0].md5OfBody", "Q13")]
    assert broken == [("$.Records[1].body", "QS2"), *alone]
