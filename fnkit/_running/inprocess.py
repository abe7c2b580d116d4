"""Calling a handler the way the platform does: context, timeout, captured output, JSON out.

Three ways to run the handler (`isolation=`), one result (`Invocation`, fnkit/_engine/codec.py) whatever
it does; `invoke` and `invoke_many` (fnkit/isolation.py, above this module and the package fnkit/_running)
choose between them:

- "none" (the default of every call a user makes: `invoke`, each source's `run`, the
  simulators, replay, `fnkit.testing`): in this process, on the caller's thread, like
  calling it. Mocks, moto, closures, breakpoints and coverage see the handler. A handler
  that finishes after its timeout is reported timed out, as the platform would have cut it;
  Ctrl-C (or Jupyter's interrupt) stops the call and raises `Interrupted`, one sentence.
- "process": in a warm worker process (fnkit/_running), the default where the caller
  must survive any handler (the widgets' runner, workshop checks, the servers). A handler
  past its timeout is killed; an exit, a crash or a memory blow-up ends only the worker.
  What the worker sends back is data (JSON-like values, strings, numbers), never pickles.
- "thread": on a handler thread of this process. Past the timeout the caller stops
  waiting and the handler is abandoned: nothing can stop a thread safely, so it is left
  to end on its own, and counted (`fnkit.isolation.stats()["abandoned_threads_running"]`).

A handler is a callable, or its import path as a string, "module:attribute" (the worker
imports it, as the platform does, instead of receiving a copy). A handler that returns a
coroutine (an `async def` handler) is run to completion on an event loop of its own.

Output is captured per invocation. In this process, sys.stdout and sys.stderr are wrapped
once by a router that sends each write to the invocation running in that context
(a context variable), or on to the real stream; they are never swapped per call.
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import io
import logging
import queue as queue_module
import sys
import threading
import time
import traceback as _tb
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO, TypeVar, cast

from .._engine.codec import HandlerError, Invocation, encode_response, returned_invocation
from .._settings.project import resolve_isolation
from .context import Context as Context  # (where the rooms above find it)
from .context import _fresh

#: A handler as the platform calls it: `handler(event, context)`.
Handler = Callable[[Any, Any], Any]

ISOLATIONS = ("process", "thread", "none")
#: where a call a user makes runs when it does not say: in the caller's process, on its thread
DEFAULT_ISOLATION = "none"
#: where the callers that must survive any handler run it (the widgets' runner, workshop checks, the servers)
SAFE_ISOLATION = "process"
DEFAULT_MEMORY_LIMIT_MB = 1024  # a worker process's address space (resource.setrlimit); FNKIT_MEMORY_LIMIT_MB overrides
MAX_LOG_CHARS = 1_000_000  # per invocation; the rest is counted, not kept (a printing loop stays bounded)
GRACE_S = 0.1  # past the timeout, how long the caller still waits for an answer already on its way
IMPORT_ERROR = "Runtime.ImportModuleError"  # the platform's name for a handler whose module does not load


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or Jupyter's interrupt) stopped a call: the handler did not finish, and nothing was counted."""


def check_memory_limit(memory_limit_mb: object) -> int | None:
    """`memory_limit_mb` as given, when it is None or a whole number of megabytes above 0; ValueError otherwise."""
    if memory_limit_mb is None:
        return None
    if isinstance(memory_limit_mb, bool) or not isinstance(memory_limit_mb, int) or memory_limit_mb <= 0:
        raise ValueError(
            "memory_limit_mb is a whole number of megabytes above 0 (or None for the default, "
            f"{DEFAULT_MEMORY_LIMIT_MB:,}), not {memory_limit_mb!r}"
        )
    return memory_limit_mb


class HandlerImportError(ImportError):
    """A handler given as "module:attribute" that cannot be imported; the message is one sentence."""


def split_handler_path(spec: str) -> tuple[str, str]:
    """("module", "attribute") of an import path "module:attribute"; ValueError when it is not one."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name.strip() or not attr.strip():
        raise ValueError(f"a handler's import path is 'module:attribute' (for example app:handler), not {spec!r}")
    return module_name.strip(), attr.strip()


def load_handler(spec: str) -> Handler:
    """Import the handler named by "module:attribute" (attributes may be dotted); HandlerImportError says why not."""
    module_name, attr = split_handler_path(spec)
    try:
        target: Any = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:  # a module whose own code raises (or exits) fails to import
        raise HandlerImportError(f"Unable to import module '{module_name}': {type(exc).__name__}: {exc}") from exc
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise HandlerImportError(
                f"Handler '{attr}' missing on module '{module_name}' (it has no attribute {part!r})"
            ) from None
    if not callable(target):
        raise HandlerImportError(
            f"Handler '{attr}' of module '{module_name}' is a {type(target).__name__}, not callable"
        )
    handler: Handler = target
    return handler


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
        if not self.size:
            return ""
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
    if type(sys.stdout) is _Router and type(sys.stderr) is _Router and _log_handler in logging.root.handlers:
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

_running_context: contextvars.ContextVar[Any] = contextvars.ContextVar("fnkit_running_context", default=None)


def current_context() -> Any:
    """The context of the invocation running here (this thread, or this worker), None outside one.

    Code that a handler calls (a bridge answering an SDK's calls, say) reads it to know
    which invocation it serves; it works the same in every isolation mode.
    """
    return _running_context.get()


def _ensure_event_loop(asyncio: Any) -> None:
    """Give this thread an open event loop when it has none (a handler thread, a worker, a Dask worker's thread,
    or a thread whose loop `asyncio.run` closed and unset).

    Adapters such as Mangum ask asyncio for the thread's loop; off the main thread there is
    none unless somebody sets one.
    """
    local = getattr(asyncio.get_event_loop_policy(), "_local", None)  # the default policy's per-thread slot
    if local is not None:
        loop = getattr(local, "_loop", None)
        if loop is not None and not loop.is_closed():
            return
    else:  # another policy: ask it, quietly
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            try:
                if not asyncio.get_event_loop().is_closed():
                    return
            except RuntimeError:
                pass
    asyncio.set_event_loop(asyncio.new_event_loop())


def _set_loop_aside(asyncio: Any) -> tuple[Any, Any] | None:
    """While the handler runs, this thread has no running event loop: a Jupyter kernel's is set aside.

    A handler is synchronous code: an adapter that drives its own loop (`run_until_complete`)
    must not find the caller's loop running. Returns what `_put_loop_back` needs, or None.
    """
    running = asyncio.events._get_running_loop()
    if running is None:
        _ensure_event_loop(asyncio)
        return None
    own = asyncio.new_event_loop()
    asyncio.events._set_running_loop(None)
    asyncio.set_event_loop(own)
    return running, own


def _put_loop_back(asyncio: Any, running: Any, own: Any) -> None:
    asyncio.set_event_loop(running)
    asyncio.events._set_running_loop(running)
    own.close()


def _await(coroutine: Any) -> Any:
    """The value of an async handler's coroutine, run to completion on a loop of its own."""
    import asyncio

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def _call_handler(
    handler: Handler, event: Any, context: Any, interruptible: bool = False, running: bool = False
) -> tuple[str, Any, float]:
    """("returned", value, ms) or ("error", HandlerError, ms): the handler's own run, however it ends.

    `interruptible`: a KeyboardInterrupt is the person at the keyboard stopping the call (it
    propagates), not an error of the handler (in a worker, where Ctrl-C never arrives, it is).
    `running`: the caller has made `context` the running one (`current_context`) and puts the one before back
    itself (`_inline_many`, once for all its calls).
    """
    token = None if running else _running_context.set(context)
    asyncio = sys.modules.get("asyncio")
    aside = None if asyncio is None else _set_loop_aside(asyncio)
    start = time.perf_counter()
    try:
        value = handler(event, context)
        if type(value).__name__ == "coroutine":
            value = _await(value)
        return "returned", value, (time.perf_counter() - start) * 1000.0
    except KeyboardInterrupt:
        if interruptible:
            raise
        return "error", _handler_error(KeyboardInterrupt()), (time.perf_counter() - start) * 1000.0
    except BaseException as exc:  # noqa: BLE001 - SystemExit and friends are handler errors too
        duration = (time.perf_counter() - start) * 1000.0
        return "error", _handler_error(exc), duration
    finally:
        if token is not None:
            _running_context.reset(token)
        if aside is not None:
            _put_loop_back(asyncio, *aside)


def _handler_error(exc: BaseException) -> HandlerError:
    try:
        text = "".join(_tb.format_exception(exc))
        message = str(exc)
    except BaseException:  # noqa: BLE001 - an exception whose __str__ raises
        text, message = "", f"<{type(exc).__name__} that cannot be printed>"
    return HandlerError(type(exc).__name__, message, text)


def ended_invocation(
    status: str,
    duration_ms: float,
    logs: str,
    timeout_s: float | None,
    reports: tuple[tuple[str, Any], ...],
    *,
    error: HandlerError | None = None,
    returned: Any = None,
    response_text: str | None = None,
    encode_error: str | None = None,
    response_size: int | None = None,
    response_report: Any = None,
) -> Invocation:
    """The `Invocation` of a call that ended by itself, wherever it ran (H4: ended late is timed out)."""
    if timeout_s is not None and duration_ms > timeout_s * 1000.0:
        return Invocation(timed_out=True, duration_ms=duration_ms, logs=logs, timeout_s=timeout_s, reports=reports)
    if status == "error":
        return Invocation(error=error, duration_ms=duration_ms, logs=logs, timeout_s=timeout_s, reports=reports)
    return Invocation(
        returned=returned,
        response_text=response_text,
        duration_ms=duration_ms,
        logs=logs,
        timeout_s=timeout_s,
        encode_error=encode_error,
        reports=reports,
        response_size=response_size,
        response_report=response_report,
    )


def _invocation_here(
    status: str, value: Any, duration_ms: float, capture: _Capture, timeout_s: float | None
) -> Invocation:
    """`ended_invocation` for a call that ran in this process (its fields given in order: every call's path)."""
    logs = capture.text() if capture.size else ""
    reports = tuple(capture.reports) if capture.reports else ()
    if (timeout_s is not None and duration_ms > timeout_s * 1000.0) or status == "error":  # (H4: see there)
        error = value if status == "error" else None
        return ended_invocation(status, duration_ms, logs, timeout_s, reports, error=error)
    text, why = _NULL if value is None else encode_response(value)  # (None: what most queue and mail handlers return)
    return returned_invocation(value, text, duration_ms, logs, timeout_s, why, reports)


_NULL = encode_response(None)


def _run_inline(handler: Handler, event: Any, context: Any, timeout_s: float | None) -> Invocation:
    _ensure_capture()
    capture = _Capture()
    token = _current.set(capture)
    try:
        status, value, duration_ms = _call_handler(handler, event, context, interruptible=True)
    finally:
        _current.reset(token)
    return _invocation_here(status, value, duration_ms, capture, timeout_s)


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
    finished_in_time = done.wait(timeout_s + GRACE_S)
    with worker.lock:
        if not finished_in_time and not done.is_set():
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
    return _invocation_here(status, value, duration_ms, capture, timeout_s)


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
        return _fresh(timeout_s, start)
    if timeout_s is not None and context.timeout_s is None:
        context.timeout_s = timeout_s
    if start:
        context._start()
    return context


def _check_isolation(isolation: str) -> None:
    resolve_isolation(isolation)


def _internal_error(exc: BaseException, timeout_s: float | None) -> Invocation:
    return Invocation(
        error=HandlerError(
            "fnkit.InternalError",
            f"fnkit could not run the handler: {type(exc).__name__}: {exc}",
            "".join(_tb.format_exception(exc)),
        ),
        timeout_s=timeout_s,
    )


def _import_failed(exc: HandlerImportError, timeout_s: float | None) -> Invocation:
    return Invocation(error=HandlerError(IMPORT_ERROR, str(exc), ""), timeout_s=timeout_s)


def interrupted(started: float, what: str = "the handler") -> Interrupted:
    """The one sentence a person who pressed Ctrl-C (or Jupyter's ■) during a call reads."""
    _quiet_interrupt_in_ipython()
    ended = "before it returned" if what == "the handler" else "before it ended"
    return Interrupted(
        f"Interrupted: {what} was stopped after {time.perf_counter() - started:.1f} s, {ended} "
        "(Ctrl-C or Kernel → Interrupt); this call has no outcome."
    )


_F = TypeVar("_F", bound=Callable[..., Any])


def stops_in_one_sentence(what: str) -> Callable[[_F], _F]:
    """Ctrl-C anywhere in the decorated call (a simulation, a replay) raises `Interrupted`: one sentence, no
    traceback through fnkit's own code."""

    def decorate(func: _F) -> _F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            started = time.perf_counter()
            try:
                return func(*args, **kwargs)
            except Interrupted:
                raise
            except KeyboardInterrupt:
                raise interrupted(started, what) from None

        return cast(_F, wrapper)

    return decorate


_ipython_hooked = False


def _quiet_interrupt_in_ipython() -> None:
    """In IPython (a Jupyter kernel), show `Interrupted` as its sentence alone, without a traceback."""
    global _ipython_hooked
    if _ipython_hooked or "IPython" not in sys.modules:
        return
    try:
        import builtins

        getter = getattr(builtins, "get_ipython", None)  # IPython puts it there: nothing of IPython is imported
        shell = getter() if getter is not None else None
        if shell is None:
            return

        def show(shell: Any, etype: Any, value: BaseException, tb: Any, tb_offset: Any = None) -> None:
            print(str(value), file=sys.stderr)

        shell.set_custom_exc((Interrupted,), show)
        _ipython_hooked = True
    except Exception:  # noqa: BLE001 - the full traceback is still there without it
        pass


def _inline_many(
    handler: Handler, events: list[Any], contexts: list[Any], timeout_s: float | None, copy: bool
) -> list[Invocation]:
    """`_call` with "none" for each event in turn, as one loop: the capture is installed once.

    Each call's capture and context are set in their context variables as it starts, and what was
    there before the first is put back once, when the loop ends (each `reset` costs as much as a
    `set`): between two calls, only this loop runs."""
    __tracebackhide__ = True
    _ensure_capture()
    results: list[Invocation] = []
    append = results.append
    capture = _Capture()
    before = _current.set(capture), _running_context.set(None)
    try:
        for event, given in zip(events, contexts, strict=True):
            context = _fresh(timeout_s) if given is None else _prepare(given, timeout_s)
            if capture.parts or capture.reports:  # (one that caught nothing serves the next call)
                capture = _Capture()
                _current.set(capture)
            _running_context.set(context)
            started = time.perf_counter()
            try:
                status, value, duration_ms = _call_handler(
                    handler, handler_copy(event) if copy else event, context, True, True
                )
            except KeyboardInterrupt:
                raise interrupted(started) from None
            except Exception as exc:  # noqa: BLE001 - a bug of fnkit's must not look like the caller's
                append(_internal_error(exc, timeout_s))
                continue
            append(_invocation_here(status, value, duration_ms, capture, timeout_s))
    finally:
        _running_context.reset(before[1])
        _current.reset(before[0])
    return results
