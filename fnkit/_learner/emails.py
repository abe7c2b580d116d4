"""Small, deterministic emails for the learner's tools: the workshop's mail exercises and the mail widget.

A fixed Date and MIME boundary, so an event built from one (and its messageId) is the same
run after run; made-up attachments; the disclaimer the workshop's filter adds.
"""

from __future__ import annotations

import email
import email.policy
from collections.abc import Iterable
from pathlib import Path
from typing import Any

EXECUTABLE_EXTENSIONS = (".exe", ".bat", ".cmd", ".com", ".js", ".vbs", ".scr", ".msi", ".ps1", ".jar")
DISCLAIMER = "This email was checked by the workshop's mail filter."
FIXED_DATE = "Thu, 01 Jan 2026 09:00:00 +0000"
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
