"""The message content API (M9): read and replace the raw message of a message in flight.

Shaped after the real service's two operations, get and put raw message content by
message id. Handlers reach it through the context object they are given: during
`fnkit.mail.run` and `MailRule.run`, `context.message_content` is a `MessageContent`
bound to that invocation::

    def handler(event, context):
        raw = context.message_content.get_raw_message_content(event["messageId"])
        context.message_content.put_raw_message_content(event["messageId"], add_disclaimer(raw))
        return {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}]}

Rules the store applies:
- a message can be read for 24 hours after it arrived (virtual time, `MessageStore.now_s`);
- a replacement takes effect only when made during a synchronous invocation for that
  message; during an asynchronous one it is accepted but changes nothing (the outcome
  says so); outside any invocation, or for another message, it is refused
  (`MessageFrozenError`);
- a replacement must be valid MIME (`mime_problems`), else `InvalidContentError`.

A replacement made during an attempt that then fails still stands (the store was
changed; the next attempt reads it); this is fnkit's reading, the platform does not say.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..rules import rule

RETENTION_S = 24 * 3600.0
MAX_LINE_CHARS = 998  # RFC 5322 2.1.1: 998 characters, then CRLF: 1,000 in all
FIXED_DATE = "Thu, 01 Jan 2026 00:00:00 +0000"  # built messages stay deterministic


MESSAGE_CONTENT = rule(
    "M9",
    "mail",
    "doc",
    "The raw message of a message in flight can be read and replaced; a replacement counts "
    "only during a synchronous invocation and must be valid MIME.",
    severity="behaviour",
)


class MessageContentError(ValueError):
    """A get or put of raw message content was refused; `.rule` is M9."""

    rule = MESSAGE_CONTENT.id


class MessageNotFoundError(MessageContentError):
    """No message with that id, or it is older than 24 hours."""


class MessageFrozenError(MessageContentError):
    """A replacement outside a synchronous invocation for that message."""


class InvalidContentError(MessageContentError):
    """A replacement that is not valid MIME; `.problems` lists why."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(f"The replacement is not valid MIME ({MESSAGE_CONTENT.id}): " + "; ".join(problems))

    def __reduce__(self) -> tuple[Any, ...]:
        # raised in the caller's process and again in the handler's worker process: travel with its problems
        return (type(self), (self.problems,))


# --- MIME validity --------------------------------------------------------------

_FATAL_DEFECTS = {
    "MissingHeaderBodySeparatorDefect": "a line of the header section is not a header "
    "(the headers and the body must be separated by an empty line)",
    "FirstHeaderLineIsContinuationDefect": "the first header line starts with a space (a continuation of nothing)",
    "NoBoundaryInMultipartDefect": "a multipart part has no boundary parameter",
    "StartBoundaryNotFoundDefect": "a multipart part never uses its boundary",
    "CloseBoundaryNotFoundDefect": "a multipart part has no closing boundary",
    "MultipartInvariantViolationDefect": "a part says multipart but holds no parts",
    "InvalidMultipartContentTransferEncodingDefect": (
        "a multipart part has a transfer encoding other than 7bit, 8bit or binary"
    ),
    "InvalidBase64CharactersDefect": "a base64 part holds characters that are not base64",
    "InvalidBase64PaddingDefect": "a base64 part is badly padded",
    "InvalidBase64LengthDefect": "a base64 part has an impossible length",
}


def mime_problems(content: Any) -> list[str]:
    """Why `content` is not a valid MIME message (empty list: valid).

    Valid here means: bytes; no line over 998 characters before its line break (1,000
    with CRLF); a header section in ASCII or UTF-8 (RFC 6532), separated from the body by
    an empty line; From and Date headers (the two RFC 5322 requires); and no structural
    defect the stdlib parser (policy SMTP) finds: broken multipart boundaries, bad base64.
    """
    if not isinstance(content, (bytes, bytearray, memoryview)):
        return [f"the content must be bytes, not {type(content).__name__}"]
    content = bytes(content)
    if not content.strip():
        return ["the content is empty"]
    problems = []
    for number, line in enumerate(content.splitlines(), 1):
        if len(line) > MAX_LINE_CHARS:
            problems.append(
                f"line {number} has {len(line):,} characters; at most {MAX_LINE_CHARS} are allowed "
                "before the line break (1,000 with CRLF): encode long lines as quoted-printable or base64"
            )
            break
    head = content.replace(b"\r\n", b"\n").split(b"\n\n", 1)[0]
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(f"the header section has bytes that are neither ASCII nor UTF-8 (at byte {exc.start})")
    from email import policy
    from email.parser import BytesParser

    message = BytesParser(policy=policy.SMTP).parsebytes(content)
    problems.extend(
        f"the {name} header is missing (RFC 5322 requires From and Date)"
        for name in ("From", "Date")
        if name not in message
    )
    reasons: dict[str, None] = {}  # each once, in the order met
    for part in message.walk():
        if not part.is_multipart():
            part.get_payload(decode=True)  # decoding records base64 defects
        for defect in part.defects:
            reason = _FATAL_DEFECTS.get(type(defect).__name__)
            if reason:
                reasons[reason] = None
    problems.extend(reasons)
    return problems


def check_mime(content: Any) -> bytes:
    """`content` as bytes when it is valid MIME; raises `InvalidContentError` otherwise."""
    problems = mime_problems(content)
    if problems:
        raise InvalidContentError(problems)
    return bytes(content)


# --- messages in and out -----------------------------------------------------------


class HeaderLines(bytes):
    """Some header lines of a message, not a message: `build_event` reads them without asking for From and Date
    (the mail server's adapter, which stores the whole message apart)."""


def message_fields(message: Any) -> tuple[bytes, dict[str, Any]]:
    """The raw bytes of `message` (EmailMessage, bytes or text) and what an event takes from it."""
    from email import policy
    from email.message import Message
    from email.parser import BytesParser
    from email.utils import parseaddr

    if isinstance(message, Message):
        raw = message.as_bytes(policy=message.policy.clone(linesep="\r\n"))
    elif isinstance(message, (bytes, bytearray, memoryview)):
        raw = bytes(message)
    elif isinstance(message, str):
        raw = message.encode("utf-8")
    else:
        raise TypeError(
            f"message must be an email.message.EmailMessage or raw RFC 5322 bytes, not {type(message).__name__}"
        )
    parsed = BytesParser(policy=policy.default).parsebytes(raw)

    def addresses(*names: str) -> list[str]:
        out: list[str] = []
        for name in names:
            for header in parsed.get_all(name) or ():
                try:
                    found = [a.addr_spec for a in header.addresses]
                except (AttributeError, IndexError, TypeError, ValueError):
                    found = []
                out.extend(a for a in found if a and a != "<>" and a not in out)
        return out

    def text(name: str) -> str:
        try:
            value = parsed[name]
        except (IndexError, TypeError, ValueError):
            return ""
        return " ".join(str(value).split()) if value is not None else ""

    senders = addresses("From")
    # Return-Path is not an address header to the parser: read its <addr-spec> by hand
    return_path = [a for a in (parseaddr(str(h))[1] for h in parsed.get_all("Return-Path") or ()) if a]
    return raw, {
        "subject": text("Subject"),
        "sender": senders[0] if senders else None,
        "mail_from": return_path[0] if return_path else (senders[0] if senders else None),
        "recipients": addresses("To", "Cc", "Bcc"),
        # the headers RFC 5322 requires, which the content API's put checks (`mime_problems`)
        "missing": [] if isinstance(message, HeaderLines) else [n for n in ("From", "Date") if n not in parsed],
    }


def minimal_message(event: Any) -> bytes:
    """A small valid message matching a mail event (for events built without one)."""
    try:
        return _message_for(event)
    except (ValueError, TypeError, IndexError, AttributeError, KeyError):
        # an address or subject the header machinery refuses: keep only what is safe
        return _message_for({"messageId": event.get("messageId") if isinstance(event, dict) else None})


def _message_for(event: dict[str, Any]) -> bytes:
    from email import policy
    from email.message import EmailMessage

    message = EmailMessage(policy=policy.SMTP)
    sender = (event.get("sender") or {}).get("address") or "postmaster@example.com"
    recipients = [r["address"] for r in (event.get("envelope") or {}).get("recipients", [])]
    message["From"] = sender
    message["To"] = ", ".join(recipients[:50]) or sender
    message["Subject"] = " ".join(str(event.get("subject", "")).split())
    message["Date"] = FIXED_DATE
    message["Message-ID"] = f"<{event.get('messageId') or 'message'}@fnkit.invalid>"
    message.set_content("This message was made by fnkit.mail.build_event.\n")
    return message.as_bytes()


# --- the store -------------------------------------------------------------------


@dataclass
class StoredMessage:
    """One message in flight: what arrived, what it is now, and when."""

    message_id: str
    original: bytes
    content: bytes
    received_s: float

    @property
    def replaced(self) -> bool:
        """True when a replacement changed the content."""
        return self.content != self.original


@dataclass(frozen=True)
class Replacement:
    """One put during an invocation: when (virtual s), the bytes, and whether it counts."""

    message_id: str
    time_s: float
    content: bytes
    applied: bool
    why: str = ""


def _nbytes(data: Any) -> int:
    """The bytes a stored content holds (0 for a function not yet called)."""
    if callable(data):
        return 0
    return data.nbytes if isinstance(data, memoryview) else len(data)


def _footprint(stored: StoredMessage) -> int:
    """The bytes one stored message holds: what arrived, and a replacement beside it."""
    held = _nbytes(stored.original)
    return held if stored.content is stored.original else held + _nbytes(stored.content)


class MessageStore:
    """Raw messages in flight, on a virtual clock (`now_s`), kept 24 hours (M9).

    A long-running holder (the SMTP front end) keeps it small with `forget_expired` and
    `make_room` (a size cap in bytes, oldest dropped first); `size_bytes` is what it holds.
    """

    def __init__(self, *, retention_s: float = RETENTION_S) -> None:
        self.retention_s = retention_s
        self.now_s = 0.0
        self._messages: dict[str, StoredMessage] = {}  # in arrival order: the oldest first
        self._open_sync: dict[str, int] = {}
        self._bytes = 0
        self._lock = threading.RLock()

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._messages

    def __len__(self) -> int:
        return len(self._messages)

    def __repr__(self) -> str:
        return f"<MessageStore {len(self)} message(s), now {self.now_s:g} s>"

    def advance(self, seconds: float) -> None:
        """Move the virtual clock forward."""
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        self.now_s += seconds

    def add(self, message_id: str, content: bytes | Callable[[], bytes], *, at_s: float | None = None) -> None:
        """Register a message as it arrives (no MIME check: it is what the sender sent).

        `content` may be a function returning the bytes, called when they are first read.
        """
        if not (callable(content) or isinstance(content, (bytes, bytearray, memoryview))):
            raise TypeError(f"content must be bytes, not {type(content).__name__}")
        at = self.now_s if at_s is None else at_s
        stored = StoredMessage(message_id, content, content, at)  # type: ignore[arg-type]
        with self._lock:
            before = self._messages.pop(message_id, None)  # a message added again arrives again: the newest
            if before is not None:
                self._bytes -= _footprint(before)
            self._messages[message_id] = stored
            self._bytes += _footprint(stored)

    @property
    def size_bytes(self) -> int:
        """The bytes of raw message content the store holds (originals and replacements)."""
        return self._bytes

    def forget(self, message_id: str) -> None:
        """Drop one message (its content can no longer be read); nothing when it is unknown."""
        with self._lock:
            stored = self._messages.pop(message_id, None)
            if stored is not None:
                self._bytes -= _footprint(stored)

    def forget_expired(self) -> list[str]:
        """Drop the messages past the retention (24 hours); their ids."""
        with self._lock:
            expired = [k for k, m in self._messages.items() if self.now_s - m.received_s > self.retention_s]
            for message_id in expired:
                self.forget(message_id)
        return expired

    def make_room(self, max_bytes: int, keep: Collection[str] = ()) -> list[tuple[str, int]]:
        """Drop the oldest messages, except those in `keep` (in flight), until the store holds at most
        `max_bytes`; the (id, bytes) of each message dropped."""
        dropped: list[tuple[str, int]] = []
        with self._lock:
            if self._bytes <= max_bytes:
                return dropped
            for message_id, stored in list(self._messages.items()):
                if self._bytes <= max_bytes:
                    break
                if message_id not in keep:
                    dropped.append((message_id, _footprint(stored)))
                    self.forget(message_id)
        return dropped

    def message(self, message_id: str) -> StoredMessage:
        """The stored message; `MessageNotFoundError` when unknown or older than 24 hours."""
        with self._lock:
            stored = self._messages.get(message_id)
            if stored is not None and callable(stored.original):
                stored.original = stored.content = bytes(stored.original())
                self._bytes += _footprint(stored)  # a function counted 0 until now
        if stored is None:
            raise MessageNotFoundError(f"No message {message_id!r} is in flight ({MESSAGE_CONTENT.id}).")
        age = self.now_s - stored.received_s
        if age > self.retention_s:
            raise MessageNotFoundError(
                f"Message {message_id!r} arrived {age / 3600:.1f} h ago; raw content is kept only "
                f"{self.retention_s / 3600:g} h ({MESSAGE_CONTENT.id})."
            )
        return stored

    def get_raw_message_content(self, message_id: str) -> bytes:
        """The raw message as it stands now (replaced or not)."""
        return self.message(message_id).content

    def put_raw_message_content(self, message_id: str, content: bytes) -> None:
        """Replace the raw message; only during a synchronous invocation for it, only valid MIME."""
        stored = self.message(message_id)
        data = check_mime(content)
        with self._lock:
            if not self._open_sync.get(message_id):
                raise MessageFrozenError(
                    f"Message {message_id!r} can be replaced only during a synchronous invocation for it "
                    f"({MESSAGE_CONTENT.id})."
                )
            self._set_content(stored, data)

    def restore(self, message_id: str) -> None:
        """Undo every replacement: the message is as it arrived (a new simulated delivery)."""
        stored = self.message(message_id)
        with self._lock:
            self._set_content(stored, stored.original)

    def _set_content(self, stored: StoredMessage, content: bytes) -> None:
        """Under the lock: the message's content becomes `content`, and `size_bytes` counts it."""
        counted = self._messages.get(stored.message_id) is stored  # not dropped meanwhile
        if counted:
            self._bytes -= _footprint(stored)
        stored.content = content
        if counted:
            self._bytes += _footprint(stored)

    def original_content(self, message_id: str) -> bytes:
        """The raw message as it arrived."""
        return self.message(message_id).original

    @contextmanager
    def invocation(self, message_id: str, *, mode: str = "sync", at_s: float | None = None) -> Iterator[MessageContent]:
        """Open the content API for one invocation; yields the handler's `MessageContent`."""
        client = MessageContent(self, message_id, mode=mode, time_s=self.now_s if at_s is None else at_s)
        if mode == "sync":
            with self._lock:
                self._open_sync[message_id] = self._open_sync.get(message_id, 0) + 1
        try:
            yield client
        finally:
            client.close()
            if mode == "sync":
                with self._lock:
                    left = self._open_sync.get(message_id, 1) - 1
                    if left:
                        self._open_sync[message_id] = left
                    else:
                        self._open_sync.pop(message_id, None)


class MessageContent:
    """The content API as one invocation's handler sees it (`context.message_content`).

    `get_raw_message_content(message_id) -> bytes` and
    `put_raw_message_content(message_id, content)`; `messageId=` is accepted too, as the
    real SDK spells it. After the invocation ends, both refuse.
    """

    #: In a worker process the handler calls these back in the caller's process, where the store is.
    _remote_methods = ("get_raw_message_content", "put_raw_message_content")
    #: ... and once the invocation is over, a call back from a worker raises this there
    _remote_closed_error = MessageFrozenError

    def __init__(self, store: MessageStore, message_id: str, *, mode: str, time_s: float) -> None:
        self.store = store
        self.message_id = message_id
        self.mode = mode
        self.time_s = time_s
        self.replacements: list[Replacement] = []
        self._open = True
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<MessageContent for {self.message_id!r} ({self.mode}{'' if self._open else ', closed'})>"

    def close(self) -> None:
        with self._lock:
            self._open = False

    def _check_open(self) -> None:
        if not self._open:
            raise MessageFrozenError(
                f"This invocation is over; its message content API is closed ({MESSAGE_CONTENT.id})."
            )

    def get_raw_message_content(self, message_id: str | None = None, *, messageId: str | None = None) -> bytes:
        """The raw message (RFC 5322 bytes) of a message in flight."""
        self._check_open()
        return self.store.get_raw_message_content(_one_id(message_id, messageId))

    def put_raw_message_content(
        self, message_id: str | None = None, content: bytes | None = None, *, messageId: str | None = None
    ) -> None:
        """Replace the raw message; counts only in a synchronous invocation for this message."""
        target = _one_id(message_id, messageId)
        with self._lock:
            self._check_open()
            self.store.message(target)
            data = check_mime(content)
            if target != self.message_id:
                raise MessageFrozenError(
                    f"This invocation is for message {self.message_id!r}; a replacement takes effect only "
                    f"during a synchronous invocation for that message, not {target!r} ({MESSAGE_CONTENT.id})."
                )
            if self.mode != "sync":
                self.replacements.append(
                    Replacement(target, self.time_s, data, False, "during an asynchronous invocation")
                )
                return
            self.store.put_raw_message_content(target, data)
            self.replacements.append(Replacement(target, self.time_s, data, True))


def _one_id(message_id: str | None, messageId: str | None) -> str:
    if message_id is not None and messageId is not None and message_id != messageId:
        raise TypeError("give the message id once")
    found = message_id if message_id is not None else messageId
    if found is None:
        raise TypeError("give the message id (message_id or messageId)")
    return found


_default = MessageStore()


def default_store() -> MessageStore:
    """The store `build_event` registers messages in, and `run`/`MailRule.run` read by default."""
    return _default
