"""The mail-flow response: its shape, its rules, and validate_response.

Each rule is one function (`unique_actions` M6, `conflicts` M7, `coverage` M5) over the
response's entries, read once: it returns its findings (so it is a check of the contract; the
engine places them and names the rule) and its effect. `validate_response` reports the issues;
`mail.outcome` applies the effects of the same judgements (`judge_response`), so the two cannot
disagree.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, TypeVar, Unpack

from .._engine.codec import Invocation, encode_response
from .._engine.findings import Finding, cannot_encode, caution, place, problem
from .._engine.outcome import what_it_did
from .._engine.report import MISSING, Issue, Raw, Report, decode_json
from .._engine.shape import BOOL, STR, F, ListOf, Shape
from .._engine.validate import Check, Contract, Seen
from .._settings.config import with_settings
from ..rules import id_of
from ._address import is_address
from ._config import (
    ACTION_TYPES,
    ASYNCHRONOUS,
    CONFLICTS,
    EXTENSION_TYPES,
    RECIPIENTS_LIMIT,
    RESPONSE_FORM,
    UNIQUE_ACTIONS,
    MailConfig,
    MailResponseSettings,
)
from ._decision import COVERAGE, RESTRICTIVENESS, Decision
from ._event import address_form

SOURCE = "mail"
RESPONSE_SIZE_LIMIT = 256 * 1024  # bytes (M4)
UNIQUE_ACTIONS_LIMIT = 10  # M6

# --- the shape, declared once -------------------------------------------------

PARAMETERS = Shape(
    "MailActionParameters",
    [F("bounceMessage", STR, required=False, doc="Text placed in the bounce mail; BOUNCE only.")],
    rule=RESPONSE_FORM.id,
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
    rule=RESPONSE_FORM.id,
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
    rule=RESPONSE_FORM.id,
    doc="One action and the recipients it covers.",
)
RESPONSE_SHAPE = Shape(
    "MailResponse",
    [F("actions", ListOf(ENTRY, min_len=1), doc="List of action entries, at least one.")],
    rule=RESPONSE_FORM.id,
    doc="What a synchronous mail-flow function returns.",
)
# (M4's structure; the rest of M4 is `check_response_form`'s, which implements the rule)

# --- reading actions (once per response: every rule and the outcome read this) ----------------


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of `actions` that is an object holding an action object, as the rules read it."""

    at: int  # its index in `actions`
    entry: dict[str, Any]
    type: Any  # action.type, whatever it is
    key: tuple[Any, str]  # what makes its action unique (M6): the type and the parameters
    named: tuple[str, ...]  # the strings of its recipients list, in order, once each (without regard to case)
    everyone: bool  # allRecipients: true

    @property
    def bounce_message(self) -> str | None:
        """The bounceMessage that goes with the action: a string one, of a BOUNCE action."""
        parameters = self.entry["action"].get("parameters")
        message = parameters.get("bounceMessage") if isinstance(parameters, dict) else None
        return message if isinstance(message, str) and self.type == "BOUNCE" else None


def _key(action: dict[str, Any]) -> tuple[Any, str]:
    parameters = action.get("parameters")
    try:
        canonical = json.dumps({} if parameters is None else parameters, sort_keys=True)
    except Exception:  # noqa: BLE001 - not JSON: the walk reports it; any stable text will do here
        canonical = f"<{type(parameters).__name__} {id(parameters)}>"
    the_type = action.get("type")
    if isinstance(the_type, str):
        return the_type, canonical
    try:
        return repr(the_type), canonical
    except ValueError:  # an int past 4,300 digits (perhaps inside a list) has no repr
        return f"<{type(the_type).__name__} that cannot be printed, {id(the_type)}>", canonical


def _named(recipients: Any) -> tuple[str, ...]:
    if not isinstance(recipients, list):
        return ()
    out: list[str] = []
    seen: set[str] = set()
    for r in recipients:
        if isinstance(r, str) and r.lower() not in seen:
            seen.add(r.lower())
            out.append(r)
    return tuple(out)


def entries(response: Any, seen: Seen | None = None) -> list[Entry]:
    """The response's entries that hold an action object, read once per call (the checks and the outcome
    share the reading through `seen.options["read"]` when there is one)."""
    memo = seen.options.get("read") if seen is not None else None
    if memo is not None and "entries" in memo:
        found: list[Entry] = memo["entries"]
        return found
    actions = response.get("actions") if isinstance(response, dict) else None
    read = [
        Entry(
            i,
            e,
            e["action"].get("type"),
            _key(e["action"]),
            _named(e.get("recipients")),
            e.get("allRecipients") is True,
        )
        for i, e in enumerate(actions if isinstance(actions, list) else ())
        if isinstance(e, dict) and isinstance(e.get("action"), dict)
    ]
    if memo is not None:
        memo["entries"] = read
    return read


class Judgement:
    """What one rule says of a response: its `findings` (iterating over it gives them, as a check's result
    does; the engine places them and names the rule), and the effect the outcome applies (the subclass's fields)."""

    findings: list[Finding]

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.findings)

    def __len__(self) -> int:  # (none found: nothing for the engine to place)
        return len(self.findings)


_J = TypeVar("_J", bound=Judgement)


def _once(name: Callable[..., Any], response: Any, seen: Seen, judge: Callable[[], _J]) -> _J:
    """A rule's judgement of this response, made once per call (validation and the outcome share it)."""
    memo = seen.options.get("read")
    if memo is None:
        return judge()
    if name not in memo:
        memo[name] = judge()
    found: _J = memo[name]
    return found


# --- the rule checks ----------------------------------------------------------


def check_recipient_addresses(response: Any, seen: Seen) -> list[Finding]:
    """MS3 of the recipients an action names (`address_form` decides)."""
    found: list[Finding] = []
    for e in entries(response, seen):
        named = e.entry.get("recipients")
        if not isinstance(named, list):
            continue
        for j, r in enumerate(named):
            if isinstance(r, str) and not is_address(r):
                found += address_form(r, "actions", e.at, "recipients", j)
    return found


@RESPONSE_FORM
def check_response_form(response: Any, seen: Seen) -> list[Finding]:
    """M4 beyond the structure its shape declares (`RESPONSE_SHAPE`, whose walk names M4 too): the response is JSON
    (else H2, `cannot_encode`) of at most 256 KB; BYPASS_SPAM_CHECK and MOVE_TO_JUNK only with extensions=True, and
    only on inbound mail; parameters.bounceMessage belongs to BOUNCE only."""
    found: list[Finding] = []
    size = seen.options.get("size")
    if size is None:
        text, why = encode_response(response)
        if text is None:
            found += cannot_encode(
                why, "type", f"JSON cannot encode this response ({why}), so the platform cannot read it."
            )
        else:
            size = len(text.encode("utf-8", "surrogatepass"))
    if size is not None and size > RESPONSE_SIZE_LIMIT:
        found.append(
            problem(
                "limit",
                f"The response is {size:,} bytes; a synchronous function answers with at most "
                f"{RESPONSE_SIZE_LIMIT:,} bytes (256 KB), so this one is invalid (inferred).",
            )
        )
    read = entries(response, seen)
    extensions = seen.options.get("extensions", False)
    direction = seen.options.get("flow_direction")
    for e in read:
        if e.type not in EXTENSION_TYPES:
            continue
        if not extensions:
            found.append(
                problem(
                    "enum",
                    f"{e.type} is an extension of the real platform (inbound rules only), not part of the "
                    "contract; pass extensions=True to accept it. The contract's types: BOUNCE, DROP, DEFAULT.",
                    *("actions", e.at, "action", "type"),
                )
            )
        elif direction == "OUTBOUND":
            found.append(
                problem(
                    "enum",
                    f"{e.type} applies only to inbound mail; this message is outbound.",
                    *("actions", e.at, "action", "type"),
                )
            )
    for e in read:
        parameters = e.entry["action"].get("parameters")
        if isinstance(parameters, dict) and "bounceMessage" in parameters and e.type != "BOUNCE":
            found.append(
                problem(
                    "bounce-message",
                    f"bounceMessage is a parameter of BOUNCE only; this action is {e.type}.",
                    *("actions", e.at, "action", "parameters", "bounceMessage"),
                )
            )
    return found


@dataclass
class UniqueActions(Judgement):
    """M6's judgement: the number of each entry's unique action, and the entries that count."""

    findings: list[Finding]
    numbers: dict[int, int]  # entry index -> the number (0-based) of its unique action, in order of first appearance
    counted: list[Entry]  # the entries whose action is one of the first 10 unique ones


@UNIQUE_ACTIONS
def unique_actions(response: Any, seen: Seen) -> UniqueActions:
    """M6: only the first 10 unique actions (type and parameters) count (a warning names the first entry that
    does not); an outbound response names at most `recipients_limit` (500) recipients (inferred, an error)."""

    def judge() -> UniqueActions:
        read = entries(response, seen)
        keys: dict[tuple[Any, str], int] = {}
        numbers = {e.at: keys.setdefault(e.key, len(keys)) for e in read}
        counted = [e for e in read if numbers[e.at] < UNIQUE_ACTIONS_LIMIT]
        findings: list[Finding] = []
        if len(keys) > UNIQUE_ACTIONS_LIMIT:
            late = next(e.at for e in read if numbers[e.at] >= UNIQUE_ACTIONS_LIMIT)
            findings.append(
                caution(
                    "limit",
                    f"The response has {len(keys)} unique actions (type and parameters); only the first "
                    f"{UNIQUE_ACTIONS_LIMIT} count. What only the later ones cover (from actions[{late}] on) gets "
                    "the fallback action.",
                    "actions",
                    late,
                )
            )
        limit = seen.options.get("recipients_limit", RECIPIENTS_LIMIT)
        named = {r.lower() for e in read for r in e.named}
        if seen.options.get("flow_direction") == "OUTBOUND" and len(named) > limit:
            findings.append(
                problem(
                    "limit",
                    f"The response names {len(named)} recipients; an outbound response names at most {limit} "
                    "(inferred from the 500-recipient limit of outbound rules).",
                    "actions",
                )
            )
        return UniqueActions(findings, numbers, counted)

    return _once(unique_actions, response, seen, judge)


@dataclass
class Conflicts(Judgement):
    """M7's judgement: for each recipient (lower-cased) that counted entries with different actions name, the
    entry that wins and why; the same for allRecipients (None when at most one action covers everyone)."""

    findings: list[Finding]
    named: dict[str, tuple[Entry, str]]
    everyone: tuple[Entry, str] | None


@CONFLICTS
def conflicts(response: Any, seen: Seen) -> Conflicts:
    """M7 (inferred): a recipient named by counted entries with different actions, or everyone covered by
    different allRecipients actions, is a conflict the platform leaves undefined: a warning, and the
    `conflict_policy` picks the winner (most-restrictive: DROP > BOUNCE > MOVE_TO_JUNK > DEFAULT >
    BYPASS_SPAM_CHECK, then the first entry; first; last)."""

    def judge() -> Conflicts:
        policy = seen.options.get("conflict_policy") or "most-restrictive"
        m6 = unique_actions(response, seen)
        numbers = m6.numbers

        def pick(candidates: list[Entry], where: str) -> tuple[Entry, str] | None:
            distinct: dict[int, Entry] = {}
            for e in candidates:
                distinct.setdefault(numbers[e.at], e)
            if len(distinct) < 2:
                return None
            options = sorted(distinct.values(), key=lambda e: e.at)
            if policy == "first":
                chosen = options[0]
            elif policy == "last":
                chosen = options[-1]
            else:
                chosen = max(options, key=lambda e: (RESTRICTIVENESS.get(e.type, -1), -e.at))
            named = " and ".join(f"actions[{e.at}]" for e in options)
            return chosen, f"conflict: {where} {named}; the {policy} policy picks actions[{chosen.at}] (inferred)"

        naming: dict[str, list[Entry]] = {}
        spelled: dict[str, str] = {}
        for e in m6.counted:
            for r in e.named:
                naming.setdefault(r.lower(), []).append(e)
                spelled.setdefault(r.lower(), r)
        findings: list[Finding] = []
        named: dict[str, tuple[Entry, str]] = {}
        for key, candidates in naming.items():
            found = pick(candidates, "named by")
            if found is not None:
                named[key] = found
                first, second = candidates[0], next(e for e in candidates if numbers[e.at] != numbers[candidates[0].at])
                findings.append(
                    caution(
                        "conflict",
                        f"{spelled[key]} is named by actions[{first.at}] and actions[{second.at}] with different "
                        f"actions; the platform does not define which wins (fnkit's {policy} policy picks "
                        f"actions[{found[0].at}], inferred).",
                        *("actions", second.at, "recipients"),
                    )
                )
        everyone = [e for e in m6.counted if e.everyone]
        picked = pick(everyone, "covered (allRecipients) by")
        if picked is not None:
            first = everyone[0]
            second = next(e for e in everyone if numbers[e.at] != numbers[first.at])
            findings.append(
                caution(
                    "conflict",
                    f"actions[{first.at}] and actions[{second.at}] both cover all recipients with different "
                    f"actions; the platform does not define which wins (fnkit's {policy} policy picks "
                    f"actions[{picked[0].at}], inferred).",
                    *("actions", second.at, "allRecipients"),
                )
            )
        return Conflicts(findings, named, picked)

    return _once(conflicts, response, seen, judge)


@dataclass
class Coverage(Judgement):
    """M5's judgement: a decision for each recipient (of `seen.options["recipients"]`, the envelope's, when
    given), and the recipients the response adds."""

    findings: list[Finding]
    decisions: dict[str, Decision]
    added: list[str]
    # the effects the outcome applies: how many recipients get the fallback because no action covers them (M5)
    # or only actions past the first 10 unique ones do (M6), how many conflicts a policy resolved (M7), and the
    # rule that decided the answer (the last of those that applied)
    uncovered: int = 0
    late: int = 0
    conflicted: int = 0
    rule: str = COVERAGE.id


@COVERAGE
def coverage(response: Any, seen: Seen) -> Coverage:
    """M5: an entry covers the recipients it names, or (allRecipients: true) every recipient no entry names.

    Warnings: an entry that covers nobody, or names recipients and has allRecipients too. With the envelope's
    recipients (`seen.options["recipients"]`), the decisions: a named recipient gets its entry's action
    (`via="recipients"`), any other the allRecipients action (`via="allRecipients"`); a conflict is M7's;
    a recipient only entries past the first 10 unique actions cover gets the fallback (M6), one nothing covers
    the fallback too; a named address absent from the envelope is added (inbound: a warning, the platform adds
    only the organisation's own, as BCC; a name that is no address matches nobody, MS3)."""
    read = entries(response, seen)
    findings: list[Finding] = []
    for e in read:
        has_named = isinstance(e.entry.get("recipients"), list) and bool(e.entry["recipients"])
        if e.everyone and has_named:
            findings.append(
                caution(
                    "ambiguous",
                    "This action has both recipients and allRecipients: true; fnkit applies it to the listed "
                    "recipients and to every recipient no other action names.",
                    *("actions", e.at),
                )
            )
        elif not e.everyone and not has_named:
            findings.append(
                caution(
                    "covers-nobody",
                    "This action names no recipients and has no allRecipients: true, so it covers nobody.",
                    *("actions", e.at),
                )
            )
    recipients: list[str] | None = seen.options.get("recipients")
    if recipients is None:
        return Coverage(findings, {}, [])
    fallback = seen.options.get("fallback_action", "DEFAULT")
    m6, m7 = unique_actions(response, seen), conflicts(response, seen)
    counted = {e.at for e in m6.counted}
    explicit: dict[str, list[Entry]] = {}
    spelled: dict[str, tuple[str, int]] = {}
    for e in read:
        for r in e.named:
            explicit.setdefault(r.lower(), []).append(e)
            spelled.setdefault(r.lower(), (r, e.at))
    in_envelope = {r.lower() for r in recipients}
    added = [
        spelled[k][0]
        for k, naming in explicit.items()
        if k not in in_envelope and any(e.at in counted for e in naming) and is_address(spelled[k][0])
    ]
    if seen.options.get("flow_direction") == "INBOUND":
        findings += [
            caution(
                "added",
                f"{r} is not an envelope recipient, so the platform adds it; on inbound mail only "
                "if it is an address of your organisation (delivered as BCC). fnkit cannot tell, "
                "so it adds it.",
                *("actions", spelled[r.lower()][1], "recipients"),
            )
            for r in added
        ]
    everyone = [e for e in read if e.everyone]
    live_everyone = [e for e in everyone if e.at in counted]
    decisions: dict[str, Decision] = {}
    effects: dict[str, str] = {}  # each recipient's effect: "covered", "conflict" (M7), "late" (M6), "uncovered"

    def decided(first: Entry, via: str, where: str, conflict: tuple[Entry, str] | None) -> Decision:
        """The decision for a recipient the counted entry `first` covers, or the winner of its conflict (M7)."""
        if conflict is not None:
            won, why = conflict
            effects[r] = "conflict"
            return Decision(won.type, via, won.bounce_message, id_of(conflicts), why)
        effects[r] = "covered"
        return Decision(first.type, via, first.bounce_message, COVERAGE.id, f"{where} actions[{first.at}]")

    for r in recipients + added:
        naming = explicit.get(r.lower(), [])
        live = [e for e in naming if e.at in counted]
        if live:
            won = m7.named.get(r.lower())
            decisions[r] = decided(live[0], "recipients", "named by", won)
        elif live_everyone:
            decisions[r] = decided(live_everyone[0], "allRecipients", "covered (allRecipients) by", m7.everyone)
        elif naming or everyone:
            effects[r] = "late"
            decisions[r] = Decision(
                fallback,
                "fallback",
                None,
                id_of(unique_actions),
                f"covered only by actions beyond the first {UNIQUE_ACTIONS_LIMIT} unique ones",
            )
        else:
            effects[r] = "uncovered"
            decisions[r] = Decision(fallback, "fallback", None, COVERAGE.id, "no action covers it")
    said = list(effects.values())
    late, conflicted = said.count("late"), said.count("conflict")
    deciding = id_of(conflicts) if conflicted else (id_of(unique_actions) if late else COVERAGE.id)
    return Coverage(findings, decisions, added, said.count("uncovered"), late, conflicted, deciding)


RESPONSE_CHECKS: list[Check] = [
    check_response_form,
    coverage,
    check_recipient_addresses,
    unique_actions,
    conflicts,
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


def judge_response(response: Any, flow_direction: str | None, rule_config: MailConfig) -> tuple[Report, dict[str, Any]]:
    """A synchronous rule's report of `response` (what `validate_response` says), and the options its rules
    read, holding their judgements (`["read"]`: the entries, M6's, M7's), which the outcome then applies."""
    options: dict[str, Any] = {
        "flow_direction": flow_direction,
        "recipients_limit": rule_config.recipients_limit,
        "extensions": rule_config.extensions,
        "conflict_policy": rule_config.conflict_policy,
        "read": {},
    }
    if isinstance(response, Invocation) and response.response_text is None and response.encode_error:
        why = response.encode_error
        found = cannot_encode(why, "type", f"The function returned a value JSON cannot encode ({why}).")
        return Report(place(found, by=cannot_encode), SOURCE, None, "response"), options
    response = as_returned(response)
    options["size"] = _text_size(response)
    return RESPONSE_CONTRACT.check(response, options)[0], options


@with_settings(MailConfig, "mode", "extensions", "recipients_limit", "conflict_policy")
def validate_response(
    response: Any,
    *,
    flow_direction: str | None = None,
    config: MailConfig | None = None,
    **settings: Unpack[MailResponseSettings],
) -> Report:
    """Every problem of what a mail-flow function returned (M4, M6, M7); never raises for any response
    (a configuration the platform refuses is a ValueError naming the rule).

    `response`: the returned value, `fnkit.Raw(text_or_bytes)`, JSON text/bytes, or an
    `Invocation` (its returned value, as JSON).
    `flow_direction`: the event's (OUTBOUND turns on the recipients limit, 500).
    The rule's settings (`config`, a `MailConfig`, or as keywords): `extensions` accepts
    BYPASS_SPAM_CHECK and MOVE_TO_JUNK (inbound only), as the real platform does; `mode`:
    "sync" (the response decides delivery) or "async": the service ignores the response (M8),
    which the report says first; what would make it invalid is still reported, as warnings;
    `conflict_policy`: which action a conflict's warning says wins (M7).
    """
    rule_config = MailConfig.of(config, settings, validate_response)
    report, _ = judge_response(response, flow_direction, rule_config)
    if rule_config.mode == "sync":
        return report
    if not (isinstance(response, Invocation) and response.response_text is None and response.encode_error):
        response = as_returned(response)
    returned = response.data if isinstance(response, Raw) else response
    if returned is None or (
        isinstance(returned, (str, bytes, bytearray))
        and bytes(returned.encode("utf-8", "surrogatepass") if isinstance(returned, str) else returned).strip()
        == b"null"
    ):
        structure: list[Issue] = []  # an asynchronous function that returns nothing: nothing to say about it
    else:
        structure = [i if i.severity == "warning" else replace(i, severity="warning") for i in report]
    return Report(
        [*place(ignored_answer(response, checked=structure), by=ignored_answer), *structure],
        SOURCE,
        report.dialect,
        "response",
    )


@ASYNCHRONOUS
def ignored_answer(answer: Any, *, checked: list[Issue] | None = None) -> list[Finding]:
    """M8: an asynchronous rule ignores the function's answer, and delivery is unaffected. Validating the answer
    (`checked`: what would make it invalid in a synchronous rule, which the report gives after this note, as
    warnings) always says so; the outcome (`async_outcome`) says so when the function failed or answered with
    actions, which then change nothing."""
    if checked is not None:
        follows = " What would make it invalid in a synchronous rule follows, as warnings." if checked else ""
        return [
            caution(
                "ignored",
                "The rule is asynchronous: the mail-flow service ignores the response, so it "
                f"changes nothing and delivery is unaffected ({ASYNCHRONOUS.id}).{follows}",
            )
        ]
    if isinstance(answer, Invocation):
        if answer.timed_out or answer.error is not None:
            what = "did not finish in time" if answer.timed_out else what_it_did(answer.error)
            return [
                caution(
                    "ignored",
                    f"The function {what}; an asynchronous rule neither retries nor falls "
                    f"back: delivery is unaffected ({ASYNCHRONOUS.id}).",
                )
            ]
        answer = answer.returned
    try:
        value, _ = decode_json(answer)
    except Exception:  # noqa: BLE001 - an unreadable answer is ignored like any other
        value = MISSING
    if isinstance(value, dict) and "actions" in value:
        return [
            caution(
                "ignored",
                "The rule is asynchronous, so these actions are ignored: delivery is "
                f"unaffected ({ASYNCHRONOUS.id}). Make the rule synchronous for them to apply.",
                "actions",
            )
        ]
    return []


def json_schema(kind: str = "event") -> dict[str, Any]:
    """A Draft 2020-12 JSON Schema of the mail-flow event (`kind="event"`) or synchronous response
    (`"response"`), from the declarations fnkit validates with; what a schema cannot express is listed in
    its description."""
    from ._event import EVENT_CONTRACT

    if kind == "event":
        return EVENT_CONTRACT.json_schema(also=(address_form,))
    if kind == "response":
        return RESPONSE_CONTRACT.json_schema()
    raise ValueError(f"kind is 'event' or 'response', not {kind!r}")
