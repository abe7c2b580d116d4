"""What the queue poller does with a handler's response (Q6, Q7, Q8, Q10)."""

from __future__ import annotations

from typing import Any, Callable

from .. import rules as _rules
from .._invoke import Context, Invocation, encode_response, invoke
from .._report import MISSING, ContractError, Issue, Raw, Report, decode_json, error, loads_strict, warning
from ._event import _records, correlation_ids, validate_event
from ._response import classify, iter_group_order

_EMPTY = Report((), "queue", None, "response")
_REASONS = {
    "success": "Complete success: every message of the batch is deleted.",
}


class BatchOutcome:
    """What happens to each message of a batch: `kind`, `failed_ids`, `deleted_ids`, `rule`, `reason`."""

    __slots__ = ("kind", "failed_ids", "deleted_ids", "rule", "reason", "issues", "invocation", "event_ids")
    source = "queue"

    def __init__(self, kind: str, failed_ids: tuple, deleted_ids: tuple, rule: str, reason: str,
                 issues: Report = _EMPTY, invocation: Invocation | None = None, event_ids: tuple = ()) -> None:
        self.kind = kind
        self.failed_ids = failed_ids
        self.deleted_ids = deleted_ids
        self.rule = rule
        self.reason = reason
        self.issues = issues
        self.invocation = invocation
        self.event_ids = event_ids

    @property
    def inferred(self) -> bool:
        """True when the deciding rule is fnkit's inference, not a documented fact."""
        return _rules.get(self.rule).inferred

    @property
    def warnings(self) -> list[Issue]:
        return self.issues.warnings

    def _replace(self, **changes: Any) -> "BatchOutcome":
        values = {k: getattr(self, k) for k in self.__slots__}
        values.update(changes)
        return BatchOutcome(**values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BatchOutcome):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in ("kind", "failed_ids", "deleted_ids", "rule", "reason"))

    __hash__ = None  # type: ignore[assignment]

    def rows(self) -> list[dict]:
        """One row per record: what happens to it, and why."""
        failed = set(self.failed_ids)
        ids = self.event_ids or tuple(self.failed_ids) + tuple(self.deleted_ids)
        out = []
        for i, mid in enumerate(ids):
            out.append({
                "source": "queue",
                "item": mid,
                "index": i,
                "kind": self.kind,
                "action": "retry" if mid in failed else "delete",
                "rule": self.rule,
                "inferred": self.inferred,
                "reason": self.reason,
                "warnings": "; ".join(w.message for w in self.issues.warnings),
            })
        return out

    def __repr__(self) -> str:
        return (f"BatchOutcome(kind={self.kind!r}, failed_ids={list(self.failed_ids)!r}, "
                f"deleted={len(self.deleted_ids)}, rule={self.rule!r}, warnings={len(self.issues.warnings)})")

    def _repr_html_(self) -> str:
        from html import escape

        colour = {"success": "#1a7f37", "partial": "#9a6700", "failure": "#cf222e"}[self.kind]
        tag = " <i>(inferred)</i>" if self.inferred else ""
        rows = "".join(
            f"<tr><td><code>{escape(r['item'])}</code></td><td>{r['action']}</td></tr>" for r in self.rows()
        )
        warns = "".join(f"<li>⚠ {escape(w.message)} <code>[{w.rule}]</code></li>" for w in self.issues.warnings)
        return (f"<div><b style='color:{colour}'>{self.kind}</b> · rule <code>{self.rule}</code>{tag}<br>"
                f"{escape(self.reason)}<ul>{warns}</ul><table><tr><th>messageId</th><th>action</th></tr>{rows}</table></div>")


def _fast(ids: list[str], response: Any) -> BatchOutcome | None:
    """The common forms, decided in a few steps; None sends the response to the full reading."""
    all_ids = tuple(ids)
    if response is None:
        return BatchOutcome("success", (), all_ids, "Q8", "Complete success: the response is null, so every message is deleted.", _EMPTY, None, all_ids)
    if type(response) is not dict or len(response) != 1:
        return None
    failures = response.get("batchItemFailures", MISS)
    if type(failures) is not list:
        if failures is None:
            return BatchOutcome("success", (), all_ids, "Q8", "Complete success: batchItemFailures is null, so every message is deleted.", _EMPTY, None, all_ids)
        return None
    if not failures:
        return BatchOutcome("success", (), all_ids, "Q8", "Complete success: batchItemFailures is empty, so every message is deleted.", _EMPTY, None, all_ids)
    failed = []
    for item in failures:
        if type(item) is not dict or len(item) != 1:
            return None
        ident = item.get("itemIdentifier")
        if type(ident) is not str or not ident:
            return None
        failed.append(ident)
    fset = set(failed)
    if len(fset) != len(failed) or not fset.issubset(all_ids):
        return None
    deleted = tuple([i for i in ids if i not in fset])
    failed_ids = (failed[0],) if len(failed) == 1 else tuple([i for i in ids if i in fset])  # batch order
    return BatchOutcome("partial", failed_ids, deleted, "Q8", _partial_reason(len(failed), len(deleted)),
                        _EMPTY, None, all_ids)


_REASONS: dict[tuple[int, int], str] = {}


def _partial_reason(failed: int, deleted: int) -> str:
    try:
        return _REASONS[failed, deleted]
    except KeyError:
        reason = (f"Partial failure: {failed} listed message(s) return to the queue after the visibility timeout; "
                  f"the other {deleted} are deleted.")
        if len(_REASONS) < 10_000:
            _REASONS[failed, deleted] = reason
        return reason


MISS = object()


def outcome(event: Any, response: Any, *, report_batch_item_failures: bool = True) -> BatchOutcome:
    """What the poller does with `response` (a returned value, `Raw`, or an `Invocation`) for this batch."""
    if type(event) is not dict:
        # the event as JSON text or bytes, like validate_event takes it
        event, _ = decode_json(event, "G0")
        event = None if event is MISSING else event
    records = event.get("Records") if type(event) is dict else None
    ids = None
    if report_batch_item_failures and type(records) is list and type(response) is not Raw and type(response) is not Invocation:
        # the common case in few steps: plain records of a standard queue
        try:
            ids = [r["messageId"] for r in records]
            "".join(ids)  # every id a string, checked at C speed (TypeError otherwise)
            plain = "MessageGroupId" not in records[0]["attributes"] if records else True
        except (TypeError, KeyError, IndexError):
            ids, plain = None, False
        if plain and ids is not None:
            try:
                quick = _fast(ids, response)
            except TypeError:
                quick = None
            if quick is not None:
                return quick
        ids = None
    if ids is None:
        ids = correlation_ids(event)
    return _full(event, ids, response, report_batch_item_failures)


def _all_fail(ids: list[str], rule: str, reason: str, issues: list[Issue], invocation: Invocation | None) -> BatchOutcome:
    return BatchOutcome("failure", tuple(ids), (), rule, reason, Report(issues, "queue", None, "response"), invocation, tuple(ids))


def _full(event: Any, ids: list[str], response: Any, reporting: bool) -> BatchOutcome:
    invocation: Invocation | None = None
    if isinstance(response, Invocation):
        invocation = response
        if invocation.timed_out:
            return _all_fail(ids, "Q6", f"The function timed out after {invocation.timeout_s} s: nothing is deleted; the whole batch returns after the visibility timeout.", [error("$", "timeout", "The handler did not finish within its timeout.", "H4")], invocation)
        if invocation.error is not None:
            return _all_fail(ids, "Q6", f"The function raised {invocation.error.type}: nothing is deleted; the whole batch returns after the visibility timeout.", [error("$", "error", f"The handler raised {invocation.error}.", "H3")], invocation)
        text = invocation.response_text
        response = Raw(text) if text is not None else None
        if text is None:
            why = invocation.encode_error or "unknown reason"
            if not reporting:
                return _not_reporting(ids, None, invocation, [warning("$", "encoding", f"The returned value is not JSON ({why}); ignored because reporting is off.", "H2")])
            return _all_fail(ids, "Q8", "The response is not valid JSON: complete failure, every message returns to the queue.",
                             [error("$", "format", f"The returned value cannot be encoded as JSON ({why}).", "H2")], invocation)
    if isinstance(response, Raw):
        try:
            text = response.text()
            response = loads_strict(text) if text is not None else _INVALID
        except (ValueError, RecursionError):
            response = _INVALID
    elif response is not None:
        text, why = encode_response(response)
        try:
            response = _INVALID if text is None else loads_strict(text)
        except (ValueError, RecursionError):
            response = _INVALID
    if not reporting:
        value = None if response is _INVALID else response
        return _not_reporting(ids, value, invocation, [])
    if response is _INVALID:
        return _all_fail(ids, "Q8", "The response is not valid JSON: complete failure, every message returns to the queue.",
                         [error("$", "format", "The response is not valid JSON.", "Q8")], invocation)
    kind, failed, issues = classify(response, ids)
    if kind == "failure":
        cause = next((i for i in issues if i.severity == "error"), None)
        rule = cause.rule if cause is not None else "Q8"
        tag = " (inferred)" if _rules.get(rule).inferred else ""
        reason = f"Complete failure{tag}: {cause.message if cause else 'the response is invalid.'} Every message returns to the queue."
        return _all_fail(ids, rule, reason, issues, invocation)
    if kind == "success":
        q8b = any(i.rule == "Q8b" for i in issues)
        rule = "Q8b" if q8b else "Q8"
        reason = ("Complete success (inferred): no batchItemFailures key, so every message is deleted; a misspelled key loses the failures."
                  if q8b else "Complete success: no failures reported, so every message is deleted.")
        return BatchOutcome("success", (), tuple(ids), rule, reason, Report(issues, "queue", None, "response"), invocation, tuple(ids))
    fset = set(failed)
    issues.extend(iter_group_order(_records(event), fset))
    deleted = tuple(i for i in ids if i not in fset)
    ordered_ids = tuple(i for i in ids if i in fset)
    reason = f"Partial failure: {len(failed)} listed message(s) return to the queue after the visibility timeout; the other {len(deleted)} are deleted."
    if any(i.rule == "Q10" for i in issues):
        reason += " The FIFO group order breaks (see warnings)."
    return BatchOutcome("partial", ordered_ids, deleted, "Q8", reason, Report(issues, "queue", None, "response"), invocation, tuple(ids))


_INVALID = object()


def _not_reporting(ids: list[str], response: Any, invocation: Invocation | None, issues: list[Issue]) -> BatchOutcome:
    failures = response.get("batchItemFailures") if isinstance(response, dict) else None
    if isinstance(failures, list) and failures:
        issues.append(warning("$.batchItemFailures", "ignored",
                              f"Partial-batch reporting is off: the {len(failures)} reported failure(s) are ignored and deleted with the rest. They are lost.", "Q7"))
    return BatchOutcome("success", (), tuple(ids), "Q7",
                        "Success (inferred): reporting is off, so the response is ignored and the whole batch is deleted.",
                        Report(issues, "queue", None, "response"), invocation, tuple(ids))


def run(handler: Callable[[Any, Any], Any], event: Any, *, timeout_s: float | None = 3.0, context: Context | None = None,
        report_batch_item_failures: bool = True, isolation: str = "process") -> BatchOutcome:
    """Validate the event, call `handler(event, context)` with its timeout, and decide the outcome (`.invocation` set).

    `isolation`: where the handler runs ("process", "thread" or "none", see `fnkit.invoke`);
    it gets its own copy of the event, and the outcome is decided from the original.
    """
    report = validate_event(event)
    if not report.ok:
        raise ContractError(report)
    event, _ = decode_json(event, "G0")
    ids = correlation_ids(event)
    invocation = invoke(handler, event, timeout_s=timeout_s, context=context, isolation=isolation)
    result = _full(event, ids, invocation, report_batch_item_failures)
    return result
