"""The mail-flow event: its shape, its rule checks, and build / parse / validate."""

from __future__ import annotations

import copy
import hashlib
import json
import random
import re
import uuid
from collections.abc import Iterator
from itertools import repeat
from typing import Any

from .._report import (
    DIALECTS,
    MISSING,
    ContractError,
    Issue,
    Report,
    decode_json,
    error,
    warning,
)
from .._shape import BOOL, STR, F, ListOf, Shape, snake
from .._validate import Seen, validate_value
from ._address import all_addresses_in, is_address
from ._fast import relaxed

SOURCE = "mail"
FLOW_DIRECTIONS = ("INBOUND", "OUTBOUND")
DEFAULT_SUMMARY_VERSION = "2018-10-10"
SUBJECT_LIMIT = 256  # characters kept (M1)
EVENT_SIZE_LIMIT = 128 * 1024  # bytes of event JSON before recipients are cut (M1)
OUTBOUND_RECIPIENTS_LIMIT = 500  # MS4
# A truncated event was cut only as far as needed, so it sits just under the limit;
# one recipient entry is at most ~270 bytes. Far below the limit, truncated=true is odd.
TRUNCATED_SLACK = 4 * 1024

# --- the shape, declared once -------------------------------------------------

ADDRESS = Shape(
    "MailAddress",
    [F("address", STR, doc="An email address (`local@domain`).", rule="MS3")],
    rule="MS1",
    doc="An object holding one email address.",
)
ENVELOPE = Shape(
    "MailEnvelope",
    [
        F("mailFrom", ADDRESS, doc="The envelope sender (SMTP MAIL FROM); empty for bounces.", attr="mail_from"),
        F("recipients", ListOf(ADDRESS), doc="All recipients (SMTP RCPT TO); inbound: only the organisation's own.",
          rule="MS1"),
    ],
    rule="MS1",
    doc="The SMTP envelope: who sent the message and who receives it.",
)
EVENT_SHAPE = Shape(
    "MailEvent",
    [
        F("summaryVersion", STR, doc="Version of the message summary format: an opaque date-style string "
          "(YYYY-MM-DD), e.g. 2018-10-10.", rule="M1"),
        F("envelope", ENVELOPE, doc="Holds mailFrom and recipients."),
        F("sender", ADDRESS, doc="The sender address."),
        F("subject", STR, doc=f"Email subject, truncated to its first {SUBJECT_LIMIT} characters.", rule="M1"),
        F("messageId", STR, doc="Message id, used to read or replace the raw message (M9)."),
        F("invocationId", STR, doc="Id of this invocation: the same on every retry, so handlers can deduplicate.",
          rule="M1"),
        F("flowDirection", STR, enum=FLOW_DIRECTIONS, doc="INBOUND or OUTBOUND.", rule="MS2"),
        F("truncated", BOOL, doc="True if recipients were cut to keep the event under 128 KB.", rule="M1"),
    ],
    rule="MS1",
    doc="A mail-flow message summary, as a mail-flow rule sends it to a function.",
)

# --- the rule checks ----------------------------------------------------------

_DATE_STYLE = re.compile(r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])")


def _recipients(event: Any) -> list | None:
    """The envelope's recipients list, or None when the value has none to check."""
    envelope = event.get("envelope") if isinstance(event, dict) else None
    recipients = envelope.get("recipients") if isinstance(envelope, dict) else None
    return recipients if isinstance(recipients, list) else None


def _recipient_addresses(event: Any) -> list[tuple[int, str]]:
    """(index, address) of every recipient whose address is a string."""
    return [
        (i, r["address"]) for i, r in enumerate(_recipients(event) or ())
        if isinstance(r, dict) and isinstance(r.get("address"), str)
    ]


def check_summary_version(event: Any, seen: Seen) -> Iterator[Issue]:
    """M1: summaryVersion is an opaque date-style string; an odd format is only a warning."""
    version = event.get("summaryVersion") if isinstance(event, dict) else None
    if isinstance(version, str) and not _DATE_STYLE.fullmatch(version):
        yield warning("$.summaryVersion", "format",
                      f"summaryVersion {json.dumps(version)} is not a date-style string like \"2018-10-10\"; "
                      "the platform only ever sends such strings (it is opaque, so this is a warning).", "M1")


def check_subject_length(event: Any, seen: Seen) -> Iterator[Issue]:
    """M1: the platform keeps only the first 256 characters of the subject."""
    subject = event.get("subject") if isinstance(event, dict) else None
    if isinstance(subject, str) and len(subject) > SUBJECT_LIMIT:
        yield error("$.subject", "limit",
                    f"The subject has {len(subject)} characters; the platform keeps only the first "
                    f"{SUBJECT_LIMIT}, so a real event never holds more.", "M1")


def _single_address(event: dict, *keys: str) -> Any:
    value = event
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, str) else None


def check_addresses(event: Any, seen: Seen) -> Iterator[Issue]:
    """MS3: every address of the event looks like an email address (local@domain)."""
    if not isinstance(event, dict):
        return
    mail_from = _single_address(event, "envelope", "mailFrom", "address")
    if mail_from == "":
        yield warning("$.envelope.mailFrom.address", "format",
                      "The envelope sender is empty: that is the null sender of bounces and delivery "
                      "reports (RFC 5321), not an ordinary message.", "MS3")
        mail_from = None
    located = [("$.envelope.mailFrom.address", mail_from), ("$.sender.address", _single_address(event, "sender", "address"))]
    located += [(f"$.envelope.recipients[{i}].address", a) for i, a in _recipient_addresses(event)]
    for path, address in located:
        if address is not None and not is_address(address):
            yield error(path, "format", f"{json.dumps(address)} does not look like an email address "
                        "(local@domain, no spaces, no display name or angle brackets).", "MS3")


def check_recipients_listed_once(event: Any, seen: Seen) -> Iterator[Issue]:
    """MS5: at least one recipient, and each address once (compared without regard to case)."""
    recipients = _recipients(event)
    if recipients is None:
        return
    if not recipients:
        yield error("$.envelope.recipients", "limit",
                    "The envelope has no recipients; every message has at least one (SMTP RCPT TO).", "MS5")
        return
    first: dict[str, int] = {}
    for i, address in _recipient_addresses(event):
        key = address.lower()
        if key in first:
            yield warning(f"$.envelope.recipients[{i}].address", "duplicate",
                          f"{json.dumps(address)} is already recipient {first[key]} (addresses are compared "
                          "without regard to case); the message is delivered to it once.", "MS5")
        else:
            first[key] = i


def check_outbound_limit(event: Any, seen: Seen) -> Iterator[Issue]:
    """MS4: an outbound rule handles up to 500 recipients."""
    recipients = _recipients(event)
    if recipients is not None and event.get("flowDirection") == "OUTBOUND" and len(recipients) > OUTBOUND_RECIPIENTS_LIMIT:
        yield error("$.envelope.recipients", "limit",
                    f"An outbound message reaches a function with at most {OUTBOUND_RECIPIENTS_LIMIT} recipients; "
                    f"this one has {len(recipients)}.", "MS4")


def event_size(event: Any) -> int | None:
    """Bytes of the event as compact UTF-8 JSON, or None when JSON cannot encode it."""
    try:
        return len(json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    except Exception:  # noqa: BLE001 - also a container whose own items() raises: not JSON either
        return None


def check_size(event: Any, seen: Seen) -> Iterator[Issue]:
    """M1: over 128 KB the platform cuts recipients and sets truncated; so a real event is never larger."""
    if not isinstance(event, dict) or not isinstance(event.get("truncated"), bool):
        return
    truncated = event["truncated"]
    size = event_size(event)
    if size is None:
        return
    if size > EVENT_SIZE_LIMIT:
        yield error("$", "limit",
                    f"The event is {size:,} bytes of JSON; above {EVENT_SIZE_LIMIT:,} bytes (128 KB) the platform "
                    "cuts recipients from the end and sets truncated to true, so a real event never is.", "M1")
    elif truncated and size < EVENT_SIZE_LIMIT - TRUNCATED_SLACK:
        yield warning("$.truncated", "limit",
                      f"truncated is true but the event is only {size:,} bytes; the platform cuts recipients only "
                      f"to stay under {EVENT_SIZE_LIMIT:,} bytes, so a truncated event is close to that size.", "M1")


def check_invocation_id(event: Any, seen: Seen) -> Iterator[Issue]:
    """M1: one invocationId per message and rule; an empty one cannot tell retries apart."""
    if isinstance(event, dict) and event.get("invocationId") == "":
        yield warning("$.invocationId", "format",
                      "invocationId is empty; handlers use it to recognise a retry of the same invocation.", "M1")


EVENT_CHECKS = [
    check_summary_version,
    check_subject_length,
    check_addresses,
    check_recipients_listed_once,
    check_outbound_limit,
    check_size,
    check_invocation_id,
]

# --- the fast lane -------------------------------------------------------------
# A valid event must cost no more to check than json.loads costs to read it. The
# generated shape check plus the checks above cost about three times that for 50
# recipients (they touch each recipient several times in Python), so a valid event is
# recognised here first: the same shape and the same rules, fused into a few passes that
# run in C. Anything it is not sure of goes the located way (validate_value); it never
# says "valid" where validate_value would report anything (the tests compare the two).

_REST_FAST = relaxed(EVENT_SHAPE, ("envelope", "recipients"))[0].fast
_ADDRESS_KEYS = repeat(ADDRESS.fields[0].key)
# per character at most 6 bytes of JSON (\u001f); keys and punctuation: ~170 + 15 per recipient
_FIXED_BYTES, _BYTES_PER_RECIPIENT, _BYTES_PER_CHAR = 256, 16, 6


def surely_valid(event: Any) -> bool:
    """True only when `event` is a mail event on which validation finds nothing at all."""
    if not _REST_FAST(event):
        return False
    recipients = event["envelope"]["recipients"]
    if type(recipients) is not list:
        return False
    n = len(recipients)
    if not n or (n > OUTBOUND_RECIPIENTS_LIMIT and event["flowDirection"] == "OUTBOUND") or event["truncated"]:
        return False
    try:
        # dict.__getitem__ refuses what is not a dict, join what is not a string
        addresses = list(map(dict.__getitem__, recipients, _ADDRESS_KEYS))
        if sum(map(len, recipients)) != n or len(set(addresses)) != n:
            return False  # another key than "address" (n keys in all otherwise), or a repeated address
        mail_from, sender = event["envelope"]["mailFrom"]["address"], event["sender"]["address"]
        addresses += (mail_from, sender)
        lines = "\n".join(addresses)
    except (TypeError, KeyError):
        return False
    # all well formed; with no capital letters the exact-case test above also found every repeat
    if not all_addresses_in(lines, n + 2, lower_case=True):
        if not all_addresses_in(lines, n + 2) or len(set(lines.lower().split("\n", n)[:n])) != n:
            return False
    version, subject = event["summaryVersion"], event["subject"]
    if (version != DEFAULT_SUMMARY_VERSION and not _DATE_STYLE.fullmatch(version)) or len(subject) > SUBJECT_LIMIT \
            or not event["invocationId"]:
        return False
    chars = len(lines) + len(subject) + len(version) + len(event["messageId"]) + len(event["invocationId"])
    return _FIXED_BYTES + _BYTES_PER_RECIPIENT * n + _BYTES_PER_CHAR * chars <= EVENT_SIZE_LIMIT


# --- the verbs ----------------------------------------------------------------

def validate_event(event: Any) -> Report:
    """Every problem of a mail-flow event (a dict, JSON text or bytes); never raises."""
    try:
        if surely_valid(event):
            return Report((), SOURCE, None, "event")
    except Exception:  # noqa: BLE001 - an object too odd for the fast lane takes the located way
        pass
    return validate_value(event, EVENT_SHAPE, EVENT_CHECKS, source=SOURCE, subject="event")


def decode_event(event: Any) -> tuple[dict, Report]:
    """The event as a dict and its report; raises ContractError when it is not a valid event."""
    value, issues = decode_json(event, "G0")
    if value is MISSING:
        raise ContractError(Report(issues, SOURCE, None, "event"))
    report = validate_event(value)
    if not report.ok:
        raise ContractError(report)
    return value, report


def parse_event(event: Any) -> Any:
    """The event as frozen dataclasses (`summary_version`, `envelope.mail_from.address`, ...).

    Raises `fnkit.ContractError` (with `.report`) when the event is invalid.
    """
    value, _ = decode_event(event)
    return EVENT_SHAPE.parse(value)


def correlation_ids(event: Any) -> list[str]:
    """`[invocationId]` (the same on every retry), or `[]` when there is none."""
    try:
        value, _ = decode_json(event, "G0")
    except Exception:  # noqa: BLE001 - never raise, whatever the input
        return []
    if isinstance(value, dict) and isinstance(value.get("invocationId"), str):
        return [value["invocationId"]]
    return []


def looks_like(event: Any) -> bool:
    """True when `event` has the mail event's landmarks: envelope plus summaryVersion or invocationId."""
    return isinstance(event, dict) and "envelope" in event and ("summaryVersion" in event or "invocationId" in event)


# --- the builder ----------------------------------------------------------------

# `more` of build_event names fields as the spec does or in snake_case
_FIELD_BY_NAME = {name: f.key for f in EVENT_SHAPE.fields for name in (f.key, snake(f.key))}


def _ids(seed: int, fingerprint: bytes) -> tuple[str, str]:
    """(invocationId, messageId): deterministic for a seed and the message they name."""
    rng = random.Random(seed)
    invocation_id = f"{rng.getrandbits(128):032x}"
    digest = hashlib.sha256(rng.getrandbits(128).to_bytes(16, "big") + fingerprint).digest()
    return invocation_id, str(uuid.UUID(bytes=digest[:16], version=4))


def _check_address(what: str, address: Any) -> str:
    if not is_address(address):
        raise ValueError(f"build_event: {what} {address!r} does not look like an email address (MS3).")
    return address


def build_event(
    *,
    mail_from: str | None = None,
    recipients: Any = None,
    subject: str = "",
    sender: str | None = None,
    flow_direction: str = "INBOUND",
    message: Any = None,
    summary_version: str | None = None,
    dialect: str = "provider",
    seed: int = 0,
    store: Any = None,
    **more: Any,
) -> dict:
    """A valid mail-flow event, deterministic for a `seed` (same arguments, same event).

    `message` (an `email.message.EmailMessage`, or raw RFC 5322 bytes or text) supplies
    what is not given: subject, sender (its From) and mail_from (its Return-Path, else
    From), recipients (its To and Cc). The subject keeps its first 256 characters; when the
    event would exceed 128 KB, recipients are cut from the end and `truncated` is true (M1).
    The raw message (or, without one, a minimal message made from the event) is registered
    in the message store (`store`, by default `default_store()`) under the event's
    messageId, so a handler can read and replace it (M9).
    `more`: other event fields by spec or snake_case name (`invocation_id=...`,
    `truncated=...`) to set them as given. `dialect` is accepted for the common signature:
    the mail event has no brand-specific spellings, so both dialects build the same event.
    """
    from ._content import default_store, message_fields, minimal_message

    if dialect not in DIALECTS:
        raise ValueError(f"build_event: dialect must be one of {', '.join(DIALECTS)}, not {dialect!r}.")
    if flow_direction not in FLOW_DIRECTIONS:
        raise ValueError(f"build_event: flow_direction must be INBOUND or OUTBOUND, not {flow_direction!r} (MS2).")
    raw = None
    if message is not None:
        raw, found = message_fields(message)
        subject = subject or found["subject"]
        sender = sender or found["sender"]
        mail_from = mail_from or found["mail_from"]
        if recipients is None:
            recipients = found["recipients"]
    if mail_from is None:
        raise TypeError("build_event: mail_from is required (or a message with a From header).")
    if recipients is None:
        raise TypeError("build_event: recipients is required (or a message with To or Cc headers).")
    if isinstance(recipients, str):
        recipients = [recipients]
    recipients = [_check_address("recipient", r) for r in recipients]
    if not recipients:
        raise ValueError("build_event: a message has at least one recipient (MS5).")
    if flow_direction == "OUTBOUND" and len(recipients) > OUTBOUND_RECIPIENTS_LIMIT:
        raise ValueError(f"build_event: an outbound rule handles at most {OUTBOUND_RECIPIENTS_LIMIT} recipients, "
                         f"not {len(recipients)} (MS4).")
    if mail_from != "":
        _check_address("mail_from", mail_from)
    sender = _check_address("sender", sender if sender is not None else (mail_from or None))
    if not isinstance(subject, str):
        raise TypeError(f"build_event: subject must be a string, not {type(subject).__name__}.")
    subject = subject[:SUBJECT_LIMIT]
    fingerprint = hashlib.sha256(
        json.dumps([mail_from, recipients, subject, sender, flow_direction]).encode("utf-8") + (raw or b"")
    ).digest()
    invocation_id, message_id = _ids(seed, fingerprint)
    event = {
        "summaryVersion": summary_version or DEFAULT_SUMMARY_VERSION,
        "envelope": {
            "mailFrom": {"address": mail_from},
            "recipients": [{"address": r} for r in recipients],
        },
        "sender": {"address": sender},
        "subject": subject,
        "messageId": message_id,
        "invocationId": invocation_id,
        "flowDirection": flow_direction,
        "truncated": False,
    }
    for name, value in more.items():
        if name not in _FIELD_BY_NAME:
            raise TypeError(f"build_event: unknown field {name!r}; known: {', '.join(sorted(set(_FIELD_BY_NAME)))}.")
        event[_FIELD_BY_NAME[name]] = value
    _cut_to_size(event)
    made = copy.deepcopy(event)  # the message matches the event as built, whatever happens to the dict
    (store if store is not None else default_store()).add(
        event["messageId"], raw if raw is not None else (lambda: minimal_message(made)))
    return event


def _cut_to_size(event: dict) -> None:
    """M1: over 128 KB, cut recipients from the end (keeping one) and set truncated."""
    size = event_size(event)
    if size is None or size <= EVENT_SIZE_LIMIT:
        return
    recipients = event["envelope"]["recipients"]
    entry_sizes = [len(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode("utf-8")) + 1
                   for r in recipients]
    keep = len(recipients)
    while keep > 1 and size > EVENT_SIZE_LIMIT:
        keep -= 1
        size -= entry_sizes[keep]
    del recipients[keep:]
    event["truncated"] = True
    if event_size(event) > EVENT_SIZE_LIMIT:
        raise ValueError("build_event: the event exceeds 128 KB even with a single recipient (M1).")
