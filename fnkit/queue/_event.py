"""The queue batch event: its shape, its rule checks, its builder and its typed parse."""

from __future__ import annotations

import base64
import binascii
import hashlib
try:  # the builtin MD5 is faster than OpenSSL's for short bodies
    from _md5 import md5 as _md5
except ImportError:  # pragma: no cover
    from hashlib import md5 as _md5
import json
import random
import re
import struct
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .._report import ContractError, Issue, Report, child_path, decode_json, error, warning
from .._shape import ANY, STR, F, ListOf, MapOf, Nullable, Shape
from .._validate import Seen, validate_value

SOURCE = "queue"
EVENT_SOURCE = {"provider": "provider:queue", "aws": "aws:sqs"}
TRACE_KEY = {"provider": "ProviderTraceHeader", "aws": "AWSTraceHeader"}
FIFO_ATTRIBUTES = ("SequenceNumber", "MessageGroupId", "MessageDeduplicationId")
DEFAULT_BATCH = 10
MAX_BATCH_STANDARD = 10_000
MAX_BATCH_FIFO = 10

# --- the shape, declared once -------------------------------------------------

MESSAGE_ATTRIBUTE = Shape(
    "MessageAttribute",
    [
        F("stringValue", Nullable(STR), required=False, doc="The value of a String or Number attribute.", rule="Q12"),
        F("binaryValue", Nullable(STR), required=False, doc="The base64 value of a Binary attribute.", rule="Q12"),
        F("stringListValues", ListOf(STR), required=False, doc="Reserved by the platform; an empty list.", rule="Q12"),
        F("binaryListValues", ListOf(STR), required=False, doc="Reserved by the platform; an empty list.", rule="Q12"),
        F("dataType", STR, doc="String, Number or Binary, optionally with a .suffix.", rule="Q14"),
    ],
    rule="Q12",
    doc="One message attribute as it appears in the event.",
)

ATTRIBUTES = Shape(
    "QueueRecordAttributes",
    [
        F("ProviderTraceHeader", STR, required=False, aliases=(("aws", "AWSTraceHeader"),), attr="trace_header",
          doc="The trace header string of the distributed-tracing system."),
        F("ApproximateReceiveCount", STR, doc="Times the message was received but not deleted (\"1\" on first delivery).", rule="QS3"),
        F("SentTimestamp", STR, doc="When the message was sent, epoch milliseconds.", rule="QS3"),
        F("SenderId", STR, doc="The user ID or role ID of the sender.", rule="QS3"),
        F("ApproximateFirstReceiveTimestamp", STR, doc="When the message was first received, epoch milliseconds.", rule="QS3"),
        F("SequenceNumber", STR, required="FIFO only", doc="Large, non-consecutive number per message (FIFO).", rule="QS5"),
        F("MessageGroupId", STR, required="FIFO only", doc="The message group (FIFO).", rule="QS5"),
        F("MessageDeduplicationId", STR, required="FIFO only", doc="The deduplication token (FIFO).", rule="QS5"),
        F("DeadLetterQueueSourceArn", STR, required=False, doc="Set by the platform on messages moved back from a dead-letter queue."),
    ],
    rule="QS3",
    doc="The attributes requested in the receive operation; all values are strings.",
)

RECORD = Shape(
    "QueueRecord",
    [
        F("messageId", STR, doc="Unique identifier of the message.", rule="QS2"),
        F("receiptHandle", STR, doc="Identifier of this receive; a new one on every receive.", rule="QS2"),
        F("body", STR, doc="Message contents, not URL-encoded.", rule="QS2"),
        F("attributes", ATTRIBUTES, doc="Attributes requested in the receive operation.", rule="QS3"),
        F("messageAttributes", MapOf(MESSAGE_ATTRIBUTE), doc="Message attributes by name; {} when there are none.", rule="QS2"),
        F("md5OfMessageAttributes", Nullable(STR), required=False, doc="MD5 of the message attributes (only when there are some).", rule="Q12"),
        F("md5OfBody", STR, doc="MD5 hex digest of the UTF-8 body.", rule="QS2"),
        F("eventSource", STR, doc="provider:queue (aws:sqs on the real platform).", rule="QS4"),
        F("eventSourceARN", STR, doc="Resource name of the queue.", rule="QS2", attr="event_source_arn"),
        F("awsRegion", STR, doc="Region of the queue.", rule="QS2"),
    ],
    rule="QS2",
    doc="One message of the batch.",
)

EVENT_SHAPE = Shape(
    "QueueEvent",
    [F("Records", ListOf(RECORD), doc="The batch of queue records.", rule="QS1", attr="records")],
    rule="QS1",
    doc="The event a queue poller hands the function: a batch of records.",
)

# --- rule checks ----------------------------------------------------------------

_ARN = re.compile(r"^arn:([a-z-]+):([a-z0-9-]+):([a-z0-9-]*):(\d{12}|[^:]*):(.+)$")
_ATTR_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,256}$")
_DATA_TYPE = re.compile(r"^(String|Number|Binary)(\.[^\s]+)?$")
_DIGITS = re.compile(r"^\d+$")
_NUMBER = re.compile(r"^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def _records(event: Any) -> list:
    recs = event.get("Records") if isinstance(event, dict) else None
    return recs if isinstance(recs, list) else []


def _dict_records(event: Any) -> Iterator[tuple[int, dict]]:
    for i, rec in enumerate(_records(event)):
        if isinstance(rec, dict):
            yield i, rec


def _rpath(i: int, *keys: str) -> str:
    path = f"$.Records[{i}]"
    for k in keys:
        path = child_path(path, k)
    return path


def is_fifo(event: Any) -> bool:
    """True when the batch comes from an ordered (FIFO) queue: its ARN ends in .fifo or it carries group ids."""
    for _, rec in _dict_records(event):
        arn = rec.get("eventSourceARN")
        if isinstance(arn, str) and ":" in arn:
            return arn.endswith(".fifo")
        attrs = rec.get("attributes")
        if isinstance(attrs, dict) and "MessageGroupId" in attrs:
            return True
    return False


def check_batch(event: Any, seen: Seen) -> Iterator[Issue]:
    """QS1/Q1: a batch is never empty and holds at most the configured batch size."""
    if not isinstance(event, dict) or not isinstance(event.get("Records"), list):
        return
    n = len(event["Records"])
    if n == 0:
        yield error("$.Records", "limit", "The batch is empty; the poller never invokes a function with no records.", "QS1")
        return
    fifo = is_fifo(event)
    limit = seen.options.get("batch_size")
    if fifo and n > MAX_BATCH_FIFO:
        yield error("$.Records", "limit", f"A FIFO queue delivers at most {MAX_BATCH_FIFO} records per batch; this one has {n}.", "Q1")
    elif n > MAX_BATCH_STANDARD:
        yield error("$.Records", "limit", f"A batch holds at most {MAX_BATCH_STANDARD:,} records; this one has {n:,}.", "Q1")
    elif limit is not None and n > limit:
        yield error("$.Records", "limit", f"The batch has {n} records, more than the configured batch size {limit}.", "Q1")
    elif limit is None and n > DEFAULT_BATCH:
        yield warning("$.Records", "limit",
                      f"The batch has {n} records; the default batch size is {DEFAULT_BATCH}, so this needs a larger configured batch size and a batching window (Q1).", "Q1")


def check_unique_ids(event: Any, seen: Seen) -> Iterator[Issue]:
    """QS7: no messageId twice in one batch."""
    recs = _records(event)
    try:
        if len({rec["messageId"] for rec in recs}) == len(recs):
            return
    except (TypeError, KeyError):
        pass
    first: dict[str, int] = {}
    for i, rec in _dict_records(event):
        mid = rec.get("messageId")
        if isinstance(mid, str):
            if mid in first:
                yield error(_rpath(i, "messageId"), "conflict",
                            f"messageId '{mid}' already appears at $.Records[{first[mid]}]; a batch never holds one message twice.", "QS7")
            else:
                first[mid] = i


_SOURCE_DIALECT = {v: k for k, v in EVENT_SOURCE.items()}


def check_event_source(event: Any, seen: Seen) -> Iterator[Issue]:
    """QS4: eventSource names the queue service, in one of the two spellings."""
    try:
        values = {rec["eventSource"] for rec in _records(event)}
    except (TypeError, KeyError):
        values = None
    if values is not None and len(values) == 1:
        value = next(iter(values))
        if value in _SOURCE_DIALECT:
            seen.saw(_SOURCE_DIALECT[value])
            return
    for i, rec in _dict_records(event):
        src = rec.get("eventSource")
        if src == "provider:queue":
            seen.saw("provider")
        elif src == "aws:sqs":
            seen.saw("aws")
        elif isinstance(src, str):
            yield error(_rpath(i, "eventSource"), "enum",
                        f"eventSource is '{src}'; a queue record says 'provider:queue' (or 'aws:sqs' on the real platform).", "QS4")


_ARN_CACHE: dict[str, tuple | None] = {}


def _parse_arn(arn: Any) -> tuple | None:
    """(partition, service, region, account, name) of an ARN, or None; cached, ARNs repeat."""
    if not isinstance(arn, str):
        return None
    try:
        return _ARN_CACHE[arn]
    except KeyError:
        m = _ARN.match(arn)
        parsed = m.groups() if m else None
        if len(_ARN_CACHE) < 4096:
            _ARN_CACHE[arn] = parsed
        return parsed


def check_arn_region(event: Any, seen: Seen) -> Iterator[Issue]:
    """Q12: eventSourceARN is a queue ARN and awsRegion is its region; one batch, one queue."""
    try:
        pairs = {(rec["eventSourceARN"], rec["awsRegion"]) for rec in _records(event)}
    except (TypeError, KeyError):
        pairs = None
    if pairs is not None and len(pairs) == 1:
        arn, region = next(iter(pairs))
        parsed = _parse_arn(arn)
        if parsed is not None and parsed[2] == region:
            seen.saw(parsed[0]) if parsed[0] in EVENT_SOURCE else None
            return
    queues: set[str] = set()
    for i, rec in _dict_records(event):
        arn = rec.get("eventSourceARN")
        if not isinstance(arn, str):
            continue
        m = _ARN.match(arn)
        if not m:
            yield error(_rpath(i, "eventSourceARN"), "format",
                        f"'{arn}' is not a queue resource name like 'arn:provider:sqs:<region>:<account>:<queue>'.", "QS2")
            continue
        partition, _, region = m.group(1), m.group(2), m.group(3)
        if partition == "provider":
            seen.saw("provider")
        elif partition == "aws":
            seen.saw("aws")
        queues.add(arn)
        aws_region = rec.get("awsRegion")
        if isinstance(aws_region, str) and region and aws_region != region:
            yield error(_rpath(i, "awsRegion"), "mismatch",
                        f"awsRegion is '{aws_region}' but the queue's ARN is in '{region}'; they must agree.", "Q12")
    if len(queues) > 1:
        yield warning("$.Records", "conflict",
                      f"The records come from {len(queues)} different queues; a batch comes from one queue.", "QS1")


def check_attributes(event: Any, seen: Seen) -> Iterator[Issue]:
    """QS3/Q4: counts and timestamps are digit strings; the trace header's spelling."""
    try:
        quick = True
        for rec in _records(event):
            a = rec["attributes"]
            count = a["ApproximateReceiveCount"]
            sent, first = a["SentTimestamp"], a["ApproximateFirstReceiveTimestamp"]
            if not (count.isdigit() and sent.isdigit() and first.isdigit()) or count[0] == "0" \
                    or (len(first) < len(sent) or (len(first) == len(sent) and first < sent)) \
                    or (len(a) != 4 and ("AWSTraceHeader" in a or "ProviderTraceHeader" in a)):
                quick = False
                break
        if quick:
            return
    except (TypeError, KeyError, AttributeError, IndexError):
        pass
    for i, rec in _dict_records(event):
        attrs = rec.get("attributes")
        if not isinstance(attrs, dict):
            continue
        if "AWSTraceHeader" in attrs:
            seen.saw("aws")
        if "ProviderTraceHeader" in attrs:
            seen.saw("provider")
        count = attrs.get("ApproximateReceiveCount")
        if isinstance(count, str):
            if not _DIGITS.match(count) or int(count) < 1:
                yield error(_rpath(i, "attributes", "ApproximateReceiveCount"), "format",
                            f"ApproximateReceiveCount is '{count}'; it is a whole number as a string, \"1\" on first delivery.", "Q4")
        for key in ("SentTimestamp", "ApproximateFirstReceiveTimestamp"):
            ts = attrs.get(key)
            if isinstance(ts, str) and not _DIGITS.match(ts):
                yield error(_rpath(i, "attributes", key), "format",
                            f"{key} is '{ts}'; it is epoch milliseconds as a string of digits.", "QS3")
        sent, first = attrs.get("SentTimestamp"), attrs.get("ApproximateFirstReceiveTimestamp")
        if isinstance(sent, str) and isinstance(first, str) and sent.isdigit() and first.isdigit() and int(first) < int(sent):
            yield warning(_rpath(i, "attributes", "ApproximateFirstReceiveTimestamp"), "order",
                          "The message was first received before it was sent.", "QS3")


def check_fifo_attributes(event: Any, seen: Seen) -> Iterator[Issue]:
    """QS5: FIFO attributes are present exactly in records of ordered queues."""
    fifo = is_fifo(event)
    if not fifo:
        try:
            if all(len(rec["attributes"]) == 4 for rec in _records(event)):
                return  # only the four attributes every record has
        except (TypeError, KeyError):
            pass
    for i, rec in _dict_records(event):
        attrs = rec.get("attributes")
        if not isinstance(attrs, dict):
            continue
        for key in FIFO_ATTRIBUTES:
            if fifo and key not in attrs:
                yield error(_rpath(i, "attributes", key), "missing",
                            f"Records of a FIFO queue carry {key}; it is missing.", "QS5")
            elif not fifo and key in attrs:
                yield error(_rpath(i, "attributes", key), "unexpected",
                            f"{key} appears only in records of FIFO queues (queue names ending in .fifo); this queue is standard.", "QS5")
        seq = attrs.get("SequenceNumber")
        if fifo and isinstance(seq, str) and not _DIGITS.match(seq):
            yield error(_rpath(i, "attributes", "SequenceNumber"), "format",
                        f"SequenceNumber is '{seq}'; it is a large number written as digits.", "QS5")


def md5_of_body(body: str) -> str:
    """The md5OfBody of a body: MD5 hex of its UTF-8 bytes (Q13)."""
    return _md5(body.encode("utf-8", "surrogatepass")).hexdigest()


def check_md5_of_body(event: Any, seen: Seen) -> Iterator[Issue]:
    """Q13: md5OfBody matches the body."""
    try:
        if all(_md5(rec["body"].encode("utf-8", "surrogatepass")).hexdigest() == rec["md5OfBody"] for rec in _records(event)):
            return
    except (TypeError, KeyError, AttributeError):
        pass
    for i, rec in _dict_records(event):
        body, digest = rec.get("body"), rec.get("md5OfBody")
        if isinstance(body, str) and isinstance(digest, str):
            expected = md5_of_body(body)
            if digest != expected:
                yield error(_rpath(i, "md5OfBody"), "mismatch",
                            f"md5OfBody is '{digest}' but the MD5 of this body is '{expected}'.", "Q13")


def _attr_value_bytes(attr: dict) -> bytes | None:
    dtype = attr.get("dataType")
    if not isinstance(dtype, str):
        return None
    if dtype.startswith("Binary"):
        value = attr.get("binaryValue")
        if not isinstance(value, str):
            return None
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return None
    value = attr.get("stringValue")
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else None


def md5_of_message_attributes(attributes: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The md5OfMessageAttributes of event-shaped attributes (Q13); None when there are none."""
    if not attributes:
        return None
    buf = bytearray()
    for name in sorted(attributes):
        attr = attributes[name]
        dtype = attr["dataType"]
        raw_name, raw_type = name.encode("utf-8"), dtype.encode("utf-8")
        value = _attr_value_bytes(attr)
        if value is None:
            raise ValueError(f"message attribute {name!r} has no value")
        buf += struct.pack(">I", len(raw_name)) + raw_name
        buf += struct.pack(">I", len(raw_type)) + raw_type
        buf += b"\x02" if dtype.startswith("Binary") else b"\x01"
        buf += struct.pack(">I", len(value)) + value
    return hashlib.md5(bytes(buf)).hexdigest()


def check_message_attributes(event: Any, seen: Seen) -> Iterator[Issue]:
    """Q12/Q13/Q14: message attribute names, types, values and their MD5."""
    try:
        if not any(rec["messageAttributes"] or "md5OfMessageAttributes" in rec for rec in _records(event)):
            return
    except (TypeError, KeyError):
        pass
    for i, rec in _dict_records(event):
        attrs = rec.get("messageAttributes")
        if not isinstance(attrs, dict):
            continue
        base = _rpath(i, "messageAttributes")
        if len(attrs) > 10:
            yield error(base, "limit", f"A message has at most 10 message attributes; this one has {len(attrs)}.", "Q14")
        complete = True
        for name, attr in attrs.items():
            path = child_path(base, name)
            if not isinstance(name, str) or not _ATTR_NAME.match(name) or name.startswith(".") or name.endswith(".") or ".." in name:
                yield error(path, "format",
                            f"'{name}' is not a valid attribute name: 1-256 letters, digits, '_', '-' or '.', without leading, trailing or double dots.", "Q14")
            if not isinstance(attr, dict):
                complete = False
                continue
            dtype = attr.get("dataType")
            if not isinstance(dtype, str):
                complete = False
                continue
            if not _DATA_TYPE.match(dtype):
                complete = False
                yield error(child_path(path, "dataType"), "enum",
                            f"dataType '{dtype}' is not String, Number or Binary (optionally with a .suffix).", "Q14")
                continue
            is_binary = dtype.startswith("Binary")
            want, other = ("binaryValue", "stringValue") if is_binary else ("stringValue", "binaryValue")
            if not isinstance(attr.get(want), str):
                complete = False
                yield error(child_path(path, want), "missing", f"A {dtype.split('.')[0]} attribute carries its value in {want}.", "Q12")
            elif is_binary and _attr_value_bytes(attr) is None:
                complete = False
                yield error(child_path(path, want), "format", "binaryValue is not valid base64.", "Q12")
            elif dtype.startswith("Number") and not _NUMBER.match(attr["stringValue"]):
                yield error(child_path(path, want), "format", f"'{attr['stringValue']}' is not a number, but the dataType is Number.", "Q14")
            if attr.get(other) is not None:
                yield warning(child_path(path, other), "unexpected", f"A {dtype.split('.')[0]} attribute has no {other}.", "Q12")
        digest = rec.get("md5OfMessageAttributes")
        if not attrs:
            if isinstance(digest, str):
                yield warning(_rpath(i, "md5OfMessageAttributes"), "unexpected",
                              "md5OfMessageAttributes appears only when the message has attributes.", "Q12")
            continue
        if not complete:
            continue
        expected = md5_of_message_attributes(attrs)
        if digest is None:
            yield error(_rpath(i, "md5OfMessageAttributes"), "missing",
                        f"The message has attributes, so md5OfMessageAttributes is present (expected '{expected}').", "Q12")
        elif isinstance(digest, str) and digest != expected:
            yield error(_rpath(i, "md5OfMessageAttributes"), "mismatch",
                        f"md5OfMessageAttributes is '{digest}' but the MD5 of these attributes is '{expected}'.", "Q13")


EVENT_CHECKS = [
    check_batch,
    check_unique_ids,
    check_event_source,
    check_arn_region,
    check_attributes,
    check_fifo_attributes,
    check_md5_of_body,
    check_message_attributes,
]


def validate_event(event: Any, *, batch_size: int | None = None) -> Report:
    """Every problem of a queue batch event, located; never raises, whatever it is given."""
    options = {"batch_size": batch_size} if batch_size is not None else None
    return validate_value(event, EVENT_SHAPE, EVENT_CHECKS, source=SOURCE, options=options)


def parse_event(event: Any) -> Any:
    """The event as frozen dataclasses (`QueueEvent.records[i].md5_of_body`); raises ContractError when invalid."""
    report = validate_event(event)
    if not report.ok:
        raise ContractError(report)
    event, _ = decode_json(event, "G0")  # JSON text, bytes or Raw: the value validate_event checked
    return EVENT_SHAPE.parse(event)


def looks_like(event: Any) -> bool:
    """True when the value is shaped like a queue event (for source detection)."""
    if not isinstance(event, dict) or "Records" not in event:
        return False
    recs = event["Records"]
    if not isinstance(recs, list) or not recs or not isinstance(recs[0], dict):
        return True
    first = recs[0]
    return any(k in first for k in ("messageId", "receiptHandle", "body", "md5OfBody")) or \
        first.get("eventSource") in ("provider:queue", "aws:sqs")


def correlation_ids(event: Any) -> list[str]:
    """Every messageId of the batch, in order."""
    return [rec["messageId"] for _, rec in _dict_records(event) if isinstance(rec.get("messageId"), str)]


# --- building ---------------------------------------------------------------------


def normalize_message_attributes(attrs: Mapping[str, Any] | None) -> dict[str, dict]:
    """Message attributes in the event's own shape; plain str, int/float and bytes values are accepted too."""
    out: dict[str, dict] = {}
    for name, value in (attrs or {}).items():
        if isinstance(value, Mapping):
            dtype = value.get("dataType") or value.get("DataType") or "String"
            string_value = value.get("stringValue", value.get("StringValue"))
            binary_value = value.get("binaryValue", value.get("BinaryValue"))
        elif isinstance(value, (bytes, bytearray)):
            dtype, string_value, binary_value = "Binary", None, bytes(value)
        elif isinstance(value, bool):
            dtype, string_value, binary_value = "String", str(value).lower(), None
        elif isinstance(value, (int, float)):
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError(f"message attribute {name!r}: a Number is finite, not {value!r} (Q14)")
            dtype, string_value, binary_value = "Number", repr(value), None
        else:
            dtype, string_value, binary_value = "String", str(value), None
        entry: dict[str, Any] = {}
        if dtype.startswith("Binary"):
            if isinstance(binary_value, (bytes, bytearray)):
                binary_value = base64.b64encode(bytes(binary_value)).decode("ascii")
            entry["binaryValue"] = binary_value
        else:
            entry["stringValue"] = string_value
        entry["stringListValues"] = []
        entry["binaryListValues"] = []
        entry["dataType"] = dtype
        out[name] = entry
    return out


def queue_arn(*, fifo: bool = False, region: str = "us-east-1", name: str | None = None,
              account: str = "123456789012", dialect: str = "provider") -> str:
    """A queue ARN in the dialect's spelling (`.fifo` names for ordered queues)."""
    partition = "aws" if dialect == "aws" else "provider"
    name = name or ("orders.fifo" if fifo else "orders")
    if fifo and not name.endswith(".fifo"):
        name += ".fifo"
    return f"arn:{partition}:sqs:{region}:{account}:{name}"


class RecordFactory:
    """Deterministic ids, handles and timestamps for records (builders and the simulator share it)."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self.sender_id = "AIDA" + "".join(self.rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(17))
        self.sequence = 18_000_000_000_000_000_000 + self.rng.randrange(10**17)

    def message_id(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def receipt_handle(self) -> str:
        return "AQEB" + base64.b64encode(self.rng.getrandbits(8 * 96).to_bytes(96, "big")).decode("ascii")

    def sequence_number(self) -> str:
        self.sequence += self.rng.randrange(1, 10**6)
        return str(self.sequence)


def make_record(
    factory: RecordFactory,
    body: str,
    *,
    message_id: str,
    arn: str,
    region: str,
    dialect: str,
    sent_ms: int,
    first_receive_ms: int,
    receive_count: int = 1,
    fifo: bool = False,
    group_id: str | None = None,
    dedup_id: str | None = None,
    sequence_number: str | None = None,
    message_attributes: dict[str, dict] | None = None,
    trace_header: str | None = None,
) -> dict:
    """One record in the event's shape, with md5OfBody and md5OfMessageAttributes computed."""
    attributes: dict[str, str] = {}
    if trace_header is not None:
        attributes[TRACE_KEY[dialect]] = trace_header
    attributes["ApproximateReceiveCount"] = str(receive_count)
    attributes["SentTimestamp"] = str(sent_ms)
    attributes["SenderId"] = factory.sender_id
    attributes["ApproximateFirstReceiveTimestamp"] = str(first_receive_ms)
    if fifo:
        attributes["SequenceNumber"] = sequence_number or factory.sequence_number()
        attributes["MessageGroupId"] = group_id or "default"
        attributes["MessageDeduplicationId"] = dedup_id or hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()
    record: dict[str, Any] = {
        "messageId": message_id,
        "receiptHandle": factory.receipt_handle(),
        "body": body,
        "attributes": attributes,
        "messageAttributes": message_attributes or {},
    }
    if message_attributes:
        record["md5OfMessageAttributes"] = md5_of_message_attributes(message_attributes)
    record["md5OfBody"] = md5_of_body(body)
    record["eventSource"] = EVENT_SOURCE[dialect]
    record["eventSourceARN"] = arn
    record["awsRegion"] = region
    return record


def _check_dialect(dialect: str) -> None:
    if dialect not in EVENT_SOURCE:
        raise ValueError(f"dialect must be 'provider' or 'aws', not {dialect!r}")


def build_event(
    bodies: Sequence[Any] | str,
    *,
    fifo: bool = False,
    group_ids: Sequence[str] | None = None,
    dedup_ids: Sequence[str] | None = None,
    message_attributes: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
    queue_arn: str | None = None,
    region: str | None = None,
    receive_counts: Sequence[int] | None = None,
    trace_header: str | None = None,
    sent_timestamp_ms: int | None = None,
    dialect: str = "provider",
    seed: int = 0,
) -> dict:
    """A valid queue batch event: one record per body (non-string bodies become JSON text); deterministic per seed."""
    _check_dialect(dialect)
    if isinstance(bodies, (str, bytes)):
        bodies = [bodies]
    bodies = [b if isinstance(b, str) else (b.decode("utf-8") if isinstance(b, bytes) else json.dumps(b)) for b in bodies]
    n = len(bodies)
    if fifo and n > MAX_BATCH_FIFO:
        raise ValueError(f"a FIFO batch holds at most {MAX_BATCH_FIFO} records (Q1), got {n}")
    if n > MAX_BATCH_STANDARD:
        raise ValueError(f"a batch holds at most {MAX_BATCH_STANDARD} records (Q1), got {n}")
    for name, seq in (("group_ids", group_ids), ("dedup_ids", dedup_ids), ("receive_counts", receive_counts)):
        if seq is not None and len(seq) != n:
            raise ValueError(f"{name} needs one entry per body ({n}), got {len(seq)}")
    if group_ids is not None and not fifo:
        raise ValueError("group_ids belong to FIFO queues: pass fifo=True (QS5)")
    if isinstance(message_attributes, Mapping) or message_attributes is None:
        per_body = [normalize_message_attributes(message_attributes)] * n
    else:
        if len(message_attributes) != n:
            raise ValueError(f"message_attributes needs one mapping per body ({n}), got {len(message_attributes)}")
        per_body = [normalize_message_attributes(m) for m in message_attributes]
    if queue_arn is None:
        queue_arn = _default_arn(fifo, region or "us-east-1", dialect)
    arn_region = _ARN.match(queue_arn).group(3) if _ARN.match(queue_arn) else None
    region = region or arn_region or "us-east-1"
    factory = RecordFactory(seed)
    sent = sent_timestamp_ms if sent_timestamp_ms is not None else 1_767_225_600_000 + factory.rng.randrange(86_400_000)
    records = []
    for i, body in enumerate(bodies):
        sent_i = sent + i * 7
        records.append(
            make_record(
                factory, body,
                message_id=factory.message_id(), arn=queue_arn, region=region, dialect=dialect,
                sent_ms=sent_i, first_receive_ms=sent_i + 3 + factory.rng.randrange(40),
                receive_count=receive_counts[i] if receive_counts else 1,
                fifo=fifo,
                group_id=group_ids[i] if group_ids else None,
                dedup_id=dedup_ids[i] if dedup_ids else None,
                message_attributes=per_body[i] or None,
                trace_header=trace_header,
            )
        )
    return {"Records": records}


def _default_arn(fifo: bool, region: str, dialect: str) -> str:
    return queue_arn(fifo=fifo, region=region, dialect=dialect)
