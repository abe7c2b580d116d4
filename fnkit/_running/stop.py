"""Stopping, from another thread, the calls one thread makes (a Stop button): `Stopper`.

Below the worker processes (fnkit._running), which attach each call to the stopper it is
made under; `fnkit.isolation` is where users find it.
"""

from __future__ import annotations

import contextvars
import threading
from typing import Protocol, Self

STOPPED_ERROR = "fnkit.Stopped"  # the error type of a call a Stopper stopped


class _Stoppable(Protocol):
    """What a stopper kills: a worker process running a call (fnkit._running.pool's `_Worker`)."""

    def stop_from_outside(self) -> None: ...


class Stopper:
    """Stops the handlers that calls made under it run in worker processes, from any thread, now.

    ```
    stopper = Stopper()
    with stopper:  # in the thread that calls (invoke, any source's run, a simulator)
        outcome = queue.run(handler, event, timeout_s=30)
    stopper.stop()  # from another thread (a Stop button): the worker is killed at once
    ```

    A call it stopped returns an `Invocation` whose error type is `fnkit.Stopped`; calls
    made under it after `stop()` return that at once, without running. Only
    `isolation="process"` can be stopped: a thread cannot be stopped safely, and "none"
    runs on the caller's own thread (Ctrl-C, or Jupyter's interrupt, stops that one).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._workers: set[_Stoppable] = set()
        self._tokens = threading.local()
        self.stopped = False

    def __enter__(self) -> Self:
        stack = getattr(self._tokens, "stack", None)
        if stack is None:
            stack = self._tokens.stack = []
        stack.append(_STOPPER.set(self))
        return self

    def __exit__(self, *exc: object) -> None:
        _STOPPER.reset(self._tokens.stack.pop())

    def stop(self) -> bool:
        """Kill the worker processes running calls made under this stopper; True when one was running."""
        with self._lock:
            self.stopped = True
            workers = list(self._workers)
        for worker in workers:
            worker.stop_from_outside()
        return bool(workers)

    def _attach(self, worker: _Stoppable) -> bool:
        """A call under this stopper is about to use `worker` (False: stopped already, do not start)."""
        with self._lock:
            if self.stopped:
                return False
            self._workers.add(worker)
            return True

    def _detach(self, worker: _Stoppable) -> None:
        """The call using `worker` is over."""
        with self._lock:
            self._workers.discard(worker)


_STOPPER: contextvars.ContextVar[Stopper | None] = contextvars.ContextVar("fnkit_stopper", default=None)


def current_stopper() -> Stopper | None:
    """The `Stopper` the calls of this thread are made under, if any."""
    return _STOPPER.get()
