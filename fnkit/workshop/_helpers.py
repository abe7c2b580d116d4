"""What the exercises' handlers call: orders for the queue, emails and mailboxes for mail.

Two of them say what they were asked to do with `fnkit.isolation.report`, which works
wherever the handler runs (in a worker process too): `process_order` reports each call (what it
got, and what it raised), `park` each message id. A check reads them back from its invocation
(`Watched.of`), so its feedback says what the handler did, not what it should have done.
"""

from __future__ import annotations

import email
import email.policy
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..isolation import report

PROCESSED = "process_order"  # the topic `process_order` reports each body under
PARKED = "park"  # the topic `park` reports each message id under


class BadOrder(ValueError):
    """Raised by `process_order` for an order that cannot be processed."""


@dataclass(frozen=True)
class OrderCall:
    """One call of `process_order`: the body (None when not text), what it got ('a str', 'a dict'), what it raised."""

    body: str | None
    got: str
    raised: str | None = None

    @classmethod
    def of(cls, value: Any) -> OrderCall:
        if isinstance(value, dict):
            return cls(value.get("body"), str(value.get("got", "a str")), value.get("raised"))
        return cls(value if isinstance(value, str) else None, "a str")


@dataclass
class Watched:
    """What a handler did during one invocation: its calls of process_order and the messages parked, in order."""

    calls: list[OrderCall] = field(default_factory=list)
    parked: list[Any] = field(default_factory=list)

    @property
    def processed(self) -> list[str | None]:
        """The bodies process_order was given, in order (None for one that was not text)."""
        return [c.body for c in self.calls]

    def call_for(self, body: str) -> OrderCall | None:
        """The first call of process_order with `body`, or None when it was never given that body."""
        return next((c for c in self.calls if c.body == body), None)

    def not_text(self) -> OrderCall | None:
        """The first call that got something other than the body text (a dict from json.loads...), if any."""
        return next((c for c in self.calls if c.got != "a str"), None)

    @classmethod
    def of(cls, invocation: Any) -> Watched:
        """Read from what `process_order` and `park` reported during the invocation (`Invocation.reports`)."""
        reports = getattr(invocation, "reports", None) or ()
        return cls(
            [OrderCall.of(value) for topic, value in reports if topic == PROCESSED],
            [value for topic, value in reports if topic == PARKED],
        )


def _kind(value: Any) -> str:
    name = type(value).__name__
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def _parse_order(body: Any) -> dict[str, Any]:
    try:
        order = json.loads(body)
    except (TypeError, ValueError):
        raise BadOrder(f"the body is not JSON: {str(body)[:40]!r}") from None
    if not isinstance(order, dict):
        raise BadOrder("the body is not an order object")
    qty = order.get("qty")
    if not isinstance(qty, int) or isinstance(qty, bool) or qty <= 0:
        raise BadOrder(f"order {order.get('order')!r} has qty {qty!r}; it needs a whole number above 0")
    return order


def process_order(body: Any) -> dict[str, Any]:
    """Process one order (a message body such as '{"order": 7, "qty": 2}'); raises BadOrder when it is bad.

    An order is bad when the body is not JSON, not an object, or its qty is not a whole
    number above 0.
    """
    text = body if isinstance(body, str) else None
    try:
        order = _parse_order(body)
    except BadOrder as exc:
        report(PROCESSED, {"body": text, "got": _kind(body), "raised": str(exc)})
        raise
    report(PROCESSED, {"body": text, "got": _kind(body), "raised": None})
    return order


def is_good_order(body: Any) -> bool:
    """True when `process_order(body)` would succeed (it is not recorded as processed)."""
    try:
        _parse_order(body)
        return True
    except BadOrder:
        return False


def park(record: object) -> None:
    """Set a message aside for a person to look at (it will not be retried); `record` is the queue record."""
    mid = record.get("messageId") if isinstance(record, dict) else None
    report(PARKED, mid)
    print(f"parked message {mid}")


# --- mail ------------------------------------------------------------------------------------

EXECUTABLE_EXTENSIONS = (".exe", ".bat", ".cmd", ".com", ".js", ".vbs", ".scr", ".msi", ".ps1", ".jar")
DISCLAIMER = "This email was checked by the workshop's mail filter."
FIXED_DATE = "Thu, 01 Jan 2026 09:00:00 +0000"
FORMER_STAFF = frozenset(
    {"dan.old@example.org", "eve.gone@example.org", "walt.retired@example.org", "zoe.left@example.org"}
)
_ATTACHMENT_BYTES = {
    ".exe": b"MZ\x90\x00 a program",
    ".pdf": b"%PDF-1.4 a document",
    ".zip": b"PK\x03\x04 an archive",
    ".js": b"console.log('hi')",
    ".txt": b"plain text",
}
_MEDIA_TYPES = {
    ".pdf": "application/pdf",
    ".zip": "application/zip",
    ".txt": "text/plain",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".csv": "text/csv",
    ".html": "text/html",
    ".docx": "application/octet-stream",
}


def email_message(
    *,
    mail_from: str = "ada@example.com",
    to: Iterable[str] = ("bob@example.org",),
    subject: str = "Hello",
    body: str = "Hello,\nsee you soon.\n",
    attachments: Iterable[str] = (),
    cc: Iterable[str] = (),
) -> Any:
    """A small, deterministic email (an `EmailMessage`) with made-up attachments named `attachments`.

    Deterministic: a fixed Date and MIME boundary, so the event built from it (and its
    messageId) is the same run after run.
    """
    from email.message import EmailMessage

    msg = EmailMessage()
    msg["From"] = mail_from
    msg["To"] = ", ".join(to)
    if cc:
        msg["Cc"] = ", ".join(cc)
    msg["Subject"] = subject
    msg["Date"] = FIXED_DATE
    msg.set_content(body)
    for name in attachments:
        suffix = Path(name).suffix.lower()
        # a fixed table, not the mimetypes module: its answers depend on the machine's /etc/mime.types
        maintype, subtype = _MEDIA_TYPES.get(suffix, "application/octet-stream").split("/", 1)
        msg.add_attachment(_ATTACHMENT_BYTES.get(suffix, b"data"), maintype=maintype, subtype=subtype, filename=name)
    if msg.is_multipart():
        msg.set_boundary("fnkit-boundary-0")
    return msg


def attachment_names(raw: bytes) -> list[str]:
    """The file names of the attachments of a raw RFC 5322 message."""
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    return [part.get_filename() or "" for part in msg.iter_attachments()]


def add_disclaimer(raw: bytes, text: str = DISCLAIMER) -> bytes:
    """The raw message with `text` added at the end of its plain-text body (attachments kept)."""
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    part = msg.get_body(preferencelist=("plain",))
    if part is None:
        raise ValueError("the message has no plain-text body to add a disclaimer to")
    content = part.get_content()
    part.set_content(content.rstrip("\n") + "\n\n" + text + "\n")
    if msg.is_multipart():
        msg.set_boundary(msg.get_boundary() or "fnkit-boundary-0")
    return msg.as_bytes(policy=email.policy.SMTP)


def body_text(raw: bytes) -> str:
    """The plain-text body of a raw message ("" when it has none)."""
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    part = msg.get_body(preferencelist=("plain",))
    return part.get_content() if part is not None else ""


def has_disclaimer(raw: bytes | None, text: str = DISCLAIMER) -> bool:
    """True when the plain-text body of the raw message holds the disclaimer."""
    if not raw:
        return False
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    part = msg.get_body(preferencelist=("plain",))
    return part is not None and text in part.get_content()


def mailbox_full(address: object) -> bool:
    """True when the recipient's mailbox is full (in this workshop: addresses starting with 'full')."""
    return isinstance(address, str) and address.lower().startswith("full")
