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
"""

from __future__ import annotations

from ._invoke import DEFAULT_MEMORY_LIMIT_MB, ISOLATIONS, THREAD_STATS, invoke, invoke_many, report


def stats() -> dict:
    """Counts of this process: workers started/killed/crashed, calls, abandoned handler threads."""
    import sys

    counts = {"workers_started": 0, "workers_killed": 0, "worker_crashes": 0, "calls": 0}
    isolate = sys.modules.get("fnkit._isolate")
    if isolate is not None:
        counts.update(isolate.STATS)
    counts.update(THREAD_STATS)
    return counts


def shutdown() -> None:
    """Stop every idle worker process and the process that forks them."""
    import sys

    isolate = sys.modules.get("fnkit._isolate")
    if isolate is not None:
        isolate.shutdown()


__all__ = ["DEFAULT_MEMORY_LIMIT_MB", "ISOLATIONS", "invoke", "invoke_many", "report", "shutdown", "stats"]
