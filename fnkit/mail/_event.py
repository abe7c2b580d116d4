"""The mail-flow event: its shape, its rule checks, and build / parse / validate."""

from __future__ import annotations

import copy
import hashlib
import json
import random
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import msgspec

from .._engine.columns import snake
from .._engine.findings import VALUE, Finding, caution, problem
from .._engine.report import MISSING, ContractError, Report, decode_json
from .._engine.shape import BOOL, STR, F, ListOf, Shape, Text
from .._engine.validate import Check, Contract, Seen, reads
from .._settings.project import Dialect, resolve_dialect
from ..rules import id_of, rule
from ._address import ADDRESS_PATTERN, is_address
from ._decision import Decision
from ._tables import RECIPIENTS

SOURCE = "mail"
FLOW_DIRECTIONS = ("INBOUND", "OUTBOUND")
DEFAULT_SUMMARY_VERSION = "2018-10-10"
SUBJECT_LIMIT = 256  # characters kept (M1)
EVENT_SIZE_LIMIT = 128 * 1024  # bytes of event JSON before recipients are cut (M1)
OUTBOUND_RECIPIENTS_LIMIT = 500  # MS4
# A truncated event was cut only as far as needed, so it sits just under the limit;
# one recipient entry is at most ~270 bytes. Far below the limit, truncated=true is odd.
TRUNCATED_SLACK = 4 * 1024

#: M1, declared before the event shape that cites it; implemented by `truncation`
TRUNCATION = rule(
    "M1",
    "mail",
    "doc",
    "Event: summaryVersion is a date-style string; subject keeps its first 256 characters; "
    "over 128 KB, recipients are cut from the end and truncated is true, and a recipient cut from the event gets "
    "the fallback action (inferred); one invocationId per message and rule.",
    severity="error or warning",
)

#: MS3 and MS5, declared before the shapes that cite them; implemented by `address_form` and
#: `check_recipients_listed_once`
ADDRESSES = rule(
    "MS3", "mail", "contract", "Addresses are email addresses.", origin="spec", severity="error or warning"
)
LISTED_ONCE = rule(
    "MS5",
    "mail",
    "inferred",
    "envelope.recipients names at least one recipient (SMTP needs one RCPT TO) and each "
    "address once; a repeated address is delivered once.",
    origin="kit",
    severity="error or warning",
)

# --- the shape, declared once -------------------------------------------------

_NOT_AN_ADDRESS = (
    "{json} does not look like an email address (local@domain, no spaces, no display name or angle brackets)."
)
ADDRESS_TEXT = Text(
    pattern=ADDRESS_PATTERN,
    rule=ADDRESSES.id,
    message=_NOT_AN_ADDRESS,
    doc="local@domain, no spaces, no display name or angle brackets",
)
# the envelope sender may also be empty: the null sender of bounces (a warning, check_null_sender)
SENDER_TEXT = Text(
    pattern=f"^$|{ADDRESS_PATTERN}",
    rule=ADDRESSES.id,
    message=_NOT_AN_ADDRESS,
    doc="an address, or empty for the null sender",
)

ADDRESS = Shape(
    "MailAddress",
    [F("address", ADDRESS_TEXT, doc="An email address (`local@domain`).", rule=ADDRESSES.id)],
    rule="MS1",
    doc="An object holding one email address.",
)
MAIL_FROM = Shape(
    "MailFrom",
    [
        F(
            "address",
            SENDER_TEXT,
            doc="The envelope sender's address (`local@domain`), empty for bounces.",
            rule=ADDRESSES.id,
        )
    ],
    rule="MS1",
    doc="An object holding the envelope sender's address.",
)
ENVELOPE = Shape(
    "MailEnvelope",
    [
        F("mailFrom", MAIL_FROM, doc="The envelope sender (SMTP MAIL FROM); empty for bounces.", attr="mail_from"),
        F(
            "recipients",
            ListOf(
                ADDRESS,
                min_len=1,
                rule=LISTED_ONCE.id,
                message="The envelope has no recipients; every message has at least one (SMTP RCPT TO).",
            ),
            doc="All recipients (SMTP RCPT TO); inbound: only the organisation's own.",
            rule="MS1",
        ),
    ],
    rule="MS1",
    doc="The SMTP envelope: who sent the message and who receives it.",
)
EVENT_SHAPE = Shape(
    "MailEvent",
    [
        F(
            "summaryVersion",
            Text(
                pattern=r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$",
                rule=TRUNCATION.id,
                severity="warning",
                message='summaryVersion {json} is not a date-style string like "2018-10-10"; the platform only ever '
                "sends such strings (it is opaque, so this is a warning).",
                doc="a date-style string (YYYY-MM-DD)",
            ),
            doc="Version of the message summary format: an opaque date-style string (YYYY-MM-DD), e.g. 2018-10-10.",
            rule=TRUNCATION.id,
        ),
        F("envelope", ENVELOPE, doc="Holds mailFrom and recipients."),
        F("sender", ADDRESS, doc="The sender address."),
        F(
            "subject",
            Text(
                max_len=SUBJECT_LIMIT,
                rule=TRUNCATION.id,
                code="limit",
                message="The subject has {length} characters; the platform keeps only the first "
                f"{SUBJECT_LIMIT}, so a real event never holds more.",
            ),
            doc=f"Email subject, truncated to its first {SUBJECT_LIMIT} characters.",
            rule=TRUNCATION.id,
        ),
        F("messageId", STR, doc="Message id, used to read or replace the raw message (M9)."),
        F(
            "invocationId",
            Text(
                min_len=1,
                rule=TRUNCATION.id,
                severity="warning",
                message="invocationId is empty; handlers use it to recognise a retry of the same invocation.",
                doc="not empty",
            ),
            doc="Id of this invocation: the same on every retry, so handlers can deduplicate.",
            rule=TRUNCATION.id,
        ),
        F("flowDirection", STR, enum=FLOW_DIRECTIONS, doc="INBOUND or OUTBOUND.", rule="MS2"),
        F("truncated", BOOL, doc="True if recipients were cut to keep the event under 128 KB.", rule=TRUNCATION.id),
    ],
    rule="MS1",
    doc="A mail-flow message summary, as a mail-flow rule sends it to a function.",
)

rule(
    "MS1",
    "mail",
    "contract",
    "The mail event has summaryVersion, envelope.mailFrom.address, "
    "envelope.recipients[].address, sender.address, subject, messageId, invocationId, flowDirection and truncated, "
    "each of its type.",
    origin="spec",
)(EVENT_SHAPE)
rule("MS2", "mail", "contract", "flowDirection is INBOUND or OUTBOUND.", origin="spec")(
    EVENT_SHAPE.field("flowDirection")
)

MailEvent = EVENT_SHAPE.struct
MailEnvelope = ENVELOPE.struct
MailAddress = ADDRESS.struct
MailFrom = MAIL_FROM.struct

# --- semantic rules, over the typed event ------------------------------------------
# On the lenient path (the event broke its shape; the walk said where) a field may hold
# anything: a check that declares what it reads (`reads`) gets only recipients whose columns
# there hold their declared types; a check that reads other fields tests types before it reads.

if TYPE_CHECKING:
    from ..types import MailEvent as MailEventDict
    from ..types import ParsedMailEvent


def _recipients(event: Any) -> tuple[Any, ...] | None:
    """The envelope's recipients (typed), or None when the value has none to check."""
    envelope: Any = event.envelope if type(event) is MailEvent else None
    recipients = envelope.recipients if type(envelope) is MailEnvelope else None
    return recipients if type(recipients) is tuple else None


@ADDRESSES
def address_form(address: Any, *at: Any, sender: bool = False) -> list[Finding]:
    """MS3: an address at the keys `at` is an email address (the walk holds the event's addresses to their declared
    pattern): a recipient an action names that is not one matches no recipient; the envelope's sender (`sender`)
    may be empty, the null sender of bounces, which is no ordinary message. The checks ask it of the event's
    sender (`check_null_sender`) and of the response's recipients (`check_recipient_addresses`)."""
    if sender:
        if address != "":
            return []
        return [
            caution(
                "format",
                "The envelope sender is empty: that is the null sender of bounces and delivery "
                "reports (RFC 5321), not an ordinary message.",
                *at,
                of=address_form,
            )
        ]
    if type(address) is not str or is_address(address):
        return []
    return [
        caution(
            "format",
            f"{json.dumps(address)} does not look like an email address, so it matches no recipient.",
            *at,
            of=address_form,
        )
    ]


@reads(VALUE, "envelope.mail_from")
def check_null_sender(event: Any, seen: Seen) -> list[Finding]:
    """MS3 of the envelope's sender (`address_form` decides)."""
    return address_form(event.envelope.mail_from.address, "envelope", "mailFrom", "address", sender=True)


# The checks read the recipients' addresses from the event's table (seen.tables[RECIPIENTS], read once per
# call): "address" is the column, "at" each row's position in the list (a finding names it: RECIPIENTS.row(i)).


@LISTED_ONCE
@reads(RECIPIENTS, "address")
def check_recipients_listed_once(event: Any, seen: Seen) -> list[Finding]:
    """MS5: each address once, compared without regard to case (at least one: the shape's bound)."""
    table = seen.tables[RECIPIENTS]
    strings = addresses = table["address"]
    joined = "\n".join(strings)
    # lower-cased all at once; without capitals each address is its own key, else the lines are the keys (as
    # many as the strings unless one holds a line break: then the loop below decides)
    lowered = joined.lower()
    keys = strings if lowered == joined else lowered.split("\n")
    if len(keys) == len(strings) and len(set(keys)) == len(keys):
        return []  # every address once
    out = []
    first: dict[str, int] = {}
    for i, address in zip(table["at"], addresses, strict=True):
        key = address.lower()
        if key in first:
            out.append(
                caution(
                    "duplicate",
                    f"{json.dumps(address)} is already recipient {first[key]} (addresses are "
                    "compared without regard to case); the message is delivered to it once.",
                    "address",
                    row=RECIPIENTS.row(i),
                )
            )
        else:
            first[key] = i
    return out


@rule("MS4", "mail", "contract", "Outbound rules handle up to 500 recipients.", origin="spec")
@reads(RECIPIENTS)
def check_outbound_limit(event: Any, seen: Seen) -> list[Finding]:
    """MS4: an outbound rule handles up to 500 recipients."""
    if event.flow_direction != "OUTBOUND":  # (inbound: nothing to count)
        return []
    n = len(event.envelope.recipients)  # (every entry, a recipient or not: the walk names one that is not)
    if n > OUTBOUND_RECIPIENTS_LIMIT:
        return [
            problem(
                "limit",
                f"An outbound message reaches a function with at most {OUTBOUND_RECIPIENTS_LIMIT} recipients; "
                f"this one has {n}.",
                "envelope",
                "recipients",
            )
        ]
    return []


def event_size(event: Any) -> int | None:
    """Bytes of the event as compact UTF-8 JSON, or None when JSON cannot encode it."""
    if type(event) is MailEvent:
        try:
            return len(msgspec.json.encode(event))
        except (TypeError, ValueError, OverflowError, RecursionError):
            return None
    try:
        return len(json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    except Exception:  # noqa: BLE001 - also a container whose own items() raises: not JSON either
        return None


# JSON writes a character in at most 6 bytes (\\u001f); keys, quotes and punctuation take at most
# _FIXED_BYTES for the event and _BYTES_PER_RECIPIENT for each recipient
_FIXED_BYTES, _BYTES_PER_RECIPIENT, _BYTES_PER_CHAR = 256, 16, 6


def _size_bound(event: Any, seen: Seen) -> int | None:
    """An upper bound of the event's JSON size, without encoding it; None when a field is not a string."""
    addresses = seen.tables[RECIPIENTS]["address"]
    envelope: Any = event.envelope
    mail_from: Any = envelope.mail_from if type(envelope) is MailEnvelope else None
    sender: Any = event.sender
    recipients = envelope.recipients if type(envelope) is MailEnvelope else None
    if type(mail_from) is not MailFrom or type(sender) is not MailAddress or type(recipients) is not tuple:
        return None
    if len(recipients) != len(addresses):  # (lenient: entries that are not objects are not in the column)
        return None
    texts = (
        mail_from.address,
        sender.address,
        event.subject,
        event.summary_version,
        event.message_id,
        event.invocation_id,
        event.flow_direction,
    )
    try:
        chars = len("".join(addresses)) + len("".join(texts))
    except TypeError:  # (lenient: a field that is no string)
        return None
    return _FIXED_BYTES + _BYTES_PER_RECIPIENT * len(addresses) + _BYTES_PER_CHAR * chars


@dataclass(frozen=True)
class Truncation:
    """What rule M1 says of one event: its `findings` (iterating over it gives them, as a check's result does;
    the engine places them) and its effect, `cut`: a decision for each envelope recipient the event lacks."""

    findings: tuple[Finding, ...] = ()
    cut: Mapping[str, Decision] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.findings)

    def __len__(self) -> int:  # (none found: nothing for the engine to place)
        return len(self.findings)


_WITHIN = Truncation()  # what M1 says of nearly every event: nothing (one value, made once)


@TRUNCATION
def truncation(
    event: Any,
    seen: Seen | None = None,
    *,
    envelope: Sequence[str] = (),
    fallback_action: str = "DEFAULT",
) -> Truncation:
    """M1: over 128 KB the platform cuts recipients from the end and sets truncated, so a real event is never
    larger (an error), and a truncated one is close to the limit (a warning when far below it).

    Its effect: an address of the SMTP `envelope` that the (typed) event does not hold was cut from it, so no
    action of the function's can name it: it gets the rule's `fallback_action` (fnkit's reading, inferred). (An
    asynchronous rule delivers every recipient as usual, M8.) The field forms M1 states (summaryVersion,
    subject, invocationId) are declared on the event's shape (`EVENT_SHAPE`, `rule="M1"`).
    """
    if type(event) is not MailEvent or type(event.truncated) is not bool:
        return _WITHIN
    bound = None if event.truncated or seen is None else _size_bound(event, seen)
    if bound is not None and bound <= EVENT_SIZE_LIMIT and not envelope:
        return _WITHIN  # even at its largest, the event's JSON is within the limit: no need to encode it
    findings: list[Finding] = []
    cut: dict[str, Decision] = {}
    size = event_size(event) if bound is None or bound > EVENT_SIZE_LIMIT else None
    if size is not None and size > EVENT_SIZE_LIMIT:
        findings.append(
            problem(
                "limit",
                f"The event is {size:,} bytes of JSON; above {EVENT_SIZE_LIMIT:,} bytes (128 KB) the platform "
                "cuts recipients from the end and sets truncated to true, so a real event never is.",
            )
        )
    elif size is not None and event.truncated and size < EVENT_SIZE_LIMIT - TRUNCATED_SLACK:
        findings.append(
            caution(
                "limit",
                f"truncated is true but the event is only {size:,} bytes; the platform cuts recipients only "
                f"to stay under {EVENT_SIZE_LIMIT:,} bytes, so a truncated event is close to that size.",
                "truncated",
            )
        )
    if envelope:
        recipients = _recipients(event) or ()
        held = {r.address.lower() for r in recipients if type(r) is MailAddress and type(r.address) is str}
        for address in envelope:
            if address.lower() in held:
                continue
            held.add(address.lower())  # (an address given twice is decided once)
            cut[address] = Decision(
                fallback_action,
                "fallback",
                None,
                TRUNCATION.id,
                "not in the event (recipients cut past 128 KB): the fallback action applies (inferred)",
            )
    return Truncation(tuple(findings), cut)


EVENT_CHECKS: list[Check] = [
    check_null_sender,
    check_recipients_listed_once,
    check_outbound_limit,
    truncation,
]
EVENT_CONTRACT = Contract(EVENT_SHAPE, EVENT_CHECKS, source=SOURCE)


# --- the verbs ----------------------------------------------------------------


def validate_event(event: Any) -> Report:
    """Every problem of a mail-flow event (a dict, JSON text or bytes); never raises."""
    return EVENT_CONTRACT.check(event)[0]


def decode_event(event: Any) -> tuple[dict[str, Any], Report]:
    """The event as a dict and its report; raises ContractError when it is not a valid event."""
    value, issues = decode_json(event)
    if value is MISSING:
        raise ContractError(Report(issues, SOURCE, None, "event"))
    report = validate_event(value)
    if not report.ok:
        raise ContractError(report)
    return value, report


def parse_event(event: Any) -> ParsedMailEvent:
    """The event as frozen typed values (`summary_version`, `envelope.mail_from.address`, ...).

    Raises `fnkit.ContractError` (with `.report`) when the event is invalid.
    """
    report, typed = EVENT_CONTRACT.check(event)
    if not report.ok:
        raise ContractError(report)
    return cast("ParsedMailEvent", typed)


def correlation_ids(event: Any) -> list[str]:
    """`[invocationId]` (the same on every retry), or `[]` when there is none."""
    try:
        value, _ = decode_json(event)
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
        raise ValueError(f"build_event: {what} {address!r} does not look like an email address ({ADDRESSES.id}).")
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
    dialect: Dialect | None = None,
    seed: int = 0,
    store: Any = None,
    **more: Any,
) -> MailEventDict:
    """A valid mail-flow event, deterministic for a `seed` (same arguments, same event).

    `message` (an `email.message.EmailMessage`, or raw RFC 5322 bytes or text) supplies
    what is not given: subject, sender (its From) and mail_from (its Return-Path, else
    From), recipients (its To and Cc); a message without the From or Date header RFC 5322
    requires is taken with a UserWarning (the content API refuses to put it back). The
    subject keeps its first 256 characters; when the
    event would exceed 128 KB, recipients are cut from the end and `truncated` is true (M1).
    The raw message (or, without one, a minimal message made from the event) is registered
    in the message store (`store`, by default `default_store()`) under the event's
    messageId, so a handler can read and replace it (M9).
    `more`: other event fields by spec or snake_case name (`invocation_id=...`,
    `truncated=...`) to set them as given. `dialect` is accepted for the common signature:
    the mail event has no brand-specific spellings, so both dialects build the same event.
    """
    from ._content import default_store, message_fields, minimal_message

    resolve_dialect(dialect)  # checked (and the project's setting read) like every builder's, though unused
    if flow_direction not in FLOW_DIRECTIONS:
        raise ValueError(
            f"build_event: flow_direction must be INBOUND or OUTBOUND, not {flow_direction!r} "
            f"({id_of(EVENT_SHAPE.field('flowDirection'))})."
        )
    raw = None
    if message is not None:
        raw, found = message_fields(message)
        subject = subject or found["subject"]
        sender = sender or found["sender"]
        mail_from = found["mail_from"] if mail_from is None else mail_from  # "": the null sender, as given
        if recipients is None:
            recipients = found["recipients"]
        if found["missing"]:
            import warnings

            warnings.warn(
                f"build_event: the message has no {' and no '.join(found['missing'])} header, which RFC 5322 "
                "requires: a handler that puts it back through context.message_content is refused; add "
                f"{' and '.join(found['missing'])} to the message",
                UserWarning,
                stacklevel=2,
            )
    if mail_from is None:
        raise TypeError("build_event: mail_from is required (or a message with a From header).")
    if recipients is None:
        raise TypeError("build_event: recipients is required (or a message with To or Cc headers).")
    if isinstance(recipients, str):
        recipients = [recipients]
    recipients = [_check_address("recipient", r) for r in recipients]
    if not recipients:
        raise ValueError(f"build_event: a message has at least one recipient ({LISTED_ONCE.id}).")
    if flow_direction == "OUTBOUND" and len(recipients) > OUTBOUND_RECIPIENTS_LIMIT:
        raise ValueError(
            f"build_event: an outbound rule handles at most {OUTBOUND_RECIPIENTS_LIMIT} recipients, "
            f"not {len(recipients)} ({id_of(check_outbound_limit)})."
        )
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
    event: dict[str, Any] = {
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
        event["messageId"], raw if raw is not None else (lambda: minimal_message(made))
    )
    return cast("MailEventDict", event)


def _cut_to_size(event: dict[str, Any]) -> None:
    """M1: over 128 KB, cut recipients from the end (keeping one) and set truncated."""
    size = event_size(event)
    if size is None or size <= EVENT_SIZE_LIMIT:
        return
    recipients = event["envelope"]["recipients"]
    entry_sizes = [
        len(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode("utf-8")) + 1 for r in recipients
    ]
    keep = len(recipients)
    while keep > 1 and size > EVENT_SIZE_LIMIT:
        keep -= 1
        size -= entry_sizes[keep]
    del recipients[keep:]
    event["truncated"] = True
    size = event_size(event)
    if size is not None and size > EVENT_SIZE_LIMIT:
        raise ValueError(f"build_event: the event exceeds 128 KB even with a single recipient ({TRUNCATION.id}).")
