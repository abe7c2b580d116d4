"""Queue messages in: ReceiveMessage output (the API's spelling) as batch events (the event's spelling).

The receive API answers `{"Messages": [{"MessageId", "ReceiptHandle", "MD5OfBody", "Body",
"Attributes", "MD5OfMessageAttributes", "MessageAttributes": {name: {"StringValue" |
"BinaryValue", "DataType"}}}]}`; a queue poller hands a function the same messages as
`{"Records": [{"messageId", "receiptHandle", "body", "attributes", "messageAttributes":
{name: {"stringValue" | "binaryValue", "stringListValues", "binaryListValues", "dataType"}},
"md5OfMessageAttributes", "md5OfBody", "eventSource", "eventSourceARN", "awsRegion"}]}`.
The output does not name its queue: pass `queue_arn` (a FIFO queue's name ends in .fifo).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._import import (
    ImportStream,
    Producer,
    Unreadable,
    files_of,
    head_bytes,
    iter_lines,
    loads_json,
    unreadable,
)
from .._settings import Dialect
from ._config import DEFAULT_BATCH, MAX_BATCH_FIFO, MAX_BATCH_STANDARD, QueueConfig
from ._event import (
    EVENT_SOURCE,
    md5_of_body,
    md5_of_message_attributes,
)
from ._event import (
    queue_arn as make_queue_arn,
)
from ._fifo import is_fifo

SOURCE = "queue"
REQUIRED = ("MessageId", "ReceiptHandle", "Body")
# the attributes every record of an event carries (QS3); ReceiveMessage returns them with AttributeNames=All
RECORD_ATTRIBUTES = ("ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp")
_ARN = re.compile(r"^arn:[a-z-]+:sqs:([a-z0-9-]+):[^:]*:(.+)$")
_WS = re.compile(r"[ \t\n\r]*")


def message_attributes_to_event(attributes: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """MessageAttributes in the API's spelling (StringValue, BinaryValue, DataType) in the event's spelling."""
    out: dict[str, dict[str, Any]] = {}
    for name, attr in attributes.items():
        if not isinstance(attr, dict):
            raise ValueError(f"message attribute {name!r} is not an object")
        dtype = attr.get("DataType")
        if not isinstance(dtype, str):
            raise ValueError(f"message attribute {name!r} has no DataType")
        entry: dict[str, Any] = {}
        if dtype.startswith("Binary"):
            value = attr.get("BinaryValue")
            if isinstance(value, (bytes, bytearray)):  # an SDK's answer: bytes; a JSON dump: base64 text
                value = base64.b64encode(bytes(value)).decode("ascii")
            entry["binaryValue"] = value
        else:
            entry["stringValue"] = attr.get("StringValue")
        entry["stringListValues"] = list(attr.get("StringListValues") or [])
        entry["binaryListValues"] = [
            base64.b64encode(bytes(v)).decode("ascii") if isinstance(v, (bytes, bytearray)) else v
            for v in attr.get("BinaryListValues") or []
        ]
        entry["dataType"] = dtype
        out[name] = entry
    return out


def _record(
    message: dict[str, Any], arn: str, region: str, dialect: str, where: str, label: str, stream: ImportStream
) -> dict[str, Any]:
    """One record in the event's spelling; what does not agree is reported on `stream`, and kept as it was."""
    body = message["Body"]
    record: dict[str, Any] = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": body,
        "attributes": dict(message.get("Attributes") or {}),
        "messageAttributes": {},
    }
    missing = [a for a in RECORD_ATTRIBUTES if a not in record["attributes"]]
    if missing:
        stream.note(
            where,
            f"{label} lacks the attribute(s) {', '.join(missing)} that every record carries "
            "(receive with AttributeNames=All); the record will not validate (QS3).",
            code="missing",
        )
    raw_attrs = message.get("MessageAttributes") or {}
    try:
        attrs = message_attributes_to_event(raw_attrs)
    except ValueError as exc:
        stream.note(where, f"{label}: {exc}; its message attributes are left out.", code="format")
        attrs = {}
    record["messageAttributes"] = attrs
    given_attrs_md5 = message.get("MD5OfMessageAttributes")
    if attrs:
        try:
            expected = md5_of_message_attributes(attrs)
        except (ValueError, KeyError, TypeError):
            expected = None
        if given_attrs_md5 is None:
            stream.note(
                where,
                f"{label} has message attributes but no MD5OfMessageAttributes; "
                f"the record carries the computed one ({expected}).",
                severity="warning",
                code="missing",
            )
            given_attrs_md5 = expected
        elif expected is not None and given_attrs_md5 != expected:
            stream.note(
                where,
                f"{label}: MD5OfMessageAttributes is '{given_attrs_md5}' but the MD5 of its message "
                f"attributes is '{expected}'; the record keeps the given one and will not validate (Q13).",
            )
        record["md5OfMessageAttributes"] = given_attrs_md5
    elif given_attrs_md5 is not None:
        stream.note(
            where,
            f"{label} has MD5OfMessageAttributes but no message attributes.",
            severity="warning",
            code="unexpected",
        )
    given = message.get("MD5OfBody")
    expected_body = md5_of_body(body)
    if given is None:
        stream.note(
            where,
            f"{label} has no MD5OfBody; the record carries the MD5 of its body ({expected_body}).",
            severity="warning",
            code="missing",
        )
        given = expected_body
    elif given != expected_body:
        stream.note(
            where,
            f"{label}: MD5OfBody is '{given}' but the MD5 of its Body is '{expected_body}'; the "
            "record keeps the given one and will not validate (Q13).",
        )
    record["md5OfBody"] = given
    record["eventSource"] = EVENT_SOURCE[dialect]
    record["eventSourceARN"] = arn
    record["awsRegion"] = region
    return record


def _problem(message: Any) -> str | None:
    """Why an entry cannot be a record, or None."""
    if not isinstance(message, dict):
        return f"a message is an object, not {type(message).__name__}"
    absent = [k for k in REQUIRED if not isinstance(message.get(k), str)]
    if absent:
        return f"a message has {', '.join(REQUIRED)} as strings; this one lacks {', '.join(absent)}"
    for key in ("Attributes", "MessageAttributes"):
        if message.get(key) is not None and not isinstance(message[key], dict):
            return f"{key} is an object, not {type(message[key]).__name__}"
    return None


# --- where each message starts (files): line numbers ------------------------------------


def _message_starts(text: str) -> list[int]:
    """Character offsets where each message of a ReceiveMessage document starts, in order.

    The document is one response (`{"Messages": [...]}`), a list of responses, or a list of messages.
    """
    decoder = json.JSONDecoder()
    starts: list[int] = []

    def skip(pos: int) -> int:
        blank = _WS.match(text, pos)  # it matches anywhere (zero or more blanks)
        return blank.end() if blank is not None else pos

    def response(pos: int) -> int:  # at '{'
        pos = skip(pos + 1)
        if text[pos] == "}":
            return pos + 1
        while True:
            key, pos = decoder.raw_decode(text, pos)
            pos = skip(skip(pos) + 1)  # the ':'
            if key == "Messages" and text[pos] == "[":
                pos = skip(pos + 1)
                while text[pos] != "]":
                    starts.append(pos)
                    _, pos = decoder.raw_decode(text, pos)
                    pos = skip(pos)
                    if text[pos] == ",":
                        pos = skip(pos + 1)
                pos += 1
            else:
                _, pos = decoder.raw_decode(text, pos)
            pos = skip(pos)
            if text[pos] == ",":
                pos = skip(pos + 1)
                continue
            return pos + 1

    pos = skip(0)
    if text[pos] == "{":
        response(pos)
    elif text[pos] == "[":
        pos = skip(pos + 1)
        while text[pos] != "]":
            value, end = decoder.raw_decode(text, pos)
            if isinstance(value, dict) and "Messages" in value:
                response(pos)
            else:
                starts.append(pos)
            pos = skip(end)
            if text[pos] == ",":
                pos = skip(pos + 1)
    return starts


def _line_numbers(text: str, offsets: list[int]) -> list[int]:
    lines, line, last = [], 1, 0
    for offset in offsets:
        line += text.count("\n", last, offset)
        last = offset
        lines.append(line)
    return lines


def _messages_of(value: Any, base: str) -> Iterator[tuple[str, Any]] | None:
    """(JSON path, message) for each message of a response, a list of responses, or a list of messages."""
    if isinstance(value, dict) and ("Messages" in value or not value or "ResponseMetadata" in value):
        messages = value.get("Messages") or []
        if not isinstance(messages, list):
            return None
        return ((f"{base}.Messages[{i}]", m) for i, m in enumerate(messages))
    if isinstance(value, dict) and "MessageId" in value:
        return iter([(base, value)])
    if isinstance(value, list):

        def walk() -> Iterator[tuple[str, Any]]:
            for j, item in enumerate(value):
                inner = _messages_of(item, f"{base}[{j}]") if isinstance(item, dict) and "Messages" in item else None
                if inner is not None:
                    yield from inner
                else:
                    yield f"{base}[{j}]", item

        return walk()
    return None


def _document(
    text: str, name: str, stream: ImportStream, line_offset: int = 0
) -> Iterator[tuple[str, str, Any] | Unreadable]:
    """(where, label, message) for each message of one JSON document, located by line."""
    try:
        value = loads_json(text)
    except ValueError as exc:
        stream.count()
        line = line_offset + getattr(exc, "lineno", 1)
        yield unreadable(f"{name}:{line}", f"The text is not valid JSON: {exc}.", SOURCE)
        return
    found = _messages_of(value, "$")
    if found is None:
        stream.count()
        yield unreadable(
            f"{name}:{line_offset + 1}",
            "This is not ReceiveMessage output: expected "
            '{"Messages": [...]}, a list of such answers, or a list of messages.',
            SOURCE,
        )
        return
    messages = list(found)
    try:
        lines = _line_numbers(text, _message_starts(text))
    except (ValueError, IndexError):
        lines = []
    if len(lines) != len(messages):
        lines = [1] * len(messages)
    for (path, message), line in zip(messages, lines, strict=True):
        stream.count()
        yield f"{name}:{line_offset + line}", path.replace("$.", "", 1).replace("$", "message", 1) or "message", message


def _entries(source: Any, stream: ImportStream) -> Iterator[tuple[str, str, Any] | Unreadable]:
    if isinstance(source, (str, Path)) and not (isinstance(source, str) and source.lstrip()[:1] in ("{", "[")):
        for path in files_of(source):
            head = head_bytes(path).lstrip()
            if head[:1] == b"[" or (
                head[:1] == b"{" and b"\n" in head and not head.split(b"\n", 1)[0].rstrip().endswith(b"}")
            ):
                yield from _whole_file(path, stream)  # one document (pretty-printed or a list)
            else:
                yield from _json_lines(path, stream)  # one answer per line
        return
    if isinstance(source, str):
        yield from _document(source, "<text>", stream)
        return
    found = _messages_of(source, "$")
    if found is None:
        stream.count()
        yield unreadable(
            "$",
            'This is not ReceiveMessage output: expected {"Messages": [...]}, a list of such '
            "answers, or a list of messages.",
            SOURCE,
        )
        return
    for json_path, message in found:
        stream.count()
        label = json_path.replace("$.", "", 1).replace("$", "message", 1) or "message"
        yield json_path, label, message


def _whole_file(path: Path, stream: ImportStream) -> Iterator[Any]:
    from .._import import read_whole

    text, why = read_whole(path)
    if text is None:
        stream.count()
        yield unreadable(f"{path}:1", why, SOURCE)
        return
    yield from _document(text, str(path), stream)


def _no_items(stream: ImportStream) -> Producer:
    """A producer of nothing: for a stream that only counts."""
    yield from ()


def _json_lines(path: Path, stream: ImportStream) -> Iterator[Any]:
    # a line is one ReceiveMessage answer; iter_lines counts lines, _document counts messages: count messages only
    counter = ImportStream(_no_items, source=SOURCE, what="", unit="line", item="", progress=False)
    for entry in iter_lines(path, counter):
        if isinstance(entry, Unreadable):
            stream.count()
            yield entry
            continue
        name, number, text = entry
        if not text.strip():
            continue
        yield from _document(text, name, stream, line_offset=number - 1)


def events_from_messages(
    obj_or_path: Any,
    *,
    queue_arn: str | None = None,
    batch_size: int = DEFAULT_BATCH,
    dialect: Dialect = "aws",
    progress: bool | None = None,
) -> ImportStream:
    """Stream ReceiveMessage output as queue batch events of up to `batch_size` records, in the event's spelling.

    `obj_or_path`: a response (`{"Messages": [...]}`), a list of responses or of messages, JSON
    text, or a file (one JSON document, or JSON Lines with one response per line; plain or
    .gz), or a folder of them. `queue_arn`: the queue's ARN (the output does not say; a
    FIFO queue's ends in .fifo; by default a standard or FIFO queue is guessed from the
    attributes). Messages that cannot be records are reported with their line number and not
    yielded; inconsistencies (an MD5 that does not match, missing attributes) are reported
    and the record keeps what the output said, so validation shows them too. A message
    received twice starts a new batch (a batch holds a message once).
    """
    batch_size = QueueConfig.setting("batch_size").check(batch_size)  # 1-10,000 (Q1)
    if dialect not in EVENT_SOURCE:
        raise ValueError(f"dialect must be 'provider' or 'aws', not {dialect!r}")
    if isinstance(obj_or_path, (str, Path)) and not (
        isinstance(obj_or_path, str) and obj_or_path.lstrip()[:1] in ("{", "[")
    ):
        files_of(obj_or_path)  # a missing path fails now, not on first use
    arn_match = _ARN.match(queue_arn) if queue_arn else None
    if queue_arn is not None and arn_match is None:
        raise ValueError(f"queue_arn {queue_arn!r} is not a queue ARN (arn:aws:sqs:REGION:ACCOUNT:NAME)")

    def produce(stream: ImportStream) -> Producer:
        batch: list[dict[str, Any]] = []
        ids: set[str] = set()
        fifo_seen: bool | None = None  # the queue's kind, from the first message (and queue_arn)
        limit = batch_size
        arn = queue_arn
        region = arn_match.group(1) if arn_match else "us-east-1"
        for entry in _entries(obj_or_path, stream):
            if isinstance(entry, Unreadable):
                yield entry
                continue
            where, label, message = entry
            why = _problem(message)
            if why is not None:
                yield unreadable(where, f"{label} cannot be a record: {why}.", SOURCE)
                continue
            attributes = message.get("Attributes") or {}
            group = attributes.get("MessageGroupId")
            if fifo_seen is None or arn is None:  # the first message: it and queue_arn tell the queue's kind, as
                # the event's checks will read it
                fifo_seen = is_fifo({"Records": [{"eventSourceARN": queue_arn, "attributes": attributes}]})
                arn = queue_arn or make_queue_arn(fifo=fifo_seen, dialect=dialect)
            if (group is not None) != fifo_seen:
                kind = (
                    "a FIFO queue's (it has a MessageGroupId)"
                    if group is not None
                    else "a standard queue's (no MessageGroupId)"
                )
                stream.note(
                    where,
                    f"{label} is {kind}, unlike the queue's other messages; the record will not validate "
                    "in this queue's event (QS5).",
                    code="conflict",
                )
            if fifo_seen:
                limit = min(batch_size, MAX_BATCH_FIFO)
            limit = min(limit, MAX_BATCH_STANDARD)
            if message["MessageId"] in ids or len(batch) >= limit:
                yield {"Records": batch}
                batch, ids = [], set()
            batch.append(_record(message, arn, region, dialect, where, label, stream))
            ids.add(message["MessageId"])
        if batch:
            yield {"Records": batch}

    described = (
        obj_or_path
        if isinstance(obj_or_path, (str, Path)) and str(obj_or_path).lstrip()[:1] not in ("{", "[")
        else None
    )
    return ImportStream(
        produce,
        source=SOURCE,
        what="queue messages",
        unit="message",
        item="event",
        progress=progress,
        description=str(described) if described else "queue messages",
    )


__all__ = ["RECORD_ATTRIBUTES", "events_from_messages", "message_attributes_to_event"]
