"""`assert_valid` and `assert_outcome`: fnkit's checks as test assertions with messages that explain."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Unpack, cast, overload

from .._cells import text_table
from .._engine.outcome import Outcome, what_it_did
from .._engine.report import ContractError, Report, decode_json
from .._sources import SOURCES, detect_source, source_module, validate
from .._table import rows_of

if TYPE_CHECKING:
    from .._running.inprocess import Context
    from .._settings.project import Isolation
    from ..alb import HttpOutcome
    from ..alb._config import AlbConfig, AlbRunSettings
    from ..mail import MailOutcome
    from ..mail._config import MailAttemptSettings, MailConfig
    from ..queue import BatchOutcome
    from ..queue._config import QueueConfig, QueueReportingSetting
    from ..types import AlbKind, MailKind, OutcomeKind, QueueKind

    class _QueueRun(QueueReportingSetting, total=False):
        """What `assert_outcome` passes to `fnkit.queue.run`."""

        timeout_s: float | None
        context: Context | None
        isolation: Isolation | None
        config: QueueConfig | None

    class _MailRun(MailAttemptSettings, total=False):
        """What `assert_outcome` passes to `fnkit.mail.run`."""

        timeout_s: float | None
        context: Context | None
        store: Any
        isolation: Isolation | None
        config: MailConfig | None

    class _AlbRun(AlbRunSettings, total=False):
        """What `assert_outcome` passes to `fnkit.alb.run`."""

        context: Context | None
        isolation: Isolation | None
        config: AlbConfig | None

    class _AnyRun(QueueReportingSetting, MailAttemptSettings, AlbRunSettings, total=False):
        """What `assert_outcome` passes to the run of the event's source, when the source is known at run time only."""

        context: Context | None
        store: Any
        isolation: Isolation | None
        config: QueueConfig | MailConfig | AlbConfig | None


_UNSET: Any = object()
_NAMES = {"queue": "queue", "mail": "mail", "alb": "load balancer"}
# columns of the outcome table that the failure message already shows above or below it
_SHOWN_ELSEWHERE = ("source", "reason", "explanation", "warnings")


def _issue_lines(report: Report) -> list[str]:
    return [f"  {issue}" for issue in report]


def _counts(report: Report) -> str:
    return f"{len(report.errors)} error(s), {len(report.warnings)} warning(s)"


def _implied_by(source: str, event: Any) -> dict[str, Any]:
    """The `validate_response` keywords an event settles: its header mode, its flow direction."""
    if not isinstance(event, dict):
        return {}
    if source == "alb":
        return {"multi_value": "multiValueHeaders" in event}
    if source == "mail" and isinstance(event.get("flowDirection"), str):
        return {"flow_direction": event["flowDirection"]}
    return {}


def _response_report(value: Any, source: str | None, event: Any, keywords: dict[str, Any]) -> tuple[str, Report]:
    """(what it is, its Report) for a handler's response."""
    if event is not None:
        source = source or detect_source(event)
        if source is None:
            raise ValueError(
                "assert_valid: event= is not an event of a known source, so it cannot say whose response this is"
            )
    if source is not None:
        options = {**_implied_by(source, event), **keywords}
        return f"{_NAMES[source]} response", source_module(source).validate_response(value, **options)
    # no source given: the source whose declared response fields it uses, else the contract it comes closest to
    decoded, _ = decode_json(value)
    keys = set(decoded) if isinstance(decoded, dict) else set()
    claimed = [name for name in SOURCES if keys & source_module(name).RESPONSE_SHAPE.allowed()]
    multi_value = "multiValueHeaders" in keys  # a load balancer response in multi-value form
    reports = []
    for name in claimed or SOURCES:
        options = {"multi_value": multi_value, **keywords} if name == "alb" else keywords
        report = source_module(name).validate_response(value, **options)
        reports.append((len(report.errors), len(report.warnings), SOURCES.index(name), name, report))
    *_, name, report = min(reports)
    if len(claimed) == 1:
        return f"{_NAMES[name]} response", report
    how = f"read as the closest of the {len(reports)} contracts; pass event= or source= to choose"
    return f"{_NAMES[name]} response ({how})", report


def assert_valid(
    value: Any, *, source: str | None = None, event: Any = None, strict: bool = False, **response_keywords: Any
) -> Report:
    """Fail unless `value`, an event or a handler's response, is valid; the message lists every issue.

    An event (anything shaped like an event of a known source) is validated as an event, of
    `source=` when given. Anything else is read as a response: of `event`'s source when
    `event=` is given (its header mode and flow direction apply), of `source=` when given,
    else of the source whose declared response fields it uses.
    `strict=True`: warnings fail too. Other keywords go to the source's `validate_response`.
    Returns the Report.
    """
    __tracebackhide__ = True
    detected = detect_source(value) if event is None and not response_keywords else None
    report: Report
    if detected is not None:  # an event: of its own source, or validated as `source=` says
        name = source or detected
        what, report = f"{_NAMES[name]} event", source_module(name).validate_event(value)
    else:
        what, report = _response_report(value, source, event, response_keywords)
    if report.errors or (strict and report.warnings):
        verdict = "is not valid" if report.errors else "has warnings (strict=True)"
        lines = [f"fnkit.testing.assert_valid: this {what} {verdict}: {_counts(report)}.", *_issue_lines(report)]
        raise AssertionError("\n".join(lines))
    return report


def _differs(name: str, want: Any, result: Any) -> str | None:
    """One line saying how the outcome differs from `want` on `name`, or None when it matches."""
    if name in ("failed_ids", "deleted_ids"):
        got = list(getattr(result, name))
        if Counter(want) == Counter(got):
            return None
        missing = sorted((Counter(want) - Counter(got)).elements())
        unexpected = sorted((Counter(got) - Counter(want)).elements())
        return (
            f"{name}: expected {sorted(want)} (in any order), got {got}"
            f"{f'; missing {missing}' if missing else ''}{f'; not expected {unexpected}' if unexpected else ''}"
        )
    if name == "actions":
        got = result.actions
        if isinstance(want, str):
            others = {r: a for r, a in got.items() if a != want}
            return None if not others else f"actions: expected {want!r} for every recipient, got {got}"
        return None if dict(want) == got else f"actions: expected {dict(want)}, got {got}"
    if name == "body":
        got = result.text if isinstance(want, str) else result.body
        return None if got == want else f"body: expected {want!r}, got {got!r}"
    if name == "headers":
        wrong = []
        for header, value in dict(want).items():
            values = result.header_values(header)
            if (values if isinstance(value, list) else values[:1]) != (value if isinstance(value, list) else [value]):
                wrong.append(
                    f"{header}: expected {value!r}, "
                    f"got {values if isinstance(value, list) else result.header(header)!r}"
                )
        return None if not wrong else "headers: " + "; ".join(wrong)
    got = getattr(result, name)
    return None if got == want else f"{name}: expected {want!r}, got {got!r}"


def describe_outcome(result: Outcome) -> str:
    """The outcome as text.

    What happened and the deciding rule, its table, its issues, the handler's error and output.
    """
    tag = " (inferred)" if result.inferred else ""
    rows = rows_of(result)
    columns = [c for row in rows for c in row if c not in _SHOWN_ELSEWHERE]
    lines = [
        f"Outcome: {result.headline}, rule {result.rule}{tag}: {result.explanation}",
        text_table(rows, list(dict.fromkeys(columns)), width=60),
    ]
    if len(result.issues):
        lines += ["Issues:", *_issue_lines(result.issues)]
    invocation = result.invocation
    if invocation is not None and invocation.timed_out:
        lines.append(f"The handler timed out after {invocation.timeout_s} s.")
    if invocation is not None and invocation.error is not None:
        lines += [f"The handler {what_it_did(invocation.error)}:", invocation.error.traceback.rstrip()]
    if invocation is not None and invocation.logs:
        lines += ["The handler's output:", invocation.logs.rstrip()]
    return "\n".join(lines)


# One overload per source: the expectations and run keywords it takes (a misspelt one, `knd=`, is a type error)
# and the outcome class it returns.
@overload
def assert_outcome(
    handler: Callable[[Any, Any], Any],
    event: Any,
    *,
    kind: QueueKind = ...,
    failed_ids: Iterable[str] = ...,
    deleted_ids: Iterable[str] = ...,
    rule: str = ...,
    source: Literal["queue"],
    **run_keywords: Unpack[_QueueRun],
) -> BatchOutcome: ...
@overload
def assert_outcome(
    handler: Callable[[Any, Any], Any],
    event: Any,
    *,
    kind: MailKind = ...,
    status: MailKind = ...,
    rule: str = ...,
    actions: str | Mapping[str, str] = ...,
    source: Literal["mail"],
    **run_keywords: Unpack[_MailRun],
) -> MailOutcome: ...
@overload
def assert_outcome(
    handler: Callable[[Any, Any], Any],
    event: Any,
    *,
    kind: AlbKind = ...,
    status: int = ...,
    rule: str = ...,
    body: bytes | str = ...,
    headers: Mapping[str, str | list[str]] = ...,
    source: Literal["alb"],
    **run_keywords: Unpack[_AlbRun],
) -> HttpOutcome: ...
@overload
def assert_outcome(
    handler: Callable[[Any, Any], Any],
    event: Any,
    *,
    kind: OutcomeKind = ...,
    failed_ids: Iterable[str] = ...,
    deleted_ids: Iterable[str] = ...,
    status: MailKind | int = ...,
    rule: str = ...,
    actions: str | Mapping[str, str] = ...,
    body: bytes | str = ...,
    headers: Mapping[str, str | list[str]] = ...,
    source: str | None = None,
    **run_keywords: Unpack[_AnyRun],
) -> Any: ...  # the source is read from the event at run time: the test reads the fields of the one it wrote


def assert_outcome(
    handler: Callable[[Any, Any], Any],
    event: Any,
    *,
    kind: Any = _UNSET,
    failed_ids: Any = _UNSET,
    deleted_ids: Any = _UNSET,
    status: Any = _UNSET,
    rule: Any = _UNSET,
    actions: Any = _UNSET,
    body: Any = _UNSET,
    headers: Any = _UNSET,
    source: str | None = None,
    **run_keywords: Any,
) -> BatchOutcome | MailOutcome | HttpOutcome:
    """Run `handler` on `event` as the platform would (`fnkit.<source>.run`) and fail unless the outcome is as expected.

    Expectations, each checked only when given: `kind` (queue: "success" | "partial" |
    "failure"; mail: its status; load balancer: "delivered" | "refused" | "error"),
    `failed_ids`, `deleted_ids` (queue; ids in any order), `status` (mail: "applied" |
    "fallback" | "ignored"; load balancer: the HTTP status), `rule` (any source), `actions`
    (mail: recipient -> action, or one action for every recipient), `body` (load balancer:
    bytes, or text), `headers` (load balancer: name -> first value, or name -> list of every
    value). Other keywords go to `run` (`timeout_s`, `report_batch_item_failures`, `mode`,
    `fallback_action`, `multi_value`, ...). The failure message shows the outcome's table,
    its issues, and the handler's error and output. `source`: the event's source, when
    detection should not decide; as a literal ("queue", "mail", "alb") it also tells a type
    checker which outcome class comes back.
    Returns the outcome.
    """
    __tracebackhide__ = True
    expected = {
        name: want
        for name, want in (
            ("kind", kind),
            ("failed_ids", failed_ids),
            ("deleted_ids", deleted_ids),
            ("status", status),
            ("rule", rule),
            ("actions", actions),
            ("body", body),
            ("headers", headers),
        )
        if want is not _UNSET
    }
    source = source or detect_source(event)
    if source is None:
        raise AssertionError(
            "fnkit.testing.assert_outcome: this is not an event of a known source:\n"
            + "\n".join(_issue_lines(validate(event)))
        )
    try:
        result = source_module(source).run(handler, event, **run_keywords)
    except ContractError as exc:
        raise AssertionError(
            f"fnkit.testing.assert_outcome: the {_NAMES[source]} event is not valid, "
            "so the platform would never send it "
            f"({_counts(exc.report)}):\n" + "\n".join(_issue_lines(exc.report))
        ) from None
    inapplicable = [name for name in expected if not hasattr(result, name)]
    if inapplicable:
        raise TypeError(
            f"assert_outcome: {', '.join(f'{n}=' for n in inapplicable)} does not apply to a "
            f"{_NAMES[source]} outcome ({type(result).__name__})"
        )
    mismatches = [line for name, want in expected.items() if (line := _differs(name, want, result)) is not None]
    if mismatches:
        raise AssertionError(
            "\n".join(
                [
                    f"fnkit.testing.assert_outcome: the {_NAMES[source]} outcome is not what the test expects:",
                    *(f"  {line}" for line in mismatches),
                    describe_outcome(result),
                ]
            )
        )
    return cast("BatchOutcome | MailOutcome | HttpOutcome", result)
