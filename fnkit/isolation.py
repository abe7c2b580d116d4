"""Where handlers run: the isolation modes of `fnkit.invoke`, and what code inside a handler can send back.

- `invoke(handler, event, isolation="process" | "thread" | "none")` (also `fnkit.invoke`).
- `invoke_many(handler, events, ...)`: the same for many events; with "process", chunks
  of events travel to a worker at once, each event with its own timeout.
- `report(topic, value)`: called by code running inside a handler (a helper the handler
  calls), in any mode; the pairs come back in `Invocation.reports`, in order.
- `stats()`: what the isolation layer did in this process: worker processes started,
  killed and crashed, calls, and the handler threads abandoned past their timeout
  (`"abandoned_threads_running"`, `"abandoned_threads_total"`).
- `shutdown()`: stop the idle worker processes (the next call starts new ones).
- Memory limit of a worker: `memory_limit_mb=` per call, else `FNKIT_MEMORY_LIMIT_MB`,
  else `DEFAULT_MEMORY_LIMIT_MB` (1024).
- `Stopper`: stop, from another thread, the calls one thread makes (a Stop button): their
  worker processes are killed at once, and each call returns the error `fnkit.Stopped`.

This module only names them: `invoke` and `invoke_many` live in fnkit._running.calls, above
the two rooms they choose between, fnkit._running.inprocess (in this process: "none" and "thread") and
fnkit._running's worker processes.
"""

from __future__ import annotations

from ._running.calls import invoke, invoke_many, shutdown, stats
from ._running.inprocess import DEFAULT_MEMORY_LIMIT_MB, ISOLATIONS, report
from ._running.stop import STOPPED_ERROR, Stopper, current_stopper

__all__ = [
    "DEFAULT_MEMORY_LIMIT_MB",
    "ISOLATIONS",
    "STOPPED_ERROR",
    "Stopper",
    "current_stopper",
    "invoke",
    "invoke_many",
    "report",
    "shutdown",
    "stats",
]
