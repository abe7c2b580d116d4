"""The calls users make: `invoke` and `invoke_many` choose where the handler runs (fnkit._running.inprocess in this
process, fnkit._running.exchange in worker processes); `stats` and `shutdown` of the isolation layer. `fnkit.isolation`
is where users find them."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .._engine.codec import Invocation
from .._settings.project import resolve_isolation
from .inprocess import (
    THREAD_STATS,
    Context,
    Handler,
    HandlerImportError,
    _import_failed,
    _inline_many,
    _internal_error,
    _prepare,
    _run_inline,
    _run_on_thread,
    check_memory_limit,
    handler_copy,
    interrupted,
    load_handler,
)


def invoke(
    handler: Handler | str,
    event: Any,
    *,
    timeout_s: float | None = None,
    context: Context | None = None,
    isolation: str | None = None,
    memory_limit_mb: int | None = None,
) -> Invocation:
    """Call `handler(event, context)`, capturing its result, error, output and time; never raises.

    `handler`: a callable, or its import path "module:attribute". `isolation`: "none" (the
    default: in this process, on this thread, like calling it; a handler that finishes
    after `timeout_s` is reported timed out), "process" (a worker process, killed past the
    timeout; an exit, a crash or a memory blow-up past `memory_limit_mb`, default 1024, is
    an error of the invocation), or "thread" (abandoned past the timeout). The handler gets
    its own copy of the event in every mode. Ctrl-C during the call raises `Interrupted`.
    """
    __tracebackhide__ = True
    isolation = resolve_isolation(isolation)
    memory_limit_mb = check_memory_limit(memory_limit_mb)
    if memory_limit_mb is not None and isolation != "process":
        _no_memory_limit(isolation)
    return _call(handler, event, timeout_s, context, isolation, memory_limit_mb, copy=handler_copy)


def _no_memory_limit(isolation: str) -> None:
    """Say that a memory limit given for a call in this process is not applied (only a worker process has one)."""
    import warnings

    where = "on a handler thread" if isolation == "thread" else "in the caller's process"
    warnings.warn(
        f"memory_limit_mb is not applied with isolation={isolation!r}: the handler runs {where}, which shares the "
        'caller\'s memory; only isolation="process" runs it under a memory limit.',
        RuntimeWarning,
        stacklevel=3,
    )


def _call(
    handler: Handler | str,
    event: Any,
    timeout_s: float | None,
    context: Context | None,
    isolation: str,
    memory_limit_mb: int | None = None,
    *,
    copy: Callable[[Any], Any] | None = None,
) -> Invocation:
    """`invoke` without checking its keywords, with `isolation` resolved already (one of ISOLATIONS); `copy`
    makes the handler's own copy of the event (None: the event was made for this call alone, as a simulator
    builds each batch's event afresh, and goes as it is)."""
    __tracebackhide__ = True
    context = _prepare(context, timeout_s, start=isolation != "process")  # (in a worker: its clock starts there)
    started = time.perf_counter()
    try:
        if isolation == "process":  # the event travels to the worker: a copy of its own there
            from . import exchange

            return exchange.call(handler, event, context, timeout_s, memory_limit_mb)
        if isinstance(handler, str):
            handler = load_handler(handler)
        if copy is not None:
            event = copy(event)
        if isolation == "thread" and timeout_s is not None:
            return _run_on_thread(handler, event, context, timeout_s)
        return _run_inline(handler, event, context, timeout_s)
    except KeyboardInterrupt:
        raise interrupted(started) from None
    except HandlerImportError as exc:
        return _import_failed(exc, timeout_s)
    except Exception as exc:  # noqa: BLE001 - a bug of fnkit's must not look like the caller's
        return _internal_error(exc, timeout_s)


def invoke_many(
    handler: Handler | str,
    events: Any,
    *,
    timeout_s: float | None = None,
    contexts: Any = None,
    isolation: str | None = None,
    memory_limit_mb: int | None = None,
    copy: bool = True,
) -> list[Invocation]:
    """`invoke` for each event in turn, cheaper per event: with "process", whole chunks travel to one worker.

    Each event keeps its own timeout: a handler that hangs in a worker is killed, that event
    is timed out, and the others go on in a fresh worker. `contexts`: one per event
    (default: a new `Context` each). `copy=False`: the events were made for these calls
    alone (decoded from a file, say), so the handler gets them as they are.
    """
    __tracebackhide__ = True
    isolation = resolve_isolation(isolation)
    memory_limit_mb = check_memory_limit(memory_limit_mb)
    if memory_limit_mb is not None and isolation != "process":
        _no_memory_limit(isolation)
    events = list(events)
    contexts = [None] * len(events) if contexts is None else list(contexts)
    if len(contexts) != len(events):
        raise ValueError(f"give one context per event: {len(events)} event(s), {len(contexts)} context(s)")
    if isolation != "process":
        if isinstance(handler, str):
            try:
                handler = load_handler(handler)
            except HandlerImportError as exc:
                return [_import_failed(exc, timeout_s) for _ in events]
        if isolation == "thread" and timeout_s is not None:
            copier = handler_copy if copy else None
            return [
                _call(handler, e, timeout_s, c, isolation, copy=copier) for e, c in zip(events, contexts, strict=True)
            ]
        return _inline_many(handler, events, contexts, timeout_s, copy)
    prepared = [_prepare(c, timeout_s, start=False) for c in contexts]  # each clock starts in the worker
    started = time.perf_counter()
    try:
        from . import exchange

        return exchange.call_many(handler, events, prepared, timeout_s, memory_limit_mb)
    except KeyboardInterrupt:
        raise interrupted(started) from None
    except Exception as exc:  # noqa: BLE001
        return [_internal_error(exc, timeout_s) for _ in events]


def stats() -> dict[str, int]:
    """Counts of this process: workers started/killed/crashed, calls, abandoned handler threads."""
    import sys

    counts = {"workers_started": 0, "workers_killed": 0, "worker_crashes": 0, "calls": 0}
    wire = sys.modules.get("fnkit._running.wire")
    if wire is not None:  # (another thread may be importing it right now: STATS comes once it is there)
        counts.update(getattr(wire, "STATS", {}))
    counts.update(THREAD_STATS)
    return counts


def shutdown() -> None:
    """Stop every idle worker process and the process that forks them."""
    import sys

    pool = sys.modules.get("fnkit._running.pool")
    if pool is not None and hasattr(pool, "shutdown"):  # (one being imported right now has no worker yet)
        pool.shutdown()
