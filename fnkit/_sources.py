"""Source detection and source-independent entry points (`validate`, `validate_response`, `correlation_ids`).

Detection knows the three sources by their landmarks, and it also knows the event types
users most often mistake for them (`LOOKALIKES`: API Gateway proxy events, SNS, EventBridge,
S3 and SES notifications, stream records, the queue API's own messages, a lone record, a
response): a value of one of those is named as what it is, never validated as a source it
is not. Field lists from the platforms' public documentation.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from .types import Source

from ._engine.findings import Finding, caution, place, problem
from ._engine.report import MISSING, Issue, Report, decode_json, describe
from .rules import rule

SOURCES = ("queue", "mail", "alb")
_NAMES = {"queue": "a queue event", "mail": "a mail-flow event", "alb": "a load balancer event"}
_ANY = "a queue, mail-flow or load balancer event"
_RESPONSES = {"queue": "a queue response", "mail": "a mail-flow response", "alb": "a load balancer response"}


_MODULES: dict[str, Any] = {}  # imported on first use: detection runs once per event, import_module costs more


def source_module(name: str) -> Any:
    """The module of one source (`fnkit.queue`, `fnkit.mail`, `fnkit.alb`)."""
    module = _MODULES.get(name)
    if module is None:
        if name not in SOURCES:
            raise ValueError(f"unknown source {name!r}: use one of {', '.join(SOURCES)}")
        module = _MODULES[name] = importlib.import_module(f"fnkit.{name}")
    return module


# --- what users mistake for the three sources ----------------------------------------


def _keys(value: dict[str, Any], keys: tuple[str, ...], where: str = "") -> list[str]:
    return [where + k for k in keys if k in value]


def _first_record(value: dict[str, Any]) -> dict[str, Any] | None:
    records = value.get("Records")
    if isinstance(records, list) and records and isinstance(records[0], dict):
        return records[0]
    return None


_QUEUE_RECORD_KEYS = ("messageId", "receiptHandle", "md5OfBody")


def _record_of(service: str, key: str) -> Callable[[dict[str, Any]], list[str]]:
    """The landmarks of a Records[] event of another service: the record's `key` object, or its eventSource."""

    def landmarks(value: dict[str, Any]) -> list[str]:
        record = _first_record(value)
        if record is None or not record.keys().isdisjoint(_QUEUE_RECORD_KEYS):
            return []
        found = [f"Records[0].{key}"] if isinstance(record.get(key), dict) else []
        found.extend(
            f"Records[0].{source_key} '{service}'"
            for source_key in ("eventSource", "EventSource")
            if record.get(source_key) == service
        )
        return found

    return landmarks


def _rest_api(value: dict[str, Any]) -> list[str]:
    context = value.get("requestContext")
    if "httpMethod" not in value or not isinstance(context, dict) or "elb" in context:
        return []
    found = _keys(value, ("resource", "pathParameters", "stageVariables"))
    found += _keys(context, ("apiId", "stage", "resourceId", "resourcePath"), "requestContext.")
    return ["requestContext without elb", *found] if found else []


def _http_api(value: dict[str, Any]) -> list[str]:
    if value.get("version") != "2.0":
        return []
    found = _keys(value, ("rawPath", "routeKey", "rawQueryString"))
    return ["version '2.0'", *found] if found else []


def _websocket_api(value: dict[str, Any]) -> list[str]:
    context = value.get("requestContext")
    if not isinstance(context, dict) or "elb" in context or "httpMethod" in value or "connectionId" not in context:
        return []
    return ["requestContext.connectionId", *_keys(context, ("routeKey", "eventType"), "requestContext.")]


def _eventbridge(value: dict[str, Any]) -> list[str]:
    if "detail-type" not in value or "detail" not in value or "Records" in value:
        return []
    return [f"detail-type '{value['detail-type']}'", *_keys(value, ("source", "detail"))]


def _receive_message(value: dict[str, Any]) -> list[str]:
    messages = value.get("Messages")
    if "Records" in value or not isinstance(messages, list) or not messages or not isinstance(messages[0], dict):
        return []
    found = _keys(messages[0], ("MessageId", "ReceiptHandle", "MD5OfBody", "Body"), "Messages[0].")
    return found if len(found) >= 2 else []


def _lone_record(value: dict[str, Any]) -> list[str]:
    if "Records" in value:
        return []
    found = _keys(value, ("messageId", "receiptHandle", "md5OfBody"))
    return found if len(found) >= 2 else []


_EVENT_KEYS = ("Records", "httpMethod", "envelope", "requestContext")


def _response_of(keys: tuple[str, ...]) -> Callable[[dict[str, Any]], list[str]]:
    def landmarks(value: dict[str, Any]) -> list[str]:
        if any(k in value for k in _EVENT_KEYS):
            return []
        return _keys(value, keys)

    return landmarks


@dataclass(frozen=True)
class Lookalike:
    """An event type users mistake for one of the three sources: what it is, what it is not, how to tell."""

    name: str  # what the value is: "an API Gateway proxy event"
    instead: str  # what it is not: "a load balancer event"
    landmarks: Callable[[dict[str, Any]], list[str]]  # the keys that give it away ([] when the value is not one)
    advice: str = ""  # a sentence: how the source it is not differs, or what to do
    kind: str = ""  # which variant, when the name covers several: "REST API, payload format 1.0"
    # the top-level keys a value has at least one of when it is one: detection asks `landmarks` only then
    keys: tuple[str, ...] = ()
    # its landmarks are in Records[0], which is never a queue record (messageId, receiptHandle or md5OfBody)
    other_records: bool = False


LOOKALIKES: tuple[Lookalike, ...] = (
    Lookalike(
        "an API Gateway proxy event",
        _NAMES["alb"],
        _rest_api,
        "a load balancer event carries requestContext.elb.targetGroupArn and no resource, pathParameters or "
        "stageVariables",
        "REST API, payload format 1.0",
        keys=("httpMethod",),
    ),
    Lookalike(
        "an API Gateway proxy event",
        _NAMES["alb"],
        _http_api,
        "a load balancer event has httpMethod and path at the top and requestContext.elb",
        "HTTP API or function URL, payload format 2.0",
        keys=("version",),
    ),
    Lookalike(
        "an API Gateway WebSocket event",
        _NAMES["alb"],
        _websocket_api,
        "the load balancer never forwards WebSocket traffic to a function (A1)",
        keys=("requestContext",),
    ),
    Lookalike(
        "an SNS notification event",
        _NAMES["queue"],
        _record_of("aws:sns", "Sns"),
        "a queue record has messageId, receiptHandle, body and eventSource 'provider:queue' ('aws:sqs')",
        keys=("Records",),
        other_records=True,
    ),
    Lookalike(
        "an S3 event notification",
        _NAMES["queue"],
        _record_of("aws:s3", "s3"),
        "when S3 notifies a queue, this JSON is the body of a queue record, not the event",
        keys=("Records",),
        other_records=True,
    ),
    Lookalike(
        "an SES receipt-rule event",
        _NAMES["mail"],
        _record_of("aws:ses", "ses"),
        "a mail-flow event has summaryVersion, envelope, sender, subject, invocationId and flowDirection",
        keys=("Records",),
        other_records=True,
    ),
    Lookalike(
        "a Kinesis stream event",
        _NAMES["queue"],
        _record_of("aws:kinesis", "kinesis"),
        "a queue record has messageId, receiptHandle and body",
        keys=("Records",),
        other_records=True,
    ),
    Lookalike(
        "a DynamoDB stream event",
        _NAMES["queue"],
        _record_of("aws:dynamodb", "dynamodb"),
        "a queue record has messageId, receiptHandle and body",
        keys=("Records",),
        other_records=True,
    ),
    Lookalike(
        "an EventBridge event",
        _ANY,
        _eventbridge,
        "when EventBridge targets a queue, this JSON is the body of a queue record",
        keys=("detail-type",),
    ),
    Lookalike(
        "a ReceiveMessage response of the queue's API",
        _NAMES["queue"],
        _receive_message,
        'the poller hands a function {"Records": [...]} with camelCase keys (messageId, receiptHandle, body); '
        "fnkit.queue.events_from_messages turns a dump like this into events",
        keys=("Messages",),
    ),
    Lookalike(
        "a single queue record",
        _NAMES["queue"],
        _lone_record,
        'a queue event wraps its records: {"Records": [record, ...]}',
        keys=_QUEUE_RECORD_KEYS,
    ),
    Lookalike(
        "a queue response",
        "an event",
        _response_of(("batchItemFailures",)),
        "validate a response with `fnkit validate --response` (fnkit.validate_response)",
        keys=("batchItemFailures",),
    ),
    Lookalike(
        "a load balancer response",
        "an event",
        _response_of(("statusCode",)),
        "validate a response with `fnkit validate --response` (fnkit.validate_response)",
        keys=("statusCode",),
    ),
    Lookalike(
        "a mail-flow response",
        "an event",
        _response_of(("actions",)),
        "validate a response with `fnkit validate --response` (fnkit.validate_response)",
        keys=("actions",),
    ),
)


# by a value's set of keys, and whether its first record is a queue record: the lookalikes it may be
_ASKED: dict[tuple[frozenset[Any], bool], tuple[Lookalike, ...]] = {}


def _asked(value: dict[Any, Any]) -> tuple[Lookalike, ...]:
    """The lookalikes a value may be: those whose `keys` it has, less those of other services' records when its
    first record is a queue record. A plain dict's answer is looked up by its key set; a dict subclass asks all."""
    if type(value) is not dict:
        return LOOKALIKES
    records = value.get("Records")
    queue_record = (
        isinstance(records, list)
        and bool(records)
        and isinstance(records[0], dict)
        and not records[0].keys().isdisjoint(_QUEUE_RECORD_KEYS)
    )
    last = _LAST_ASKED[0]  # (a stream's events share their key set: compared, not made into a frozenset and hashed)
    if last[1] is queue_record and value.keys() == last[0]:
        return last[2]
    keys = frozenset(value)
    asked = _ASKED.get((keys, queue_record))
    if asked is None:
        asked = tuple(
            known
            for known in LOOKALIKES
            if (not known.keys or not keys.isdisjoint(known.keys)) and not (queue_record and known.other_records)
        )
        if len(_ASKED) < 4096:  # events of one stream have few key sets; an odd stream must not grow this forever
            _ASKED[keys, queue_record] = asked
    _LAST_ASKED[0] = keys, queue_record, asked
    return asked


# the key set, queue-record flag and answer of `_asked`'s last value (at first none: nothing matches it)
_LAST_ASKED: list[tuple[frozenset[Any] | None, bool | None, tuple[Lookalike, ...]]] = [(None, None, ())]


def lookalike(value: Any) -> tuple[Lookalike, list[str]] | None:
    """(the event type a decoded value is, the keys that show it) when it is one users mistake for a source."""
    if not isinstance(value, dict):
        return None
    return _found(_asked(value), value)


def _found(asked: tuple[Lookalike, ...], value: dict[Any, Any]) -> tuple[Lookalike, list[str]] | None:
    """`lookalike` among the lookalikes a value may be (`_asked`)."""
    for known in asked:
        try:
            found = known.landmarks(value)
        except Exception:  # a detector must never take validation down  # noqa: BLE001
            continue
        if found:
            return known, found
    return None


def lookalike_issue(value: Any, severity: str = "error") -> Issue | None:
    """G3: the issue saying what a value is when it is an event type users mistake for a source (else None)."""
    found = lookalike(value)
    if found is None:
        return None
    known, landmarks = found
    kind = f" ({known.kind})" if known.kind else ""
    advice = known.advice[:1].upper() + known.advice[1:]
    message = f"This looks like {known.name}, not {known.instead}: it has {', '.join(landmarks)}{kind}. {advice}."
    return _placed((caution if severity == "warning" else problem)("other-source", message))


def _placed(finding: Finding) -> Issue:
    """What source detection (G3) found, as the engine places it: at the value's root, of `detect_source`'s rule."""
    return place((finding,), detect_source)[0]


@rule(
    "G3",
    "any",
    "inferred",
    "The source of an event is recognised from its shape: Records (queue), envelope and "
    "summaryVersion (mail), httpMethod and requestContext.elb (load balancer); event types users mistake for them "
    "(API Gateway, SNS, S3, SES, Kinesis, DynamoDB, EventBridge, the queue API's messages, a lone record, a "
    "response) are named as what they are.",
    origin="kit",
)
def detect_source(event: Any) -> Source | None:
    """'queue', 'mail' or 'alb' from the event's shape (JSON text and bytes are decoded); None when unknown,
    or when the value is an event of another kind users mistake for one of them (see `LOOKALIKES`)."""
    value, _ = decode_json(event)
    return None if value is MISSING else source_of(value)


_LOOKS_LIKE: list[tuple[Source, Callable[[Any], bool]]] = []  # each source's `looks_like`, in the order of SOURCES


def source_of(value: Any) -> Source | None:
    """`detect_source` of a decoded value (JSON text is a string here, not an event): 'queue', 'mail', 'alb' or None.

    A replay calls it once per event, so it costs little: a lookalike is asked only when the
    value has one of its keys, and each source's `looks_like` looks at a few keys.
    """
    if not isinstance(value, dict):
        return None
    asked = _asked(value)  # (most events may be none: a queue event, its first record a queue record)
    if asked and _found(asked, value) is not None:
        return None
    if not _LOOKS_LIKE:
        _LOOKS_LIKE.extend((cast("Source", name), source_module(name).looks_like) for name in SOURCES)
    for name, looks_like in _LOOKS_LIKE:
        try:
            if looks_like(value):
                return name
        except Exception:  # a detector must never take validation down  # noqa: BLE001
            continue
    return None


def validate(event: Any) -> Report:
    """Detect the source, then validate the event; a Report saying what it is when no source fits."""
    value, notes = decode_json(event)
    if value is MISSING:
        return Report(notes, None, None)
    source = detect_source(value)
    if source is None:
        issue = lookalike_issue(value)
        if issue is None:
            what = describe(value)
            issue = _placed(
                problem(
                    "unknown",
                    f"This is {what}, not an event of a known source: a queue event has Records, a mail event has "
                    "envelope and summaryVersion, a load balancer event has httpMethod and requestContext.elb.",
                )
            )
        return Report([*notes, issue], None, None)
    report = source_module(source).validate_event(value)
    return Report([*notes, *report], report.source, report.dialect, report.subject) if notes else report


# --- responses ----------------------------------------------------------------------------

_RESPONSE_KEYS = (("queue", ("batchItemFailures",)), ("alb", ("statusCode",)), ("mail", ("actions",)))


def detect_response_source(response: Any) -> str | None:
    """'queue', 'mail' or 'alb' from a response's shape (batchItemFailures, statusCode, actions; a misspelled
    batchItemFailures too); None when the shape does not say (null, {}, a list, a string, JSON text that is not)."""
    value, _ = decode_json(response)
    if not isinstance(value, dict):
        return None
    found = [name for name, keys in _RESPONSE_KEYS if any(k in value for k in keys)]
    if not found:
        lowered = {k.lower().replace("_", "") for k in value if isinstance(k, str)}
        found = [name for name, keys in _RESPONSE_KEYS if any(k.lower() in lowered for k in keys)]
    return found[0] if len(found) == 1 else None


def validate_response(response: Any, *, source: str | None = None, event: Any = None, **settings: Any) -> Report:
    """Every problem of a handler's response, whatever its source; never raises for any response.

    `source`: skip detection. `event`: the event the response answers; it gives the source when the response
    does not show it, the batch's messageIds (queue itemIdentifier checks), multi-value mode (load balancer,
    unless `multi_value` says) and flowDirection (mail). `settings`: the settings the sources'
    `validate_response` take (`multi_value`; mail's `mode`, "sync" or "async", `extensions`,
    `recipients_limit`; the queue's `report_batch_item_failures`), each given to its own source only.
    """
    from ._settings.config import settings_of

    takes = {name: settings_of(source_module(name).validate_response)[1] for name in SOURCES}
    unknown = sorted(set(settings) - {n for names in takes.values() for n in names})
    if unknown:
        raise TypeError(f"validate_response() got an unexpected keyword argument {unknown[0]!r}")
    value, decoded = decode_json(response)
    if event is not None:
        event, _ = decode_json(event)
        event = None if event is MISSING else event
    shown = detect_response_source(value) if value is not MISSING else None
    notes = []  # the source's own validate_response says what decoding said; only a mismatch is added here
    if source is None and event is not None:
        source = detect_source(event)  # the event says who reads the response, whatever it looks like
        if source is not None and shown is not None and shown != source:
            notes.append(
                _placed(
                    caution(
                        "other-source",
                        f"This response has the shape of {_RESPONSES[shown]}, but "
                        f"the event is {_NAMES[source]}: it is read as "
                        f"{_RESPONSES[source]}.",
                    )
                )
            )
    source = source or shown
    if source is None:
        if value is MISSING:
            return Report(decoded, None, None, "response")
        return Report(
            [
                *decoded,
                _placed(
                    problem(
                        "unknown",
                        f"This response ({describe(value)}) does not show its source: a queue response "
                        "has batchItemFailures, a load balancer response statusCode, a mail-flow "
                        "response actions. Name the source (--source) or give the event (--event).",
                    )
                ),
            ],
            None,
            None,
            "response",
        )
    module = source_module(source)
    own = {k: v for k, v in settings.items() if k in takes[source] and v is not None}  # None: not said
    if source == "queue":
        report = module.validate_response(response, event=event, **own)
    elif source == "alb":
        if "multi_value" not in own:
            from .alb._outcome import event_multi_value

            own["multi_value"] = event_multi_value(event)
        report = module.validate_response(response, **own)
    else:
        flow = event.get("flowDirection") if isinstance(event, dict) else None
        report = module.validate_response(response, flow_direction=flow if isinstance(flow, str) else None, **own)
    return Report([*notes, *report], report.source, report.dialect, report.subject) if notes else report


def correlation_ids(event: Any) -> list[str]:
    """Queue: every messageId; mail: [invocationId]; load balancer: [trace header] or []."""
    value, _ = decode_json(event)
    source = detect_source(value) if value is not MISSING else None
    if source is None:
        return []
    ids: list[str] = source_module(source).correlation_ids(value)
    return ids
