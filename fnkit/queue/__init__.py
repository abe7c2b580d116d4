"""The message queue source: batch events, `batchItemFailures` responses, and what the poller does."""

from ._batches import Message, SimInvocation
from ._build import build_event, queue_arn
from ._config import QueueConfig
from ._contents import MAX_MESSAGE_BYTES, MAX_PAYLOAD_BYTES, md5_of_body, md5_of_message_attributes, message_size
from ._event import EVENT_SHAPE, correlation_ids, looks_like, parse_event, validate_event
from ._fifo import is_fifo
from ._messages import events_from_messages
from ._outcome import BatchOutcome, outcome, run
from ._response import RESPONSE_SHAPE, json_schema, validate_response
from ._sim import QueueRun, QueueSim, SimContext

Config = QueueConfig  # every source names its configuration `Config`

__all__ = [
    "EVENT_SHAPE",
    "MAX_MESSAGE_BYTES",
    "MAX_PAYLOAD_BYTES",
    "RESPONSE_SHAPE",
    "BatchOutcome",
    "Config",
    "Message",
    "QueueConfig",
    "QueueRun",
    "QueueSim",
    "SimContext",
    "SimInvocation",
    "build_event",
    "correlation_ids",
    "events_from_messages",
    "is_fifo",
    "json_schema",
    "looks_like",
    "md5_of_body",
    "md5_of_message_attributes",
    "message_size",
    "outcome",
    "parse_event",
    "queue_arn",
    "run",
    "validate_event",
    "validate_response",
]
