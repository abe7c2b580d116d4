"""Carrying out a message's decisions (`fnkit.mail.serve`): each recipient's action, then every file
delivered into its Maildir or none, and one bounce to a local sender listing the bounced recipients."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import mailbox
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..rules import id_of
from ._decision import COVERAGE, Decision
from ._event import parse_event, truncation
from ._rule import MailRule
from ._smtp import _domain, _Message

if TYPE_CHECKING:
    from ._rule import MailRun

BOUNCE_SUBJECT = "Undelivered Mail Returned to Sender"
DEFAULT_BOUNCE_TEXT = "The message was refused by a mail-flow rule."
_NAME_MAX = 255  # the longest file name most file systems take, in bytes
_MAILDIRS_KNOWN = 10_000  # Maildirs remembered as made (past it, forgotten and checked again)


def maildir_name(address: str) -> str:
    """The folder name of an address's Maildir: the address in lower case, `/` and `%` escaped (a name
    past 255 bytes, as escaped non-ASCII makes it, keeps its first 200 and a digest of the whole)."""
    name = quote(address.lower(), safe="@.+-_=!#$&'*^`{|}~")
    if len(name) > _NAME_MAX:
        name = name[:200] + "~" + hashlib.sha256(name.encode("ascii")).hexdigest()[:24]
    return name


@dataclass(frozen=True)
class _Delivery:
    """One file to deliver: the content, to the address's Maildir (or its folder), for the log rows it serves."""

    rows: list[dict[str, Any]]
    address: str
    folder: str | None
    content: bytes


class _DeliveryFailed(Exception):
    """Nothing of a message was delivered (what was written is removed): which delivery failed, and why."""

    def __init__(self, address: str, exc: OSError) -> None:
        super().__init__(f"delivery to {address} failed: {type(exc).__name__}: {exc}")
        self.short = f"delivery to {address} failed ({type(exc).__name__})"  # fits an SMTP reply line


class _Delivering:
    """The part of `MailServer` that carries out decisions and reads the Maildirs; the server sets these up."""

    rule: MailRule
    outbound: bool
    domains: frozenset[str]
    maildir: Path
    _deliver_lock: threading.Lock
    _maildirs: dict[tuple[str, str | None], Path]
    _deliveries: itertools.count[int]
    _host: str
    _record: Callable[[dict[str, Any]], None]

    def maildir_for(self, address: str) -> Path:
        """The Maildir of an address under this server's root (it may not exist yet)."""
        return self.maildir / maildir_name(address)

    def mailbox(self, address: str) -> mailbox.Maildir:
        """The address's Maildir (stdlib `mailbox.Maildir`), for reading what was delivered."""
        return mailbox.Maildir(self.maildir_for(address), create=True)

    def delivered(self, address: str) -> list[bytes]:
        """The raw messages in an address's Maildir (inbox and folders), oldest first."""
        path = self.maildir_for(address)
        files = [f for sub in ("new", "cur") for f in (path / sub).glob("*")]
        files += [f for folder in path.glob(".*") for sub in ("new", "cur") for f in (folder / sub).glob("*")]
        return [f.read_bytes() for f in sorted(files, key=lambda f: (f.stat().st_mtime_ns, f.name))]

    def _carry_out(
        self,
        message: _Message,
        event: Mapping[str, Any],
        decisions: dict[str, Decision],
        status: str,
        attempts: int,
        run: MailRun | None,
        note: str,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Deliver, drop or bounce for every recipient, all or nothing; one log row each, and why nothing was
        delivered (None when all was)."""
        content = (run.delivered_content if run is not None else None) or message.raw
        by_key = {r.lower(): (r, d) for r, d in decisions.items()}
        in_envelope = {r.lower() for r in message.recipients}
        # a recipient the (truncated) event lacks gets what rule M1 decides for it
        missing = [address for address in message.recipients if address.lower() not in by_key]
        cut = truncation(parse_event(event), envelope=missing, fallback_action=self.rule.fallback_action).cut
        plan: list[tuple[str, Decision, str]] = []
        for address in message.recipients:
            found = by_key.get(address.lower())
            plan.append((address, found[1] if found is not None else cut[address], ""))
        for key, (address, decision) in by_key.items():
            if key not in in_envelope:
                plan.append((address, decision, "added by the response (BCC)"))
        rows: list[dict[str, Any]] = []
        deliveries: list[_Delivery] = []
        bounced: list[tuple[dict[str, Any], str]] = []
        for address, decision, extra in plan:
            row = {
                "message_id": event["messageId"],
                "invocation_id": event["invocationId"],
                "sender": message.mail_from,
                "recipient": address,
                "subject": event["subject"],
                "action": decision.action,
                "via": decision.via,
                "rule": decision.rule,
                "outcome": status,
                "attempts": attempts,
                "status": None,
                "delivered_to": None,
                "replaced": content is not message.raw,
                "note": _joined(note, extra),
                "reason": _reason(decision, run),
            }
            self._dispose(row, address, decision, content, bool(extra), deliveries, bounced)
            rows.append(row)
        if bounced:
            self._bounce(message, event, bounced, deliveries)
        failure = None
        try:
            paths = self._deliver_all(deliveries)
        except _DeliveryFailed as failed:  # nothing was delivered: the client keeps the message and retries
            failure = failed.short
            for row in rows:
                row["status"] = "deferred"
                row["note"] = _joined(row["note"], f"nothing delivered: {failed}; the client retries")
        else:
            for delivery, path in zip(deliveries, paths, strict=True):
                for row in delivery.rows:
                    row["delivered_to"] = path
        for row in rows:
            self._record(row)
        return rows, failure

    def _dispose(
        self,
        row: dict[str, Any],
        address: str,
        decision: Decision,
        content: bytes,
        added: bool,
        deliveries: list[_Delivery],
        bounced: list[tuple[dict[str, Any], str]],
    ) -> None:
        """One recipient's decision: its status, and the delivery or bounce it asks for."""
        action = decision.action
        if added and not self.outbound and _domain(address) not in self.domains:
            row["status"] = "not delivered"
            row["note"] = _joined(
                row["note"],
                f"not an organisation address: on inbound mail the platform adds only its own ({COVERAGE.id})",
            )
        elif action in ("DEFAULT", "BYPASS_SPAM_CHECK"):
            deliveries.append(_Delivery([row], address, None, content))
            row["status"] = "delivered"
        elif action == "MOVE_TO_JUNK":
            deliveries.append(_Delivery([row], address, "Junk", content))
            row["status"] = "junk"
        elif action == "DROP":
            row["status"] = "dropped"
        elif action == "BOUNCE":
            row["status"] = "bounced"
            bounced.append((row, decision.bounce_message or DEFAULT_BOUNCE_TEXT))
        else:  # pragma: no cover - the outcome only decides the actions above
            raise ValueError(f"unknown action {action!r}")

    def _maildir(self, address: str, folder: str | None) -> Path:
        """The Maildir (with its tmp, new and cur) of an address, or of one of its folders, made when missing."""
        key = (address.lower(), folder)
        found = self._maildirs.get(key)
        if found is None:
            with self._deliver_lock:
                path = self.maildir_for(address)
                box = mailbox.Maildir(path, create=True)
                if folder is not None:
                    path = path / f".{folder}"
                    try:
                        box.get_folder(folder)
                    except mailbox.NoSuchMailboxError:
                        box.add_folder(folder)
                if not all((path / sub).is_dir() for sub in ("tmp", "new", "cur")):  # a file in the way, say
                    raise NotADirectoryError(f"{path} is not a Maildir (it lacks tmp/, new/ or cur/)")
                if len(self._maildirs) >= _MAILDIRS_KNOWN:  # a cache of what exists: it stays small
                    self._maildirs.clear()
                found = self._maildirs[key] = path
        return found

    def _deliver_all(self, deliveries: list[_Delivery]) -> list[str]:
        """Carry out every delivery, or none: each is written whole under its Maildir's tmp/
        first (and synced), then all are moved into new/; a failure removes what was written or moved.
        The paths of the new files; `_DeliveryFailed` when nothing was delivered."""
        staged: list[tuple[str, str]] = []  # (tmp path, new path)
        moved: list[str] = []
        try:
            for delivery in deliveries:
                try:
                    maildir = self._maildir(delivery.address, delivery.folder)
                    try:
                        staged.append(self._write_tmp(maildir, delivery.content))
                    except OSError:  # the Maildir went away since it was made: make it again, once
                        self._maildirs.pop((delivery.address.lower(), delivery.folder), None)
                        staged.append(
                            self._write_tmp(self._maildir(delivery.address, delivery.folder), delivery.content)
                        )
                except OSError as exc:
                    raise _DeliveryFailed(delivery.address, exc) from exc
            for delivery, (tmp, new) in zip(deliveries, staged, strict=True):
                try:
                    os.rename(tmp, new)  # atomic within a file system: a reader sees the whole file or none
                except OSError as exc:
                    raise _DeliveryFailed(delivery.address, exc) from exc
                moved.append(new)
        except _DeliveryFailed:
            for path in [*moved, *(tmp for tmp, new in staged if new not in moved)]:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise
        return moved

    def _write_tmp(self, maildir: Path, content: bytes) -> tuple[str, str]:
        """`content` written whole and synced to a new file under the Maildir's tmp/: (its path, its path in new/),
        named as the Maildir convention asks (time, process, a delivery counter, host), unique in this server."""
        now = time.time_ns()
        name = f"{now // 10**9}.M{now // 1000 % 10**6}P{os.getpid()}Q{next(self._deliveries)}.{self._host}"
        tmp = str(maildir / "tmp" / name)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb", closefd=False) as out:
                out.write(content)
                out.flush()
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        os.close(fd)
        return tmp, str(maildir / "new" / name)

    def _bounce(
        self,
        message: _Message,
        event: Mapping[str, Any],
        bounced: list[tuple[dict[str, Any], str]],
        deliveries: list[_Delivery],
    ) -> None:
        """One bounce message to the sender, listing every bounced recipient with its text (delivered with the
        message's other deliveries, all or none)."""
        sender = message.mail_from
        if not sender:
            for row, _ in bounced:
                row["note"] = _joined(row["note"], "no bounce: the sender is the null sender <> (RFC 5321 4.5.5)")
            return
        if _domain(sender) not in self.domains:
            for row, _ in bounced:
                row["note"] = _joined(row["note"], "bounce not delivered (remote sender)")
            return
        bounce = make_bounce(message, event, [(r["recipient"], t) for r, t in bounced], self._reporting_domain(sender))
        for row, _ in bounced:
            row["note"] = _joined(row["note"], f"bounce delivered to {sender}")
        deliveries.append(_Delivery([row for row, _ in bounced], sender, None, bounce))  # one file for them all

    def _reporting_domain(self, sender: str) -> str:
        domain = _domain(sender)
        return domain if domain in self.domains else min(self.domains)


def _joined(*notes: str) -> str:
    """Notes of a log row, the empty ones left out."""
    return "; ".join(n for n in notes if n)


def _reason(decision: Decision, run: MailRun | None) -> str:
    """Why a recipient got its action: the decision's words, and the whole story after a failure."""
    if run is None or run.outcome.status != "fallback" or decision.rule == id_of(truncation):
        return decision.reason or (run.outcome.reason if run is not None else "")
    return run.outcome.reason


def make_bounce(message: _Message, event: Mapping[str, Any], bounced: list[tuple[str, str]], domain: str) -> bytes:
    """A bounce (RFC 3464-like, plain text) telling the sender which recipients refused the message."""
    from datetime import UTC, datetime
    from email import policy
    from email.message import EmailMessage
    from email.utils import format_datetime, make_msgid

    lines = [
        "This is the mail system at " + domain + ".",
        "",
        "Your message could not be delivered to one or more recipients:",
        "",
    ]
    for recipient, text in bounced:
        lines += [f"<{recipient}>: {text}"]
    lines += [
        "",
        "--- Delivery report ---",
        f"Reporting-MTA: dns; {domain}",
        f"Original-Envelope-Id: {event['messageId']}",
        "",
    ]
    for recipient, text in bounced:
        lines += [
            f"Final-Recipient: rfc822; {recipient}",
            "Action: failed",
            "Status: 5.7.1",
            f"Diagnostic-Code: smtp; 550 5.7.1 {' '.join(text.split())}",
            "",
        ]
    lines += ["--- Subject of the original message ---", event["subject"] or "(no subject)"]
    bounce = EmailMessage(policy=policy.SMTP)
    bounce["From"] = f"Mail Delivery System <MAILER-DAEMON@{domain}>"
    bounce["To"] = message.mail_from
    bounce["Subject"] = BOUNCE_SUBJECT
    bounce["Date"] = format_datetime(datetime.now(UTC))
    bounce["Message-ID"] = make_msgid(domain=domain)
    bounce["Auto-Submitted"] = "auto-replied"
    bounce.set_content("\n".join(lines) + "\n")
    return bounce.as_bytes()
