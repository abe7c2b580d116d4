"""One handler call as a source's `run` makes it: the event the handler gets, and how the outcome follows.

Each source's `plan_call` validates one event and returns a `PlannedCall`: the decoded
event, the timeout, the context, and `finish`, the source's one way from an `Invocation` to
its outcome. The source's `run` calls the handler once (`PlannedCall.run`, through
`invoke`); `fnkit.replay` calls it for a chunk of events at once (through `invoke_many`)
and hands each `Invocation` to the same `finish`, so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from contextlib import AbstractContextManager
from typing import Any, Generic, TypeVar

from ._codec import Invocation
from ._invoke import Context, Handler, resolve_isolation
from .isolation import invoke

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
        isolation = resolve_isolation(isolation)
        if self.decided is not None:
            return self.decided
        assert self.finish is not None  # a call that is not decided has its finish
        if self.session is None:
            invocation = invoke(
                handler, self.event, timeout_s=self.timeout_s, context=self.context, isolation=isolation
            )
        else:
            with self.session(isolation):
                invocation = invoke(
                    handler, self.event, timeout_s=self.timeout_s, context=self.context, isolation=isolation
                )
        return self.finish(invocation)


__all__ = ["PlannedCall"]
