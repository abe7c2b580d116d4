"""The queue batch event: its shape, its rule checks and its typed parse (what a message carries, its digests,
attributes and sizes, is `._contents`; `._build` builds events)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any, cast

from .._engine.findings import Finding, caution, problem
from .._engine.memo import Readings
from .._engine.report import ContractError, Report
from .._engine.shape import STR, F, ListOf, MapOf, Nullable, Shape, Text
from .._engine.validate import Check, Contract, Seen, reads
from ..rules import id_of, rule
from ._config import BATCH_LIMITS, DEFAULT_BATCH, MAX_BATCH_FIFO, MAX_BATCH_STANDARD
from ._contents import (
    ATTRIBUTE_NAME,
    MESSAGE_ATTRIBUTE,
    RECORD_KEYS,
    check_md5_of_body,
    check_message_attributes,
    check_message_size,
    check_payload_size,
    record_keys,
)
from ._fifo import fifo_attributes, is_fifo
from ._tables import ATTRIBUTE_ROWS, RECORDS

SOURCE = "queue"
EVENT_SOURCE = {"provider": "provider:queue", "aws": "aws:sqs"}
TRACE_KEY = {"provider": "ProviderTraceHeader", "aws": "AWSTraceHeader"}

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


def _timestamp(key: str, rule_id: str) -> Text:
    return Text(
        pattern=_DIGITS_PATTERN,
        rule=rule_id,
        message=key + " is '{value}'; it is epoch milliseconds as a string of digits.",
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
    "QS2",
    "queue",
    "contract",
    "A record has messageId, receiptHandle, body, attributes, messageAttributes, md5OfBody, "
    "eventSource, eventSourceARN and awsRegion, each of its type.",
    origin="spec",
)(RECORD)
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

# --- semantic rules, over the typed event ---------------------------------------------
# On the compiled path every field has its declared type; on the lenient path (the value
# broke the shape, and the walk said where) a field may hold anything. A check that declares
# what it reads (`reads`) is given only the rows whose columns there hold their declared types;
# a check that reads a field it does not declare guards with a type test before it reads.

_ARN = re.compile(_ARN_PATTERN)
_SOURCE_DIALECT = tuple((v, k) for k, v in EVENT_SOURCE.items())  # (each spelling of eventSource, its dialect)


def _records(event: Any) -> tuple[Any, ...]:
    """The typed records of the event (items that are not records left in: check with `type(r) is QueueRecord`)."""
    recs = event.records if type(event) is QueueEvent else None
    return recs if type(recs) is tuple else ()


@rule(
    "QS1",
    "queue",
    "contract",
    "The queue event is an object whose `Records` is an array of queue records (default batch of up to 10).",
    origin="spec",
)
def one_batch(records: int | None = None, queues: int | None = None) -> list[Finding]:
    """QS1 beyond the structure its shape declares (`EVENT_SHAPE`, whose walk names QS1 too): a batch holds at least
    one record (`records`: how many it holds, counted by `check_batch`) and comes from one queue (`queues`: how many
    its well-formed ARNs name, counted by `check_arn_region`). Its findings name it, whichever check returns them."""
    if records == 0:
        return [
            problem(
                "limit",
                "The batch is empty; the poller never invokes a function with no records.",
                "Records",
                of=one_batch,
            )
        ]
    if queues is not None and queues > 1:
        return [
            caution(
                "conflict",
                f"The records come from {queues} different queues; a batch comes from one queue.",
                "Records",
                of=one_batch,
            )
        ]
    return []


@BATCH_LIMITS
@reads(RECORDS)
def check_batch(event: Any, seen: Seen) -> Sequence[Finding]:
    """Q1: a batch holds at most the configured batch size (and QS1, `one_batch`: never none)."""
    n = len(event.records)  # (every item, a record or not: the walk names one that is not)
    if n == 0:
        return one_batch(records=0)
    limit = seen.options.get("batch_size")
    if n <= (DEFAULT_BATCH if limit is None else min(limit, DEFAULT_BATCH)):
        return ()  # within every limit there is
    fifo = n > MAX_BATCH_FIFO and is_fifo(event)  # only a long batch asks
    if fifo and n > MAX_BATCH_FIFO:
        return [
            problem(
                "limit",
                f"A FIFO queue delivers at most {MAX_BATCH_FIFO} records per batch; this one has {n}.",
                "Records",
            )
        ]
    if n > MAX_BATCH_STANDARD:
        return [
            problem("limit", f"A batch holds at most {MAX_BATCH_STANDARD:,} records; this one has {n:,}.", "Records")
        ]
    if limit is not None and n > limit:
        return [problem("limit", f"The batch has {n} records, more than the configured batch size {limit}.", "Records")]
    if limit is None and n > DEFAULT_BATCH:
        return [
            caution(
                "limit",
                f"The batch has {n} records; the default batch size is {DEFAULT_BATCH}, so this needs a larger "
                f"configured batch size and a batching window ({BATCH_LIMITS.id}).",
                "Records",
            )
        ]
    return ()


# The checks read the event's tables (seen.tables, read once per call): "records" holds a column per
# record field, "records.attributes" one per attribute; "at" is each row's position in the batch. Each
# check is one code path for every event: the columns a check declares (`reads`) hold their declared
# types, on both paths (when the event is not well formed the engine leaves out the rows where they do
# not: the walk has named those).


@rule(
    "QS7", "queue", "contract", "Message ids are unique: one batch never holds the same messageId twice.", origin="spec"
)
@reads(RECORDS, "message_id")
def check_unique_ids(event: Any, seen: Seen) -> Sequence[Finding]:
    """QS7: no messageId twice in one batch."""
    table = seen.tables[RECORDS]
    ids = table["message_id"]
    if len(ids) < 2 or len(set(ids)) == len(ids):  # (one record: no set to make)
        return ()
    out = []
    first: dict[str, int] = {}
    for i, mid in zip(table["at"], ids, strict=True):
        if mid in first:
            out.append(
                problem(
                    "conflict",
                    f"messageId '{mid}' already appears at {seen.path_to(RECORDS.row(first[mid]))}; a batch never "
                    "holds one message twice.",
                    "messageId",
                    row=RECORDS.row(i),
                )
            )
        else:
            first[mid] = i
    return out


def check_event_source(event: Any, seen: Seen) -> Sequence[Finding]:
    """QS4: eventSource's spelling tells the dialect (a value of neither spelling is the walk's enum error)."""
    sources = seen.tables[RECORDS]["event_source"]
    for spelling, dialect in _SOURCE_DIALECT:
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
    """(partition, region, well formed) of a queue ARN not met before, remembered (a bounded memo: a batch's
    records, and a function's batches, name one queue, so each ARN is read once; `check_arn_region` asks the memo)."""
    found = _arn_fields(arn)
    _ARN_READINGS.remember(arn, found)
    return found


@reads(RECORDS, "event_source_arn", "aws_region")
def check_arn_region(event: Any, seen: Seen) -> Sequence[Finding]:
    """Reads each queue ARN once: its partition tells the dialect; its region, what awsRegion must be (Q12,
    `record_keys`); how many queues the batch comes from, one (QS1, `one_batch`). The ARN's form is declared."""
    table = seen.tables[RECORDS]
    arns, regions = table["event_source_arn"], table["aws_region"]
    distinct: Any
    if arns and (len(arns) == 1 or arns.count(arns[0]) == len(arns) == regions.count(regions[0])):  # one queue
        distinct = ((arns[0], regions[0]),)
    else:
        distinct = {*zip(arns, regions, strict=True)}
    queues: list[str] = []  # the well-formed ARNs (a set only when there are two)
    wrong: dict[tuple[str, str], str] | None = None  # (made when a region is wrong)
    for arn, region in distinct:
        reading = _ARN_READINGS.get(arn, _UNREAD)  # (partition, region, well formed), else None
        if reading is _UNREAD:
            reading = _arn_reading(arn)
        if reading is None:
            continue  # the walk reported the ARN's form, and no region can be read from it
        partition, arn_region, well_formed = reading
        if well_formed:  # a malformed ARN tells no dialect and no second queue: QS2 names it
            if partition in EVENT_SOURCE:
                seen.saw(partition)
            queues.append(arn)
        if arn_region and region != arn_region:
            if wrong is None:
                wrong = {}
            wrong[arn, region] = arn_region
    queues = [*{*queues}] if len(queues) > 1 else queues
    if wrong is None and len(queues) < 2:
        return ()
    out = []
    if wrong:
        for i, pair in zip(table["at"], zip(arns, regions, strict=True), strict=True):
            if pair in wrong:
                out += record_keys(RECORDS.row(i), region=(pair[1], wrong[pair]))
    if len(queues) > 1:
        out += one_batch(queues=len(queues))
    return out


def _as_int(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() else None


@rule(
    "QS3",
    "queue",
    "contract",
    "Record attributes are strings; ApproximateReceiveCount, SentTimestamp, SenderId and "
    "ApproximateFirstReceiveTimestamp are present; timestamps are epoch milliseconds.",
    origin="spec",
    severity="error or warning",
)
@reads(ATTRIBUTE_ROWS, "sent_timestamp", "approximate_first_receive_timestamp")
def check_attributes(event: Any, seen: Seen) -> Sequence[Finding]:
    """QS3 beyond the structure its shape declares (`ATTRIBUTES`, whose walk names QS3 too): a message is not first
    received before it was sent (the trace header's spelling tells the dialect: the engine notes it, as it notes the
    spelling of every field with two)."""
    table = seen.tables[ATTRIBUTE_ROWS]
    sent, first = table["sent_timestamp"], table["approximate_first_receive_timestamp"]
    # timestamps are digit strings (their declared pattern): two of one length compare as their numbers do, else
    # int() reads them; a pair that says "maybe" has the records read one by one, where a value that is not digits
    # (the walk named it) is passed over (a loop: cheaper than a map and a list of lengths a column, at any size)
    try:
        for first_at, sent_at in zip(first, sent):  # noqa: B905 - two columns of one table (strict= costs a keyword)
            if first_at < sent_at if len(first_at) == len(sent_at) else int(first_at) < int(sent_at):
                break
        else:
            return ()
    except ValueError:  # a timestamp that is not digits (the walk named it)
        pass
    out = []
    for i, sent_at, first_at in zip(table["at"], sent, first, strict=True):
        sent_at, first_at = _as_int(sent_at), _as_int(first_at)
        if sent_at is not None and first_at is not None and first_at < sent_at:
            out.append(
                caution(
                    "order",
                    "The message was first received before it was sent.",
                    "ApproximateFirstReceiveTimestamp",
                    row=ATTRIBUTE_ROWS.row(i),
                )
            )
    return out


EVENT_CHECKS: list[Check] = [
    check_batch,
    check_unique_ids,
    check_event_source,
    check_arn_region,
    check_attributes,
    fifo_attributes,
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
    if type(event) is dict:  # (the usual event)
        recs = event.get("Records")
    elif type(event) is QueueEvent:
        return tuple([r.message_id for r in _records(event) if type(r) is QueueRecord and type(r.message_id) is str])
    else:
        recs = event.get("Records") if isinstance(event, dict) else None
    if type(recs) is not list and not isinstance(recs, list):
        return ()
    try:  # every record a dict with a string messageId (join refuses anything else): one C-level pass
        ids = tuple(map(_MESSAGE_ID, recs))
        "".join(ids)
        return ids
    except (TypeError, KeyError):  # some record is not one: keep the ids there are
        return tuple(
            [rec["messageId"] for rec in recs if isinstance(rec, dict) and isinstance(rec.get("messageId"), str)]
        )
