"""Calling a handler the way the platform does: context, timeout, captured output, JSON out."""

from __future__ import annotations

import io
import itertools
import json
import logging
import queue as queue_module
import signal

try:  # the plain functions, without the enum wrapping of the signal module
    from _signal import setitimer as _setitimer, signal as _set_handler
except ImportError:  # pragma: no cover
    _setitimer = getattr(signal, "setitimer", None)
    _set_handler = signal.signal
import sys
import threading
import time
import traceback as _tb
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

from ._report import Raw, loads_strict

_counter = itertools.count(1)


def _request_id(function_name: str) -> str:
    # deterministic within a process run, so notebooks compare equal under nbval
    n = next(_counter)
    tag = zlib.crc32(function_name.encode()) & 0xFFFFFFFF
    return "%08x-%04x-4%03x-8%03x-%012x" % (tag, n >> 32 & 0xFFFF, n >> 20 & 0xFFF, n >> 8 & 0xFFF, n & 0xFFFFFFFFFFFF)


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


def encode_response(value: Any) -> tuple[str | None, str | None]:
    """The JSON text the platform would receive, or (None, why) when JSON cannot encode it."""
    if isinstance(value, Raw):
        return value.text(), (None if value.text() is not None else "the bytes are not UTF-8")
    try:
        return json.dumps(value, allow_nan=False, separators=(",", ":"), ensure_ascii=False), None
    except (TypeError, ValueError, RecursionError) as exc:
        return None, str(exc)


# --- capturing output per thread -------------------------------------------

_capture_lock = threading.Lock()
_captures: dict[int, io.StringIO] = {}


class _Router(io.TextIOBase):
    """Stands in for sys.stdout/err while handlers run; routes each thread's writes."""

    def __init__(self, original: Any) -> None:
        self.original = original

    def write(self, s: str) -> int:  # type: ignore[override]
        buf = _captures.get(threading.get_ident())
        if buf is not None:
            return buf.write(s)
        return self.original.write(s)

    def flush(self) -> None:
        buf = _captures.get(threading.get_ident())
        if buf is None:
            self.original.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.original, name)


class _LogCapture(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        buf = _captures.get(record.thread or 0)
        if buf is not None:
            try:
                buf.write(f"[{record.levelname}] {record.getMessage()}\n")
            except Exception:  # a broken log call must not break the invocation
                pass


_log_handler = _LogCapture()
_installed = 0


def _install() -> None:
    global _installed
    with _capture_lock:
        if _installed == 0:
            sys.stdout = _Router(sys.stdout)
            sys.stderr = _Router(sys.stderr)
            logging.getLogger().addHandler(_log_handler)
        _installed += 1


def _uninstall() -> None:
    global _installed
    with _capture_lock:
        _installed -= 1
        if _installed:
            return
        if isinstance(sys.stdout, _Router):
            sys.stdout = sys.stdout.original
        if isinstance(sys.stderr, _Router):
            sys.stderr = sys.stderr.original
        logging.getLogger().removeHandler(_log_handler)


class capturing:
    """Keep output capture installed across many invocations (simulators use it: cheaper per call)."""

    def __enter__(self) -> "capturing":
        _install()
        return self

    def __exit__(self, *exc: Any) -> None:
        _uninstall()


class _Deadline(BaseException):
    """Raised inside a handler running on the main thread when its time is up."""


_SIGALRM = int(getattr(signal, "SIGALRM", 14))
_ITIMER_REAL = int(getattr(signal, "ITIMER_REAL", 0))
_MAIN_IDENT = threading.main_thread().ident


def _can_alarm() -> bool:
    return _setitimer is not None and hasattr(signal, "SIGALRM") and threading.get_ident() == _MAIN_IDENT


def _call_with_alarm(call: Callable[[], None], box: dict, timeout_s: float) -> bool:
    """Run `call` on this (main) thread, interrupted by a real-time alarm at the timeout.

    Cheaper than a thread per call, and the handler is really stopped. An outer alarm
    (pytest-timeout, say) is put back with the time it had left.
    """
    def on_alarm(signum: int, frame: Any) -> None:
        raise _Deadline()

    previous = _set_handler(_SIGALRM, on_alarm)
    outer_delay, outer_interval = _setitimer(_ITIMER_REAL, max(timeout_s, 1e-6))
    started = time.monotonic()
    try:
        try:
            call()
        finally:
            _setitimer(_ITIMER_REAL, 0)
    except _Deadline:
        pass  # the alarm landed between the handler's return and the disarm
    finally:
        _set_handler(_SIGALRM, previous)
        if outer_delay:
            left = outer_delay - (time.monotonic() - started)
            _setitimer(_ITIMER_REAL, max(left, 1e-3), outer_interval)
    error = box.get("error")
    if isinstance(error, HandlerError) and error.type == "_Deadline":
        del box["error"]
        return True
    return "returned" not in box and "error" not in box


class _Worker:
    """A reusable handler thread: starting a thread per call costs more than many handlers do."""

    def __init__(self) -> None:
        self.tasks: "queue_module.SimpleQueue[tuple[Callable[[], None], threading.Event]]" = queue_module.SimpleQueue()
        self.retired = False
        self.thread = threading.Thread(target=self._loop, name="fnkit-handler", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        try:
            while not self.retired:
                call, done = self.tasks.get()
                call()
                done.set()
        except BaseException:  # noqa: BLE001 - a late stop request landing between tasks ends the worker
            pass


_idle_workers: list[_Worker] = []
_workers_lock = threading.Lock()


def _call_on_worker(call: Callable[[], None], timeout_s: float) -> bool:
    """Run `call` on an idle worker thread; True when it is still running at the timeout."""
    worker = None
    with _workers_lock:
        while _idle_workers and worker is None:
            candidate = _idle_workers.pop()
            if candidate.thread.is_alive() and not candidate.retired:
                worker = candidate
    if worker is None:
        worker = _Worker()
    done = threading.Event()
    worker.tasks.put((call, done))
    if done.wait(max(0.0, timeout_s)):
        with _workers_lock:
            if len(_idle_workers) < 32:
                _idle_workers.append(worker)
                return False
        worker.retired = True
        worker.tasks.put((lambda: None, threading.Event()))
        return False
    # the handler overran: the worker is retired and asked to stop
    worker.retired = True
    _stop_thread(worker.thread)
    return True


def _stop_thread(worker: threading.Thread) -> None:
    """Ask a timed-out handler's thread to stop: it gets an exception at its next Python step.

    A handler blocked inside C (a long sleep, a socket wait) stops when that call returns;
    the caller never waits for it either way.
    """
    try:
        import ctypes

        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident), ctypes.py_object(_Deadline))
    except Exception:  # noqa: BLE001 - not CPython: the thread is left to finish on its own
        pass


def invoke(
    handler: Callable[[Any, Any], Any],
    event: Any,
    *,
    timeout_s: float | None = None,
    context: Context | None = None,
) -> Invocation:
    """Call `handler(event, context)`, capturing its result, error, output and time; never raises.

    With `timeout_s`, the handler runs on a worker thread and the caller stops waiting at
    the timeout (the thread cannot be killed; it is left to finish in the background).
    """
    if context is None:
        context = Context(timeout_s=timeout_s)
    elif timeout_s is not None and context.timeout_s is None:
        context.timeout_s = timeout_s
    box: dict[str, Any] = {}
    buf = io.StringIO()

    def call() -> None:
        _captures[threading.get_ident()] = buf
        try:
            box["returned"] = handler(event, context)
        except BaseException as exc:  # noqa: BLE001 - SystemExit and friends are handler errors too
            box["error"] = HandlerError(type(exc).__name__, str(exc), "".join(_tb.format_exception(exc)))
        finally:
            _captures.pop(threading.get_ident(), None)

    _install()
    context._start()
    start = time.perf_counter()
    try:
        if timeout_s is None:
            call()
            timed_out = False
        elif _can_alarm():
            timed_out = _call_with_alarm(call, box, timeout_s)
        else:
            timed_out = _call_on_worker(call, timeout_s)
    finally:
        duration_ms = (time.perf_counter() - start) * 1000.0
        _uninstall()
    if timed_out:
        return Invocation(timed_out=True, duration_ms=duration_ms, logs=buf.getvalue(), timeout_s=timeout_s,
                          error=None)
    if "error" in box:
        return Invocation(error=box["error"], duration_ms=duration_ms, logs=buf.getvalue(), timeout_s=timeout_s)
    returned = box.get("returned")
    text, why = encode_response(returned)
    return Invocation(returned=returned, response_text=text, duration_ms=duration_ms, logs=buf.getvalue(),
                      timeout_s=timeout_s, encode_error=why)
