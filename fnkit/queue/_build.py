"""Building queue batch events: the queue's ARN, records with their digests, whole batches (deterministic per seed)."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack, cast

from .._settings.config import with_settings
from .._settings.project import Dialect, resolve_dialect
from ..rules import id_of
from ._config import BATCH_LIMITS, MAX_BATCH_FIFO, MAX_BATCH_STANDARD, QueueConfig, QueueFifoSetting
from ._contents import md5_of_body, md5_of_message_attributes, normalize_message_attributes
from ._event import _ARN, EVENT_SOURCE, TRACE_KEY
from ._fifo import fifo_attributes

if TYPE_CHECKING:
    from .. import types


@with_settings(QueueConfig, "fifo")
def queue_arn(
    *,
    region: str = "us-east-1",
    name: str | None = None,
    account: str = "123456789012",
    dialect: Dialect | None = None,
    config: QueueConfig | None = None,
    **settings: Unpack[QueueFifoSetting],
) -> str:
    """A queue ARN in the dialect's spelling (`.fifo` names for ordered queues: `fifo=True`, or `config`).

    `dialect`: 'aws' or 'provider'; by default the project's setting (fnkit's README, "One project setting").
    """
    fifo = QueueConfig.of(config, settings, queue_arn).fifo
    partition = "aws" if resolve_dialect(dialect) == "aws" else "provider"
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
    message_attributes: dict[str, dict[str, Any]] | None = None,
    trace_header: str | None = None,
) -> dict[str, Any]:
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
        attributes["MessageDeduplicationId"] = (
            dedup_id or hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()
        )
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


@with_settings(QueueConfig, "fifo")
def build_event(
    bodies: Sequence[Any] | str,
    *,
    group_ids: Sequence[str] | None = None,
    dedup_ids: Sequence[str] | None = None,
    message_attributes: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
    queue_arn: str | None = None,
    region: str | None = None,
    receive_counts: Sequence[int] | None = None,
    trace_header: str | None = None,
    sent_timestamp_ms: int | None = None,
    dialect: Dialect | None = None,
    seed: int = 0,
    config: QueueConfig | None = None,
    **settings: Unpack[QueueFifoSetting],
) -> types.QueueEvent:
    """A valid queue batch event: one record per body (non-string bodies become JSON text); deterministic per seed.

    The queue: `fifo=`, or `config` (a `QueueConfig`: then the batch also holds at most its batch size, Q1).
    `dialect`: 'aws' or 'provider'; by default the project's setting (fnkit's README, "One project setting").
    """
    queue = QueueConfig.of(config, settings, build_event)
    fifo = queue.fifo
    dialect = resolve_dialect(dialect)
    if isinstance(bodies, (str, bytes)):
        bodies = [bodies]
    bodies = [
        b if isinstance(b, str) else (b.decode("utf-8") if isinstance(b, bytes) else json.dumps(b)) for b in bodies
    ]
    n = len(bodies)
    if config is not None and n > queue.batch_size:
        raise ValueError(
            f"the queue's batch size is {queue.batch_size}, so a batch holds at most {queue.batch_size} "
            f"records ({BATCH_LIMITS.id}), got {n}"
        )
    if fifo and n > MAX_BATCH_FIFO:
        raise ValueError(f"a FIFO batch holds at most {MAX_BATCH_FIFO} records ({BATCH_LIMITS.id}), got {n}")
    if n > MAX_BATCH_STANDARD:
        raise ValueError(f"a batch holds at most {MAX_BATCH_STANDARD} records ({BATCH_LIMITS.id}), got {n}")
    for name, seq in (("group_ids", group_ids), ("dedup_ids", dedup_ids), ("receive_counts", receive_counts)):
        if seq is not None and len(seq) != n:
            raise ValueError(f"{name} needs one entry per body ({n}), got {len(seq)}")
    if group_ids is not None and not fifo:
        raise ValueError(f"group_ids belong to FIFO queues: pass fifo=True ({id_of(fifo_attributes)})")
    if isinstance(message_attributes, Mapping) or message_attributes is None:
        per_body = [normalize_message_attributes(message_attributes)] * n
    else:
        if len(message_attributes) != n:
            raise ValueError(f"message_attributes needs one mapping per body ({n}), got {len(message_attributes)}")
        per_body = [normalize_message_attributes(m) for m in message_attributes]
    if queue_arn is None:
        queue_arn = _default_arn(fifo, region or "us-east-1", dialect)
    arn_match = _ARN.match(queue_arn)
    arn_region = arn_match.group(3) if arn_match else None
    region = region or arn_region or "us-east-1"
    factory = RecordFactory(seed)
    sent = sent_timestamp_ms if sent_timestamp_ms is not None else 1_767_225_600_000 + factory.rng.randrange(86_400_000)
    records = []
    for i, body in enumerate(bodies):
        sent_i = sent + i * 7
        records.append(
            make_record(
                factory,
                body,
                message_id=factory.message_id(),
                arn=queue_arn,
                region=region,
                dialect=dialect,
                sent_ms=sent_i,
                first_receive_ms=sent_i + 3 + factory.rng.randrange(40),
                receive_count=receive_counts[i] if receive_counts else 1,
                fifo=fifo,
                group_id=group_ids[i] if group_ids else None,
                dedup_id=dedup_ids[i] if dedup_ids else None,
                message_attributes=per_body[i] or None,
                trace_header=trace_header,
            )
        )
    return cast("types.QueueEvent", {"Records": records})


def _default_arn(fifo: bool, region: str, dialect: Dialect) -> str:
    return queue_arn(fifo=fifo, region=region, dialect=dialect)
