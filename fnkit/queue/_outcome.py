"""What the queue poller does with a handler's response (Q6, Q7, Q8, Q10)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import filterfalse
from typing import Any, ClassVar

import msgspec

from .. import rules as _rules
from .._call import PlannedCall
from .._codec import Invocation, encode_response
from .._config import with_settings
from .._invoke import Context
from .._memo import Readings
from .._outcome import Display, Grid, outcome_frame, outcome_html, outcome_row, what_it_did
from .._report import MISSING, ContractError, Issue, Raw, Report, decode_json, error, loads_strict, strip_bom, warning
from ..rules import rule
from ..types import Isolation, QueueKind
from ._config import QueueConfig
from ._event import correlation_ids, validate_event
from ._response import QueueResponse, iter_group_order, read_response

_EMPTY = Report((), "queue", None, "response")
_DEFAULTS = QueueConfig.of()  # the settings of a call that names none


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
        return _rules.get(self.rule).inferred

    @property
    def warnings(self) -> list[Issue]:
        return self.issues.warnings

    @property
    def ok(self) -> bool:
        """True when the whole batch succeeded (`kind == "success"`): every message is deleted."""
        return self.kind == "success"

    def _replace(self, **changes: Any) -> BatchOutcome:
        values = {k: getattr(self, k) for k in self.__struct_fields__}
        values.update(changes)
        return BatchOutcome(**values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BatchOutcome):
            return NotImplemented
        return all(
            getattr(self, k) == getattr(other, k) for k in ("kind", "failed_ids", "deleted_ids", "rule", "reason")
        )

    __hash__ = None  # type: ignore[assignment]

    def rows(self) -> list[dict[str, Any]]:
        """One row per record: what happens to it, and why."""
        failed = set(self.failed_ids)
        ids = self.event_ids or tuple(self.failed_ids) + tuple(self.deleted_ids)
        kind, rule_id, inferred, reason = self.kind, self.rule, self.inferred, self.reason
        warned = "; ".join(w.message for w in self.issues.warnings) if self.issues else ""  # the same on every row
        return [
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
            for i, mid in enumerate(ids)
        ]

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


_INVALID = object()  # the platform could not read JSON


def _platform_reads(response: Any) -> Any:
    """What the poller reads: the decoded JSON of `Raw` text, a Python value as its JSON would decode
    (the typed response straight away when it is a well-formed object), or _INVALID when it is not JSON."""
    if type(response) is dict:
        try:  # a well-formed answer is JSON as it is: no need to encode it and read it back
            return msgspec.convert(response, QueueResponse, strict=True)
        except (msgspec.ValidationError, UnicodeEncodeError):  # msgspec cannot word an error about a lone surrogate
            pass
    elif response is None:
        return None
    if isinstance(response, Raw):
        text = response.text()
    else:
        text, _ = encode_response(response)
    if text is None:
        return _INVALID
    try:  # a response file written with a byte-order mark reads as its content, as validate_response reads it (G0)
        return loads_strict(strip_bom(text)[0])
    except (ValueError, RecursionError):
        return _INVALID


@with_settings(QueueConfig, "report_batch_item_failures")
def outcome(event: Any, response: Any, *, config: QueueConfig | None = None, **settings: Any) -> BatchOutcome:
    """What the poller does with `response` (a returned value, `Raw`, or an `Invocation`) for this batch.

    The queue's settings: `config` (a `QueueConfig`), or `report_batch_item_failures=` (Q7).
    """
    if config is None and not settings:
        reporting = _DEFAULTS.report_batch_item_failures
    else:
        reporting = QueueConfig.of(config, settings, outcome).report_batch_item_failures
    if type(event) is not dict:
        # the event as JSON text or bytes, like validate_event takes it
        event, _ = decode_json(event, "G0")
        event = None if event is MISSING else event
    decided: BatchOutcome = decide(event, correlation_ids(event), response, reporting)  # `@rule` leaves it untyped
    return decided


def _all_fail(
    ids: Sequence[str], rule: str, reason: str, issues: list[Issue], invocation: Invocation | None
) -> BatchOutcome:
    return BatchOutcome(
        "failure", tuple(ids), (), rule, reason, Report(issues, "queue", None, "response"), invocation, tuple(ids)
    )


@rule(
    "Q6",
    "queue",
    "doc",
    "The function raises, times out or crashes: nothing is deleted and the whole batch returns "
    "after the visibility timeout.",
    severity="outcome",
)
def _invocation_failed(ids: Sequence[str], invocation: Invocation) -> BatchOutcome | None:
    """Q6: a timed-out or raising function; None when it returned."""
    if invocation.timed_out:
        return _all_fail(
            ids,
            "Q6",
            f"The function timed out after {invocation.timeout_s} s: nothing is deleted; the whole batch returns "
            "after the visibility timeout.",
            [error("$", "timeout", "The handler did not finish within its timeout.", "H4")],
            invocation,
        )
    if invocation.error is not None:
        return _all_fail(
            ids,
            "Q6",
            f"The function {what_it_did(invocation.error, False)}: nothing is deleted; the whole batch returns "
            "after the visibility timeout.",
            [error("$", "error", f"The handler {what_it_did(invocation.error)}.", "H3")],
            invocation,
        )
    return None


_SUCCESS = "Complete success: no failures reported, so every message is deleted."
_MISSPELLED = (
    "Complete success (inferred): no batchItemFailures key, so every message is deleted; a misspelled key "
    "loses the failures."
)
_NOT_JSON = "The response is not valid JSON: complete failure, every message returns to the queue."


@rule(
    "Q8",
    "queue",
    "contract",
    "Reporting on: null, {}, null or [] batchItemFailures is complete success; invalid "
    'JSON or an itemIdentifier that is "", null, under another key or not in the batch is complete failure; '
    "otherwise the listed messages fail.",
    severity="outcome",
)
def decide(event: Any, ids: Sequence[str], response: Any, reporting: bool = True) -> BatchOutcome:
    """The one decision: `response` (a value, `Raw` or an `Invocation`) is normalised to what the poller
    reads, then read once (Q6, Q7, Q8, Q8a-c, Q10). Equivalent responses get the same outcome."""
    invocation: Invocation | None = None
    unencodable: str | None = None  # why JSON could not encode what the handler returned
    if type(response) is Invocation:
        invocation = response
        stopped: BatchOutcome | None = _invocation_failed(ids, invocation)  # `@rule` leaves it untyped
        if stopped is not None:
            return stopped
        if invocation.response_text is None:
            unencodable = invocation.encode_error or "unknown reason"
            value = _INVALID
        else:  # what it returned reads as its JSON text does (_platform_reads encodes what is not plain JSON)
            value = _platform_reads(invocation.returned)
    else:
        value = _platform_reads(response)
    if not reporting:
        ignored: BatchOutcome = _not_reporting(ids, value, invocation, unencodable)  # `@rule` leaves it untyped
        return ignored
    if value is _INVALID:
        issue = (
            error("$", "format", f"The returned value cannot be encoded as JSON ({unencodable}).", "H2")
            if unencodable
            else error("$", "format", "The response is not valid JSON.", "Q8")
        )
        return _all_fail(ids, "Q8", _NOT_JSON, [issue], invocation)
    all_ids = ids if type(ids) is tuple else tuple(ids)
    kind, failed, issues = read_response(value, all_ids)
    if kind == "partial":
        one = failed[0] if len(failed) == 1 else None
        at = all_ids.index(one) if one is not None else 0  # read_response found it in the batch
        if one is not None and one not in all_ids[at + 1 :]:  # one listed message, once in the batch: cut it out
            ordered: tuple[str, ...] = (one,)
            deleted = all_ids[:at] + all_ids[at + 1 :]
        else:
            fset = set(failed)
            deleted = tuple(filterfalse(fset.__contains__, all_ids))
            ordered = tuple(failed) if one is not None else tuple(filter(fset.__contains__, all_ids))  # batch order
        reason = _REASONS.get((len(failed), len(deleted))) or _partial_reason(len(failed), len(deleted))
        records = event.get("Records") if isinstance(event, dict) else None
        # Q10 applies when the records carry message groups (a FIFO batch)
        first = records[0] if isinstance(records, list) and records else None
        attrs = first.get("attributes") if isinstance(first, dict) else None
        if isinstance(records, list) and isinstance(attrs, dict) and "MessageGroupId" in attrs:
            issues.extend(iter_group_order(records, set(failed)))
            if any(i.rule == "Q10" for i in issues):
                reason += " The FIFO group order breaks (see warnings)."
        report = Report(issues, "queue", None, "response") if issues else _EMPTY
        return BatchOutcome("partial", ordered, deleted, "Q8", reason, report, invocation, all_ids)
    if kind == "success":
        q8b = any(i.rule == "Q8b" for i in issues)
        report = Report(issues, "queue", None, "response") if issues else _EMPTY
        return BatchOutcome(
            "success",
            (),
            all_ids,
            "Q8b" if q8b else "Q8",
            _MISSPELLED if q8b else _SUCCESS,
            report,
            invocation,
            all_ids,
        )
    cause = next((i for i in issues if i.severity == "error"), None)
    rule_id = cause.rule if cause is not None and cause.rule else "Q8"
    tag = " (inferred)" if _rules.get(rule_id).inferred else ""
    reason = (
        f"Complete failure{tag}: {cause.message if cause else 'the response is invalid.'} "
        "Every message returns to the queue."
    )
    return _all_fail(ids, rule_id, reason, issues, invocation)


_REASONS: Readings[tuple[int, int], str] = Readings()


def _partial_reason(failed: int, deleted: int) -> str:
    reason = _REASONS.get((failed, deleted))
    if reason is None:
        listed = "1 listed message returns" if failed == 1 else f"{failed} listed messages return"
        if deleted == 0:
            rest = "no other message is deleted"
        elif deleted == 1:
            rest = "the other one is deleted"
        else:
            rest = f"the other {deleted} are deleted"
        reason = f"Partial failure: {listed} to the queue after the visibility timeout; {rest}."
        _REASONS.remember((failed, deleted), reason)  # the sentence for a pair of counts is made once
    return reason


@rule(
    "Q7",
    "queue",
    "inferred",
    "Reporting (ReportBatchItemFailures) off and the function succeeded: the response is "
    "ignored and the whole batch is deleted; returned failures are lost.",
    severity="outcome",
)
def _not_reporting(
    ids: Sequence[str], value: Any, invocation: Invocation | None, unencodable: str | None
) -> BatchOutcome:
    issues: list[Issue] = []
    if unencodable is not None:
        issues.append(
            warning(
                "$",
                "encoding",
                f"The returned value is not JSON ({unencodable}); ignored because reporting is off.",
                "H2",
            )
        )
    if type(value) is QueueResponse:
        failures = value.batch_item_failures
    else:
        failures = value.get("batchItemFailures") if isinstance(value, dict) else None
    if isinstance(failures, (list, tuple)) and failures:
        issues.append(
            warning(
                "$.batchItemFailures",
                "ignored",
                f"Partial-batch reporting is off: the {len(failures)} reported failure(s) are ignored and deleted "
                "with the rest. They are lost.",
                "Q7",
            )
        )
    return BatchOutcome(
        "success",
        (),
        tuple(ids),
        "Q7",
        "Success (inferred): reporting is off, so the response is ignored and the whole batch is deleted.",
        Report(issues, "queue", None, "response"),
        invocation,
        tuple(ids),
    )


@with_settings(QueueConfig, "report_batch_item_failures")
def run(
    handler: Callable[[Any, Any], Any] | str,
    event: Any,
    *,
    timeout_s: float | None = None,
    context: Context | None = None,
    isolation: Isolation | None = None,
    config: QueueConfig | None = None,
    **settings: Any,
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
    value, _ = decode_json(event, "G0")
    reporting = config.report_batch_item_failures

    def finish(invocation: Invocation) -> BatchOutcome:
        decided: BatchOutcome = decide(value, correlation_ids(value), invocation, reporting)  # `@rule`: untyped
        return decided._replace(event_issues=report)

    return PlannedCall(value, config.function_timeout_s if timeout_s is None else timeout_s, finish, context)
