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

import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any, Unpack

from .._running.inprocess import Handler
from .._settings.config import with_settings
from ._config import MailConfig, MailSettings
from ._delivery import BOUNCE_SUBJECT, DEFAULT_BOUNCE_TEXT, maildir_name, make_bounce
from ._rule import MailRule
from ._server import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_RECIPIENTS,
    DEFAULT_MAX_STORE_BYTES,
    EVENT_HEADERS,
    LOG_COLUMNS,
    MAX_RECORDS,
    NULL_SENDER_STANDIN,
    MailServer,
    event_headers,
)
from ._smtp import DOMAIN_OCTETS, LOCAL_PART_OCTETS, NULL_PATH, PATH_OCTETS, path_too_long


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


__all__ = [
    "BOUNCE_SUBJECT",
    "DEFAULT_BOUNCE_TEXT",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_MAX_RECIPIENTS",
    "DEFAULT_MAX_STORE_BYTES",
    "DOMAIN_OCTETS",
    "EVENT_HEADERS",
    "LOCAL_PART_OCTETS",
    "LOG_COLUMNS",
    "MAX_RECORDS",
    "NULL_PATH",
    "NULL_SENDER_STANDIN",
    "PATH_OCTETS",
    "MailServer",
    "cli_serve",
    "event_headers",
    "maildir_name",
    "make_bounce",
    "path_too_long",
    "serve",
]
