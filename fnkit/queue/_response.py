"""The queue response: `batchItemFailures`, and how the platform classifies it (Q8, Q8a-c)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .._report import MISSING, Issue, Raw, Report, decode_json, describe, error, warning
from .._shape import STR, F, ListOf, Nullable, Shape

ITEM_FAILURE = Shape(
    "BatchItemFailure",
    [F("itemIdentifier", STR, doc="The messageId of a failed message.", rule="QS6")],
    rule="QS6",
)
RESPONSE_SHAPE = Shape(
    "QueueResponse",
    [F("batchItemFailures", Nullable(ListOf(ITEM_FAILURE)), required=False,
       doc="The messages that failed; empty or null when all succeeded.", rule="QS6")],
    rule="QS6",
    doc="What a queue handler returns when partial-batch reporting is on.",
)

_SPELLINGS = {"batchitemfailures", "batch_item_failures", "batchitemfailure", "failures", "itemfailures"}


def classify(response: Any, batch_ids: list[str] | None) -> tuple[str, list[str], list[Issue]]:
    """Read a decoded response as the platform does: (kind, failed ids in order, issues).

    kind is "success", "partial" or "failure". With `batch_ids` None, ids are not
    matched against a batch (only the response's own form is judged).
    """
    issues: list[Issue] = []
    if response is None:
        return "success", [], issues
    if not isinstance(response, dict):
        issues.append(error("$", "type", f"The response is {describe(response)}; the platform reads only an object or null, so the whole batch fails.", "Q8a"))
        return "failure", [], issues
    for key in response:
        if key != "batchItemFailures":
            if isinstance(key, str) and key.lower().replace("_", "") in _SPELLINGS:
                issues.append(warning(f"$['{key}']" if not key.isidentifier() else f"$.{key}", "unknown",
                                      f"'{key}' is not 'batchItemFailures' (names are case-sensitive): the platform sees no failures and deletes the whole batch. The failures you meant to report are lost.", "Q8b"))
            else:
                issues.append(warning(f"$.{key}" if isinstance(key, str) and key.isidentifier() else f"$[{key!r}]", "unknown",
                                      f"'{key}' is not part of the response; the platform ignores it.", "G1"))
    failures = response.get("batchItemFailures")
    if failures is None:
        return "success", [], issues
    if not isinstance(failures, list):
        issues.append(error("$.batchItemFailures", "type", f"batchItemFailures is {describe(failures)}; it must be a list, so the whole batch fails.", "Q8a"))
        return "failure", [], issues
    known = set(batch_ids) if batch_ids is not None else None
    failed: list[str] = []
    listed: set[str] = set()
    broken = False
    for i, item in enumerate(failures):
        path = f"$.batchItemFailures[{i}]"
        if not isinstance(item, dict):
            issues.append(error(path, "type", f"Each failure is an object with itemIdentifier; this one is {describe(item)}, so the whole batch fails.", "Q8a"))
            broken = True
            continue
        if "itemIdentifier" not in item:
            other = ", ".join(repr(k) for k in item) or "no key at all"
            issues.append(error(f"{path}.itemIdentifier", "missing", f"The failure has {other} instead of 'itemIdentifier' (a wrong key name), so the whole batch fails.", "Q8"))
            broken = True
            continue
        for key in item:
            if key != "itemIdentifier":
                issues.append(warning(f"{path}.{key}" if isinstance(key, str) and key.isidentifier() else f"{path}[{key!r}]", "unknown",
                                      f"'{key}' is ignored; a failure carries only itemIdentifier.", "G1"))
        ident = item["itemIdentifier"]
        ipath = f"{path}.itemIdentifier"
        if ident is None:
            issues.append(error(ipath, "type", "itemIdentifier is null, so the whole batch fails.", "Q8"))
            broken = True
        elif not isinstance(ident, str):
            issues.append(error(ipath, "type", f"itemIdentifier is {describe(ident)}; it must be the messageId string, so the whole batch fails.", "Q8a"))
            broken = True
        elif ident == "":
            issues.append(error(ipath, "format", "itemIdentifier is an empty string, so the whole batch fails.", "Q8"))
            broken = True
        elif known is not None and ident not in known:
            near = [k for k in known if k.lower() == ident.lower()]
            hint = f" Did you mean '{near[0]}'? Ids are case-sensitive." if near else ""
            issues.append(error(ipath, "unknown", f"'{ident}' is not a messageId of this batch, so the whole batch fails.{hint}", "Q8"))
            broken = True
        elif ident in listed:
            issues.append(warning(ipath, "duplicate", f"'{ident}' is listed twice; it counts once.", "Q8c"))
        else:
            listed.add(ident)
            failed.append(ident)
    if broken:
        return "failure", failed, issues
    if not failed:
        return "success", [], issues
    return "partial", failed, issues


def validate_response(response: Any, *, event: Any = None, report_batch_item_failures: bool = True) -> Report:
    """Every problem of a queue handler's response (pass `event` to match ids against the batch); never raises."""
    from ._event import correlation_ids

    if isinstance(response, Raw) or isinstance(response, (str, bytes, bytearray, memoryview)):
        value, issues = decode_json(response, "Q8")
        if value is MISSING:
            issues = [Issue(i.path, i.code, i.message + " The platform treats invalid JSON as a complete failure.", "error", "Q8") for i in issues]
            return Report(issues, "queue", None, "response")
        response = value
    batch_ids = correlation_ids(event) if event is not None else None
    try:
        _, _, issues = classify(response, batch_ids)
    except RecursionError:
        issues = [error("$", "limit", "The response nests too deeply to read.", "Q8a")]
    if not report_batch_item_failures and isinstance(response, dict) and response.get("batchItemFailures"):
        issues.append(warning("$.batchItemFailures", "ignored",
                              "Partial-batch reporting is off: the platform ignores this list and deletes the whole batch, so these failures are lost.", "Q7"))
    return Report(issues, "queue", None, "response")


def iter_group_order(records: list[dict], failed: set[str]) -> Iterator[Issue]:
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
            yield warning(f"$.Records[{i}]", "ordering",
                          f"'{mid}' of group '{group}' follows failed '{failed_groups[group]}' but is not listed, so it is deleted and the group's order breaks. List every message after the first failure of a group.", "Q10")
