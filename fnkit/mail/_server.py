"""The running SMTP front end of `fnkit.mail.serve`: `MailServer`, its lifecycle, its log, one message's way.

A message accepted at DATA (`fnkit.mail._smtp`) is handled on a worker thread: its summary
event is built from the envelope and the header lines it needs (`event_headers`), the raw
message joins the content store (held there while in flight), the `MailRule` runs, and the
decisions are carried out (`fnkit.mail._delivery`); the log gets one row per recipient.
What the server does, and the readings it makes, are told in `fnkit.mail._serve`.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import inspect
import ipaddress
import itertools
import logging
import socket
import tempfile
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, cast

from .._optional import require
from .._running.inprocess import Handler
from ._content import HeaderLines, MessageStore
from ._delivery import _Delivering, _joined
from ._event import OUTBOUND_RECIPIENTS_LIMIT, build_event
from ._outcome import async_outcome
from ._rule import MailRule
from ._smtp import _Message, _SmtpHooks

if TYPE_CHECKING:
    from concurrent.futures import Future

    import pandas as pd

    from .._settings.project import Isolation

DEFAULT_MAX_MESSAGE_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_RECIPIENTS = 1000  # inbound, per message; RFC 5321 asks for at least 100
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
#: the sender an event shows for a null-sender message whose From header gives no address
NULL_SENDER_STANDIN = "MAILER-DAEMON@fnkit.invalid"

logger = logging.getLogger("fnkit.mail.serve")


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


class MailServer(_Delivering):
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
        self.isolation = cast("Isolation", isolation)  # one of them: checked above

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
