"""The mail-flow response: its shape, its rule checks, and validate_response."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .._codec import Invocation, encode_response
from .._config import with_settings
from .._report import Issue, Raw, Report, child_path, error, warning
from .._shape import BOOL, STR, F, ListOf, Shape
from .._validate import Contract, Seen
from ..rules import rule
from ._address import is_address
from ._config import ACTION_TYPES, EXTENSION_TYPES, RECIPIENTS_LIMIT, MailConfig

SOURCE = "mail"
RESPONSE_SIZE_LIMIT = 256 * 1024  # bytes (M4)
UNIQUE_ACTIONS_LIMIT = 10  # M6

# --- the shape, declared once -------------------------------------------------

PARAMETERS = Shape(
    "MailActionParameters",
    [F("bounceMessage", STR, required=False, doc="Text placed in the bounce mail; BOUNCE only.")],
    rule="M4",
    doc="Parameters of an action.",
)
ACTION = Shape(
    "MailAction",
    [
        F(
            "type",
            STR,
            enum=ACTION_TYPES + EXTENSION_TYPES,
            doc="BOUNCE, DROP or DEFAULT; BYPASS_SPAM_CHECK and MOVE_TO_JUNK only with extensions=True, inbound.",
        ),
        F("parameters", PARAMETERS, required=False, doc="Parameters of the action (bounceMessage for BOUNCE)."),
    ],
    rule="M4",
    doc="What to do with the message.",
)
ENTRY = Shape(
    "MailActionEntry",
    [
        F("action", ACTION, doc="Holds type and optionally parameters."),
        F("recipients", ListOf(STR), required=False, doc="Recipients to which this action applies."),
        F(
            "allRecipients",
            BOOL,
            required=False,
            doc="Whether the action applies to every recipient no other action names.",
        ),
    ],
    rule="M4",
    doc="One action and the recipients it covers.",
)
RESPONSE_SHAPE = Shape(
    "MailResponse",
    [F("actions", ListOf(ENTRY, min_len=1), doc="List of action entries, at least one.")],
    rule="M4",
    doc="What a synchronous mail-flow function returns.",
)
rule(
    "M4",
    "mail",
    "contract",
    "A valid response has at least one action; each action.type is BOUNCE, DROP or DEFAULT; "
    "bounceMessage only for BOUNCE; recipients a list of strings; allRecipients a boolean; at most 256 KB.",
)(RESPONSE_SHAPE)

# --- reading actions (shared with the outcome) --------------------------------


def _entries(response: Any) -> list[tuple[int, dict[str, Any]]]:
    """(index, entry) of every entry that is an object with an action object."""
    actions = response.get("actions") if isinstance(response, dict) else None
    if not isinstance(actions, list):
        return []
    return [(i, e) for i, e in enumerate(actions) if isinstance(e, dict) and isinstance(e.get("action"), dict)]


def action_type(entry: dict[str, Any]) -> Any:
    """The entry's action type (whatever it is)."""
    return entry["action"].get("type")


def action_key(entry: dict[str, Any]) -> tuple[Any, str]:
    """What makes an action unique (M6): its type and its parameters."""
    parameters = entry["action"].get("parameters")
    try:
        canonical = json.dumps({} if parameters is None else parameters, sort_keys=True)
    except Exception:  # noqa: BLE001 - not JSON: the walk reports it; any stable text will do here
        canonical = f"<{type(parameters).__name__} {id(parameters)}>"
    the_type = action_type(entry)
    if isinstance(the_type, str):
        return the_type, canonical
    try:
        return repr(the_type), canonical
    except ValueError:  # an int past 4,300 digits (perhaps inside a list) has no repr
        return f"<{type(the_type).__name__} that cannot be printed, {id(the_type)}>", canonical


def bounce_message(entry: dict[str, Any]) -> str | None:
    """The entry's bounceMessage, when it has a string one."""
    parameters = entry["action"].get("parameters")
    message = parameters.get("bounceMessage") if isinstance(parameters, dict) else None
    return message if isinstance(message, str) else None


def named_recipients(entry: dict[str, Any]) -> list[str]:
    """The strings of the entry's recipients list (in order, once each)."""
    recipients = entry.get("recipients")
    if not isinstance(recipients, list):
        return []
    out: list[str] = []
    seen: set[str] = set()
    for r in recipients:
        if isinstance(r, str) and r.lower() not in seen:
            seen.add(r.lower())
            out.append(r)
    return out


def unique_action_numbers(response: Any) -> dict[int, int]:
    """Entry index -> the number (0-based) of its unique action, in order of first appearance."""
    numbers: dict[tuple[Any, str], int] = {}
    out: dict[int, int] = {}
    for i, entry in _entries(response):
        out[i] = numbers.setdefault(action_key(entry), len(numbers))
    return out


# --- the rule checks ----------------------------------------------------------


def _path(i: int, *keys: Any) -> str:
    path = f"$.actions[{i}]"
    for key in keys:
        path = child_path(path, key)
    return path


def check_extension_types(response: Any, seen: Seen) -> Iterator[Issue]:
    """M4: BYPASS_SPAM_CHECK and MOVE_TO_JUNK only with extensions=True, and only on inbound mail."""
    extensions = seen.options.get("extensions", False)
    direction = seen.options.get("flow_direction")
    for i, entry in _entries(response):
        kind = action_type(entry)
        if kind not in EXTENSION_TYPES:
            continue
        if not extensions:
            yield error(
                _path(i, "action", "type"),
                "enum",
                f"{kind} is an extension of the real platform (inbound rules only), not part of the "
                "contract; pass extensions=True to accept it. The contract's types: BOUNCE, DROP, DEFAULT.",
                "M4",
            )
        elif direction == "OUTBOUND":
            yield error(
                _path(i, "action", "type"),
                "enum",
                f"{kind} applies only to inbound mail; this message is outbound.",
                "M4",
            )


def check_bounce_message(response: Any, seen: Seen) -> Iterator[Issue]:
    """M4: parameters.bounceMessage belongs to BOUNCE only."""
    for i, entry in _entries(response):
        parameters = entry["action"].get("parameters")
        if isinstance(parameters, dict) and "bounceMessage" in parameters and action_type(entry) != "BOUNCE":
            yield error(
                _path(i, "action", "parameters", "bounceMessage"),
                "bounce-message",
                f"bounceMessage is a parameter of BOUNCE only; this action is {action_type(entry)}.",
                "M4",
            )


def check_covers_someone(response: Any, seen: Seen) -> Iterator[Issue]:
    """M5: an action covers its recipients, or every other recipient with allRecipients: true."""
    for i, entry in _entries(response):
        named = entry.get("recipients")
        everyone = entry.get("allRecipients") is True
        if everyone and isinstance(named, list) and named:
            yield warning(
                _path(i),
                "ambiguous",
                "This action has both recipients and allRecipients: true; fnkit applies it to the listed "
                "recipients and to every recipient no other action names.",
                "M5",
            )
        elif not everyone and not (isinstance(named, list) and named):
            yield warning(
                _path(i),
                "covers-nobody",
                "This action names no recipients and has no allRecipients: true, so it covers nobody.",
                "M5",
            )


def check_recipient_addresses(response: Any, seen: Seen) -> Iterator[Issue]:
    """MS3: the recipients an action names look like email addresses."""
    for i, entry in _entries(response):
        named = entry.get("recipients")
        if not isinstance(named, list):
            continue
        for j, r in enumerate(named):
            if isinstance(r, str) and not is_address(r):
                yield warning(
                    f"{_path(i, 'recipients')}[{j}]",
                    "format",
                    f"{json.dumps(r)} does not look like an email address, so it matches no recipient.",
                    "MS3",
                )


def check_json_and_size(response: Any, seen: Seen) -> Iterator[Issue]:
    """H2 and M4: the response must be JSON, of at most 256 KB."""
    size = seen.options.get("size")
    if size is None:
        text, why = encode_response(response)
        if text is None:
            yield error("$", "type", f"JSON cannot encode this response ({why}), so the platform cannot read it.", "H2")
            return
        size = len(text.encode("utf-8", "surrogatepass"))
    if size > RESPONSE_SIZE_LIMIT:
        yield error(
            "$",
            "limit",
            f"The response is {size:,} bytes; a synchronous function answers with at most "
            f"{RESPONSE_SIZE_LIMIT:,} bytes (256 KB), so this one is invalid (inferred).",
            "M4",
        )


@rule(
    "M6",
    "mail",
    "contract",
    "Only 10 unique actions count; what only later actions cover gets the fallback action. "
    "Outbound responses over 500 recipients are invalid (inferred).",
    severity="error or warning",
)
def check_unique_actions(response: Any, seen: Seen) -> Iterator[Issue]:
    """M6: only 10 unique actions count."""
    numbers = unique_action_numbers(response)
    if not numbers or max(numbers.values()) < UNIQUE_ACTIONS_LIMIT:
        return
    late = [i for i, n in numbers.items() if n >= UNIQUE_ACTIONS_LIMIT]
    yield warning(
        _path(late[0]),
        "limit",
        f"The response has {max(numbers.values()) + 1} unique actions (type and parameters); only the first "
        f"{UNIQUE_ACTIONS_LIMIT} count. What only the later ones cover (from actions[{late[0]}] on) gets "
        "the fallback action.",
        "M6",
    )


def check_outbound_recipients(response: Any, seen: Seen) -> Iterator[Issue]:
    """M6 (inferred): an outbound response names at most 500 recipients."""
    if seen.options.get("flow_direction") != "OUTBOUND":
        return
    limit = seen.options.get("recipients_limit", RECIPIENTS_LIMIT)
    named = {r.lower() for _, entry in _entries(response) for r in named_recipients(entry)}
    if len(named) > limit:
        yield error(
            "$.actions",
            "limit",
            f"The response names {len(named)} recipients; an outbound response names at most {limit} "
            "(inferred from the 500-recipient limit of outbound rules).",
            "M6",
        )


def check_conflicts(response: Any, seen: Seen) -> Iterator[Issue]:
    """M7 (inferred): one recipient in two different explicit actions is a conflict."""
    numbers = unique_action_numbers(response)
    first: dict[str, tuple[int, int]] = {}
    reported: set[str] = set()
    for i, entry in _entries(response):
        for r in named_recipients(entry):
            key = r.lower()
            if key not in first:
                first[key] = (i, numbers[i])
            elif first[key][1] != numbers[i] and key not in reported:
                reported.add(key)
                yield warning(
                    _path(i, "recipients"),
                    "conflict",
                    f"{r} is named by actions[{first[key][0]}] and actions[{i}] with different actions; the "
                    "platform does not define which wins (fnkit's default: the most restrictive, "
                    "inferred).",
                    "M7",
                )
    everyone = [(i, numbers[i]) for i, entry in _entries(response) if entry.get("allRecipients") is True]
    if len({n for _, n in everyone}) > 1:
        yield warning(
            _path(everyone[1][0], "allRecipients"),
            "conflict",
            f"actions[{everyone[0][0]}] and actions[{everyone[1][0]}] both cover all recipients with "
            "different actions; the platform does not define which wins (inferred).",
            "M7",
        )


RESPONSE_CHECKS = [
    check_json_and_size,
    check_extension_types,
    check_bounce_message,
    check_covers_someone,
    check_recipient_addresses,
    check_unique_actions,
    check_outbound_recipients,
    check_conflicts,
]


# the checks read the decoded response (the outcome's resolution reads the same value)
RESPONSE_CONTRACT = Contract(RESPONSE_SHAPE, RESPONSE_CHECKS, source=SOURCE, subject="response", plain=True)


def as_returned(response: Any) -> Any:
    """What the platform reads: an Invocation's JSON text as `Raw` (so a returned string stays a string)."""
    if isinstance(response, Invocation):
        return Raw(response.response_text if response.response_text is not None else "null")
    return response


def _text_size(response: Any) -> int | None:
    data = response.data if isinstance(response, Raw) else response
    if isinstance(data, str):
        return len(data.encode("utf-8", "surrogatepass"))
    if isinstance(data, (bytes, bytearray, memoryview)):
        return len(bytes(data))
    return None


@with_settings(MailConfig, "mode", "extensions", "recipients_limit")
def validate_response(
    response: Any,
    *,
    flow_direction: str | None = None,
    config: MailConfig | None = None,
    **settings: Any,
) -> Report:
    """Every problem of what a mail-flow function returned (M4, M6, M7); never raises for any response
    (a configuration the platform refuses is a ValueError naming the rule).

    `response`: the returned value, `fnkit.Raw(text_or_bytes)`, JSON text/bytes, or an
    `Invocation` (its returned value, as JSON).
    `flow_direction`: the event's (OUTBOUND turns on the recipients limit, 500).
    The rule's settings (`config`, a `MailConfig`, or as keywords): `extensions` accepts
    BYPASS_SPAM_CHECK and MOVE_TO_JUNK (inbound only), as the real platform does; `mode`:
    "sync" (the response decides delivery) or "async": the service ignores the response (M8),
    which the report says first; what would make it invalid is still reported, as warnings.
    """
    rule_config = MailConfig.of(config, settings, validate_response)
    mode, recipients_limit, extensions = rule_config.mode, rule_config.recipients_limit, rule_config.extensions
    if isinstance(response, Invocation) and response.response_text is None and response.encode_error:
        issue = error("$", "type", f"The function returned a value JSON cannot encode ({response.encode_error}).", "H2")
        report = Report([issue], SOURCE, None, "response")
    else:
        response = as_returned(response)
        options = {
            "flow_direction": flow_direction,
            "recipients_limit": recipients_limit,
            "extensions": extensions,
            "size": _text_size(response),
        }
        report = RESPONSE_CONTRACT.check(response, options)[0]
    if mode == "sync":
        return report
    returned = response.data if isinstance(response, Raw) else response
    if returned is None or (
        isinstance(returned, (str, bytes, bytearray))
        and bytes(returned.encode("utf-8", "surrogatepass") if isinstance(returned, str) else returned).strip()
        == b"null"
    ):
        structure: list[Issue] = []  # an asynchronous function that returns nothing: nothing to say about it
    else:
        structure = [
            i if i.severity == "warning" else Issue(i.path, i.code, i.message, "warning", i.rule) for i in report
        ]
    follows = " What would make it invalid in a synchronous rule follows, as warnings." if structure else ""
    ignored = warning(
        "$",
        "ignored",
        "The rule is asynchronous: the mail-flow service ignores the response, so it "
        f"changes nothing and delivery is unaffected (M8).{follows}",
        "M8",
    )
    return Report([ignored, *structure], SOURCE, report.dialect, "response")


def json_schema(kind: str = "event") -> dict[str, Any]:
    """A Draft 2020-12 JSON Schema of the mail-flow event (`kind="event"`) or synchronous response
    (`"response"`), from the declarations fnkit validates with; what a schema cannot express is listed in
    its description."""
    from ._event import EVENT_CONTRACT

    if kind == "event":
        return EVENT_CONTRACT.json_schema(also=("MS3",))
    if kind == "response":
        return RESPONSE_CONTRACT.json_schema(also=("M5", "M7"))
    raise ValueError(f"kind is 'event' or 'response', not {kind!r}")
