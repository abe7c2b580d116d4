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

from ._codec import Invocation
from ._invoke import Context, Handler, handler_copy, resolve_isolation
from ._running.calls import _call

OutcomeT = TypeVar("OutcomeT")


class PlannedCall(Generic[OutcomeT]):
    """A handler call a source has planned for one valid event: what to call it with, and how its outcome follows."""

    __slots__ = ("context", "decided", "event", "exclusive", "finish", "session", "timeout_s")

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
        self.finish = finish  # the outcome from the Invocation (None when `decided`)
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
        assert self.finish is not None  # a call that is not decided has its finish
        if self.session is None:
            invocation = _call(handler, self.event, self.timeout_s, self.context, isolation, copy=handler_copy)
        else:
            with self.session(isolation):
                invocation = _call(handler, self.event, self.timeout_s, self.context, isolation, copy=handler_copy)
        return self.finish(invocation)


__all__ = ["PlannedCall"]
