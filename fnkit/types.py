"""The types a user's code meets: the shapes of events and responses, and the words fnkit answers with.

    from fnkit.types import QueueEvent, QueueResponse

    def handler(event: QueueEvent, context: object) -> QueueResponse:
        failed = [r["messageId"] for r in event["Records"] if not r["body"]]
        return {"batchItemFailures": [{"itemIdentifier": i} for i in failed]}

Events are `TypedDict`s of the JSON the platform sends (what each source's `build_event`
returns); keys that only some events carry are marked `NotRequired`. Nothing here runs at
import beyond `typing`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NotRequired, Protocol, TypedDict

from ._settings.project import Dialect, Isolation

#: an event source's name, as `fnkit.detect_source` answers
Source = Literal["queue", "mail", "alb"]
#: what happens to a queue batch (`BatchOutcome.kind`)
QueueKind = Literal["success", "partial", "failure"]
#: what the mail service does with the answer (`MailOutcome.kind`, its `status`)
MailKind = Literal["applied", "fallback", "ignored"]
#: what the client gets from the load balancer (`HttpOutcome.kind`)
AlbKind = Literal["delivered", "refused", "error"]
#: any source's outcome kind
OutcomeKind = Literal[QueueKind, MailKind, AlbKind]


# -- the queue ---------------------------------------------------------------------------


class QueueMessageAttribute(TypedDict):
    """One message attribute of a record: its data type and a string or binary value."""

    dataType: str
    stringValue: NotRequired[str | None]
    binaryValue: NotRequired[str | None]
    stringListValues: NotRequired[list[str]]
    binaryListValues: NotRequired[list[str]]


class QueueRecordAttributes(TypedDict):
    """A record's system attributes: receive count, times, sender; FIFO and trace keys when they apply."""

    ApproximateReceiveCount: str
    SentTimestamp: str
    SenderId: str
    ApproximateFirstReceiveTimestamp: str
    SequenceNumber: NotRequired[str]
    MessageGroupId: NotRequired[str]
    MessageDeduplicationId: NotRequired[str]
    AWSTraceHeader: NotRequired[str]
    ProviderTraceHeader: NotRequired[str]
    DeadLetterQueueSourceArn: NotRequired[str]


class QueueRecord(TypedDict):
    """One message of a queue batch event."""

    messageId: str
    receiptHandle: str
    body: str
    attributes: QueueRecordAttributes
    messageAttributes: dict[str, QueueMessageAttribute]
    md5OfMessageAttributes: NotRequired[str | None]
    md5OfBody: str
    eventSource: str
    eventSourceARN: str
    awsRegion: str


class QueueEvent(TypedDict):
    """A queue batch event: `Records`, 1 to 10,000 messages."""

    Records: list[QueueRecord]


class QueueItemFailure(TypedDict):
    """One message the function could not process: its messageId."""

    itemIdentifier: str


class QueueResponse(TypedDict):
    """A partial batch response: the messages to retry (an empty list or null: none)."""

    batchItemFailures: NotRequired[list[QueueItemFailure] | None]


# -- the mail flow -----------------------------------------------------------------------


class MailAddress(TypedDict):
    """An address as the mail event spells it."""

    address: str


class MailEnvelope(TypedDict):
    """The SMTP envelope: who sends, and to whom."""

    mailFrom: MailAddress
    recipients: list[MailAddress]


class MailEvent(TypedDict):
    """A mail-flow rule event."""

    summaryVersion: str
    envelope: MailEnvelope
    sender: MailAddress
    subject: str
    messageId: str
    invocationId: str
    flowDirection: Literal["INBOUND", "OUTBOUND"]
    truncated: bool


class MailActionParameters(TypedDict, total=False):
    """What a BOUNCE action says (`bounceMessage`)."""

    bounceMessage: str


class MailAction(TypedDict):
    """One action: its type and, for a bounce, its parameters."""

    type: Literal["DEFAULT", "BOUNCE", "DROP", "BYPASS_SPAM_CHECK", "MOVE_TO_JUNK"]
    parameters: NotRequired[MailActionParameters]


class MailRecipientAction(TypedDict):
    """An action for every recipient (`allRecipients`) or for some (`recipients`)."""

    action: MailAction
    allRecipients: NotRequired[bool]
    recipients: NotRequired[list[str]]


class MailResponse(TypedDict):
    """A synchronous rule's answer: the actions per recipient."""

    actions: list[MailRecipientAction]


# -- the load balancer -------------------------------------------------------------------


class AlbElb(TypedDict):
    """The target group the request came through."""

    targetGroupArn: str


class AlbRequestContext(TypedDict):
    """The event's request context."""

    elb: AlbElb


class AlbEvent(TypedDict):
    """A load balancer request event: single-value (`headers`, `queryStringParameters`) or multi-value maps."""

    requestContext: AlbRequestContext
    targetGroupArn: NotRequired[str]
    httpMethod: str
    path: str
    queryStringParameters: NotRequired[dict[str, str]]
    headers: NotRequired[dict[str, str]]
    multiValueQueryStringParameters: NotRequired[dict[str, list[str]]]
    multiValueHeaders: NotRequired[dict[str, list[str]]]
    body: NotRequired[str]
    isBase64Encoded: bool


class AlbResponse(TypedDict):
    """A function's answer to the load balancer: a status, headers (one form), a body."""

    statusCode: int
    statusDescription: NotRequired[str]
    headers: NotRequired[dict[str, str]]
    multiValueHeaders: NotRequired[dict[str, list[str]]]
    body: NotRequired[str]
    isBase64Encoded: NotRequired[bool]


#: any source's event
Event = QueueEvent | MailEvent | AlbEvent


# -- what `parse_event` returns: frozen typed values, fields in snake_case -------------------
# (msgspec Structs made from the contract's shapes at import; these protocols say what a reader
# finds on them. They are frozen: an assignment raises at run time.)


class ParsedQueueAttributes(Protocol):
    """A parsed record's system attributes (FIFO ones are None on a standard queue)."""

    approximate_receive_count: str
    sent_timestamp: str
    sender_id: str
    approximate_first_receive_timestamp: str
    sequence_number: str | None
    message_group_id: str | None
    message_deduplication_id: str | None
    trace_header: str | None  # either spelling's trace header key


class ParsedMessageAttribute(Protocol):
    """A parsed message attribute."""

    data_type: str
    string_value: str | None
    binary_value: str | None


class ParsedQueueRecord(Protocol):
    """A parsed queue record."""

    message_id: str
    receipt_handle: str
    body: str
    attributes: ParsedQueueAttributes
    message_attributes: Mapping[str, ParsedMessageAttribute]
    md5_of_message_attributes: str | None
    md5_of_body: str
    event_source: str
    event_source_arn: str
    aws_region: str


class ParsedQueueEvent(Protocol):
    """`fnkit.queue.parse_event`'s answer: the records, in order."""

    records: tuple[ParsedQueueRecord, ...]


class ParsedMailAddress(Protocol):
    """A parsed address."""

    address: str


class ParsedMailEnvelope(Protocol):
    """A parsed envelope."""

    mail_from: ParsedMailAddress
    recipients: tuple[ParsedMailAddress, ...]


class ParsedMailEvent(Protocol):
    """`fnkit.mail.parse_event`'s answer."""

    summary_version: str
    envelope: ParsedMailEnvelope
    sender: ParsedMailAddress
    subject: str
    message_id: str
    invocation_id: str
    flow_direction: str
    truncated: bool


class ParsedElb(Protocol):
    """A parsed request context's load balancer part."""

    target_group_arn: str


class ParsedRequestContext(Protocol):
    """A parsed request context."""

    elb: ParsedElb


class ParsedAlbEvent(Protocol):
    """`fnkit.alb.parse_event`'s answer: single-value maps, or multi-value ones (the others are None)."""

    request_context: ParsedRequestContext
    target_group_arn: str | None
    http_method: str
    path: str
    query_string_parameters: Mapping[str, str] | None
    multi_value_query_string_parameters: Mapping[str, tuple[str, ...]] | None
    headers: Mapping[str, str] | None
    multi_value_headers: Mapping[str, tuple[str, ...]] | None
    is_base64_encoded: bool
    body: str


__all__ = [
    "AlbEvent",
    "AlbKind",
    "AlbRequestContext",
    "AlbResponse",
    "Dialect",
    "Event",
    "Isolation",
    "MailAction",
    "MailAddress",
    "MailEnvelope",
    "MailEvent",
    "MailKind",
    "MailRecipientAction",
    "MailResponse",
    "OutcomeKind",
    "ParsedAlbEvent",
    "ParsedMailEvent",
    "ParsedQueueEvent",
    "ParsedQueueRecord",
    "QueueEvent",
    "QueueItemFailure",
    "QueueKind",
    "QueueMessageAttribute",
    "QueueRecord",
    "QueueRecordAttributes",
    "QueueResponse",
    "Source",
]
