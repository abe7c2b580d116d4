"""The queue batch event: its shape, its rule checks and its typed parse (`._build` builds events)."""

from __future__ import annotations

import base64
import binascii
import hashlib

try:  # the builtin MD5 is faster than OpenSSL's for short bodies
    from _md5 import md5 as _md5
except ImportError:  # pragma: no cover
    from hashlib import md5 as _md5
import re
import struct
from collections.abc import Iterator, Mapping, Sequence
from operator import itemgetter, lt
from typing import TYPE_CHECKING, Any, cast

import msgspec

from .._engine.memo import Readings
from .._engine.report import ContractError, Issue, Report, child_path, error, path_of, warning
from .._engine.shape import STR, F, ListOf, MapOf, Nullable, Shape, Text
from .._engine.validate import Contract, Seen
from ..rules import id_of, rule
from ._config import BATCH_LIMITS, DEFAULT_BATCH, MAX_BATCH_FIFO, MAX_BATCH_STANDARD
from ._fifo import check_fifo, fifo_attributes, is_fifo

SOURCE = "queue"
EVENT_SOURCE = {"provider": "provider:queue", "aws": "aws:sqs"}
TRACE_KEY = {"provider": "ProviderTraceHeader", "aws": "AWSTraceHeader"}
MAX_MESSAGE_BYTES = 1_048_576  # Q16: 1 MiB, body and message attributes (256 KiB, 262,144, before August 2025)
MAX_PAYLOAD_BYTES = 6_291_456  # Q17: "6 MB", as the platform counts a synchronous invocation's payload

# --- the shape, declared once -------------------------------------------------

# arn:<partition>:<service>:<region>:<account>:<queue>, every part present, no whitespace anywhere
_ARN_PATTERN = r"^arn:([a-z-]+):([a-z0-9-]+):([a-z0-9-]+):([^:\s]+):([^:\s]+)$"
_ARN_PARTS = ("arn", "partition", "service", "region", "account", "queue name")
_DIGITS_PATTERN = r"^[0-9]+$"

if TYPE_CHECKING:
    from .. import types


_SPACES = {" ": "a space", "\t": "a tab", "\n": "a line break", "\r": "a carriage return"}


def _arn_sentence(arn: str) -> str:
    """What is wrong with an eventSourceARN, in the words of what the file shows."""
    form = "a queue resource name like 'arn:provider:sqs:<region>:<account>:<queue>'"
    space = re.search(r"\s", arn)
    if space:
        what = _SPACES.get(space.group(), f"the whitespace character {space.group()!r}")
        return f"eventSourceARN '{arn}' holds {what} at position {space.start()}; it is {form}, with no whitespace."
    parts = arn.split(":")
    if parts[0] != "arn":
        return f"'{arn}' is not {form}."
    if len(parts) != len(_ARN_PARTS):
        return (
            f"eventSourceARN '{arn}' has {len(parts)} colon-separated part(s), not 6 "
            f"(arn, partition, service, region, account, queue name); it is {form}."
        )
    empty = [name for name, part in zip(_ARN_PARTS, parts, strict=False) if not part]  # parts: 6 or more
    if empty:
        return f"eventSourceARN '{arn}' has no {' and no '.join(empty)}; it is {form}."
    return f"'{arn}' is not {form}."


#: Q12 and Q14, declared before the shapes that cite them; implemented by check_arn_region, check_message_attributes
RECORD_KEYS = rule(
    "Q12",
    "queue",
    "doc",
    "Record keys include md5OfMessageAttributes when there are message attributes; a message "
    "attribute is {stringValue | binaryValue, stringListValues, binaryListValues, dataType}; awsRegion is the region "
    "of the ARN.",
    severity="error or warning",
)
ATTRIBUTE_LIMITS = rule(
    "Q14",
    "queue",
    "doc",
    "At most 10 message attributes; names 1-256 of [A-Za-z0-9_.-] without leading, trailing "
    "or double dots; data type String, Number or Binary with an optional .suffix.",
)


def _timestamp(key: str, rule_id: str) -> Text:
    return Text(
        pattern=_DIGITS_PATTERN,
        rule=rule_id,
        message=key + " is '{value}'; it is epoch milliseconds as a string of digits.",
    )


ATTRIBUTE_NAME = Text(
    pattern=r"^(?!\.)(?!.*\.\.)(?!.*\.$)[A-Za-z0-9_.\-]{1,256}$",
    rule=ATTRIBUTE_LIMITS.id,
    message="'{value}' is not a valid attribute name: 1-256 letters, digits, '_', '-' or '.', without leading, "
    "trailing or double dots.",
)
DATA_TYPE = Text(
    pattern=r"^(String|Number|Binary)(\.[^\s]+)?$",
    rule=ATTRIBUTE_LIMITS.id,
    code="enum",
    message="dataType '{value}' is not String, Number or Binary (optionally with a .suffix).",
)

MESSAGE_ATTRIBUTE = Shape(
    "MessageAttribute",
    [
        F(
            "stringValue",
            Nullable(STR),
            required=False,
            doc="The value of a String or Number attribute.",
            rule=RECORD_KEYS.id,
        ),
        F(
            "binaryValue",
            Nullable(STR),
            required=False,
            doc="The base64 value of a Binary attribute.",
            rule=RECORD_KEYS.id,
        ),
        F(
            "stringListValues",
            ListOf(STR),
            required=False,
            doc="Reserved by the platform; an empty list.",
            rule=RECORD_KEYS.id,
        ),
        F(
            "binaryListValues",
            ListOf(STR),
            required=False,
            doc="Reserved by the platform; an empty list.",
            rule=RECORD_KEYS.id,
        ),
        F("dataType", DATA_TYPE, doc="String, Number or Binary, optionally with a .suffix.", rule=ATTRIBUTE_LIMITS.id),
    ],
    rule=RECORD_KEYS.id,
    doc="One message attribute as it appears in the event.",
)

ATTRIBUTES = Shape(
    "QueueRecordAttributes",
    [
        F(
            "ProviderTraceHeader",
            STR,
            required=False,
            aliases=(("aws", "AWSTraceHeader"),),
            attr="trace_header",
            doc="The trace header string of the distributed-tracing system.",
        ),
        F(
            "ApproximateReceiveCount",
            Text(
                pattern=r"^0*[1-9][0-9]*$",
                rule="Q4",
                message="ApproximateReceiveCount is '{value}'; it is a whole number as a string, "
                '"1" on first delivery.',
            ),
            doc='Times the message was received but not deleted ("1" on first delivery).',
            rule="QS3",
        ),
        F(
            "SentTimestamp",
            _timestamp("SentTimestamp", "QS3"),
            doc="When the message was sent, epoch milliseconds.",
            rule="QS3",
        ),
        F("SenderId", STR, doc="The user ID or role ID of the sender.", rule="QS3"),
        F(
            "ApproximateFirstReceiveTimestamp",
            _timestamp("ApproximateFirstReceiveTimestamp", "QS3"),
            doc="When the message was first received, epoch milliseconds.",
            rule="QS3",
        ),
        F(
            "SequenceNumber",
            Text(
                pattern=_DIGITS_PATTERN,
                rule=id_of(fifo_attributes),
                message="SequenceNumber is '{value}'; it is a large number written as digits.",
            ),
            required="FIFO only",
            doc="Large, non-consecutive number per message (FIFO).",
            rule=id_of(fifo_attributes),
        ),
        F("MessageGroupId", STR, required="FIFO only", doc="The message group (FIFO).", rule=id_of(fifo_attributes)),
        F(
            "MessageDeduplicationId",
            STR,
            required="FIFO only",
            doc="The deduplication token (FIFO).",
            rule=id_of(fifo_attributes),
        ),
        F(
            "DeadLetterQueueSourceArn",
            STR,
            required=False,
            doc="Set by the platform on messages moved back from a dead-letter queue.",
        ),
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
        F(
            "messageAttributes",
            MapOf(MESSAGE_ATTRIBUTE, keys=ATTRIBUTE_NAME),
            doc="Message attributes by name; {} when there are none.",
            rule="QS2",
        ),
        F(
            "md5OfMessageAttributes",
            Nullable(STR),
            required=False,
            doc="MD5 of the message attributes (only when there are some).",
            rule=RECORD_KEYS.id,
        ),
        F("md5OfBody", STR, doc="MD5 hex digest of the UTF-8 body.", rule="QS2"),
        F(
            "eventSource",
            STR,
            enum=tuple(EVENT_SOURCE.values()),
            rule="QS4",
            message="eventSource is '{value}'; a queue record says 'provider:queue' "
            "(or 'aws:sqs' on the real platform).",
            doc="provider:queue (aws:sqs on the real platform).",
        ),
        F(
            "eventSourceARN",
            Text(pattern=_ARN_PATTERN, rule="QS2", message=_arn_sentence),
            doc="Resource name of the queue.",
            rule="QS2",
            attr="event_source_arn",
        ),
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

rule(
    "QS1",
    "queue",
    "contract",
    "The queue event is an object whose `Records` is an array of queue records (default batch of up to 10).",
    origin="spec",
)(EVENT_SHAPE)
rule(
    "QS2",
    "queue",
    "contract",
    "A record has messageId, receiptHandle, body, attributes, messageAttributes, md5OfBody, "
    "eventSource, eventSourceARN and awsRegion, each of its type.",
    origin="spec",
)(RECORD)
rule(
    "QS3",
    "queue",
    "contract",
    "Record attributes are strings; ApproximateReceiveCount, SentTimestamp, SenderId and "
    "ApproximateFirstReceiveTimestamp are present; timestamps are epoch milliseconds.",
    origin="spec",
    severity="error or warning",
)(ATTRIBUTES)
rule(
    "QS4",
    "queue",
    "contract",
    "Each record's eventSource is `provider:queue` (`aws:sqs` on the real platform).",
    origin="spec",
)(RECORD.field("eventSource"))
rule(
    "Q4",
    "queue",
    "doc",
    'Every receive adds 1 to ApproximateReceiveCount ("1" on first delivery); a received '
    "message stays hidden for the visibility timeout.",
)(ATTRIBUTES.field("ApproximateReceiveCount"))

QueueEvent = EVENT_SHAPE.struct
QueueRecord = RECORD.struct
QueueRecordAttributes = ATTRIBUTES.struct
MessageAttribute = MESSAGE_ATTRIBUTE.struct
_UNSET = msgspec.UNSET

# --- semantic rules, over the typed event ---------------------------------------------
# On the compiled path every field has its declared type; on the lenient path (the value
# broke the shape, and the walk said where) a field may hold anything, so each check
# guards with a type test before it reads.

_ARN = re.compile(_ARN_PATTERN)
_NUMBER = re.compile(r"^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_SOURCE_DIALECT = {v: k for k, v in EVENT_SOURCE.items()}


def _records(event: Any) -> tuple[Any, ...]:
    """The typed records of the event (items that are not records left in: check with `type(r) is QueueRecord`)."""
    recs = event.records if type(event) is QueueEvent else None
    return recs if type(recs) is tuple else ()


@BATCH_LIMITS
def check_batch(event: Any, seen: Seen) -> Sequence[Issue]:
    """QS1/Q1: a batch is never empty and holds at most the configured batch size."""
    if type(event) is not QueueEvent or type(event.records) is not tuple:
        return ()
    n = len(event.records)
    if n == 0:
        return [
            error(
                path_of("Records"),
                "limit",
                "The batch is empty; the poller never invokes a function with no records.",
                EVENT_SHAPE.rule,
            )
        ]
    limit = seen.options.get("batch_size")
    if n <= (DEFAULT_BATCH if limit is None else min(limit, DEFAULT_BATCH)):
        return ()  # within every limit there is
    fifo = n > MAX_BATCH_FIFO and is_fifo(event)  # only a long batch asks
    if fifo and n > MAX_BATCH_FIFO:
        return [
            error(
                path_of("Records"),
                "limit",
                f"A FIFO queue delivers at most {MAX_BATCH_FIFO} records per batch; this one has {n}.",
                "Q1",
            )
        ]
    if n > MAX_BATCH_STANDARD:
        return [
            error(
                path_of("Records"),
                "limit",
                f"A batch holds at most {MAX_BATCH_STANDARD:,} records; this one has {n:,}.",
                "Q1",
            )
        ]
    if limit is not None and n > limit:
        return [
            error(
                path_of("Records"),
                "limit",
                f"The batch has {n} records, more than the configured batch size {limit}.",
                "Q1",
            )
        ]
    if limit is None and n > DEFAULT_BATCH:
        return [
            warning(
                path_of("Records"),
                "limit",
                f"The batch has {n} records; the default batch size is {DEFAULT_BATCH}, so this needs a larger "
                "configured batch size and a batching window (Q1).",
                "Q1",
            )
        ]
    return ()


# The checks read the event's tables (seen.tables, read once per call): "records" holds a column per
# record field, "records.attributes" one per attribute; "at" is each row's position in the batch. Each
# check is one code path for every event: a column holds its declared type when the event is well
# formed, and whatever the event had when it is not (the walk has named that), so a check guards
# where a wrong type would stop it (an unhashable value, a body that is not text).


@rule(
    "QS7", "queue", "contract", "Message ids are unique: one batch never holds the same messageId twice.", origin="spec"
)
def check_unique_ids(event: Any, seen: Seen) -> Sequence[Issue]:
    """QS7: no messageId twice in one batch."""
    table = seen.tables["records"]
    ids = table["message_id"]
    try:
        if len(set(ids)) == len(ids):
            return ()
    except TypeError:  # an unhashable messageId (the walk named its type): look id by id
        pass
    out = []
    first: dict[str, int] = {}
    for i, mid in zip(table["at"], ids, strict=True):
        if type(mid) is not str:
            continue
        if mid in first:
            out.append(
                error(
                    path_of("Records", i, "messageId"),
                    "conflict",
                    f"messageId '{mid}' already appears at $.Records[{first[mid]}]; a batch never holds one "
                    "message twice.",
                    "QS7",
                )
            )
        else:
            first[mid] = i
    return out


def check_event_source(event: Any, seen: Seen) -> Sequence[Issue]:
    """QS4: eventSource's spelling tells the dialect (a value of neither spelling is the walk's enum error)."""
    sources = seen.tables["records"]["event_source"]
    for spelling, dialect in _SOURCE_DIALECT.items():
        if spelling in sources:
            seen.saw(dialect)
    return ()


_ARN_READINGS: Readings[str, tuple[str, str, bool] | None] = Readings()
_UNREAD: tuple[str, str, bool] = ("not", "read", False)  # by identity: no reading is this very tuple
_ARN_FIELD = re.compile(r"[a-z0-9-]+")


def _arn_fields(arn: str) -> tuple[str, str, bool] | None:
    """(partition, region, True) of a queue ARN of the declared form; (partition, region, False) of a malformed
    one (QS2 says how) whose six colon-separated fields can still be told apart and whose partition and region
    are words once stripped of white space ('arn:aws:sqs:us-east-1 :1:q'); else None."""
    m = _ARN.match(arn)
    if m is not None:
        return m.group(1), m.group(3), True
    fields = arn.split(":")
    if len(fields) != len(_ARN_PARTS) or fields[0].strip() != "arn":
        return None
    partition, region = fields[1].strip(), fields[3].strip()
    if _ARN_FIELD.fullmatch(partition) is None or _ARN_FIELD.fullmatch(region) is None:
        return None
    return partition, region, False


def _arn_reading(arn: str) -> tuple[str, str, bool] | None:
    """(partition, region, well formed) of a queue ARN whose fields can be read, else None; a batch's records,
    and a function's batches, name one queue, so each ARN is read once (a bounded memo)."""
    found = _ARN_READINGS.get(arn, _UNREAD)
    if found is _UNREAD:
        found = _arn_fields(arn)
        _ARN_READINGS.remember(arn, found)
    return found


@RECORD_KEYS
def check_arn_region(event: Any, seen: Seen) -> Sequence[Issue]:
    """Q12: awsRegion is the region of eventSourceARN; one batch, one queue (the ARN's form is declared)."""
    table = seen.tables["records"]
    arns, regions = table["event_source_arn"], table["aws_region"]
    distinct: Any
    if arns and arns.count(arns[0]) == len(arns) == regions.count(regions[0]):  # one queue (the usual batch)
        arn, region = arns[0], regions[0]
        distinct = ((arn, region),) if type(arn) is str and type(region) is str else ()
    else:
        distinct = {(a, r) for a, r in zip(arns, regions, strict=True) if type(a) is str and type(r) is str}
    queues: set[str] = set()
    wrong: dict[tuple[str, str], str] = {}
    for arn, region in distinct:
        reading = _arn_reading(arn)
        if reading is None:
            continue  # the walk reported the ARN's form, and no region can be read from it
        partition, arn_region, well_formed = reading
        if well_formed:  # a malformed ARN tells no dialect and no second queue: QS2 names it
            if partition in EVENT_SOURCE:
                seen.saw(partition)
            queues.add(arn)
        if arn_region and region != arn_region:
            wrong[arn, region] = arn_region
    if not wrong and len(queues) < 2:
        return ()
    out = []
    if wrong:
        for i, pair in zip(table["at"], zip(arns, regions, strict=True), strict=True):
            if type(pair[0]) is str and type(pair[1]) is str and pair in wrong:
                out.append(
                    error(
                        path_of("Records", i, "awsRegion"),
                        "mismatch",
                        f"awsRegion is '{pair[1]}' but the queue's ARN is in '{wrong[pair]}'; they must agree.",
                        RECORD_KEYS.id,
                    )
                )
    if len(queues) > 1:
        out.append(
            warning(
                path_of("Records"),
                "conflict",
                f"The records come from {len(queues)} different queues; a batch comes from one queue.",
                EVENT_SHAPE.rule,
            )
        )
    return out


def _as_int(text: Any) -> int | None:
    return int(text) if type(text) is str and text.isascii() and text.isdigit() else None


def _holds(column: Sequence[Any], absent: Any) -> bool:
    """True when some value of the column is not `absent` (None, or UNSET for a spelling not used): a C-level count."""
    return column.count(absent) != len(column)


def _total(texts: Sequence[Any]) -> int:
    """The lengths of a column of texts added up (0 for one without a length: the walk named its type)."""
    try:
        return sum(map(len, texts))
    except TypeError:
        return sum([len(t) for t in texts if type(t) is str])


def check_attributes(event: Any, seen: Seen) -> Sequence[Issue]:
    """QS3: a message is not first received before it was sent; the trace header's spelling tells the dialect."""
    table = seen.tables["records.attributes"]
    n = len(table["at"])
    if table["trace_header__0"].count(_UNSET) != n:  # (C-level counts)
        seen.saw("provider")  # ProviderTraceHeader
    if table["trace_header__1"].count(_UNSET) != n:
        seen.saw("aws")  # AWSTraceHeader
    sent, first = table["sent_timestamp"], table["approximate_first_receive_timestamp"]
    # timestamps are digit strings (their declared pattern): two of one length compare as their numbers do
    # (C-level), else int() reads them; a pair that says "maybe" is read record by record, where a value
    # that is not digits (the walk named it) is passed over
    try:
        early = (
            any(map(lt, first, sent))
            if [*map(len, first)] == [*map(len, sent)]
            else any(map(lt, map(int, first), map(int, sent)))
        )
    except (TypeError, ValueError):
        early = True
    if not early:
        return ()
    out = []
    for i, sent_at, first_at in zip(table["at"], sent, first, strict=True):
        sent_at, first_at = _as_int(sent_at), _as_int(first_at)
        if sent_at is not None and first_at is not None and first_at < sent_at:
            out.append(
                warning(
                    path_of("Records", i, "attributes", "ApproximateFirstReceiveTimestamp"),
                    "order",
                    "The message was first received before it was sent.",
                    ATTRIBUTES.rule,
                )
            )
    return out


def md5_of_body(body: str) -> str:
    """The md5OfBody of a body: MD5 hex of its UTF-8 bytes (Q13)."""
    return _md5(body.encode("utf-8", "surrogatepass")).hexdigest()


@rule(
    "Q13",
    "queue",
    "doc",
    "md5OfBody is the MD5 hex of the UTF-8 body; md5OfMessageAttributes is the MD5 of the "
    "attributes encoded by name order, lengths and transport bytes.",
)
def check_md5_of_body(event: Any, seen: Seen) -> Sequence[Issue]:
    """Q13: md5OfBody matches the body."""
    table = seen.tables["records"]
    bodies, digests = table["body"], table["md5_of_body"]
    try:  # (UTF-8 without surrogates first: the usual body, and a cheaper call)
        expected: list[str | None] = [_md5(body.encode()).hexdigest() for body in bodies]
    except (UnicodeEncodeError, AttributeError):  # a lone surrogate (hashed as the platform would), or a body
        # that is not text (the walk named it: no digest to compare)
        expected = [_md5(b.encode("utf-8", "surrogatepass")).hexdigest() if type(b) is str else None for b in bodies]
    if expected == [*digests]:
        return ()
    return [
        error(
            path_of("Records", i, "md5OfBody"),
            "mismatch",
            f"md5OfBody is '{digest}' but the MD5 of this body is '{want}'.",
            "Q13",
        )
        for i, want, digest in zip(table["at"], expected, digests, strict=True)
        if want is not None and type(digest) is str and digest != want
    ]


def _attr_value_bytes(dtype: Any, string_value: Any, binary_value: Any) -> bytes | None:
    if not isinstance(dtype, str):
        return None
    if dtype.startswith("Binary"):
        if not isinstance(binary_value, str):
            return None
        try:
            return base64.b64decode(binary_value, validate=True)
        except (binascii.Error, ValueError):
            return None
    return string_value.encode("utf-8", "surrogatepass") if isinstance(string_value, str) else None


def md5_of_message_attributes(attributes: Mapping[str, Any]) -> str | None:
    """The md5OfMessageAttributes of event-shaped attributes (Q13); None when there are none.

    Takes the attributes as dicts (`{"dataType": ..., "stringValue": ...}`) or typed.
    """
    if not attributes:
        return None
    buf = bytearray()
    for name in sorted(attributes):
        attr = attributes[name]
        if isinstance(attr, Mapping):
            dtype, string_value, binary_value = attr["dataType"], attr.get("stringValue"), attr.get("binaryValue")
        else:
            dtype, string_value, binary_value = attr.data_type, attr.string_value, attr.binary_value
        raw_name, raw_type = name.encode("utf-8"), dtype.encode("utf-8")
        value = _attr_value_bytes(dtype, string_value, binary_value)
        if value is None:
            raise ValueError(f"message attribute {name!r} has no value")
        buf += struct.pack(">I", len(raw_name)) + raw_name
        buf += struct.pack(">I", len(raw_type)) + raw_type
        buf += b"\x02" if dtype.startswith("Binary") else b"\x01"
        buf += struct.pack(">I", len(value)) + value
    return hashlib.md5(bytes(buf)).hexdigest()


@ATTRIBUTE_LIMITS
def check_message_attributes(event: Any, seen: Seen) -> Sequence[Issue]:
    """Q12/Q13/Q14: how many attributes, each one's value for its type, and their MD5 (names and types are declared)."""
    table = seen.tables["records"]
    attributes, digests = table["message_attributes"], table["md5_of_message_attributes"]
    if not any(attributes) and not _holds(digests, None):
        return ()  # no attributes and no digest anywhere: nothing to check
    return [*_message_attribute_issues(table["at"], attributes, digests)]


def _message_attribute_issues(positions: Any, attributes: tuple[Any, ...], digests: tuple[Any, ...]) -> Iterator[Issue]:
    for i, attrs, digest in zip(positions, attributes, digests, strict=True):
        if not attrs and digest is None:
            continue  # no attributes and no digest: nothing to check
        if type(attrs) is not dict:
            continue
        base = path_of("Records", i, "messageAttributes")
        if len(attrs) > 10:
            yield error(
                base,
                "limit",
                f"A message has at most 10 message attributes; this one has {len(attrs)}.",
                ATTRIBUTE_LIMITS.id,
            )
        complete = True
        listed: list[str] = []  # the reserved lists that hold values (Q12), named when the digest is explained
        for name, attr in attrs.items():
            path = child_path(base, name)
            dtype = attr.data_type if type(attr) is MessageAttribute else None
            if type(attr) is MessageAttribute and (attr.string_list_values or attr.binary_list_values):
                for key, values in (
                    ("stringListValues", attr.string_list_values),
                    ("binaryListValues", attr.binary_list_values),
                ):
                    if values and isinstance(values, (tuple, list)):
                        listed.append(f"{name}.{key}")
                        yield warning(
                            child_path(path, key),
                            "reserved",
                            f"{key} of '{name}' holds {len(values)} value(s), but the platform reserves it "
                            "and always sends []. fnkit leaves it out of md5OfMessageAttributes, which it "
                            f"computes from the attribute's {'binaryValue' if key[0] == 'b' else 'stringValue'}"
                            " alone.",
                            RECORD_KEYS.id,
                        )
            if type(dtype) is not str or DATA_TYPE.broken(dtype):
                complete = False  # the walk reported it
                continue
            is_binary = dtype.startswith("Binary")
            want, other = ("binaryValue", "stringValue") if is_binary else ("stringValue", "binaryValue")
            value, other_value = (
                (attr.binary_value, attr.string_value) if is_binary else (attr.string_value, attr.binary_value)
            )
            if not isinstance(value, str):
                complete = False
                yield error(
                    child_path(path, want),
                    "missing",
                    f"A {dtype.split('.')[0]} attribute carries its value in {want}.",
                    RECORD_KEYS.id,
                )
            elif is_binary and _attr_value_bytes(dtype, None, value) is None:
                complete = False
                yield error(child_path(path, want), "format", "binaryValue is not valid base64.", RECORD_KEYS.id)
            elif dtype.startswith("Number") and not _NUMBER.match(value):
                yield error(
                    child_path(path, want),
                    "format",
                    f"'{value}' is not a number, but the dataType is Number.",
                    ATTRIBUTE_LIMITS.id,
                )
            if other_value is not None:
                yield warning(
                    child_path(path, other),
                    "unexpected",
                    f"A {dtype.split('.')[0]} attribute has no {other}.",
                    RECORD_KEYS.id,
                )
        if not attrs:
            if isinstance(digest, str):
                yield warning(
                    path_of("Records", i, "md5OfMessageAttributes"),
                    "unexpected",
                    "md5OfMessageAttributes appears only when the message has attributes.",
                    RECORD_KEYS.id,
                )
            continue
        if not complete or not all(isinstance(name, str) for name in attrs):
            continue
        expected = md5_of_message_attributes(attrs)
        treated = (
            (
                f" fnkit computed it without the reserved lists ({', '.join(listed)}): the digest covers an "
                "attribute's stringValue or binaryValue, and the lists are always empty on the real platform."
            )
            if listed
            else ""
        )
        if digest is None:
            yield error(
                path_of("Records", i, "md5OfMessageAttributes"),
                "missing",
                f"md5OfMessageAttributes is missing (or null), but the message has attributes: the platform "
                f"always sends their digest with them (expected '{expected}').{treated}",
                RECORD_KEYS.id,
            )
        elif isinstance(digest, str) and digest != expected:
            yield error(
                path_of("Records", i, "md5OfMessageAttributes"),
                "mismatch",
                f"md5OfMessageAttributes is '{digest}' but the MD5 of these attributes is '{expected}'.{treated}",
                id_of(check_md5_of_body),
            )


# --- limits: what the platform refuses to carry ---------------------------------------------


def _attribute_value_size(attr: Any) -> int:
    """The bytes the queue counts of one message attribute's value: a Binary's decoded bytes, else UTF-8 text."""
    if type(attr) is not MessageAttribute:
        return 0
    dtype, string_value, binary_value = attr.data_type, attr.string_value, attr.binary_value
    value = _attr_value_bytes(dtype, string_value, binary_value)
    if value is not None:
        return len(value)
    raw = binary_value if type(binary_value) is str else string_value  # unreadable: its text, as a bound
    return len(raw.encode("utf-8", "surrogatepass")) if type(raw) is str else 0


def _attributes_size(attrs: Any) -> int:
    """The bytes the queue counts of a message's attributes: each name, data type and value (Q16)."""
    if type(attrs) is not dict or not attrs:
        return 0
    total = 0
    for name, attr in attrs.items():
        if type(name) is str:
            total += len(name.encode("utf-8", "surrogatepass"))
        if type(attr) is MessageAttribute and type(attr.data_type) is str:
            total += len(attr.data_type.encode("utf-8", "surrogatepass"))
        total += _attribute_value_size(attr)
    return total


def _attributes_bound(attrs: Any) -> int:
    """An upper bound of `_attributes_size` from lengths alone (UTF-8 takes at most 4 bytes a character)."""
    if type(attrs) is not dict or not attrs:
        return 0
    total = 0
    for name, attr in attrs.items():
        total += 4 * len(name) if type(name) is str else 0
        if type(attr) is MessageAttribute:
            for text in (attr.data_type, attr.string_value, attr.binary_value):
                total += 4 * len(text) if type(text) is str else 0
    return total


def message_size(body: str, message_attributes: Mapping[str, Any] | None = None) -> int:
    """The size the queue counts of a message (Q16): UTF-8 bytes of the body, plus each attribute's name, data type
    and value (a Binary value's decoded bytes). Attributes as the event holds them or as `build_event` takes them."""
    size = len(body.encode("utf-8", "surrogatepass"))
    if message_attributes:
        typed = {}
        for name, attr in normalize_message_attributes(message_attributes).items():
            typed[name] = MESSAGE_ATTRIBUTE.compiled(attr)  # every type and declared pattern held, else:
            if typed[name] is None:
                issue = MESSAGE_ATTRIBUTE.walk(attr)[0]
                raise ValueError(f"message attribute {name!r}: {issue.message} ({issue.rule})")
        size += _attributes_size(typed)
    return size


@rule(
    "Q16",
    "queue",
    "doc",
    "A message, its body and message attributes (names, data types, values) together, is at most 1 MiB (1,048,576 "
    "bytes; 256 KiB before August 2025): the queue refuses to take a larger one, so a record over it never reaches "
    "a function (a warning; QueueSim.send refuses it).",
    severity="warning",
)
def check_message_size(event: Any, seen: Seen) -> Sequence[Issue]:
    """Q16: no record is larger than the queue accepts a message (exact sizes only where lengths alone cannot tell)."""
    table = seen.tables["records"]
    bodies, attributes = table["body"], table["message_attributes"]
    # UTF-8 takes at most 4 bytes a character, and no body is longer than the bodies together (a sum: cheaper than max)
    bound = 4 * _total(bodies)
    if bound <= MAX_MESSAGE_BYTES and (
        not any(attributes) or bound + sum([_attributes_bound(a) for a in attributes if a]) <= MAX_MESSAGE_BYTES
    ):
        return ()  # the bodies and every attribute together could not reach the limit: no record can
    out = []
    for i, body, attrs in zip(table["at"], bodies, attributes, strict=True):
        if type(body) is not str or 4 * len(body) + _attributes_bound(attrs) <= MAX_MESSAGE_BYTES:
            continue
        body_bytes = len(body.encode("utf-8", "surrogatepass"))
        size = body_bytes + _attributes_size(attrs)
        if size > MAX_MESSAGE_BYTES:
            out.append(
                warning(
                    path_of("Records", i, "body"),
                    "limit",
                    f"This message is {size:,} bytes (body {body_bytes:,}, message attributes {size - body_bytes:,}); "
                    f"a queue takes messages of at most {MAX_MESSAGE_BYTES:,} bytes (1 MiB) and refuses larger ones, "
                    "so the platform never delivers this record.",
                    "Q16",
                )
            )
    return out


# What a record's fields other than its body and message attributes take in the event's JSON, at most: ids, the
# receipt handle, digests, ARN, region and attributes are a few hundred bytes on the platform.
_RECORD_ALLOWANCE = 8192


@rule(
    "Q17",
    "queue",
    "doc",
    "A synchronous invocation's payload (the event, as JSON) is at most 6 MB (6,291,456 bytes): the poller delivers "
    "fewer records rather than build a larger batch, and the platform refuses a larger invocation (a warning).",
    severity="warning",
)
def check_payload_size(event: Any, seen: Seen) -> Sequence[Issue]:
    """Q17: the event's JSON fits one invocation (measured only when the lengths alone cannot tell)."""
    table = seen.tables["records"]
    bodies, attributes = table["body"], table["message_attributes"]
    # JSON takes at most 6 bytes a character (a control character as \u00XX)
    bound = 6 * _total(bodies) + len(bodies) * _RECORD_ALLOWANCE
    if bound <= MAX_PAYLOAD_BYTES and (
        not any(attributes) or bound + 2 * sum([_attributes_bound(a) for a in attributes if a]) <= MAX_PAYLOAD_BYTES
    ):
        return ()
    try:
        size, exact = len(msgspec.json.encode(event)), True
    except (TypeError, ValueError, UnicodeEncodeError, OverflowError):  # a lenient value JSON cannot carry as it is
        size, exact = sum(len(b.encode("utf-8", "surrogatepass")) for b in bodies if type(b) is str), False
    if size <= MAX_PAYLOAD_BYTES:
        return ()
    return [
        warning(
            path_of("Records"),
            "limit",
            f"The event is {'' if exact else 'at least '}{size:,} bytes of JSON ({len(bodies)} record(s)); a "
            f"synchronous invocation carries at most {MAX_PAYLOAD_BYTES:,} bytes (6 MB), so the poller never builds "
            "this batch: it delivers fewer records per invocation instead.",
            "Q17",
        )
    ]


EVENT_CHECKS = [
    check_batch,
    check_unique_ids,
    check_event_source,
    check_arn_region,
    check_attributes,
    check_fifo,
    check_md5_of_body,
    check_message_attributes,
    check_message_size,
    check_payload_size,
]
EVENT_CONTRACT = Contract(EVENT_SHAPE, EVENT_CHECKS, source=SOURCE)


def validate_event(event: Any, *, batch_size: int | None = None) -> Report:
    """Every problem of a queue batch event, located; never raises, whatever it is given."""
    return EVENT_CONTRACT.check(event, {"batch_size": batch_size} if batch_size is not None else None)[0]


def parse_event(event: Any) -> types.ParsedQueueEvent:
    """The event as frozen typed values (`QueueEvent.records[i].md5_of_body`); raises ContractError when invalid."""
    report, typed = EVENT_CONTRACT.check(event)
    if not report.ok:
        raise ContractError(report)
    return cast("types.ParsedQueueEvent", typed)


def looks_like(event: Any) -> bool:
    """True when the value is shaped like a queue event (for source detection)."""
    if not isinstance(event, dict) or "Records" not in event:
        return False
    recs = event["Records"]
    if not isinstance(recs, list) or not recs or not isinstance(recs[0], dict):
        return True
    first = recs[0]
    return not first.keys().isdisjoint(_RECORD_LANDMARKS) or first.get("eventSource") in ("provider:queue", "aws:sqs")


_RECORD_LANDMARKS = frozenset(("messageId", "receiptHandle", "body", "md5OfBody"))


_MESSAGE_ID = itemgetter("messageId")


def correlation_ids(event: Any) -> list[str]:
    """Every messageId of the batch, in order."""
    return [*batch_ids(event)]


def batch_ids(event: Any) -> tuple[str, ...]:
    """Every messageId of the batch, in order, as a tuple (what an outcome keeps)."""
    if type(event) is QueueEvent:
        return tuple([r.message_id for r in _records(event) if type(r) is QueueRecord and type(r.message_id) is str])
    recs = event.get("Records") if isinstance(event, dict) else None
    if not isinstance(recs, list):
        return ()
    try:  # every record a dict with a string messageId (join refuses anything else): one C-level pass
        ids = tuple(map(_MESSAGE_ID, recs))
        "".join(ids)
        return ids
    except (TypeError, KeyError):  # some record is not one: keep the ids there are
        return tuple(
            [rec["messageId"] for rec in recs if isinstance(rec, dict) and isinstance(rec.get("messageId"), str)]
        )


# --- building ---------------------------------------------------------------------


def normalize_message_attributes(attrs: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Message attributes in the event's own shape; plain str, int/float and bytes values are accepted too."""
    out: dict[str, dict[str, Any]] = {}
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
