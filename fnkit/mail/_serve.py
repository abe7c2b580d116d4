"""A real SMTP front end for a mail-flow rule: `fnkit.mail.serve` and `fnkit serve-mail`.

An aiosmtpd server (the `serve` extra) that stands where the mail service stands:

- MAIL and RCPT: an address past RFC 5321's lengths (local part 64 octets, domain 255:
  553; path 256 with its angle brackets: 501 "Path too long") or not `local@domain` (MS3:
  553) is refused with a sentence saying which. `MAIL FROM:<>`, the null sender of
  bounces and delivery reports, is accepted (inbound; the event's envelope sender is "",
  its sender the From header's, else MAILER-DAEMON@fnkit.invalid), and is never bounced.
- RCPT: inbound, only the organisation's `domains` are accepted; outbound, the sender
  must be of those domains and recipients may be anywhere, at most 500 (MS4). Anything
  else gets "550 5.7.1 Relaying denied": the server is never an open relay. A repeated
  recipient is accepted once (MS5).
- DATA: over `max_message_bytes` gets 552. Otherwise the summary event is built from
  the real message and envelope by `build_event` (M1: subject cut to 256 characters,
  recipients cut past 128 KB; it is handed only the header lines it reads, see
  `event_headers`), the whole raw message is registered with the content store (M9),
  and the `MailRule` runs (M2, M3, M8) in a worker thread, so the SMTP loop never waits
  on the function.
- Each recipient's decision is then carried out: DEFAULT (and the BYPASS_SPAM_CHECK
  extension) delivers into that recipient's Maildir, `<maildir>/<address>/`, MOVE_TO_JUNK
  into its `.Junk` folder, DROP delivers nothing, BOUNCE sends one bounce message (From
  MAILER-DAEMON, "Undelivered Mail Returned to Sender", each bounced recipient with its
  bounceMessage) to the sender's Maildir when the sender's domain is local, and records
  "bounce not delivered (remote sender)" otherwise. What is delivered is the raw message
  replaced through the content API during a synchronous invocation, else the original,
  byte for byte (no trace headers are added). Outbound, fnkit relays nothing onward:
  DEFAULT files the message in the (outside) recipient's Maildir under the same root,
  as a capture of what would have been sent.
- A message is delivered to all of its recipients or to none: every file (and the bounce)
  is first written whole under its Maildir's tmp/, then all are moved into new/; when one
  fails, what was written is removed, every row of the message says "deferred", and the
  client gets 451 and retries, so a retry never duplicates mail.
- The reply is "250" once every decision is carried out, "451" when something inside
  fnkit failed (the client keeps the message and retries), never a dropped connection.

Readings of fnkit (the platform does not say; documented here and in the log):
- Retries (rule timeout > 0) run on `MailRule`'s virtual clock: the backoff waits take no
  real time, only the function's own calls do (each cut at the response timeout), so an
  SMTP client waits seconds, never the minutes of the schedule.
- Asynchronous rule: every recipient is delivered (DEFAULT, M8) before the function is
  called; the reply does not wait for it; the log row gets the invocation's result when
  it finishes (`drain()` waits for that).
- Malformed MIME still flows: the event is built from what the lenient parser finds
  (a missing or unusable From header: the sender is the envelope sender; no Subject: "").
  A replacement that is not valid MIME is refused by the content API
  (`InvalidContentError` in the handler); the original is then delivered, and when the
  handler let the error escape, the log's reason says so (the attempt failed: fallback).
- A recipient cut from a truncated event (M1) gets the rule's fallback action.
- Recipients a response adds (M5): on inbound mail only organisation addresses are
  delivered (as BCC); others are logged as not delivered.
- Maildir folder names are the addresses in lower case (`Alice@X` and `alice@x` share one).

Running it: up to `workers` messages are handled at once (a hanging function holds one
worker for at most the response timeout per attempt). Raw messages stay readable
through the content API for 24 real hours, then leave the store; the store holds at most
`max_store_bytes` (64 MiB): past it the oldest messages not in flight leave first, and a
warning on the `fnkit.mail.serve` logger says which. `stop()` leaves the Maildirs, a
temporary root included, for reading afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import inspect
import ipaddress
import itertools
import logging
import mailbox
import os
import socket
import sys
import tempfile
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, Unpack, cast
from urllib.parse import quote

from .._config import with_settings
from .._optional import require
from .._running.inprocess import Handler
from ..rules import id_of
from ._address import is_address
from ._config import MailConfig, MailSettings
from ._content import HeaderLines, MessageStore
from ._decision import Decision
from ._event import OUTBOUND_RECIPIENTS_LIMIT, build_event, parse_event, truncation
from ._outcome import async_outcome
from ._rule import MailRule

if TYPE_CHECKING:
    from concurrent.futures import Future

    import pandas as pd

    from ._rule import MailRun

DEFAULT_MAX_MESSAGE_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_RECIPIENTS = 1000  # inbound, per message; RFC 5321 asks for at least 100
BOUNCE_SUBJECT = "Undelivered Mail Returned to Sender"
DEFAULT_BOUNCE_TEXT = "The message was refused by a mail-flow rule."
LOG_COLUMNS = [
    "message_id",
    "invocation_id",
    "sender",
    "recipient",
    "subject",
    "action",
    "via",
    "rule",
    "outcome",
    "attempts",
    "status",
    "delivered_to",
    "replaced",
    "note",
    "reason",
]
_PRUNE_EVERY_S = 60.0
MAX_RECORDS = 10_000  # log rows kept (a ring buffer): a server that runs for days stays small
#: the raw messages kept readable through the content API, in bytes; past it the oldest are dropped
DEFAULT_MAX_STORE_BYTES = 64 * 1024 * 1024
#: RFC 5321 4.5.3.1: the longest local part, domain, and path (the address in its angle brackets), in octets
LOCAL_PART_OCTETS = 64
DOMAIN_OCTETS = 255
PATH_OCTETS = 256
NULL_PATH = "<>"  # MAIL FROM:<>, the null sender of bounces and delivery reports (RFC 5321 4.5.5)
#: the sender an event shows for a null-sender message whose From header gives no address
NULL_SENDER_STANDIN = "MAILER-DAEMON@fnkit.invalid"
_NAME_MAX = 255  # the longest file name most file systems take, in bytes
_MAILDIRS_KNOWN = 10_000  # Maildirs remembered as made (past it, forgotten and checked again)

logger = logging.getLogger("fnkit.mail.serve")


def _domain(address: str) -> str:
    return address.rpartition("@")[2].lower()


def maildir_name(address: str) -> str:
    """The folder name of an address's Maildir: the address in lower case, `/` and `%` escaped (a name
    past 255 bytes, as escaped non-ASCII makes it, keeps its first 200 and a digest of the whole)."""
    name = quote(address.lower(), safe="@.+-_=!#$&'*^`{|}~")
    if len(name) > _NAME_MAX:
        name = name[:200] + "~" + hashlib.sha256(name.encode("ascii")).hexdigest()[:24]
    return name


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


def _positive_int(value: object) -> bool:
    """A whole number above 0 (what a size limit must be)."""
    return isinstance(value, int) and value > 0


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _domains(domains: Any) -> frozenset[str]:
    if isinstance(domains, str):
        domains = [domains]
    try:
        found = frozenset(str(d).strip().lstrip("@").lower() for d in domains)
    except TypeError:
        raise TypeError(f"domains must be a domain or a list of domains, not {type(domains).__name__}") from None
    found = frozenset(d for d in found if d)
    if not found:
        raise ValueError(
            "serve needs at least one organisation domain (domains=[...]); without one every "
            "recipient is refused, and accepting all would make an open relay."
        )
    return found


def _plain_handler(handler: Handler) -> Handler:
    """`handler`, with an `async def` handler run to completion on the invoking thread."""
    if not inspect.iscoroutinefunction(handler):
        return handler

    def run_coroutine(event: Any, context: Any) -> Any:
        return asyncio.run(handler(event, context))

    run_coroutine.__name__ = getattr(handler, "__name__", "handler")
    return run_coroutine


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


@dataclass(frozen=True)
class _Message:
    """One accepted DATA: the envelope ("" for the null sender) and the raw bytes."""

    mail_from: str
    recipients: tuple[str, ...]
    raw: bytes


class _SmtpHooks:
    """The aiosmtpd handler: envelope policy at MAIL and RCPT, the rule at DATA."""

    def __init__(self, server: MailServer) -> None:
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


class MailServer:
    """A running SMTP front end (see `serve`); a context manager that stops it on exit."""

    def __init__(
        self,
        handler: Handler,
        *,
        domains: Any,
        rule: Any = None,
        maildir: Any = None,
        host: str = "127.0.0.1",
        port: int = 0,
        outbound: bool = False,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_recipients: int | None = None,
        workers: int = 8,
        on_record: Callable[[dict[str, Any]], Any] | None = None,
        isolation: str = "process",
        max_records: int = MAX_RECORDS,
        max_store_bytes: int = DEFAULT_MAX_STORE_BYTES,
    ) -> None:
        from .._running.inprocess import _check_isolation

        _check_isolation(isolation)
        require("aiosmtpd", extra="serve", feature="fnkit.mail.serve")  # before any thread or folder is made
        self.isolation = isolation

        if not callable(handler):
            raise TypeError(f"handler must be callable as handler(event, context), not {type(handler).__name__}")
        self.handler = _plain_handler(handler)
        self.domains = _domains(domains)
        if rule is None:
            rule = MailRule()
        elif not isinstance(rule, MailRule):
            raise TypeError(f"rule must be a fnkit.mail.MailRule, not {type(rule).__name__}")
        if rule.store is None:
            rule = copy.copy(rule)  # the caller's rule stays as it was
            rule.store = MessageStore()
        self.rule = rule
        self.store = rule.store
        self.outbound = bool(outbound)
        self.flow_direction = "OUTBOUND" if self.outbound else "INBOUND"
        limit = OUTBOUND_RECIPIENTS_LIMIT if self.outbound else DEFAULT_MAX_RECIPIENTS
        self.max_recipients = min(limit, max_recipients) if max_recipients else limit
        if not _positive_int(max_message_bytes):
            raise ValueError(f"max_message_bytes must be a positive number of bytes, not {max_message_bytes!r}")
        self.max_message_bytes = max_message_bytes
        if not _positive_int(max_store_bytes):
            raise ValueError(f"max_store_bytes must be a positive number of bytes, not {max_store_bytes!r}")
        self.max_store_bytes = max_store_bytes
        self.maildir = Path(maildir) if maildir is not None else Path(tempfile.mkdtemp(prefix="fnkit-maildir-"))
        self.maildir.mkdir(parents=True, exist_ok=True)
        self.host = host
        self.port = port
        self.on_record = on_record
        self.records: deque[dict[str, Any]] = deque(maxlen=max_records)  # the newest rows
        self._records_lock = threading.Lock()
        self._deliver_lock = threading.Lock()
        self._maildirs: dict[tuple[str, str | None], Path] = {}  # (address, folder) -> its Maildir, made
        self._deliveries = itertools.count(1)  # the Q part of a delivered file's name
        self._host = socket.gethostname().replace("/", r"\057").replace(":", r"\072") or "localhost"
        self._held: set[str] = set()  # ids of the messages in flight: never dropped from the store
        self._held_lock = threading.Lock()
        self._sequence = itertools.count(1)
        self._started = time.monotonic()
        self._pruned = self._started
        self._in_flight = 0
        self._idle = threading.Condition()
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fnkit-mail")
        self._controller: Any = None

    # --- lifecycle ---------------------------------------------------------------

    def start(self) -> MailServer:
        """Bind and start serving (done by `serve`)."""
        from aiosmtpd.controller import Controller  # required in __init__

        class _Controller(Controller):
            def _trigger_server(self) -> None:
                if self.port == 0 and self.server is not None:  # port 0: learn the port the OS chose
                    # aiosmtpd says AbstractServer; loop.create_server made an asyncio.Server
                    self.port = cast("asyncio.Server", self.server).sockets[0].getsockname()[1]
                super()._trigger_server()  # type: ignore[no-untyped-call]  # aiosmtpd leaves it unannotated

        if not _is_loopback(self.host):
            warnings.warn(
                f"fnkit.mail.serve binds {self.host!r}: the server is reachable from other machines. "
                "It only accepts mail for its domains, but it is a development tool; bind 127.0.0.1 "
                "unless you mean it.",
                UserWarning,
                stacklevel=3,
            )
        self._controller = _Controller(
            _SmtpHooks(self),
            hostname=self.host,
            port=self.port,
            data_size_limit=self.max_message_bytes,
            enable_SMTPUTF8=True,
            ident="fnkit mail-flow gateway",
            server_hostname="fnkit.localhost",
        )
        try:
            self._controller.start()
        except BaseException:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._controller = None
            raise
        self.port = self._controller.port
        return self

    def stop(self) -> None:
        """Stop listening; work already in flight finishes in the background."""
        controller, self._controller = self._controller, None
        if controller is not None:
            controller.stop()
        self._executor.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """True while the server listens."""
        return self._controller is not None

    @property
    def url(self) -> str:
        """`smtp://host:port`."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"smtp://{host}:{self.port}"

    def __repr__(self) -> str:
        state = "listening" if self.running else "stopped"
        return (
            f"<MailServer {self.url} {state}: {self.flow_direction.lower()} for "
            f"{', '.join(sorted(self.domains))}, {len(self.records)} recipient row(s)>"
        )

    def drain(self, timeout: float | None = 10.0) -> bool:
        """Wait until no message and no asynchronous invocation is in flight; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout)

    def _busy(self, delta: int) -> None:
        with self._idle:
            self._in_flight += delta
            if self._in_flight == 0:
                self._idle.notify_all()

    def _release_if_cancelled(self, future: Future[None], message_id: str) -> None:
        """A task cancelled before it ran (the server stopping) is no longer in flight."""
        if future.cancelled():
            self._release(message_id)
            self._busy(-1)

    # --- reading what happened -------------------------------------------------------

    @property
    def log(self) -> pd.DataFrame:
        """One row per recipient of every message handled: what was decided and carried out (DataFrame)."""
        require("pandas", extra="frames", feature="MailServer.log")
        import pandas as pd

        with self._records_lock:
            rows = [dict(r) for r in self.records]
        return pd.DataFrame(rows, columns=LOG_COLUMNS)

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

    # --- one message -------------------------------------------------------------------

    def _handle(self, message: _Message) -> str:
        """Build the event, run the rule, carry out the decisions; the SMTP reply."""
        try:
            event, note = self._event(message)
        except Exception as exc:  # noqa: BLE001 - the client retries; the log says why
            self._record_all(message, None, "deferred", f"the event could not be built: {type(exc).__name__}: {exc}")
            return "451 4.3.0 The message could not be summarised; try again later"
        message_id = event["messageId"]
        released = True  # the message leaves the in-flight set here, unless an asynchronous invocation holds it
        try:
            if self.rule.mode == "async":
                rows, failure = self._carry_out(
                    message, event, async_outcome(list(message.recipients), []).decisions, "ignored", 0, None, note
                )
                if failure is None:  # delivered (M8): now the function (not when the client is to retry)
                    self._busy(+1)
                    try:
                        future = self._executor.submit(self._invoke_async, event, rows)
                    except RuntimeError:  # the server is stopping: nothing will run it
                        self._busy(-1)
                    else:
                        released = False
                        future.add_done_callback(lambda f: self._release_if_cancelled(f, message_id))
            else:
                run = self.rule.run(self.handler, event, isolation=self.isolation)
                _, failure = self._carry_out(
                    message, event, run.outcome.decisions, run.outcome.status, len(run.attempts), run, note
                )
        except Exception as exc:  # noqa: BLE001
            self._record_all(message, event, "deferred", f"fnkit failed: {type(exc).__name__}: {exc}")
            return "451 4.3.0 Internal error; try again later"
        finally:
            if released:
                self._release(message_id)
        if failure is not None:
            return f"451 4.3.0 Nothing was delivered ({failure}); try again later"
        return f"250 2.0.0 OK {message_id}"

    def _event(self, message: _Message) -> tuple[Mapping[str, Any], str]:
        """The summary event of a message (M1) and a note when its headers were unusable; the raw message
        joins the store, held there while in flight (the oldest others leave it past its size cap)."""
        now = time.monotonic()
        self.store.now_s = max(self.store.now_s, now - self._started)  # real seconds: M9's 24 hours are real
        if now - self._pruned > _PRUNE_EVERY_S:
            self._pruned = now
            self.store.forget_expired()
        keywords = {
            "mail_from": message.mail_from,
            "recipients": list(message.recipients),
            "flow_direction": self.flow_direction,
            "store": self.store,
            "seed": next(self._sequence),
        }
        headers = event_headers(message.raw)
        # without a usable From header the sender is the envelope's, and the null sender's is a stand-in
        fallback = message.mail_from or NULL_SENDER_STANDIN
        try:
            event, note = build_event(message=headers, **keywords), ""
        except ValueError:
            try:  # a From header that is no address: the sender is the envelope's, the rest as parsed
                event = build_event(message=headers, sender=fallback, **keywords)
                note = f"the From header is not a usable address: sender taken as {fallback}"
            except ValueError:  # headers nothing can be made of: the event from the envelope alone
                event = build_event(sender=fallback, **keywords)
                note = f"the headers could not be read: sender taken as {fallback}, no subject"
        message_id = event["messageId"]
        with self._held_lock:
            self._held.add(message_id)
        self.store.add(message_id, message.raw)  # the content API serves the whole message (M9)
        self._make_room()
        return event, note

    def _make_room(self) -> None:
        """Keep the store under its size cap: the oldest messages not in flight leave it, and the log says so."""
        with self._held_lock:
            in_flight = frozenset(self._held)
        dropped = self.store.make_room(self.max_store_bytes, keep=in_flight)
        if dropped:
            logger.warning(
                "fnkit serve-mail: the message store passed its cap of %s bytes: dropped the %d oldest message(s) "
                "(%s bytes: %s); the content API no longer serves them",
                f"{self.max_store_bytes:,}",
                len(dropped),
                f"{sum(size for _, size in dropped):,}",
                ", ".join(message_id for message_id, _ in dropped[:5]) + (", ..." if len(dropped) > 5 else ""),
            )

    def _release(self, message_id: str) -> None:
        """The message is no longer in flight: the store may drop it to make room (and does, past its cap)."""
        with self._held_lock:
            self._held.discard(message_id)
        self._make_room()

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
                row["note"], "not an organisation address: on inbound mail the platform adds only its own (M5)"
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

    def _invoke_async(self, event: Mapping[str, Any], rows: list[dict[str, Any]]) -> None:
        """An asynchronous rule's invocation, after delivery (M8): fill in what came of it."""
        try:
            run = self.rule.run(self.handler, event, isolation=self.isolation)
            update = {"attempts": len(run.attempts), "reason": run.outcome.reason}
            results = ", ".join(a.result for a in run.attempts)
            extra = f"asynchronous invocation: {results}"
            issues = "; ".join(i.message for i in run.outcome.issues)
        except Exception as exc:  # noqa: BLE001
            update, extra, issues = {}, f"asynchronous invocation failed in fnkit: {type(exc).__name__}: {exc}", ""
        with self._records_lock:
            for row in rows:
                row.update(update)
                row["note"] = _joined(row["note"], extra, issues)
        self._release(event["messageId"])
        self._busy(-1)

    def _record(self, row: dict[str, Any]) -> None:
        with self._records_lock:
            self.records.append(row)
        if self.on_record is not None:
            with contextlib.suppress(Exception):  # a broken listener must not break delivery
                self.on_record(dict(row))

    def _record_all(self, message: _Message, event: Mapping[str, Any] | None, status: str, note: str) -> None:
        """One row per recipient of a message that could not be handled (the client retries)."""
        for address in message.recipients:
            self._record(
                {
                    "message_id": event["messageId"] if event else None,
                    "invocation_id": event["invocationId"] if event else None,
                    "sender": message.mail_from,
                    "recipient": address,
                    "subject": event["subject"] if event else None,
                    "action": None,
                    "via": None,
                    "rule": None,
                    "outcome": None,
                    "attempts": 0,
                    "status": status,
                    "delivered_to": None,
                    "replaced": False,
                    "note": note,
                    "reason": "",
                }
            )


#: The headers an event takes from a message whose envelope gives mail_from and recipients.
EVENT_HEADERS = frozenset({"subject", "from", "return-path"})


def event_headers(raw: bytes) -> HeaderLines:
    """Only the header lines `build_event` reads when the envelope is known: Subject, From, Return-Path.

    An adapter for speed: `build_event(message=...)` parses the whole message and every
    address header (To, Cc: about two thirds of a gateway's time per message), though the
    envelope already gives the recipients. Fed these lines it finds the same subject and
    sender; the whole message is registered with the store separately. The header section
    ends where the stdlib parser ends it: at the empty line, or at the first line that is
    neither a header nor a continuation (tests/mail/test_serve.py holds the two to the same
    answers).
    """
    # typeshed leaves out headerRE, the pattern the stdlib parser ends the header section with
    from email.feedparser import headerRE  # type: ignore[attr-defined]

    kept: list[bytes] = []
    keep = False
    for line in raw.splitlines(keepends=True):
        text = line.decode("latin-1")
        if not text.strip("\r\n") or not headerRE.match(text):
            break
        if text[0] in " \t":  # a continuation of the header before
            if keep:
                kept.append(line)
        else:  # a new header; the parser skips an mbox From_ line and a line starting with ":"
            colon = text.find(":")
            keep = not text.startswith("From ") and colon > 0 and text[:colon].lower() in EVENT_HEADERS
            if keep:
                kept.append(line if line.endswith((b"\n", b"\r")) else line + b"\r\n")
    return HeaderLines(b"".join(kept) + b"\r\n")  # the whole message is checked and stored apart


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


@with_settings(MailConfig)
def serve(
    handler: Handler,
    *,
    domains: Any,
    rule: Any = None,
    maildir: Any = None,
    host: str = "127.0.0.1",
    port: int = 0,
    outbound: bool = False,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    max_recipients: int | None = None,
    workers: int = 8,
    on_record: Callable[[dict[str, Any]], Any] | None = None,
    isolation: str = "process",
    max_records: int = MAX_RECORDS,
    max_store_bytes: int = DEFAULT_MAX_STORE_BYTES,
    config: MailConfig | None = None,
    **settings: Unpack[MailSettings],
) -> MailServer:
    """Serve `handler` as a mail-flow rule behind a real SMTP server; returns the running `MailServer`.

    `domains`: the organisation's domains (inbound: the only recipients accepted;
    outbound, `outbound=True`: the only senders accepted). The rule: `rule`, a `MailRule`
    or a `MailConfig`, or the rule's settings (`config=`, or its fields as keywords:
    `mode="async"`, `fallback_action="BOUNCE"`, ...); default synchronous, fallback
    DEFAULT, no retries. `maildir`: the root of the recipients'
    Maildirs (default a new temporary directory). Binds 127.0.0.1 on a free port unless
    told otherwise; any other host prints a warning. Use it as a context manager, or call
    `.stop()`. `.log` has one row per recipient. `workers`: messages handled at once (each
    holds a thread while its function runs, up to the response timeout). `on_record`:
    called with each log row as it is written. `isolation`: where the handler runs
    ("process", the default: a worker process per message in flight, so a crash or a hang
    never reaches the server; "thread"; "none"; see `fnkit.invoke`). `.log` keeps the
    newest `max_records` rows. `max_store_bytes`: the raw messages kept readable through the
    content API (default 64 MiB); past it the oldest not in flight are dropped, with a log line.
    """
    if rule is not None and (config is not None or settings):
        raise TypeError("serve() takes a rule, or the rule's settings (config= or keywords), not both")
    if rule is None or isinstance(rule, MailConfig):
        rule = MailRule(config=MailConfig.of(rule or config, settings, serve))
    server = MailServer(
        handler,
        domains=domains,
        rule=rule,
        maildir=maildir,
        host=host,
        port=port,
        outbound=outbound,
        max_message_bytes=max_message_bytes,
        max_recipients=max_recipients,
        workers=workers,
        on_record=on_record,
        isolation=isolation,
        max_records=max_records,
        max_store_bytes=max_store_bytes,
    )
    return server.start()


def _print_row(row: dict[str, Any]) -> None:
    where = row["status"] or "?"
    extra = f" ({row['note']})" if row.get("note") else ""
    print(
        f"{row['message_id'] or '-'} {row['sender']} -> {row['recipient']}: {row['action'] or '-'} via "
        f"{row['via'] or '-'} [{row['rule'] or '-'}] {where}{extra}",
        flush=True,
    )


def cli_serve(args: Any, handler: Callable[..., Any]) -> int:
    """`fnkit serve-mail`: serve in the foreground until Ctrl-C; the exit code."""
    import signal

    try:
        rule = MailRule(config=MailConfig(**MailConfig.given(args)))
    except ValueError as exc:  # a rule between settings (each setting alone was checked by its option)
        print(f"fnkit serve-mail: {exc}", file=sys.stderr)
        return 2
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            server = serve(
                handler,
                domains=args.domains,
                rule=rule,
                maildir=args.maildir,
                host=args.host,
                port=args.port,
                outbound=args.outbound,
                on_record=_print_row,
                isolation=getattr(args, "isolation", "process"),
                max_store_bytes=getattr(args, "max_store_bytes", DEFAULT_MAX_STORE_BYTES),
            )
        for warning in caught:
            print(f"fnkit serve-mail: warning: {warning.message}", file=sys.stderr)
    except (ValueError, TypeError) as exc:
        print(f"fnkit serve-mail: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"fnkit serve-mail: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    flow = "outbound (senders of" if server.outbound else "inbound (recipients of"
    print(
        f"fnkit serve-mail: listening on {server.url}, {flow} {', '.join(sorted(server.domains))}); "
        f"{rule.mode} rule, fallback {rule.fallback_action}, rule timeout {rule.rule_timeout_minutes:g} min; "
        f"Maildirs under {server.maildir.resolve()}. Ctrl-C stops.",
        flush=True,
    )
    stopping = threading.Event()
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda signum, frame: stopping.set())
    try:
        while not stopping.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    messages = len({r["message_id"] for r in server.records})
    print(f"fnkit serve-mail: stopped after {messages} message(s), {len(server.records)} recipient row(s).", flush=True)
    return 0
