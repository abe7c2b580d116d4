"""What the queue poller does with a handler's response: Q6 here, and the effect of the outcome rules that
`._response.read` applies (Q7, Q8, Q8a-c, Q10), split over the batch."""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from itertools import filterfalse
from typing import Any, ClassVar, Unpack

import msgspec

from .. import rules as _rules
from .._engine.codec import Invocation
from .._engine.findings import place
from .._engine.outcome import Display, Grid, outcome_frame, outcome_html, outcome_row, what_it_did
from .._engine.report import MISSING, ContractError, Issue, Report, decode_json
from .._running.handler_rules import raised, timed_out
from .._running.inprocess import Context
from .._running.plan import PlannedCall
from .._settings.config import with_settings
from ..types import Isolation, QueueKind
from ._config import FUNCTION_FAILED, QueueConfig, QueueReportingSetting
from ._event import batch_ids, validate_event
from ._response import NOT_JSON, PARTIAL_REASONS, in_group_order, partial_reason, platform_reads, read

_EMPTY = Report((), "queue", None, "response")
_REPORTING = QueueConfig.of().report_batch_item_failures  # the setting of a call that names none (a frozen default)


class BatchOutcome(msgspec.Struct):
    """What happens to each message of a batch: `kind`, `failed_ids`, `deleted_ids`, `rule`, `reason`.

    `kind`: "success", "partial" or "failure"; `ok` when it is "success". `event_issues`: the
    event's report when `run` validated it. (A msgspec Struct: made in C, which a simulation
    of millions of batches notices.)
    """

    kind: QueueKind
    failed_ids: tuple[str, ...]
    deleted_ids: tuple[str, ...]
    rule: str
    reason: str
    issues: Report = _EMPTY
    invocation: Invocation | None = None
    event_ids: tuple[str, ...] = ()
    event_issues: Report | None = None
    source: ClassVar[str] = "queue"
    result_column: ClassVar[str] = "action"  # what happens to each record: retry or delete

    @property
    def inferred(self) -> bool:
        """True when the deciding rule is fnkit's inference, not a documented fact."""
        return _rules.is_inferred(self.rule)

    @property
    def warnings(self) -> list[Issue]:
        return self.issues.warnings

    @property
    def ok(self) -> bool:
        """True when the whole batch succeeded (`kind == "success"`): every message is deleted."""
        return self.kind == "success"

    def _replace(self, **changes: Any) -> BatchOutcome:
        return msgspec.structs.replace(self, **changes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BatchOutcome):
            return NotImplemented
        return all(
            getattr(self, k) == getattr(other, k) for k in ("kind", "failed_ids", "deleted_ids", "rule", "reason")
        )

    __hash__ = None  # type: ignore[assignment]

    def rows(self) -> list[dict[str, Any]]:
        """One row per record: what happens to it, and why."""
        # the failed ids looked up as they are when few (a set costs more than scanning a short tuple)
        failed: Container[str] = self.failed_ids if len(self.failed_ids) <= 8 else set(self.failed_ids)
        ids = self.event_ids or tuple(self.failed_ids) + tuple(self.deleted_ids)
        kind, rule_id, reason = self.kind, self.rule, self.reason
        inferred = _rules.is_inferred(rule_id)
        # the same on every row (most outcomes hold the one empty report: no sequence protocol asked of it)
        warned = "" if self.issues is _EMPTY else "; ".join(w.message for w in self.issues.warnings)
        rows = []
        for i, mid in enumerate(ids):  # (a loop, not a comprehension: a replay's outcomes mostly hold one record)
            rows.append(
                {
                    "source": "queue",
                    "item": mid,
                    "index": i,
                    "kind": kind,
                    "action": "retry" if mid in failed else "delete",
                    "rule": rule_id,
                    "inferred": inferred,
                    "reason": reason,
                    "warnings": warned,
                }
            )
        return rows

    def __repr__(self) -> str:
        return (
            f"BatchOutcome(kind={self.kind!r}, failed_ids={list(self.failed_ids)!r}, "
            f"deleted={len(self.deleted_ids)}, rule={self.rule!r}, warnings={len(self.issues.warnings)})"
        )

    # -- the Outcome protocol ---------------------------------------------------------------

    @property
    def explanation(self) -> str:
        """The sentence that says what the poller does and why (the `reason`)."""
        return self.reason

    @property
    def headline(self) -> str:
        """The kind: success, partial or failure."""
        return self.kind

    @property
    def tone(self) -> str:
        """good (success), mixed (partial) or bad (failure)."""
        return _TONES.get(self.kind, "none")

    def _display(self) -> Display:
        rows = [{"messageId": r["item"], "action": r["action"]} for r in self.rows()]
        return Display([Grid(rows, ["messageId", "action"], ("messageId",))])

    to_row = outcome_row
    to_frame = outcome_frame
    _repr_html_ = outcome_html


_TONES = {"success": "good", "partial": "mixed", "failure": "bad"}


@with_settings(QueueConfig, "report_batch_item_failures")
def outcome(
    event: Any, response: Any, *, config: QueueConfig | None = None, **settings: Unpack[QueueReportingSetting]
) -> BatchOutcome:
    """What the poller does with `response` (a returned value, `Raw`, or an `Invocation`) for this batch.

    The queue's settings: `config` (a `QueueConfig`), or `report_batch_item_failures=` (Q7).
    """
    reporting = (
        _REPORTING
        if config is None and not settings
        else QueueConfig.of(config, settings, outcome).report_batch_item_failures
    )
    if type(event) is not dict:
        # the event as JSON text or bytes, like validate_event takes it
        event, _ = decode_json(event)
        event = None if event is MISSING else event
    decided: BatchOutcome = decide(event, batch_ids(event), response, reporting)  # `@rule` leaves it untyped
    return decided


def _all_fail(
    ids: Sequence[str], rule: str, reason: str, issues: list[Issue], invocation: Invocation | None
) -> BatchOutcome:
    return BatchOutcome(
        "failure", tuple(ids), (), rule, reason, Report(issues, "queue", None, "response"), invocation, tuple(ids)
    )


@FUNCTION_FAILED
def _invocation_failed(ids: Sequence[str], invocation: Invocation) -> BatchOutcome | None:
    """Q6: a timed-out or raising function; None when it returned."""
    if invocation.timed_out:
        return _all_fail(
            ids,
            FUNCTION_FAILED.id,
            f"The function timed out after {invocation.timeout_s} s: nothing is deleted; the whole batch returns "
            "after the visibility timeout.",
            place(timed_out(invocation, "timeout", "The handler did not finish within its timeout."), by=timed_out),
            invocation,
        )
    if invocation.error is not None:
        return _all_fail(
            ids,
            FUNCTION_FAILED.id,
            f"The function {what_it_did(invocation.error, False)}: nothing is deleted; the whole batch returns "
            "after the visibility timeout.",
            place(raised(invocation, "error", f"The handler {what_it_did(invocation.error)}."), by=raised),
            invocation,
        )
    return None


def decide(event: Any, ids: Sequence[str], response: Any, reporting: bool = True) -> BatchOutcome:
    """What the poller does with `response` (a value, `Raw` or an `Invocation`) for the batch of `ids`: Q6 when
    the function failed, else the response as the poller reads it (`platform_reads`), read once by the outcome
    rules (`read`: Q7, or Q8 with Q8a-c and Q10), whose effect is split over the batch here."""
    invocation: Invocation | None = None
    notes: list[Issue]
    unencodable: str | None
    if type(response) is Invocation:
        invocation = response
        stopped: BatchOutcome | None = _invocation_failed(ids, invocation)  # `@rule` leaves it untyped
        if stopped is not None:
            return stopped
        if invocation.response_text is None:  # what it returned could not be encoded
            value, notes, unencodable = NOT_JSON, [], invocation.encode_error or "unknown reason"
        else:
            value, notes, unencodable = platform_reads(invocation.returned, False)
    else:
        value, notes, unencodable = platform_reads(response, False)  # (not JSON text: a returned value)
    all_ids = ids if type(ids) is tuple else tuple(ids)
    reading = read(value, all_ids, reporting, notes, unencodable)  # (Q10 below: the split finds where)
    kind = reading.kind
    if kind == "success":
        report = Report(reading.issues, "queue", None, "response") if reading.issues else _EMPTY
        return BatchOutcome("success", (), all_ids, reading.rule, reading.reason, report, invocation, all_ids)
    if kind == "failure":
        report = Report(reading.issues, "queue", None, "response") if reading.issues else _EMPTY
        return BatchOutcome("failure", all_ids, (), reading.rule, reading.reason, report, invocation, all_ids)
    failed: tuple[str, ...] = reading.failed  # (the reading found each in the batch)
    ordered: tuple[str, ...]
    at: int | None = None  # where the one listed message sits, when it sits nowhere else
    if len(failed) == 1:  # one listed message: cut it out where it is, unless the batch holds it again
        at = all_ids.index(failed[0])
        after = all_ids[at + 1 :]
        if failed[0] in after:
            at = None
        ordered, deleted = failed, (all_ids[:at] + after if at is not None else _without(all_ids, failed))
    else:
        ordered, deleted = tuple(filter(set(failed).__contains__, all_ids)), _without(all_ids, failed)  # batch order
    if event is not None:
        reading = in_group_order(reading, event, at)  # Q10
    report = Report(reading.issues, "queue", None, "response") if reading.issues else _EMPTY
    counts = (len(failed), len(deleted))
    reason = PARTIAL_REASONS.get(counts) or partial_reason(*counts)
    if reading.note:  # what a rule over the partial failure adds (Q10)
        reason += reading.note
    return BatchOutcome("partial", ordered, deleted, reading.rule, reason, report, invocation, all_ids)


def _without(ids: tuple[str, ...], failed: tuple[str, ...]) -> tuple[str, ...]:
    """The ids of the batch that are not listed, in batch order (each occurrence of a listed one left out)."""
    return tuple(filterfalse(set(failed).__contains__, ids))


@with_settings(QueueConfig, "report_batch_item_failures")
def run(
    handler: Callable[[Any, Any], Any] | str,
    event: Any,
    *,
    timeout_s: float | None = None,
    context: Context | None = None,
    isolation: Isolation | None = None,
    config: QueueConfig | None = None,
    **settings: Unpack[QueueReportingSetting],
) -> BatchOutcome:
    """Validate the event, call `handler(event, context)` with its timeout, and decide the outcome (`.invocation` set).

    `timeout_s`: the function timeout (default: the config's `function_timeout_s`, 3 s).
    `isolation`: where the handler runs ("none", the default: in this process, like a call;
    "process" or "thread", see `fnkit.invoke`);
    it gets its own copy of the event, and the outcome is decided from the original.
    """
    planned = plan_call(event, config=QueueConfig.of(config, settings, run), timeout_s=timeout_s, context=context)
    return planned.run(handler, isolation)


def plan_call(
    event: Any, *, config: QueueConfig, timeout_s: float | None = None, context: Context | None = None
) -> PlannedCall[BatchOutcome]:
    """The call `run` makes for `event`: validated (ContractError when invalid), decoded, with its timeout
    (`timeout_s`, else the config's `function_timeout_s`); its outcome is `decide` on the Invocation."""
    report = validate_event(event)
    if not report.ok:
        raise ContractError(report)
    value = event if type(event) is dict else decode_json(event)[0]  # (a dict is its own value: decoded already)
    reporting = config.report_batch_item_failures

    def finish(invocation: Invocation) -> BatchOutcome:
        decided: BatchOutcome = decide(value, batch_ids(value), invocation, reporting)  # `@rule`: untyped
        decided.event_issues = report  # (a new outcome: set in place)
        return decided

    return PlannedCall(value, config.function_timeout_s if timeout_s is None else timeout_s, finish, context)
