"""What a queue simulation is made of: each message's life (`Message`) and each batch handed to the function
(`SimInvocation`), kept compact for runs of millions, and the records of a batch's event rebuilt from them."""

from __future__ import annotations

from typing import Any

import msgspec

from ._delivery import Delivery
from ._outcome import BatchOutcome

EPOCH_MS = 1_767_225_600_000  # virtual time 0 = 2026-01-01T00:00:00Z
_KNOWN_COUNTS = 64
_COUNTS = tuple(
    str(n) for n in range(_KNOWN_COUNTS)
)  # ApproximateReceiveCount texts, made once (shared by every record)


def _records(
    texts: tuple[str, str, str, str], messages: tuple[Message, ...], counts: tuple[int, ...], time_s: float
) -> list[dict[str, Any]]:
    """The records of one batch: each message at its receive count, received at `time_s` (virtual);
    `texts`: the queue's (eventSource, eventSourceARN, awsRegion, SenderId)."""
    source, arn, region, sender = texts
    now_text = str(EPOCH_MS + int(time_s * 1000))  # the messages first received now share it
    out: list[dict[str, Any]] = []
    for m, count in zip(messages, counts, strict=True):
        first = m.first_receive_s
        first_text = now_text if first is None or first == time_s else str(EPOCH_MS + int(first * 1000))
        attributes: dict[str, str | None] = {
            "ApproximateReceiveCount": _COUNTS[count] if count < _KNOWN_COUNTS else str(count),
            "SentTimestamp": str(m._sent_ms),
            "SenderId": sender,
            "ApproximateFirstReceiveTimestamp": first_text,
        }
        if m.group_id is not None:
            attributes["SequenceNumber"] = m.sequence_number
            attributes["MessageGroupId"] = m.group_id
            attributes["MessageDeduplicationId"] = m.dedup_id
        mid = m.message_id
        if m.md5_attributes is None:
            out.append(
                {
                    "messageId": mid,
                    "receiptHandle": f"AQEB{mid}/{count}",
                    "body": m.body,
                    "attributes": attributes,
                    "messageAttributes": {},
                    "md5OfBody": m._md5.hex(),
                    "eventSource": source,
                    "eventSourceARN": arn,
                    "awsRegion": region,
                }
            )
        else:
            out.append(
                {
                    "messageId": mid,
                    "receiptHandle": f"AQEB{mid}/{count}",
                    "body": m.body,
                    "attributes": attributes,
                    "messageAttributes": m.message_attributes,
                    "md5OfMessageAttributes": m.md5_attributes,
                    "md5OfBody": m._md5.hex(),
                    "eventSource": source,
                    "eventSourceARN": arn,
                    "awsRegion": region,
                }
            )
    return out


class Message(msgspec.Struct, gc=False, eq=False):
    """One message's life in the simulated queue."""

    # Runs hold millions of these: a Struct (made in C, and left out of the garbage collector's
    # passes: a message refers to no container that could lead back to it), with what a record
    # needs kept compact (the MD5 as 16 bytes, the send time as an int) and written out as text
    # only when a record is built.
    message_id: str
    body: str
    index: int
    _sent_ms: int
    _md5: bytes
    _size: int  # the record's estimated JSON size (message attributes add theirs), for Q17's 6 MB
    group_id: str | None = None
    dedup_id: str | None = None
    sequence_number: str | None = None
    message_attributes: dict[str, Any] | None = None
    md5_attributes: str | None = None
    first_receive_s: float | None = None
    receive_count: int = 0
    state: str = "queued"  # queued | in-flight | deleted | dead-lettered
    deleted_s: float | None = None

    @property
    def md5_body(self) -> str:
        """md5OfBody of the message (Q13)."""
        return self._md5.hex()

    @property
    def sent_ms(self) -> str:
        """SentTimestamp: when the message was sent, epoch milliseconds as text."""
        return str(self._sent_ms)

    @property
    def size(self) -> int:
        """A conservative estimate of the record's JSON size, for the 6 MB payload limit (Q17)."""
        return self._size

    @property
    def sent_s(self) -> float:
        """When the message was sent, in virtual seconds."""
        return (self._sent_ms - EPOCH_MS) / 1000

    @property
    def final_state(self) -> str:
        """deleted, dead-lettered, or queued (still in the queue, visible or not)."""
        return "queued" if self.state in ("queued", "in-flight") else self.state

    def row(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "body": self.body,
            "group_id": self.group_id,
            "receive_count": self.receive_count,
            "state": self.final_state,
            "sent_s": self.sent_s,
            "first_receive_s": self.first_receive_s,
            "deleted_s": self.deleted_s,
        }

    def __repr__(self) -> str:
        return f"Message({self.message_id!r}, state={self.final_state!r}, receive_count={self.receive_count})"


class SimInvocation(msgspec.Struct, gc=False, eq=False):
    """One batch handed to the function: when, which records, and what the poller did."""

    # Runs hold a hundred thousand of these: a Struct left out of the garbage collector's passes (it
    # refers to no container that leads back to it: the queue's record texts, not the simulator)
    index: int
    time_s: float
    # the messages and their receive counts at this receive, side by side: cheap for runs of millions
    _messages: tuple[Message, ...]
    _counts: tuple[int, ...]
    _texts: tuple[
        str, str, str, str
    ]  # (eventSource, eventSourceARN, awsRegion, SenderId) of the queue, to rebuild the event
    outcome: BatchOutcome | None = None
    duration_s: float = 0.0

    @property
    def _deliveries(self) -> list[tuple[Message, int]]:
        return list(zip(self._messages, self._counts, strict=True))

    @property
    def deliveries(self) -> list[Delivery[Message]]:
        """Each record of the batch: `.message` and its `.receive_count` at this receive."""
        return [Delivery(d) for d in self._deliveries]

    @property
    def event(self) -> dict[str, Any]:
        """The event the function received (rebuilt on demand: runs of millions stay small)."""
        return {"Records": _records(self._texts, self._messages, self._counts, self.time_s)}

    @property
    def message_ids(self) -> list[str]:
        return [m.message_id for m in self._messages]

    def row(self) -> dict[str, Any]:
        o = self.outcome
        return {
            "invocation": self.index,
            "time_s": round(self.time_s, 6),
            "records": len(self._messages),
            "kind": o.kind if o else None,
            "failed": len(o.failed_ids) if o else None,
            "deleted": len(o.deleted_ids) if o else None,
            "rule": o.rule if o else None,
            "reason": o.reason if o else None,
            "warnings": len(o.issues.warnings) if o else 0,
        }

    def __repr__(self) -> str:
        kind = self.outcome.kind if self.outcome else "?"
        return f"SimInvocation(#{self.index}, t={self.time_s:g}s, records={len(self._messages)}, {kind})"
