"""Calling a handler the way the platform does: context, timeout, captured output, JSON out.

Three ways to run the handler (`isolation=`), one result (`Invocation`) whatever it does:

- "process" (the default): in a warm worker process (fnkit/_isolate.py). A handler past
  its timeout is killed; an exit, a crash or a memory blow-up ends only the worker.
- "thread": on a handler thread of this process. Past the timeout the caller stops
  waiting and the handler is abandoned: nothing can stop a thread safely, so it is left
  to end on its own, and counted (`fnkit.isolation.stats()["abandoned_threads_running"]`).
- "none": inline, on the caller's thread, for debugging (breakpoints work). A handler
  that finishes after its timeout is reported timed out, as the platform would have cut it.

Output is captured per invocation. In this process, sys.stdout and sys.stderr are wrapped
once by a router that sends each write to the invocation running in that context
(a context variable), or on to the real stream; they are never swapped per call.
"""

from __future__ import annotations

import contextvars
import io
import itertools
import json
import logging
import queue as queue_module
import sys
import threading
import time
import traceback as _tb
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

from ._report import Raw, loads_strict

#: A handler as the platform calls it: `handler(event, context)`.
Handler = Callable[[Any, Any], Any]

_counter = itertools.count(1)


def _request_id(function_name: str) -> str:
    # deterministic within a process run, so notebooks compare equal under nbval
    n = next(_counter)
    tag = zlib.crc32(function_name.encode()) & 0xFFFFFFFF
    return f"{tag:08x}-{n >> 32 & 0xFFFF:04x}-4{n >> 20 & 0xFFF:03x}-8{n >> 8 & 0xFFF:03x}-{n & 0xFFFFFFFFFFFF:012x}"


class Context:
    """The context object handed to handlers: names, request id, remaining time."""

    def __init__(
        self,
        *,
        function_name: str = "fnkit-handler",
        function_version: str = "$LATEST",
        memory_limit_in_mb: int = 128,
        region: str = "us-east-1",
        account_id: str = "123456789012",
        aws_request_id: str | None = None,
        timeout_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.function_name = function_name
        self.function_version = function_version
        self.memory_limit_in_mb = memory_limit_in_mb
        self.invoked_function_arn = f"arn:aws:lambda:{region}:{account_id}:function:{function_name}"
        self.aws_request_id = aws_request_id or _request_id(function_name)
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = f"2026/01/01/[{function_version}]fnkit"
        self.timeout_s = timeout_s
        self._clock = clock
        self._deadline: float | None = None

    #: attributes that stay in the caller's process when the handler runs in a worker
    _local_only: tuple[str, ...] = ()
    #: the mail source's message content API, set for each invocation (fnkit.mail); other sources set none
    message_content: Any

    def _start(self) -> None:
        if self.timeout_s is not None:
            self._deadline = self._clock() + self.timeout_s

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the timeout (a large number when there is none)."""
        if self._deadline is None:
            return 900_000
        return max(0, int((self._deadline - self._clock()) * 1000))

    def __repr__(self) -> str:
        return f"Context(function_name={self.function_name!r}, aws_request_id={self.aws_request_id!r})"


@dataclass(frozen=True, slots=True)
class HandlerError:
    """What a raising handler raised: exception type, message, traceback text."""

    type: str
    message: str
    traceback: str

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type


@dataclass(frozen=True, slots=True)
class Invocation:
    """What happened when a handler was called."""

    returned: Any = None
    response_text: str | None = None
    error: HandlerError | None = None
    timed_out: bool = False
    duration_ms: float = 0.0
    logs: str = ""
    timeout_s: float | None = None
    encode_error: str | None = field(default=None)
    reports: tuple[tuple[str, Any], ...] = ()  # (topic, value) pairs sent by `fnkit.isolation.report` during the call

    @property
    def succeeded(self) -> bool:
        """The handler returned (it may still have returned junk)."""
        return self.error is None and not self.timed_out

    @property
    def status(self) -> str:
        """`returned`, `error` or `timeout`."""
        if self.timed_out:
            return "timeout"
        return "error" if self.error is not None else "returned"

    def response(self) -> Any:
        """The response as the platform reads it: a decoded JSON value, or `Raw` when it is not JSON."""
        if self.response_text is None:
            return Raw(b"") if self.encode_error else None
        try:
            return loads_strict(self.response_text)
        except (ValueError, RecursionError):
            return Raw(self.response_text)


#: what `json.dumps(value, allow_nan=False, separators=(",", ":"), ensure_ascii=False)` makes afresh on
#: every call, made once (it holds no state between calls)
_ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"), ensure_ascii=False)


def encode_response(value: Any) -> tuple[str | None, str | None]:
    """The JSON text the platform would receive, or (None, why) when JSON cannot encode it."""
    if isinstance(value, Raw):
        return value.text(), (None if value.text() is not None else "the bytes are not UTF-8")
    try:
        return _ENCODER.encode(value), None
    except (TypeError, ValueError, RecursionError) as exc:
        return None, str(exc)
    except Exception as exc:  # noqa: BLE001 - a container whose own methods raise (a dict subclass, say)
        return None, f"{type(exc).__name__}: {exc}"


ISOLATIONS = ("process", "thread", "none")
DEFAULT_MEMORY_LIMIT_MB = 1024  # a worker process's address space (resource.setrlimit); FNKIT_MEMORY_LIMIT_MB overrides
MAX_LOG_CHARS = 1_000_000  # per invocation; the rest is counted, not kept (a printing loop stays bounded)
GRACE_S = 0.1  # past the timeout, how long the caller still waits for an answer already on its way


class Unsendable:
    """Stands for a returned value that could not be copied back from the worker process (a generator, say)."""

    def __init__(self, value: Any) -> None:
        try:
            self.text = repr(value)
        except Exception:  # noqa: BLE001
            self.text = f"<{type(value).__name__} object>"
        self.type_name = type(value).__name__

    def __repr__(self) -> str:
        return f"<{self.type_name} returned in the worker process, which cannot be copied back: {self.text[:200]}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unsendable) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


# --- capturing output: one router, installed once, a context variable per invocation ---------


class _Capture:
    """What one invocation printed and logged (bounded), and what it reported."""

    __slots__ = ("parts", "reports", "size")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.reports: list[tuple[str, Any]] = []

    def write(self, text: str) -> int:
        if self.size < MAX_LOG_CHARS:
            self.parts.append(text[: MAX_LOG_CHARS - self.size])
        self.size += len(text)
        return len(text)

    def text(self) -> str:
        out = "".join(self.parts)
        if self.size > MAX_LOG_CHARS:
            out += f"\n[fnkit: output cut after {MAX_LOG_CHARS:,} characters; {self.size - MAX_LOG_CHARS:,} more]\n"
        return out


_current: contextvars.ContextVar[_Capture | None] = contextvars.ContextVar("fnkit_capture", default=None)


class _Router(io.TextIOBase):
    """Stands in for sys.stdout/err for good: a write goes to the invocation running in its context, else on."""

    def __init__(self, original: TextIO) -> None:
        self.original = original

    def write(self, s: str) -> int:
        capture = _current.get()
        if capture is not None:
            return capture.write(s)
        return self.original.write(s)

    def flush(self) -> None:
        if _current.get() is None:
            self.original.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.original, name)


class _LogCapture(logging.Handler):
    """A root logging handler: records made during an invocation go to its output as `[LEVEL] message`."""

    def emit(self, record: logging.LogRecord) -> None:
        capture = _current.get()
        if capture is not None:
            try:
                capture.write(f"[{record.levelname}] {record.getMessage()}\n")
            except Exception:  # noqa: BLE001 - a broken log call must not break the invocation
                pass


_log_handler = _LogCapture()
_install_lock = threading.Lock()
_routers: list[_Router] = []  # every router ever installed stays referenced: a thread may still be writing to it


def _ensure_capture() -> None:
    """Install the router on sys.stdout/err and the logging handler, unless they are there already."""
    if (
        isinstance(sys.stdout, _Router)
        and isinstance(sys.stderr, _Router)
        and _log_handler in logging.getLogger().handlers
    ):
        return
    with _install_lock:
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            if not isinstance(stream, _Router):
                router = _Router(stream)
                _routers.append(router)
                setattr(sys, name, router)
        root = logging.getLogger()
        if _log_handler not in root.handlers:
            root.addHandler(_log_handler)


@contextmanager
def capturing() -> Iterator[None]:
    """Make sure output capture is installed (it then stays: nothing is swapped per call)."""
    _ensure_capture()
    yield


def report(topic: str, value: Any = None) -> bool:
    """Send a fact from code running inside a handler back to the caller (`Invocation.reports`).

    Works the same in every isolation mode: in a worker process the pair travels back
    with the result (so `value` must be picklable). Helpers that handlers call use it to
    say what they were asked to do (`report("process_order", body)`). Outside an
    invocation it does nothing and returns False.
    """
    capture = _current.get()
    if capture is None:
        return False
    capture.reports.append((topic, value))
    return True


# --- calling ----------------------------------------------------------------------------------


def _call_handler(handler: Handler, event: Any, context: Any) -> tuple[str, Any, float]:
    """("returned", value, ms) or ("error", HandlerError, ms): the handler's own run, however it ends."""
    start = time.perf_counter()
    try:
        value = handler(event, context)
        return "returned", value, (time.perf_counter() - start) * 1000.0
    except BaseException as exc:  # noqa: BLE001 - SystemExit and friends are handler errors too
        duration = (time.perf_counter() - start) * 1000.0
        try:
            text = "".join(_tb.format_exception(exc))
            message = str(exc)
        except BaseException:  # noqa: BLE001 - an exception whose __str__ raises
            text, message = "", f"<{type(exc).__name__} that cannot be printed>"
        return "error", HandlerError(type(exc).__name__, message, text), duration


def _invocation(status: str, value: Any, duration_ms: float, capture: _Capture, timeout_s: float | None) -> Invocation:
    logs = capture.text()
    reports = tuple(capture.reports)
    if timeout_s is not None and duration_ms > timeout_s * 1000.0:
        return Invocation(timed_out=True, duration_ms=duration_ms, logs=logs, timeout_s=timeout_s, reports=reports)
    if status == "error":
        return Invocation(error=value, duration_ms=duration_ms, logs=logs, timeout_s=timeout_s, reports=reports)
    text, why = encode_response(value)
    return Invocation(
        returned=value,
        response_text=text,
        duration_ms=duration_ms,
        logs=logs,
        timeout_s=timeout_s,
        encode_error=why,
        reports=reports,
    )


def _run_inline(handler: Handler, event: Any, context: Any, timeout_s: float | None) -> Invocation:
    _ensure_capture()
    capture = _Capture()
    token = _current.set(capture)
    try:
        status, value, duration_ms = _call_handler(handler, event, context)
    finally:
        _current.reset(token)
    if (
        status == "error"
        and value.type == "KeyboardInterrupt"
        and threading.current_thread() is threading.main_thread()
    ):
        raise KeyboardInterrupt  # the person at the keyboard stops the loop, not the handler
    return _invocation(status, value, duration_ms, capture, timeout_s)


class _HandlerThread:
    """A reusable thread for handlers: starting a thread per call costs more than many handlers do."""

    def __init__(self) -> None:
        self.tasks: queue_module.SimpleQueue[Callable[[], None] | None] = queue_module.SimpleQueue()
        self.lock = threading.Lock()
        self.abandoned = False
        self.thread = threading.Thread(target=self._loop, name="fnkit-handler", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            task = self.tasks.get()
            if task is None:
                return
            task()
            with self.lock:
                if self.abandoned:
                    with _threads_lock:
                        THREAD_STATS["abandoned_threads_running"] -= 1
                    return


_idle_threads: list[_HandlerThread] = []
_threads_lock = threading.Lock()
THREAD_STATS = {"abandoned_threads_running": 0, "abandoned_threads_total": 0}


def _run_on_thread(handler: Handler, event: Any, context: Any, timeout_s: float) -> Invocation:
    """Run the handler on a handler thread; past the timeout, stop waiting and leave the thread to end on its own."""
    _ensure_capture()
    with _threads_lock:
        worker = _idle_threads.pop() if _idle_threads else None
    if worker is None:
        worker = _HandlerThread()
    capture = _Capture()
    box: list[tuple[str, Any, float]] = []
    done = threading.Event()

    def task() -> None:
        token = _current.set(capture)
        try:
            box.append(_call_handler(handler, event, context))
        finally:
            _current.reset(token)
            done.set()

    started = time.perf_counter()
    worker.tasks.put(task)
    finished = done.wait(timeout_s + GRACE_S)
    with worker.lock:
        if not finished and not done.is_set():
            worker.abandoned = True
            with _threads_lock:
                THREAD_STATS["abandoned_threads_running"] += 1
                THREAD_STATS["abandoned_threads_total"] += 1
            return Invocation(
                timed_out=True,
                duration_ms=(time.perf_counter() - started) * 1000.0,
                logs=capture.text(),
                timeout_s=timeout_s,
                reports=tuple(capture.reports),
            )
    with _threads_lock:
        if len(_idle_threads) < 32:
            _idle_threads.append(worker)
        else:
            worker.tasks.put(None)
    status, value, duration_ms = box[0]
    return _invocation(status, value, duration_ms, capture, timeout_s)


def handler_copy(event: Any) -> Any:
    """The event as the handler gets it: its own copy, as on the platform (a worker process gets one anyway)."""
    if isinstance(event, (str, bytes, int, float, bool)) or event is None:
        return event
    try:
        import pickle

        return pickle.loads(pickle.dumps(event, pickle.HIGHEST_PROTOCOL))
    except Exception:  # noqa: BLE001
        try:
            import copy

            return copy.deepcopy(event)
        except Exception:  # noqa: BLE001 - an object that cannot be copied is handed over as it is
            return event


def _prepare(context: Context | None, timeout_s: float | None, start: bool = True) -> Context:
    if context is None:
        context = Context(timeout_s=timeout_s)
    elif timeout_s is not None and context.timeout_s is None:
        context.timeout_s = timeout_s
    if start:
        context._start()
    return context


def _check_isolation(isolation: str) -> None:
    if isolation not in ISOLATIONS:
        raise ValueError(f"isolation is 'process', 'thread' or 'none', not {isolation!r}")


def _internal_error(exc: BaseException, timeout_s: float | None) -> Invocation:
    return Invocation(
        error=HandlerError(
            "fnkit.InternalError",
            f"fnkit could not run the handler: {type(exc).__name__}: {exc}",
            "".join(_tb.format_exception(exc)),
        ),
        timeout_s=timeout_s,
    )


def invoke(
    handler: Handler,
    event: Any,
    *,
    timeout_s: float | None = None,
    context: Context | None = None,
    isolation: str = "process",
    memory_limit_mb: int | None = None,
) -> Invocation:
    """Call `handler(event, context)`, capturing its result, error, output and time; never raises.

    `isolation`: "process" (default: a worker process, killed past the timeout; an exit,
    a crash or a memory blow-up past `memory_limit_mb`, default 1024, is an error of the
    invocation), "thread" (a thread of this process, abandoned past the timeout), or
    "none" (inline, for debugging). The caller never waits much past `timeout_s`
    (except with "none"). The handler gets its own copy of the event in every mode.
    """
    return _call(handler, event, timeout_s, context, isolation, memory_limit_mb, copy=handler_copy)


def _call(
    handler: Handler,
    event: Any,
    timeout_s: float | None,
    context: Context | None,
    isolation: str,
    memory_limit_mb: int | None = None,
    *,
    copy: Callable[[Any], Any] | None = None,
) -> Invocation:
    """`invoke` without checking its keywords; `copy` makes the handler's own copy of the event (None: the
    event was made for this call alone, as a simulator builds each batch's event afresh, and goes as it is)."""
    _check_isolation(isolation)
    context = _prepare(context, timeout_s)
    try:
        if isolation == "process":  # the event travels to the worker: a copy of its own there
            from . import _isolate

            return _isolate.call(handler, event, context, timeout_s, memory_limit_mb)
        if copy is not None:
            event = copy(event)
        if isolation == "thread" and timeout_s is not None:
            return _run_on_thread(handler, event, context, timeout_s)
        return _run_inline(handler, event, context, timeout_s)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - a bug of fnkit's must not look like the caller's
        return _internal_error(exc, timeout_s)


def invoke_many(
    handler: Handler,
    events: Any,
    *,
    timeout_s: float | None = None,
    contexts: Any = None,
    isolation: str = "process",
    memory_limit_mb: int | None = None,
) -> list[Invocation]:
    """`invoke` for each event in turn, cheaper per event: with "process", whole chunks travel to one worker.

    Each event keeps its own timeout, enforced by the caller: a handler that hangs is
    killed, that event is timed out, and the others go on in a fresh worker. `contexts`:
    one per event (default: a new `Context` each).
    """
    _check_isolation(isolation)
    events = list(events)
    contexts = [None] * len(events) if contexts is None else list(contexts)
    if len(contexts) != len(events):
        raise ValueError(f"give one context per event: {len(events)} event(s), {len(contexts)} context(s)")
    if isolation != "process":
        return [
            invoke(handler, e, timeout_s=timeout_s, context=c, isolation=isolation)
            for e, c in zip(events, contexts, strict=True)
        ]
    prepared = [_prepare(c, timeout_s, start=False) for c in contexts]  # each clock starts in the worker
    try:
        from . import _isolate

        return _isolate.call_many(handler, events, prepared, timeout_s, memory_limit_mb)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001
        return [_internal_error(exc, timeout_s) for _ in events]
