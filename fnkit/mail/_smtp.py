"""The SMTP conversation of `fnkit.mail.serve`: what MAIL, RCPT and DATA accept, before any rule runs.

RFC 5321's lengths (local part 64 octets, domain 255, path 256 with its angle brackets),
the null sender `<>`, the organisation's domains (no open relay), repeated recipients, the
message size; an accepted DATA goes to the server's worker threads as a `_Message`.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from ._address import is_address

#: RFC 5321 4.5.3.1: the longest local part, domain, and path (the address in its angle brackets), in octets
LOCAL_PART_OCTETS = 64
DOMAIN_OCTETS = 255
PATH_OCTETS = 256
NULL_PATH = "<>"  # MAIL FROM:<>, the null sender of bounces and delivery reports (RFC 5321 4.5.5)


def _domain(address: str) -> str:
    return address.rpartition("@")[2].lower()


def path_too_long(address: str) -> tuple[int, str] | None:
    """(reply code, why) when an address breaks RFC 5321's length limits (local part 64 octets, domain 255,
    path 256 with its angle brackets), else None; the enhanced status is the caller's (sender or recipient)."""
    octets = len(address.encode("utf-8", "surrogateescape"))
    local, at, domain = address.rpartition("@")
    local_octets = len(local.encode("utf-8", "surrogateescape")) if at else octets
    if local_octets > LOCAL_PART_OCTETS:
        return 553, (
            f"The local part (before the @) is {local_octets} octets long; at most {LOCAL_PART_OCTETS} are "
            "allowed (RFC 5321 4.5.3.1.1)"
        )
    domain_octets = len(domain.encode("utf-8", "surrogateescape"))
    if at and domain_octets > DOMAIN_OCTETS:
        return 553, (
            f"The domain is {domain_octets} octets long; at most {DOMAIN_OCTETS} are allowed (RFC 5321 4.5.3.1.2)"
        )
    if octets + 2 > PATH_OCTETS:
        return 501, (
            f"Path too long: the address is {octets} octets, {octets + 2} in its angle brackets; at most "
            f"{PATH_OCTETS} are allowed (RFC 5321 4.5.3.1.3)"
        )
    return None


@dataclass(frozen=True)
class _Message:
    """One accepted DATA: the envelope ("" for the null sender) and the raw bytes."""

    mail_from: str
    recipients: tuple[str, ...]
    raw: bytes


class _Gateway(Protocol):
    """What the SMTP hooks read of the server (`MailServer`), and the one call that handles a message."""

    outbound: bool
    domains: frozenset[str]
    max_recipients: int
    max_message_bytes: int
    _executor: ThreadPoolExecutor

    def _busy(self, delta: int) -> None: ...

    def _handle(self, message: _Message) -> str: ...


class _SmtpHooks:
    """The aiosmtpd handler: envelope policy at MAIL and RCPT, the rule at DATA."""

    def __init__(self, server: _Gateway) -> None:
        self.server = server

    async def handle_MAIL(self, server: Any, session: Any, envelope: Any, address: str, mail_options: list[Any]) -> str:
        # the null sender stays "<>" in the envelope (aiosmtpd takes an empty one for "no MAIL yet")
        if address != NULL_PATH:
            too_long = path_too_long(address)
            if too_long is not None:
                return f"{too_long[0]} 5.1.7 {too_long[1]}"
            if not is_address(address):
                return "553 5.1.7 The sender address is not a valid address (local@domain)"
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: list[Any]) -> str:
        gateway = self.server
        too_long = path_too_long(address)
        if too_long is not None:
            return f"{too_long[0]} 5.1.3 {too_long[1]}"
        if not is_address(address):
            return "553 5.1.3 The recipient address is not a valid address (local@domain)"
        if gateway.outbound:
            if envelope.mail_from == NULL_PATH:
                return "550 5.7.1 Relaying denied: outbound mail needs an organisation sender, not the null sender"
            if _domain(envelope.mail_from or "") not in gateway.domains:
                return "550 5.7.1 Relaying denied"
        elif _domain(address) not in gateway.domains:
            return "550 5.7.1 Relaying denied"
        seen = envelope.__dict__.setdefault("fnkit_recipients", set())  # a new envelope per transaction
        if address.lower() in seen:
            return "250 OK (already a recipient)"
        if len(envelope.rcpt_tos) >= gateway.max_recipients:
            return "452 4.5.3 Too many recipients"
        seen.add(address.lower())
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        gateway = self.server
        raw = envelope.original_content or b""
        if len(raw) > gateway.max_message_bytes:
            return "552 5.3.4 Message size exceeds fixed maximum message size"
        mail_from = "" if envelope.mail_from == NULL_PATH else envelope.mail_from
        message = _Message(mail_from, tuple(envelope.rcpt_tos), bytes(raw))
        gateway._busy(+1)
        try:
            return await asyncio.get_running_loop().run_in_executor(gateway._executor, gateway._handle, message)
        except Exception as exc:  # noqa: BLE001 - the client gets a temporary failure, never a crash
            return f"451 4.3.0 Internal error: {type(exc).__name__}"
        finally:
            gateway._busy(-1)
