"""The queue response: `batchItemFailures`, and how the platform reads it (Q8, Q8a-c).

`read_response(value, batch_ids)` is the one reading of a decoded response: the compiled
shape takes the common, well-formed answers in one `msgspec.convert`; anything else is read
entry by entry, saying where and why. Both ways judge the listed itemIdentifiers with the same
`_identifiers`, so the verdicts cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from operator import attrgetter
from typing import Any, cast

import msgspec

from .._cells import short_id
from .._config import with_settings
from .._report import MISSING, Issue, Raw, Report, child_path, decode_json, describe, error, warning
from .._shape import F, ListOf, Nullable, Shape, Text
from ..rules import rule
from ..types import QueueKind
from ._config import QueueConfig

ITEM_IDENTIFIER = Text(min_len=1, rule="Q8", message="itemIdentifier is an empty string, so the whole batch fails.")
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
_ITEM_IDENTIFIER = attrgetter("item_identifier")  # the identifiers of typed failures, read at C speed
_SPELLINGS = {"batchitemfailures", "batch_item_failures", "batchitemfailure", "failures", "itemfailures"}


@rule(
    "Q8b",
    "queue",
    "inferred",
    "A misspelled top-level key (e.g. BatchItemFailures) reads as no failures: complete success, with a loud warning.",
    severity="warning",
)
def _key_issues(response: dict[Any, Any]) -> list[Issue]:
    """Q8b and G1: keys other than batchItemFailures are ignored; a misspelling of it loses the failures."""
    issues = []
    for key in response:
        if key == "batchItemFailures":
            continue
        path = child_path("$", key)
        if isinstance(key, str) and key.lower().replace("_", "") in _SPELLINGS:
            issues.append(
                warning(
                    path,
                    "unknown",
                    f"'{key}' is not 'batchItemFailures' (names are case-sensitive): the platform sees no "
                    "failures and deletes the whole batch. The failures you meant to report are lost.",
                    "Q8b",
                )
            )
        else:
            issues.append(
                warning(path, "unknown", f"'{key}' is not part of the response; the platform ignores it.", "G1")
            )
    return issues


def read_response(response: Any, batch_ids: Any) -> tuple[QueueKind, list[str], list[Issue]]:
    """Read a decoded response as the platform does: (kind, failed ids in listing order, issues).

    kind is "success", "partial" or "failure". With `batch_ids` None, ids are not matched
    against a batch (only the response's own form is judged).
    """
    if type(response) is QueueResponse:  # the well-formed answers: {}, null or a list of {"itemIdentifier": "..."}
        typed = response
    elif response is None:
        return "success", [], []
    elif type(response) is dict:
        try:
            typed = msgspec.convert(response, QueueResponse, strict=True)
        except (msgspec.ValidationError, UnicodeEncodeError):  # msgspec cannot word an error about a lone surrogate
            typed = None
    else:
        typed = None
    if typed is not None:
        failures = typed.batch_item_failures
        if not failures:
            return "success", [], []
        kind, failed, issues = _identifiers(map(_ITEM_IDENTIFIER, failures), batch_ids, [])
        return cast("QueueKind", kind), failed, issues
    kind, failed, issues = classify(response, batch_ids)
    return cast("QueueKind", kind), failed, issues


@rule(
    "Q8a",
    "queue",
    "inferred",
    "Also complete failure: a top level that is not an object or null, batchItemFailures "
    "not a list, an entry not an object, an itemIdentifier not a string.",
)
def classify(response: Any, batch_ids: Any) -> tuple[str, list[str], list[Issue]]:
    """The entry-by-entry reading of any decoded response (what `read_response` does with an odd one)."""
    if response is None:
        return "success", [], []
    if not isinstance(response, dict):
        return (
            "failure",
            [],
            [
                error(
                    "$",
                    "type",
                    f"The response is {describe(response)}; the platform reads only an "
                    "object or null, so the whole batch fails.",
                    "Q8a",
                )
            ],
        )
    issues = _key_issues(response)
    failures = response.get("batchItemFailures")
    if failures is None:
        return "success", [], issues
    if not isinstance(failures, list):
        issues.append(
            error(
                "$.batchItemFailures",
                "type",
                f"batchItemFailures is {describe(failures)}; it must be a list, so the whole batch fails.",
                "Q8a",
            )
        )
        return "failure", [], issues
    idents: list[Any] = []
    notes: list[list[Issue]] = []  # what each entry says before its identifier is judged
    for i, item in enumerate(failures):
        path = f"$.batchItemFailures[{i}]"
        if not isinstance(item, dict):
            notes.append(
                [
                    error(
                        path,
                        "type",
                        f"Each failure is an object with itemIdentifier; this one is "
                        f"{describe(item)}, so the whole batch fails.",
                        "Q8a",
                    )
                ]
            )
            idents.append(_BROKEN)
        elif "itemIdentifier" not in item:
            other = ", ".join(repr(k) for k in item) or "no key at all"
            notes.append(
                [
                    error(
                        f"{path}.itemIdentifier",
                        "missing",
                        f"The failure has {other} instead of "
                        "'itemIdentifier' (a wrong key name), so the whole batch fails.",
                        "Q8",
                    )
                ]
            )
            idents.append(_BROKEN)
        else:
            notes.append(
                [
                    warning(
                        child_path(path, key),
                        "unknown",
                        f"'{key}' is ignored; a failure carries only itemIdentifier.",
                        "G1",
                    )
                    for key in item
                    if key != "itemIdentifier"
                ]
            )
            idents.append(item["itemIdentifier"])
    judged: tuple[str, list[str], list[Issue]] = _identifiers(idents, batch_ids, issues, notes)  # `@rule`: untyped
    return judged


_BROKEN = object()  # an entry whose identifier cannot be read (its note says why)


@rule("Q8c", "queue", "inferred", "An itemIdentifier listed twice counts once.", severity="warning")
def _identifiers(
    idents: Any, batch_ids: Any, issues: list[Issue], notes: list[list[Issue]] | None = None
) -> tuple[str, list[str], list[Issue]]:
    """The verdict on the listed identifiers, in listing order (Q8/Q8a/Q8c): each names a message of the
    batch, once, or says what is wrong with it. `batch_ids`: the batch's ids (a set or tuple), or None to
    match no batch; `notes`: issues to say before each entry's own."""
    known = batch_ids
    if known is not None and len(known) > 32 and not isinstance(known, (set, frozenset)):
        known = set(known)  # a long batch: look ids up in a set
    meets = _ITEM_OK
    failed: list[str] = []
    listed: set[str] = set()
    broken = False
    for i, ident in enumerate(idents):
        if notes is not None:
            if notes[i]:
                issues.extend(notes[i])
            if ident is _BROKEN:
                broken = True
                continue
        if type(ident) is str and meets(ident) and (known is None or ident in known) and ident not in listed:
            listed.add(ident)
            failed.append(ident)
            continue
        path = f"$.batchItemFailures[{i}].itemIdentifier"
        if ident is None:
            issues.append(error(path, "type", "itemIdentifier is null, so the whole batch fails.", "Q8"))
        elif not isinstance(ident, str):
            issues.append(
                error(
                    path,
                    "type",
                    f"itemIdentifier is {describe(ident)}; it must be the messageId string, so the whole batch fails.",
                    "Q8a",
                )
            )
        elif ITEM_IDENTIFIER.broken(ident):
            issues.append(
                Issue(path, ITEM_IDENTIFIER.code, ITEM_IDENTIFIER.sentence(ident), "error", ITEM_IDENTIFIER.rule)
            )
        elif known is not None and ident not in known:
            near = [k for k in known if k.lower() == ident.lower()]
            hint = f" Did you mean '{near[0]}'? Ids are case-sensitive." if near else ""
            if not near and ident.startswith("AQEB") and len(ident) > 40:
                # the queue's receipt handles start so: name what was listed, and what to list instead
                hint = ' It looks like a receiptHandle: list the record\'s messageId (record["messageId"]).'
            issues.append(
                error(
                    path,
                    "unknown",
                    f"'{short_id(ident)}' is not a messageId of this batch, so the whole batch fails.{hint}",
                    "Q8",
                )
            )
        elif ident in listed:  # listed before: a warning, and it counts once
            issues.append(warning(path, "duplicate", f"'{short_id(ident)}' is listed twice; it counts once.", "Q8c"))
            continue
        else:  # a str subclass naming a message of the batch
            listed.add(ident)
            failed.append(ident)
            continue
        broken = True
    if broken:
        return "failure", failed, issues
    return ("partial" if failed else "success"), failed, issues


@with_settings(QueueConfig, "report_batch_item_failures")
def validate_response(
    response: Any, *, event: Any = None, config: QueueConfig | None = None, **settings: Any
) -> Report:
    """Every problem of a queue handler's response (pass `event` to match ids against the batch); never raises
    for any response. The queue's settings: `config`, or `report_batch_item_failures=` (Q7)."""
    from ._event import correlation_ids

    reporting = QueueConfig.of(config, settings, validate_response).report_batch_item_failures

    notes: list[Issue] = []  # what decoding the text said (a byte-order mark skipped, G0)
    if isinstance(response, (Raw, str, bytes, bytearray, memoryview)):
        value, notes = decode_json(response, "Q8")
        if value is MISSING:
            issues = [
                i
                if i.severity == "warning"
                else Issue(
                    i.path,
                    i.code,
                    i.message + " The platform treats invalid JSON as a complete failure.",
                    "error",
                    "Q8",
                )
                for i in notes
            ]
            return Report(issues, "queue", None, "response")
        response = value
    if event is not None and not isinstance(event, dict):
        event, _ = decode_json(event, "G0")  # the event as JSON text or bytes, like validate_event takes it
        event = {} if event is MISSING else event
    batch_ids = correlation_ids(event) if event is not None else None
    try:
        _, _, issues = read_response(response, batch_ids)
    except RecursionError:
        issues = [error("$", "limit", "The response nests too deeply to read.", "Q8a")]
    issues = [*notes, *issues]
    if not reporting and isinstance(response, dict) and response.get("batchItemFailures"):
        issues.append(
            warning(
                "$.batchItemFailures",
                "ignored",
                "Partial-batch reporting is off: the platform ignores this list and deletes the whole "
                "batch, so these failures are lost.",
                "Q7",
            )
        )
    return Report(issues, "queue", None, "response")


@rule(
    "Q10",
    "queue",
    "inferred",
    "FIFO partial response: a listed message of a group followed by an unlisted message of "
    "the same group breaks the group's order (the unlisted one is deleted); report every failed and unprocessed "
    "message instead.",
    severity="warning",
)
def iter_group_order(records: list[Any], failed: set[str]) -> Iterator[Issue]:
    """Q10: a listed message of a group followed by an unlisted one of the same group breaks the order."""
    failed_groups: dict[str, str] = {}
    for i, rec in enumerate(records):
        attrs = rec.get("attributes") if isinstance(rec, dict) else None
        group = attrs.get("MessageGroupId") if isinstance(attrs, dict) else None
        mid = rec.get("messageId") if isinstance(rec, dict) else None
        if not isinstance(group, str) or not isinstance(mid, str):
            continue
        if mid in failed:
            failed_groups.setdefault(group, mid)
        elif group in failed_groups:
            yield warning(
                f"$.Records[{i}]",
                "ordering",
                f"'{mid}' of group '{group}' follows failed '{failed_groups[group]}' but is not listed, so "
                "it is deleted and the group's order breaks. List every message after the first failure of "
                "a group.",
                "Q10",
            )


def json_schema(kind: str = "event") -> dict[str, Any]:
    """A Draft 2020-12 JSON Schema of the queue event (`kind="event"`) or response (`"response"`), from the
    declarations fnkit validates with; what a schema cannot express is listed in its description."""
    from .._validate import Contract
    from ._event import EVENT_CONTRACT

    if kind == "event":
        return EVENT_CONTRACT.json_schema()
    if kind == "response":
        schema = Contract(RESPONSE_SHAPE, [], source="queue", subject="response").json_schema(
            also=("Q8", "Q8a", "Q8b", "Q8c", "Q7")
        )
        head = {k: schema.pop(k) for k in ("$schema", "title", "description")}
        return {**head, "anyOf": [schema, {"type": "null"}]}  # a null response is complete success (Q8)
    raise ValueError(f"kind is 'event' or 'response', not {kind!r}")
