"""The queue response: `batchItemFailures`, and the outcome rules that read it (Q7, Q8, Q8a-c; Q10 in ._fifo).

Each rule is one function that reads the values it needs, returns its findings (where below the response) and
states its effect: `reporting_off` (Q7), `reporting_on` (Q8, which asks `unreadable` (Q8a), `misspelled_keys`
(Q8b) and `listed_before` (Q8c) for their parts, and places what each found: `place(found, by=that rule)`).
`platform_reads` turns a response into what the poller reads (the typed response, in one `msgspec.convert`,
for the usual well-formed answers), and `read` applies the rules once: `validate_response` reports the reading's
issues and `outcome` acts on its effect, so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import replace
from typing import Any, Unpack

import msgspec

from .. import rules as _rules
from .._cells import short_id
from .._engine.codec import encode_response
from .._engine.findings import Finding, cannot_encode, caution, place, problem
from .._engine.memo import Readings
from .._engine.report import MISSING, Issue, Raw, Report, decode_json, describe
from .._engine.shape import F, ListOf, Nullable, Shape, Text, unknown_key
from .._settings.config import with_settings
from ..rules import id_of, rule
from ..types import QueueKind
from ._config import REPORTING_OFF, QueueConfig, QueueReportingSetting
from ._fifo import GROUP_ORDER_BREAKS, fifo_attributes, group_order, placeholder_arn

#: Q8, declared before the shape whose empty itemIdentifier it decides; implemented by `reporting_on`
REPORTING_ON = rule(
    "Q8",
    "queue",
    "contract",
    "Reporting on: null, {}, null or [] batchItemFailures is complete success; invalid "
    'JSON or an itemIdentifier that is "", null, under another key or not in the batch is complete failure; '
    "otherwise the listed messages fail.",
    severity="outcome",
)
ITEM_IDENTIFIER = Text(
    min_len=1, rule=REPORTING_ON.id, message="itemIdentifier is an empty string, so the whole batch fails."
)
ITEM_FAILURE = Shape(
    "BatchItemFailure",
    [F("itemIdentifier", ITEM_IDENTIFIER, doc="The messageId of a failed message.", rule="QS6")],
    rule="QS6",
)
RESPONSE_SHAPE = Shape(
    "QueueResponse",
    [
        F(
            "batchItemFailures",
            Nullable(ListOf(ITEM_FAILURE)),
            required=False,
            doc="The messages that failed; empty or null when all succeeded.",
            rule="QS6",
        )
    ],
    rule="QS6",
    doc="What a queue handler returns when partial-batch reporting is on.",
)
rule(
    "QS6",
    "queue",
    "contract",
    "The response is an object with `batchItemFailures`, a list of objects with "
    "`itemIdentifier` (a messageId of the batch), or empty/null.",
    origin="spec",
)(RESPONSE_SHAPE)

QueueResponse = RESPONSE_SHAPE.struct
_ITEM_OK = ITEM_IDENTIFIER.meets
_SPELLINGS = {"batchitemfailures", "batch_item_failures", "batchitemfailure", "failures", "itemfailures"}


class _NotJson:
    def __repr__(self) -> str:
        return "NOT_JSON"


#: what the poller reads of a response that is not JSON (invalid text, or a value JSON cannot encode)
NOT_JSON: Any = _NotJson()


class Reading(msgspec.Struct, frozen=True, gc=False):
    """What the outcome rules make of one response, which `validate_response` and `outcome` both report.

    The effect: `kind` ("success", "partial" or "failure") and `failed` (the listed messageIds, in listing
    order, each once); `rule`, the rule that decided it; `reason`, its sentence ("" for a partial failure,
    whose sentence counts the batch: `partial_reason`); `issues`, the located sentences that say why; and
    `note`, what a rule over a partial failure adds to its sentence (Q10: the group's order breaks).
    (A msgspec Struct: made in C, as every outcome makes one.)
    """

    kind: QueueKind
    failed: tuple[str, ...]
    rule: str
    reason: str
    issues: list[Issue]
    note: str = ""


def _typed(value: dict[Any, Any]) -> Any:
    """The typed response of a well-formed object ({}, null failures, a list of itemIdentifier objects), else None."""
    try:
        return msgspec.convert(value, QueueResponse)  # strict: msgspec's default (see platform_reads)
    except (msgspec.ValidationError, UnicodeEncodeError, RecursionError):  # msgspec cannot word a lone surrogate
        return None


def platform_reads(response: Any, text_is_json: bool) -> tuple[Any, list[Issue], str | None]:
    """What the poller reads of `response`: (the value, what reading its text said, why JSON cannot encode it).

    The value is the typed response when it is a well-formed object, else its JSON as decoded (None for null),
    or NOT_JSON. `Raw` is JSON text; with `text_is_json` so are str and bytes (what `validate_response` takes),
    without it (a handler's return) a str is a JSON string. Any other value reads as its JSON encoding does (a
    tuple as a list), or is NOT_JSON with the reason JSON cannot encode it (a set, bytes, NaN). What reading
    the text said: a byte-order mark skipped (G0, a warning), or why the text is not JSON (errors).
    """
    if type(response) is dict:
        try:  # the usual answer: typed in one call, no need to encode it and read it back. Strict (no coercion)
            # is msgspec's default: naming it costs a keyword parse, 0.14 of the call's 0.33 µs
            return msgspec.convert(response, QueueResponse), [], None
        except (msgspec.ValidationError, UnicodeEncodeError, RecursionError):  # (msgspec cannot word a lone surrogate)
            pass
    elif response is None:
        return None, [], None
    if isinstance(response, Raw) or (text_is_json and isinstance(response, (str, bytes, bytearray, memoryview))):
        value, notes = decode_json(response, REPORTING_ON.id)
    else:
        text, why = encode_response(response)
        if text is None:
            return NOT_JSON, [], why or "unknown reason"
        value, notes = decode_json(text, REPORTING_ON.id)
    if value is MISSING:
        return NOT_JSON, notes, None
    if type(value) is dict:
        typed = _typed(value)
        if typed is not None:
            return typed, notes, None
    return value, notes, None


def read(
    value: Any,
    batch_ids: tuple[str, ...] | None,
    reporting: bool = True,
    notes: list[Issue] | None = None,
    unencodable: str | None = None,
    event: Any = None,
) -> Reading:
    """The one reading of a response (what `platform_reads` made of it) by the outcome rules: Q7 when reporting
    is off, else Q8 (with Q8a-c), and Q10 over a partial failure of a FIFO batch (`event` as a dict).
    `batch_ids`: the batch's messageIds, or None to match no batch (only the response's own form is judged)."""
    if not reporting:
        ignored: Reading = reporting_off(value, unencodable)  # `@rule` leaves it untyped
        return ignored
    reading: Reading = reporting_on(value, batch_ids, [] if notes is None else notes, unencodable)
    if reading.kind == "partial" and event is not None:
        return in_group_order(reading, event)
    return reading


def in_group_order(reading: Reading, event: Any, at: int | None = None) -> Reading:
    """A partial failure's reading with Q10's effect on it (`group_order`: the event as a dict; `at`, where the
    one listed message sits in the batch when it sits nowhere else): warnings at the event's records whose
    group's order breaks, and the partial failure's sentence says so."""
    order = group_order(event, reading.failed, at)
    if not order:
        return reading
    reading.issues.extend(place(order, by=group_order))
    return Reading("partial", reading.failed, reading.rule, reading.reason, reading.issues, GROUP_ORDER_BREAKS)


def read_response(value: Any, batch_ids: tuple[str, ...] | None) -> Reading:
    """The reading of a decoded response with reporting on (`read` with its defaults)."""
    return read(value, batch_ids)


_IGNORED = "Success (inferred): reporting is off, so the response is ignored and the whole batch is deleted."
_OFF, _ON = REPORTING_OFF.id, REPORTING_ON.id  # the rules that decide the outcomes read here (Q7, Q8)


@REPORTING_OFF
def reporting_off(value: Any, unencodable: str | None) -> Reading:
    """Q7: with partial-batch reporting off, the platform ignores the response, whatever it is, and deletes the
    whole batch: no error; a warning when it lists failures (they are lost), or when JSON cannot encode it (H2)."""
    found: list[Finding] = []
    if unencodable is not None:
        found += cannot_encode(
            unencodable,
            "encoding",
            f"The returned value is not JSON ({unencodable}); ignored because reporting is off.",
            "warning",
        )
    if type(value) is QueueResponse:
        failures = value.batch_item_failures
    else:
        failures = value.get("batchItemFailures") if type(value) is dict else None
    if isinstance(failures, (list, tuple)) and failures:
        found.append(
            caution(
                "ignored",
                f"Partial-batch reporting is off: the {len(failures)} reported failure(s) are ignored and deleted "
                "with the rest. They are lost.",
                "batchItemFailures",
            )
        )
    elif failures is not None and not isinstance(failures, (list, tuple)):
        found.append(
            caution(
                "ignored",
                f"Partial-batch reporting is off: the platform ignores batchItemFailures ({describe(failures)}) and "
                "deletes the whole batch, so the failures it was meant to report are lost.",
                "batchItemFailures",
            )
        )
    return Reading("success", (), _OFF, _IGNORED, place(found, by=reporting_off) if found else [])


_SUCCESS = "Complete success: no failures reported, so every message is deleted."
_INVALID_JSON = " The platform treats invalid JSON as a complete failure."
_NOT_JSON = "The response is not valid JSON: complete failure, every message returns to the queue."


@REPORTING_ON
def reporting_on(value: Any, batch_ids: tuple[str, ...] | None, notes: list[Issue], unencodable: str | None) -> Reading:
    """Q8: what the poller does with the response of a function that succeeded, reporting on: complete success
    (null, {}, batchItemFailures null or []), complete failure (not JSON; an itemIdentifier "", null, under
    another key or not in the batch; any Q8a error), else the listed messages fail. Q8b and Q8c say their part.
    `notes`: what reading the text said (a list this reading may extend)."""
    if value is NOT_JSON:
        if unencodable is not None:
            cause = cannot_encode(
                unencodable, "format", f"The returned value cannot be encoded as JSON ({unencodable})."
            )
            return Reading("failure", (), _ON, _NOT_JSON, place(cause, by=reporting_on))
        # why the text is not JSON: errors `platform_reads` gave this rule (`decode_json(..., REPORTING_ON.id)`),
        # each sentence completed with its effect
        said = [i if i.severity == "warning" else replace(i, message=i.message + _INVALID_JSON) for i in notes]
        return Reading("failure", (), _ON, _NOT_JSON, said)
    issues = notes
    idents: Any
    entry_notes: list[list[Issue]] | None = None  # what each entry says before its identifier is judged
    if type(value) is QueueResponse:  # the well-formed answers: {}, null or a list of {"itemIdentifier": "..."}
        failures = value.batch_item_failures
        if not failures:
            return Reading("success", (), _ON, _SUCCESS, issues)
        idents = failures  # (each read for its identifier below)
    else:  # any other decoded value: read entry by entry
        if value is None:
            return Reading("success", (), _ON, _SUCCESS, issues)
        wrong = unreadable("response", value)
        if wrong is not None:
            issues += place((wrong,), by=unreadable)
            return _failure(issues)
        other_keys, misspelled = misspelled_keys(value)
        if other_keys:
            issues += place(other_keys, by=misspelled_keys)
        failures = value.get("batchItemFailures")
        if failures is None:
            return (
                Reading("success", (), id_of(misspelled_keys), _MISSPELLED, issues)
                if misspelled
                else Reading("success", (), _ON, _SUCCESS, issues)
            )
        wrong = unreadable("batchItemFailures", failures)
        if wrong is not None:
            issues += place((wrong,), by=unreadable)
            return _failure(issues)
        idents = []
        entry_notes = []
        for i, item in enumerate(failures):
            wrong = unreadable("entry", item, i)
            if wrong is not None:
                entry_notes.append(place((wrong,), by=unreadable))
                idents.append(_BROKEN)
            elif "itemIdentifier" not in item:
                other = ", ".join(repr(k) for k in item) or "no key at all"
                missing = problem(
                    "missing",
                    f"The failure has {other} instead of 'itemIdentifier' (a wrong key name), so the whole "
                    "batch fails.",
                    "batchItemFailures",
                    i,
                    "itemIdentifier",
                )
                entry_notes.append(place((missing,), by=reporting_on))
                idents.append(_BROKEN)
            else:
                others = [
                    unknown_key(
                        key, "batchItemFailures", i, ignored="is ignored; a failure carries only itemIdentifier."
                    )
                    for key in item
                    if key != "itemIdentifier"
                ]
                entry_notes.append(place(others, by=reporting_on) if others else [])
                idents.append(item["itemIdentifier"])
    # each listed identifier, in listing order, names a message of the batch, once: else the first thing wrong
    known: Any = batch_ids
    if known is not None and len(known) > 32:
        known = set(known)  # a long batch: look ids up in a set
    listed: dict[str, None] = {}  # the usable identifiers, in listing order, each once
    broken = False
    issue: Issue | None
    i = -1  # (counted here: an enumerate costs more than the short list it counts)
    for ident in idents:
        i += 1
        if entry_notes is None:  # a typed failure: its identifier is a string of at least one character
            ident = ident.item_identifier
        else:  # a decoded entry: what it said, and whether its identifier reads
            if entry_notes[i]:
                issues.extend(entry_notes[i])
            if ident is _BROKEN:
                broken = True
                continue
            unusable = _unusable(ident, i)
            if unusable is not None:
                issue = place((unusable,), by=reporting_on)[0]  # (Q8's, or Q8a's: its finding names it)
                issues.append(issue)
                broken = broken or issue.severity == "error"
                continue
        if known is not None and ident not in known:
            issue = place((_unknown(ident, i, known),), by=reporting_on)[0]
        else:
            twice = listed_before(ident, i, listed)  # Q8c
            if twice is None:
                listed[ident] = None
                continue
            issue = place((twice,), by=listed_before)[0]
        issues.append(issue)
        broken = broken or issue.severity == "error"
    if broken:
        return _failure(issues)
    if not listed:  # an empty list
        return Reading("success", (), _ON, _SUCCESS, issues)
    return Reading("partial", tuple(listed), _ON, "", issues)


_BROKEN = object()  # an entry whose identifier cannot be read (its note says why)


def _unusable(ident: Any, i: int) -> Finding | None:
    """What `reporting_on` (Q8) finds of a decoded entry's itemIdentifier that no message can be: null, not a
    string (Q8a's, `unreadable`'s finding), or "" (the declared constraint, which the typed response's identifiers
    met in the compiled read); None when it reads."""
    if ident is None:
        return problem(
            "type", "itemIdentifier is null, so the whole batch fails.", "batchItemFailures", i, "itemIdentifier"
        )
    if type(ident) is not str:
        wrong = unreadable("itemIdentifier", ident, i)  # Q8a: not a string (a str subclass reads)
        if wrong is not None:
            return wrong
    if _ITEM_OK(ident):
        return None
    # "": the declared constraint's sentence (ITEM_IDENTIFIER, declared with this rule, Q8)
    return problem(ITEM_IDENTIFIER.code, ITEM_IDENTIFIER.sentence(ident), "batchItemFailures", i, "itemIdentifier")


def _unknown(ident: str, i: int, known: Any) -> Finding:
    """Q8: an itemIdentifier that is not a messageId of the batch, with a hint at what was meant."""
    near = [k for k in known if k.lower() == ident.lower()]
    hint = f" Did you mean '{near[0]}'? Ids are case-sensitive." if near else ""
    if not near and ident.startswith("AQEB") and len(ident) > 40:
        # the queue's receipt handles start so: name what was listed, and what to list instead
        hint = ' It looks like a receiptHandle: list the record\'s messageId (record["messageId"]).'
    return problem(
        "unknown",
        f"'{short_id(ident)}' is not a messageId of this batch, so the whole batch fails.{hint}",
        "batchItemFailures",
        i,
        "itemIdentifier",
    )


def _failure(issues: list[Issue]) -> Reading:
    """Complete failure: the rule of the first error decides, and its sentence is the reason."""
    cause = next((i for i in issues if i.severity == "error"), None)
    rule_id = cause.rule if cause is not None and cause.rule else _ON
    tag = " (inferred)" if _rules.get(rule_id).inferred else ""
    said = cause.message if cause is not None else "the response is invalid."
    return Reading("failure", (), rule_id, f"Complete failure{tag}: {said} Every message returns to the queue.", issues)


#: Q8's partial-failure sentences made so far, by (failed, deleted) counts (`partial_reason` makes each once)
PARTIAL_REASONS: Readings[tuple[int, int], str] = Readings()


def partial_reason(failed: int, deleted: int) -> str:
    """Q8's sentence for a partial failure: how many listed messages return, how many others are deleted."""
    reason = PARTIAL_REASONS.get((failed, deleted))
    if reason is None:
        listed = "1 listed message returns" if failed == 1 else f"{failed} listed messages return"
        if deleted == 0:
            rest = "no other message is deleted"
        elif deleted == 1:
            rest = "the other one is deleted"
        else:
            rest = f"the other {deleted} are deleted"
        reason = f"Partial failure: {listed} to the queue after the visibility timeout; {rest}."
        PARTIAL_REASONS.remember((failed, deleted), reason)  # the sentence for a pair of counts is made once
    return reason


#: what the platform reads at each place of a response, the keys that lead there (None: the entry's position), and
#: what it says of anything else (Q8a)
_PLACES: dict[str, tuple[type, tuple[str | None, ...], str]] = {
    "response": (dict, (), "The response is {}; the platform reads only an object or null, so the whole batch fails."),
    "batchItemFailures": (
        list,
        ("batchItemFailures",),
        "batchItemFailures is {}; it must be a list, so the whole batch fails.",
    ),
    "entry": (
        dict,
        ("batchItemFailures", None),
        "Each failure is an object with itemIdentifier; this one is {}, so the whole batch fails.",
    ),
    "itemIdentifier": (
        str,
        ("batchItemFailures", None, "itemIdentifier"),
        "itemIdentifier is {}; it must be the messageId string, so the whole batch fails.",
    ),
}


@rule(
    "Q8a",
    "queue",
    "inferred",
    "Also complete failure: a top level that is not an object or null, batchItemFailures "
    "not a list, an entry not an object, an itemIdentifier not a string.",
)
def unreadable(place: str, value: Any, i: int = 0) -> Finding | None:
    """Q8a: a value the platform cannot read at its `place` of the response ("response", "batchItemFailures",
    the `i`th "entry" or its "itemIdentifier"; null is Q8's): an error, and the whole batch fails; None when it
    reads."""
    kind, keys, sentence = _PLACES[place]
    if isinstance(value, kind):
        return None
    steps = [i if key is None else key for key in keys]  # None: the entry's position
    return problem("type", sentence.format(describe(value)), *steps, of=unreadable)  # Q8a's, whoever places it


_MISSPELLED = (
    "Complete success (inferred): no batchItemFailures key, so every message is deleted; a misspelled key "
    "loses the failures."
)


@rule(
    "Q8b",
    "queue",
    "inferred",
    "A misspelled top-level key (e.g. BatchItemFailures) reads as no failures: complete success, with a loud warning.",
    severity="warning",
)
def misspelled_keys(response: dict[Any, Any]) -> tuple[list[Finding], bool]:
    """Q8b (and G1): keys other than batchItemFailures are ignored; a misspelling of it loses the failures, and
    decides the success when batchItemFailures is absent (its sentence: `_MISSPELLED`). (findings, misspelled?)"""
    found = []
    misspelled = False
    for key in response:
        if key == "batchItemFailures":
            continue
        if isinstance(key, str) and key.lower().replace("_", "") in _SPELLINGS:
            misspelled = True
            found.append(
                caution(
                    "unknown",
                    f"'{key}' is not 'batchItemFailures' (names are case-sensitive): the platform sees no "
                    "failures and deletes the whole batch. The failures you meant to report are lost.",
                    key,
                )
            )
        else:
            found.append(unknown_key(key, ignored="is not part of the response; the platform ignores it."))
    return found, misspelled


@rule("Q8c", "queue", "inferred", "An itemIdentifier listed twice counts once.", severity="warning")
def listed_before(ident: str, i: int, listed: Container[str]) -> Finding | None:
    """Q8c: an itemIdentifier listed before counts once: a warning (the message fails once); None the first time."""
    if ident not in listed:
        return None
    return caution(
        "duplicate", f"'{short_id(ident)}' is listed twice; it counts once.", "batchItemFailures", i, "itemIdentifier"
    )


@with_settings(QueueConfig, "report_batch_item_failures")
def validate_response(
    response: Any, *, event: Any = None, config: QueueConfig | None = None, **settings: Unpack[QueueReportingSetting]
) -> Report:
    """Every problem of a queue handler's response (pass `event` to match ids against the batch); never raises
    for any response. The queue's settings: `config`, or `report_batch_item_failures=` (Q7). JSON text (str,
    bytes, `Raw`) is read as JSON; the issues are those `outcome` reports for the same response."""
    from ._event import correlation_ids

    reporting = QueueConfig.of(config, settings, validate_response).report_batch_item_failures
    if event is not None and type(event) is not dict:
        event, _ = decode_json(event)  # the event as JSON text or bytes, like validate_event takes it
        event = {} if event is MISSING or type(event) is not dict else event
    batch_ids = tuple(correlation_ids(event)) if event is not None else None
    value, notes, unencodable = platform_reads(response, text_is_json=True)
    reading = read(value, batch_ids, reporting, notes, unencodable, event)
    return Report(reading.issues, "queue", None, "response")


def json_schema(kind: str = "event") -> dict[str, Any]:
    """A Draft 2020-12 JSON Schema of the queue event (`kind="event"`) or response (`"response"`), from the
    declarations fnkit validates with; what a schema cannot express is listed in its description."""
    from .._engine.validate import Contract
    from ._contents import digest_mismatch, record_keys
    from ._event import EVENT_CONTRACT

    if kind == "event":
        return EVENT_CONTRACT.json_schema(
            also=(placeholder_arn, fifo_attributes, digest_mismatch, record_keys)
        )  # asked by checks
    if kind == "response":
        schema = Contract(RESPONSE_SHAPE, [], source="queue", subject="response").json_schema(
            also=(reporting_on, unreadable, misspelled_keys, listed_before, reporting_off)
        )
        head = {k: schema.pop(k) for k in ("$schema", "title", "description")}
        return {**head, "anyOf": [schema, {"type": "null"}]}  # a null response is complete success (Q8)
    raise ValueError(f"kind is 'event' or 'response', not {kind!r}")
