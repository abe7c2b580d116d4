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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

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
from .._settings.project import Dialect
from ..rules import id_of
from ._build import (
    queue_arn as make_queue_arn,
)
from ._config import DEFAULT_BATCH, MAX_BATCH_FIFO, MAX_BATCH_STANDARD, QueueConfig
from ._contents import digest_mismatch, md5_of_body, md5_of_message_attributes
from ._event import EVENT_SOURCE, check_attributes
from ._fifo import fifo_attributes, is_fifo

if TYPE_CHECKING:
    from collections.abc import Iterable

S = TypeVar("S", bound="_Sim")


class _Sim(Protocol):
    """What `sim_from_messages` uses of a `QueueSim` (which imports this module)."""

    fifo: bool

    def send(
        self,
        body: Any,
        *,
        group_id: str | None = ...,
        dedup_id: str | None = ...,
        message_attributes: dict[str, Any] | None = ...,
    ) -> str | None: ...

    def messages(self) -> Iterable[Any]: ...


SOURCE = "queue"
REQUIRED = ("MessageId", "ReceiptHandle", "Body")
# the attributes every record of an event carries (QS3); ReceiveMessage returns them with AttributeNames=All
RECORD_ATTRIBUTES = ("ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp")
_ARN = re.compile(r"^arn:[a-z-]+:sqs:([a-z0-9-]+):[^:]*:(.+)$")
_WS = re.compile(r"[ \t\n\r]*")
_UNSET: Any = object()


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
            f"(receive with AttributeNames=All); the record will not validate ({id_of(check_attributes)}).",
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
                f"attributes is '{expected}'; the record keeps the given one and will not validate "
                f"({id_of(digest_mismatch)}).",
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
            f"record keeps the given one and will not validate ({id_of(digest_mismatch)}).",
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


def _documents(text: str, name: str, stream: ImportStream) -> Iterator[tuple[str, str, Any] | Unreadable]:
    """(where, label, message) for each message of a text holding one JSON document or several one after the
    other (what a loop of `aws sqs receive-message >> dump.json` writes), located by line.

    A document that is not JSON is reported at its line, and reading goes on at the next line
    that starts with `{` or `[` (the next answer)."""
    decoder = json.JSONDecoder()
    pos, end = _skip(text, 0), len(text)
    counted, newlines = 0, 0  # the newlines before `counted`, counted on from the last document (not from 0)
    while pos < end:
        try:
            value, stop = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError) as exc:
            stream.count()
            newlines, counted = newlines + text.count("\n", counted, pos), pos
            line = getattr(exc, "lineno", newlines + 1)
            why = str(exc) if isinstance(exc, json.JSONDecodeError) else _plain_words(exc)
            yield unreadable(f"{name}:{line}", f"The text is not valid JSON: {why}.", SOURCE)
            resume = _NEXT_DOCUMENT.search(text, getattr(exc, "pos", pos) + 1)
            if resume is None:
                return
            pos = resume.start() + 1
            continue
        newlines, counted = newlines + text.count("\n", counted, pos), pos
        yield from _document(text[pos:stop], name, stream, newlines, value)
        pos = _skip(text, stop)


_NEXT_DOCUMENT = re.compile(r"\n[{\[]")


def _plain_words(exc: BaseException) -> str:
    """Why a document cannot be read, in plain words (as `loads_json` says it for one document)."""
    if isinstance(exc, RecursionError):
        return "it nests too deeply to be read"
    if "integer string conversion" in str(exc):
        return "it holds a number of more than 4,300 digits (JSON allows it, but no reader here takes it)"
    return str(exc)


def _skip(text: str, pos: int) -> int:
    blank = _WS.match(text, pos)
    return blank.end() if blank is not None else pos


def _document(
    text: str, name: str, stream: ImportStream, line_offset: int = 0, value: Any = _UNSET
) -> Iterator[tuple[str, str, Any] | Unreadable]:
    """(where, label, message) for each message of one JSON document (`value`: the document, when already
    read), located by line."""
    if value is _UNSET:
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
        yield from _documents(source, "<text>", stream)
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
    yield from _documents(text, str(path), stream)


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


_LOCATED = re.compile(r"^(?P<file>.+):(?P<line>\d+)$")


@dataclass(frozen=True)
class DumpedMessage:
    """What the dump says of one message: its id, receive count, where it is (file and line) and its body's size."""

    message_id: str
    receive_count: int | None
    file: str | None
    line: int | None
    message_bytes: int

    def columns(self) -> dict[str, Any]:
        """The columns a replay adds to the message's row."""
        return {
            "file": self.file,
            "line": self.line,
            "receive_count": self.receive_count,
            "message_bytes": self.message_bytes,
        }


def _dumped(message: dict[str, Any], where: str) -> DumpedMessage:
    count = (message.get("Attributes") or {}).get("ApproximateReceiveCount")
    located = _LOCATED.match(where)
    return DumpedMessage(
        message["MessageId"],
        int(count) if isinstance(count, str) and count.isdigit() else None,
        located.group("file") if located else None,
        int(located.group("line")) if located else None,
        len(message["Body"].encode("utf-8", "surrogatepass")),
    )


class ReceivedBatch:
    """A batch event made from a dump (`event`: `{"Records": [...]}`), and what the dump says of each of its
    messages (`messages`: id, receive count, file and line, body size), which a replay adds to each message's
    row. A replay reads these (`stream.entries()`); iterating the stream gives the events themselves. A batch
    that fails validation is one row per message, each located."""

    __slots__ = ("event", "messages")

    def __init__(self, records: list[dict[str, Any]], messages: list[DumpedMessage]) -> None:
        self.event: dict[str, Any] = {"Records": records}
        self.messages = tuple(messages)

    def replay_columns(self, row: dict[str, Any]) -> dict[str, Any]:
        """The dump's columns for the row of one message (found by its id, the row's `item`)."""
        for message in self.messages:
            if message.message_id == row.get("item"):
                return message.columns()
        return {}

    def message_rows(self, row: dict[str, Any]) -> list[dict[str, Any]]:
        """A row about the whole batch (it fails validation) as one row per message, each with its columns."""
        return [{**row, "item": m.message_id, **m.columns()} for m in self.messages]


class _MessageStream(ImportStream):
    """The importer's stream: iterating it gives batch events (dicts); `entries()` gives `ReceivedBatch`es, with
    what the dump says of each message, and the `Unreadable` markers (what a replay reads)."""

    def __next__(self) -> Any:
        item = super().__next__()
        return item.event if type(item) is ReceivedBatch and not self._with_unreadable else item


def events_from_messages(
    obj_or_path: Any,
    *,
    queue_arn: str | None = None,
    batch_size: int = DEFAULT_BATCH,
    dialect: Dialect = "aws",
    progress: bool | None = None,
) -> ImportStream:
    """Stream ReceiveMessage output as queue batch events of up to `batch_size` records, in the event's spelling.

    What it accepts (`obj_or_path`): a response (`{"Messages": [...]}`), a list of responses or
    of messages, JSON text, or a file (plain or .gz) or a folder of them, holding any of:
    one JSON document (a response, a list of responses, a list of messages; pretty-printed or
    not); several responses one after the other, as a loop of `aws sqs receive-message >>
    dump.json` writes them (pretty-printed, no list around them); or JSON Lines, one response
    per line (what `jq -c` makes of such a dump). Every message is located by its file and
    the line its object starts on; a document that is not JSON is reported at its line and
    reading goes on with the next document. `queue_arn`: the queue's ARN (the output does not say; a
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
        dumped: list[DumpedMessage] = []
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
                    f"in this queue's event ({id_of(fifo_attributes)}).",
                    code="conflict",
                )
            if fifo_seen:
                limit = min(batch_size, MAX_BATCH_FIFO)
            limit = min(limit, MAX_BATCH_STANDARD)
            if message["MessageId"] in ids or len(batch) >= limit:
                yield ReceivedBatch(batch, dumped)
                batch, ids, dumped = [], set(), []
            batch.append(_record(message, arn, region, dialect, where, label, stream))
            dumped.append(_dumped(message, where))
            ids.add(message["MessageId"])
        if batch:
            yield ReceivedBatch(batch, dumped)

    described = (
        obj_or_path
        if isinstance(obj_or_path, (str, Path)) and str(obj_or_path).lstrip()[:1] not in ("{", "[")
        else None
    )
    return _MessageStream(
        produce,
        source=SOURCE,
        what="queue messages",
        unit="message",
        item="event",
        progress=progress,
        description=str(described) if described else "queue messages",
    )


def sim_from_messages(make: Callable[..., S], messages: Any, **settings: Any) -> S:
    """`QueueSim.from_messages`: a simulation (`make(**settings)`) whose queue holds the dump's messages.

    `messages`: what `events_from_messages` reads (a dump file, JSON text, a response or a list);
    `queue_arn=` goes to it. A message received more than once is sent once, with its id and
    its latest receive count, so its next receive is counted after those of the dump (and a
    redrive policy sees them). A message the dump cannot give whole is left out, as
    `events_from_messages` reports it."""
    arn = settings.pop("queue_arn", None)
    stream = events_from_messages(messages, queue_arn=arn, progress=False)
    latest: dict[str, tuple[dict[str, Any], DumpedMessage]] = {}
    for batch in stream.entries():
        if type(batch) is not ReceivedBatch:
            continue  # an unreadable message: reported on the stream, as the importer reports it
        for record, dumped in zip(batch.event["Records"], batch.messages, strict=True):
            latest[record["messageId"]] = (record, dumped)
    sim = make(**settings)
    sent: dict[str, tuple[str, int]] = {}  # the simulation's id -> the dump's id and receive count
    for record, dumped in latest.values():
        attributes = record["attributes"]
        made = sim.send(
            record["body"],
            group_id=attributes.get("MessageGroupId") if sim.fifo else None,
            dedup_id=attributes.get("MessageDeduplicationId", record["messageId"]) if sim.fifo else None,
            message_attributes=record["messageAttributes"] or None,
        )
        if made is not None:
            sent[made] = (record["messageId"], dumped.receive_count or 0)
    for message in sim.messages():
        message.message_id, message.receive_count = sent[message.message_id]
    return sim


__all__ = [
    "RECORD_ATTRIBUTES",
    "DumpedMessage",
    "ReceivedBatch",
    "events_from_messages",
    "message_attributes_to_event",
    "sim_from_messages",
]
