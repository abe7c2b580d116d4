"""Ordered (FIFO) queues, in one place: is this batch FIFO, and the rules only FIFO queues have (Q9, Q10, QS5, Q15).

Is a batch FIFO? Two kinds of evidence can say, and `fifo_reading` weighs them the same way for every
caller (the event checks, the outcome's decision, QueueSim's events and the importer):

- the queue's name in `eventSourceARN`: every FIFO queue's name ends in `.fifo`, and a standard queue's
  name cannot (the platform's naming rule); it is one fact for the whole batch, set by the platform;
- the record attributes: the contract states that SequenceNumber, MessageGroupId and
  MessageDeduplicationId appear in events of ordered queues and are absent from standard queues' (QS5).

The ARN wins when it names a queue, with one exception. A name ending in .fifo is FIFO, so its records
that lack the attributes have attributes missing (QS5 names each). A name without .fifo is standard, so a
stray MessageGroupId on its records is one misplaced attribute (one QS5 error, not a FIFO batch with errors
on every other record), unless the records carry MessageGroupId *and* SequenceNumber: the queue service
assigns a SequenceNumber itself, only on a FIFO queue's delivery, so such records came out of a FIFO queue.
The contract's evidence is then unambiguous and wins over the name (a contract fact always wins): the ARN is
a placeholder, said once (Q15). With no ARN to read (a hand-made record, the importer without `queue_arn`),
MessageGroupId says FIFO: it is the attribute that gives FIFO its behaviour (one batch in flight per group,
Q9; the group's order, Q10). A batch comes from one queue, so its first record speaks for it; QS5 then holds
every record to that answer.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from .._engine.findings import Finding, caution, problem
from ..rules import id_of, rule
from ._config import FIFO_GROUPS
from ._tables import ATTRIBUTE_ROWS, RECORDS

FIFO_ATTRIBUTES = ("SequenceNumber", "MessageGroupId", "MessageDeduplicationId")
#: the sentence an outcome's reason gains when a FIFO group's order breaks (Q10)
GROUP_ORDER_BREAKS = " The FIFO group order breaks (see warnings)."


_NOT_A_RECORD = object()  # what an item that is not a record holds where a record's eventSourceARN is


def fifo_reading(event: Any) -> tuple[bool, int | None]:
    """(FIFO?, the position of the record whose ARN lacks .fifo when the attributes say FIFO despite it, else None),
    as the batch's first record shows it (see the module's note). The event as a dict or typed; a record of
    another type is passed over."""
    records = event.get("Records") if type(event) is dict else getattr(event, "records", None)
    if not records or (type(records) is not list and type(records) is not tuple):
        return False, None
    i, rec = 0, records[0]
    dict_record = type(rec) is dict  # (the event as a dict; else typed, its lenient form holding whatever it had)
    arn: Any = rec.get("eventSourceARN") if dict_record else getattr(rec, "event_source_arn", _NOT_A_RECORD)
    if arn is _NOT_A_RECORD:  # pass over items that are not records
        for i, rec in enumerate(records):  # noqa: B007 - the record found, and where
            if type(rec) is dict or hasattr(rec, "event_source_arn"):
                break
        else:
            return False, None
        dict_record = type(rec) is dict
        arn = rec.get("eventSourceARN") if dict_record else rec.event_source_arn
    # the sequence is read only after a group (without a group, it says nothing)
    if dict_record:
        attrs = rec.get("attributes")
        group = attrs.get("MessageGroupId") if type(attrs) is dict else None
        sequence = attrs.get("SequenceNumber") if group is not None else None  # (a dict: it held the group)
    else:
        attrs = rec.attributes
        group = getattr(attrs, "message_group_id", None)
        sequence = getattr(attrs, "sequence_number", None) if group is not None else None
    return _weigh(arn, group, sequence, i)


def _weigh(arn: Any, group: Any, sequence: Any, at: int) -> tuple[bool, int | None]:
    """`fifo_reading` of the batch whose record at position `at` holds `arn` (its eventSourceARN), `group` and
    `sequence` (its MessageGroupId and SequenceNumber; None when absent): the one place the evidence is weighed
    (see the module's note; `fifo_attributes` reads the three from the event's tables)."""
    names_queue = type(arn) is str and ":" in arn  # an ARN that names the queue
    if names_queue and arn.endswith(".fifo"):
        return True, None
    if group is None:
        return False, None
    if not names_queue:  # no ARN to read: a message group says FIFO
        return True, None
    return (True, at) if sequence is not None else (False, None)  # only a FIFO queue's delivery adds both (Q15)


def is_fifo(event: Any) -> bool:
    """True when the batch comes from an ordered (FIFO) queue: its ARN ends in .fifo, or its records carry
    MessageGroupId and SequenceNumber (Q15), or a MessageGroupId without an ARN. The event as a dict or typed."""
    return fifo_reading(event)[0]


@rule(
    "Q15",
    "queue",
    "inferred",
    "A batch whose records carry MessageGroupId and SequenceNumber comes from a FIFO queue even when its "
    "eventSourceARN lacks .fifo "
    "(a placeholder ARN; every FIFO queue's name ends in .fifo): one warning for the batch, and the records are "
    "checked as FIFO.",
    origin="kit",
    severity="warning",
)
def placeholder_arn(event: Any, inferred_at: int | None) -> list[Finding]:
    """Q15: the one warning of a batch read as FIFO from its attributes while its ARN names a queue without .fifo
    (`inferred_at`: that record's position, from `fifo_reading`)."""
    if inferred_at is None:
        return []
    records: Any = event.get("Records") if type(event) is dict else event.records
    rec = records[inferred_at]
    arn = rec.get("eventSourceARN") if type(rec) is dict else rec.event_source_arn
    return [
        caution(
            "fifo",
            f"eventSourceARN '{arn}' does not end in .fifo, yet the records carry MessageGroupId and SequenceNumber, "
            "which only FIFO queues send, and every FIFO queue's name ends in .fifo: the ARN looks like a "
            "placeholder. fnkit checks the batch as FIFO.",
            "eventSourceARN",
            row=RECORDS.row(inferred_at),
            of=placeholder_arn,
        )
    ]


@rule(
    "QS5",
    "queue",
    "contract",
    "SequenceNumber, MessageGroupId and MessageDeduplicationId appear in records of "
    "ordered (FIFO) queues and are absent for standard queues.",
    origin="spec",
)
def fifo_attributes(event: Any, seen: Any) -> Sequence[Finding]:
    """QS5: each record carries the three FIFO attributes exactly when the queue is FIFO, as one reading of the
    batch tells (`fifo_reading`; Q15, `placeholder_arn`, when it reads a FIFO batch under an ARN without .fifo: its
    warning comes first). Reads the "records.attributes" columns (a value of any type counts as present; absent is
    None)."""
    records, table = seen.tables[RECORDS], seen.tables[ATTRIBUTE_ROWS]
    at = table["at"]
    sequences, groups, tokens = table["sequence_number"], table["message_group_id"], table["message_deduplication_id"]
    if at and at[0] == 0:  # the first record and its attributes are of their shape (rows 0 of both tables)
        fifo, inferred_at = _weigh(records["event_source_arn"][0], groups[0], sequences[0], 0)
    else:  # (the walk named what is wrong there: the first record that is one speaks for the batch)
        fifo, inferred_at = fifo_reading(event)
    absent = 0 if fifo else len(at)  # how many records lack each attribute when all is as it should be
    if sequences.count(None) == absent and groups.count(None) == absent and tokens.count(None) == absent:
        return () if inferred_at is None else placeholder_arn(event, inferred_at)
    out = [] if inferred_at is None else placeholder_arn(event, inferred_at)
    for i, *values in zip(at, sequences, groups, tokens, strict=True):
        for key, value in zip(FIFO_ATTRIBUTES, values, strict=True):
            if (value is not None) == fifo:
                continue
            out.append(
                problem(
                    "missing",
                    f"Records of a FIFO queue carry {key}; it is missing.",
                    key,
                    row=ATTRIBUTE_ROWS.row(i),
                    of=fifo_attributes,
                )
                if fifo
                else problem(
                    "unexpected",
                    f"{key} appears only in records of FIFO queues (queue names ending in .fifo); this queue "
                    "is standard.",
                    key,
                    row=ATTRIBUTE_ROWS.row(i),
                    of=fifo_attributes,
                )
            )
    return out


@rule(
    "Q10",
    "queue",
    "inferred",
    "FIFO partial response: a listed message of a group followed by an unlisted message of "
    "the same group breaks the group's order (the unlisted one is deleted); report every failed and unprocessed "
    "message instead.",
    severity="warning",
)
def group_order(event: Any, failed: Any, at: int | None = None) -> Sequence[Finding]:
    """Q10: in a FIFO batch, each unlisted message that follows a listed one of its group (it is deleted, and the
    group's order breaks): a warning for each, at the record below the event. `failed`: the listed messageIds.
    The event as a dict. `at`: where the one listed message sits in the batch, when the caller found it there
    and nowhere else; a message without a group is followed by none of its group, whatever the queue."""
    if not failed or type(event) is not dict:
        return ()
    if at is not None:
        records = event.get("Records")
        rec = records[at] if type(records) is list and at < len(records) else None
        if type(rec) is dict and rec.get("messageId") == failed[0]:  # (the record the caller found)
            attrs = rec.get("attributes")
            if type(attrs) is not dict or type(attrs.get("MessageGroupId")) is not str:
                return ()
    if not fifo_reading(event)[0]:
        return ()
    records = event["Records"]
    out = []
    failed_groups: dict[str, str] = {}
    for i, rec in enumerate(records):
        attrs = rec.get("attributes") if type(rec) is dict else None
        group = attrs.get("MessageGroupId") if type(attrs) is dict else None
        mid = rec.get("messageId") if type(rec) is dict else None
        if type(group) is not str or type(mid) is not str:
            continue
        if mid in failed:
            failed_groups.setdefault(group, mid)
        elif group in failed_groups:
            out.append(
                caution(
                    "ordering",
                    f"'{mid}' of group '{group}' follows failed '{failed_groups[group]}' but is not listed, so "
                    "it is deleted and the group's order breaks. List every message after the first failure of "
                    "a group.",
                    "Records",
                    i,
                )
            )
    return out


def send_refusal(fifo: bool, group_id: Any, dedup_id: Any) -> str | None:
    """Why a message with this group and deduplication id cannot go to a queue of this kind (Q9, QS5), else None."""
    if fifo and not group_id:
        return f"a FIFO queue needs a group_id for every message ({FIFO_GROUPS.id})"
    if not fifo and (group_id is not None or dedup_id is not None):
        return f"group_id and dedup_id belong to FIFO queues: QueueSim(fifo=True) ({id_of(fifo_attributes)})"
    return None


_M = TypeVar("_M")


@FIFO_GROUPS
class GroupQueue(Generic[_M]):
    """Q9: a FIFO queue's waiting messages, by group: a group with a message in flight delivers nothing, a group
    delivers in order, and a batch may mix groups. `group_of(m)` names a message's group."""

    def __init__(self, group_of: Callable[[_M], Any]) -> None:
        self.group_of = group_of
        self.groups: dict[Any, deque[_M]] = {}
        self.busy: dict[Any, int] = {}  # messages in flight per group

    def push(self, m: _M) -> None:
        """A sent message joins the end of its group."""
        self.groups.setdefault(self.group_of(m), deque()).append(m)

    def take(self, limit: int, admit: Callable[[_M], bool | None]) -> list[_M]:
        """Up to `limit` messages, group by group in order, from groups with nothing in flight. `admit(m)`: True
        takes the message, False drops it from its group (it left the queue), None ends the batch before it."""
        batch: list[_M] = []
        for gid, waiting in self.groups.items():
            if len(batch) >= limit:
                break
            if self.busy.get(gid):
                continue
            while waiting and len(batch) < limit:
                verdict = admit(waiting[0])
                if verdict is None:
                    return batch
                m = waiting.popleft()
                if verdict:
                    batch.append(m)
        return batch

    def in_flight(self, m: _M) -> None:
        """The message was delivered: its group is busy until it is deleted or visible again."""
        gid = self.group_of(m)
        self.busy[gid] = self.busy.get(gid, 0) + 1

    def done(self, m: _M) -> None:
        """The message was deleted, or its visibility timeout passed."""
        self.busy[self.group_of(m)] -= 1

    def requeue(self, failed: list[_M]) -> None:
        """Failed messages go back to the front of their groups, in their order (their groups stay busy until
        their visibility timeout passes)."""
        for m in reversed(failed):
            self.groups[self.group_of(m)].appendleft(m)

    def available(self) -> int:
        """How many messages wait in groups with nothing in flight."""
        return sum(len(q) for g, q in self.groups.items() if not self.busy.get(g))

    def waiting(self) -> bool:
        """True when a message waits in some group."""
        return any(self.groups.values())
