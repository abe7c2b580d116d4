"""One handler call as a source's `run` makes it: the event the handler gets, and how the outcome follows.

Each source's `plan_call` validates one event and returns a `PlannedCall`: the decoded
event, the timeout, the context, and `finish`, the source's one way from an `Invocation` to
its outcome. The source's `run` calls the handler once (`PlannedCall.run`, as
`invoke` does); `fnkit.replay` calls it for a chunk of events at once (through `invoke_many`)
and hands each `Invocation` to the same `finish`, so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from contextlib import AbstractContextManager
from typing import Any, Generic, TypeVar

from .._engine.codec import Invocation
from .._settings.project import resolve_isolation
from .calls import _call
from .inprocess import Context, Handler, handler_copy

OutcomeT = TypeVar("OutcomeT")


class PlannedCall(Generic[OutcomeT]):
    """A handler call a source has planned for one valid event: what to call it with, and how its outcome follows."""

    __slots__ = ("context", "decided", "event", "exclusive", "outcome_of", "session", "timeout_s")

    def __init__(
        self,
        event: Any,
        timeout_s: float | None,
        finish: Callable[[Invocation], OutcomeT] | None,
        context: Context | None = None,
        *,
        decided: OutcomeT | None = None,
        session: Callable[[str], AbstractContextManager[Any]] | None = None,
        exclusive: tuple[Hashable, ...] = (),
    ) -> None:
        self.event = event  # the decoded event: the handler gets its own copy, the outcome reads this one
        self.timeout_s = timeout_s
        self.outcome_of = finish  # the source's outcome of an Invocation (None when `decided`): see `finish`
        self.context = context  # None: a fresh Context with the timeout
        self.decided = decided  # the outcome when the platform answers without calling the handler
        self.session = session  # what is open during the call (the mail content API), or None
        # calls that share a key never run in one chunk (two calls of one mail message: each sees its own content)
        self.exclusive = exclusive

    def run(self, handler: Handler | str, isolation: str | None) -> OutcomeT:
        """Call the handler once (`invoke`, which gives it its own copy of the event) and make the outcome."""
        __tracebackhide__ = True
        isolation = resolve_isolation(isolation)  # once: the call below takes it as resolved
        if self.decided is not None:
            return self.decided
        if self.session is None:
            invocation = _call(handler, self.event, self.timeout_s, self.context, isolation, copy=handler_copy)
        else:
            with self.session(isolation):
                invocation = _call(handler, self.event, self.timeout_s, self.context, isolation, copy=handler_copy)
        return self.finish(invocation)

    def finish(self, invocation: Invocation) -> OutcomeT:
        """The outcome of the call, from its `Invocation`: the source's (`outcome_of`), which says so when the handler
        failed on the spec's spelling of the event (`spelling_hint`)."""
        assert self.outcome_of is not None  # a call that is not decided has its outcome to make
        outcome = self.outcome_of(invocation)
        if invocation.error is None:
            return outcome
        hinted: OutcomeT = with_spelling_hint(outcome, self.event)
        return hinted


# what a handler's error says when it expects the real platform's spelling of an event: Powertools' parser models
# ("Input should be 'aws:sqs'"), ARN checks, the trace header's key (lower-cased as the load balancer sends it)
_REAL_SPELLINGS = ("aws:sqs", "arn:aws:sqs", "arn:aws:elasticloadbalancing", "awstraceheader", "x-amzn-trace-id")


def _in_spec_spelling(event: Any) -> bool:
    """True when a queue or load balancer event is spelt as the spec spells it (`provider:`, `arn:provider:`)."""
    if not isinstance(event, dict):
        return False
    records = event.get("Records")
    if isinstance(records, list) and records and isinstance(records[0], dict):
        first = records[0]
        return str(first.get("eventSource", "")).startswith("provider:") or str(
            first.get("eventSourceARN", "")
        ).startswith("arn:provider:")
    context = event.get("requestContext")
    elb = context.get("elb") if isinstance(context, dict) else None
    return isinstance(elb, dict) and str(elb.get("targetGroupArn", "")).startswith("arn:provider:")


def spelling_hint(event: Any, error: Any) -> str:
    """One sentence when a handler failed on an event in the spec's spelling with an error that names the real
    platform's spelling ('aws:sqs', 'arn:aws:...'): build the events with dialect="aws". '' otherwise."""
    if error is None or not _in_spec_spelling(event):
        return ""
    said = f"{error.message}\n{error.traceback}".lower()
    named = next((s for s in _REAL_SPELLINGS if s in said), None)
    if named is None:
        return ""
    return (
        f" The error names the real platform's spelling ({named!r}) and the event is in the spec's: to test a handler"
        ' written for the real platform, build its events with dialect="aws" (or set dialect = "aws" in'
        " [tool.fnkit] of pyproject.toml)."
    )


def with_spelling_hint(outcome: Any, event: Any) -> Any:
    """The outcome of a failed call with `spelling_hint` added to its explanation (the outcome itself otherwise)."""
    invocation = getattr(outcome, "invocation", None)
    hint = spelling_hint(event, invocation.error) if invocation is not None else ""
    if not hint:
        return outcome
    import dataclasses

    import msgspec

    if isinstance(outcome, msgspec.Struct):  # the queue's BatchOutcome: its sentence is `reason`
        return msgspec.structs.replace(outcome, reason=outcome.reason + hint)  # type: ignore[attr-defined]
    if dataclasses.is_dataclass(outcome) and hasattr(outcome, "explanation"):  # the load balancer's HttpOutcome
        return dataclasses.replace(outcome, explanation=outcome.explanation + hint)  # type: ignore[type-var]
    return outcome


__all__ = ["PlannedCall"]
