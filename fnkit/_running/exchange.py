"""One exchange with a worker, written once as a generator of steps (take a worker, send, wait), and the
driver that runs it on the caller's thread (`call`, `call_many`); fnkit._running.loop drives the same
steps on an event loop.
"""

from __future__ import annotations

import hashlib
import pickle
import sys
import threading
import time
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, TypeVar

from .._engine.codec import HandlerError, Invocation, loads_strict
from .inprocess import (
    GRACE_S,
    IMPORT_ERROR,
    MAX_LOG_CHARS,
    Context,
    Handler,
    ended_invocation,
)
from .outgoing import NotMovable, _dumps_message, _handler_blob, _sync_for, call_item
from .pool import _pool, _Worker, memory_limit_mb
from .stop import STOPPED_ERROR, current_stopper
from .wire import (
    _ALARM,
    _FRAME_LINE,
    _IMPORT_BLOB,
    _PROTOCOL,
    BACKSTOP_S,
    ENDED,
    ERROR_EXIT,
    ERROR_NOT_MOVABLE,
    LOAD_TIMEOUT_S,
    MAX_HANDLERS_PER_WORKER,
    STATS,
    STOPPED_BEFORE,
    STOPPED_TEXT,
    CallBack,
    Ended,
    Held,
    Loaded,
    Message,
    Out,
    Reply,
    Result,
    _ended_by_alarm,
    _from_data,
    _message,
)

if TYPE_CHECKING:
    pass

# --- one exchange ----------------------------------------------------------------------------------


class _Item:
    """One event of a call or a batch: what goes out, and what came back."""

    __slots__ = (
        "call_id",
        "context",
        "event",
        "log_size",
        "logs",
        "message",
        "result",
        "services",
        "started",
        "timeout_s",
    )

    def __init__(
        self,
        call_id: int,
        event: Any,
        context: Context,
        timeout_s: float | None,
        bound: tuple[int, Callable[[str, int], Any] | None] | None = None,
    ) -> None:
        self.call_id = call_id
        self.event = event
        self.context = context
        self.timeout_s = timeout_s
        self.result: Invocation | None = None
        self.logs: list[str] = []
        self.log_size = 0
        self.started = 0.0
        self.message, self.services = call_item(call_id, context, timeout_s, bound)

    def add_log(self, text: str) -> None:
        """Keep a piece of the call's output (up to MAX_LOG_CHARS; the rest is counted)."""
        if self.log_size < MAX_LOG_CHARS:
            self.logs.append(text[: MAX_LOG_CHARS - self.log_size])
        self.log_size += len(text)

    def log_text(self) -> str:
        """The call's output, with a note of what was cut."""
        text = "".join(self.logs)
        if self.log_size > MAX_LOG_CHARS:
            text += (
                f"\n[fnkit: output cut after {MAX_LOG_CHARS:,} characters; {self.log_size - MAX_LOG_CHARS:,} more]\n"
            )
        return text


_call_ids = iter(range(1, 1 << 62)).__next__
_call_id_lock = threading.Lock()


def _next_call_id() -> int:
    with _call_id_lock:
        return _call_ids()


def _error_invocation(item: _Item, kind: str, message: str, duration_ms: float = 0.0) -> Invocation:
    return Invocation(
        error=HandlerError(kind, message, ""), duration_ms=duration_ms, logs=item.log_text(), timeout_s=item.timeout_s
    )


def _invocation_from(item: _Item, message: Result) -> Invocation:
    """The `Invocation` of a result the worker sent (as data: nothing in it is unpickled)."""
    status, payload, duration_ms, facts, timeout_s = (
        message.status,
        message.payload,
        message.duration_ms,
        message.reports,
        message.timeout_s,
    )
    if message.changes:
        for key, value in message.changes.items():
            try:
                setattr(item.context, str(key), value)
            except Exception:  # noqa: BLE001 - a read-only attribute stays as it was
                pass
    logs = item.log_text()
    reports = tuple(
        (topic, _from_data(kind, value, type_name, shown)) for topic, kind, value, type_name, shown in facts
    )
    if status == "error":
        error = HandlerError(str(payload[0]), str(payload[1]), with_source_lines(str(payload[2])))
        return ended_invocation(status, float(duration_ms), logs, timeout_s, reports, error=error)
    kind, value, text, why, type_name, shown = payload
    if kind == "too large":  # past the caller's bound: its size, never the value
        size, verdict = value
        return ended_invocation(
            status, float(duration_ms), logs, timeout_s, reports, response_size=int(size), response_report=verdict
        )
    if kind == "json":  # a value that could not travel as data (a lone surrogate, an int past 64 bits): its JSON
        returned: Any = loads_strict(text)
    else:
        returned = _from_data(kind, value, type_name, shown)
    return ended_invocation(
        status,
        float(duration_ms),
        logs,
        timeout_s,
        reports,
        returned=returned,
        response_text=text,
        encode_error=why,
    )


def with_source_lines(traceback_text: str) -> str:
    """A worker's traceback with the source lines it could not show filled in from this process (a notebook
    cell's code is known to the kernel, not to a worker that received a copy of the handler)."""
    if "  File " not in traceback_text:
        return traceback_text
    import linecache

    lines = traceback_text.splitlines(keepends=True)
    out: list[str] = []
    for n, line in enumerate(lines):
        out.append(line)
        m = _FRAME_LINE.match(line)
        if m is None:
            continue
        following = lines[n + 1] if n + 1 < len(lines) else ""
        if following.startswith("    "):
            continue  # the worker showed it
        source = linecache.getline(m["file"], int(m["line"])).strip()
        if source:
            out.append(f"    {source}\n")
    return "".join(out)


def _call_back_reply(item: _Item, message: CallBack) -> bytes:
    """The caller's answer to a worker's call of a service (pickled: the worker trusts its caller)."""
    slot, method, args, kwargs = message.slot, message.method, message.args, message.kwargs
    try:
        service = item.services[slot]
        if method not in getattr(type(service), "_remote_methods", ()):
            raise AttributeError(f"{type(service).__name__} offers no method {method!r} to a handler")
        value = getattr(service, method)(*args, **{str(k): v for k, v in kwargs.items()})
        reply = Reply(True, value)
    except Exception as exc:  # noqa: BLE001 - raised again in the handler, as the service raised it
        reply = Reply(False, exc)
    try:
        return pickle.dumps(reply, _PROTOCOL)
    except Exception as exc:  # noqa: BLE001
        return pickle.dumps(Reply(False, RuntimeError(f"{type(exc).__name__}: {exc}")), _PROTOCOL)


# The exchange with workers is written once, as generators that say what they need done and decide on what
# comes back; they never wait themselves. A driver does the waiting: `_drive` blocks the calling thread (the
# synchronous API), `_Driver` runs them by callbacks on an event loop (the servers). The steps:
#   (_TAKE, memory_mb)                 -> a worker (from the pool, or a new one)
#   (_SEND, worker, data, deadline)    -> True: sent; False: the worker is gone; None: not taken by the deadline
#   (_WAIT, worker, deadline)          -> the worker's next message; None past the deadline; ENDED
_TAKE, _SEND, _WAIT = 0, 1, 2
Step = tuple[Any, ...]
_T = TypeVar("_T")


_doubles_warned: set[str] = set()


def _warn_of_doubles() -> None:
    """Warn, once each, of the test doubles active in this process that a worker process does not see: moto's
    `mock_aws`, and `unittest.mock` patches started with `.start()` (pytest-mock's `mocker` among them; a
    patch used as a context manager or a decorator leaves no trace to find)."""
    modules = sys.modules
    found = []
    models = modules.get("moto.core.models")
    if models is not None and getattr(getattr(models, "MockAWS", None), "_nested_count", 0) > 0:
        found.append(("moto's mock_aws is", "to the real AWS endpoints"))
    mock = modules.get("unittest.mock")
    if not found and mock is not None and getattr(getattr(mock, "_patch", None), "_active_patches", None):
        found.append(("a unittest.mock patch is", "to the objects as they were before the patch"))
    for what, where in found:
        if what not in _doubles_warned:
            _doubles_warned.add(what)
            import warnings

            warnings.warn(
                f"{what} active in this process, but the handler runs in a worker process "
                '(isolation="process"), which does not see it: what the handler calls goes '
                f'{where}. Call with isolation="none" for the handler to see it.',
                UserWarning,
                stacklevel=4,
            )


def _run_steps(handler: Handler | str, items: list[_Item], memory_mb: int | None) -> Generator[Step, Any, None]:
    """Run every item in worker processes; each item's `.result` is set. Never raises (but what the driver
    throws in: KeyboardInterrupt, a cancelled task; the worker in use is then killed)."""
    _warn_of_doubles()
    try:
        blob = _handler_blob(handler)
    except NotMovable as exc:
        for item in items:
            item.result = _error_invocation(item, ERROR_NOT_MOVABLE, str(exc))
        return
    key = hashlib.blake2b(blob, digest_size=16).digest()
    by_value_tried = False
    start = 0
    stopper = current_stopper()
    while start < len(items):
        worker: _Worker = yield (_TAKE, memory_mb)
        if stopper is not None and not stopper._attach(worker):  # stopped: what is left does not start
            _pool.give_back(worker)
            for item in items[start:]:
                item.result = item.result or _error_invocation(item, STOPPED_ERROR, STOPPED_BEFORE)
            return
        STATS["calls"] += 1
        try:
            start, outcome, why = yield from _exchange_steps(worker, key, blob, items, start, memory_mb)
        except BaseException:
            worker.kill()
            raise
        finally:
            if stopper is not None:
                stopper._detach(worker)
        if outcome != "lost":
            _pool.give_back(worker)  # (one that could not import the handler's module is well: it may get it by value)
        if outcome == "reload" and not by_value_tried:
            by_value_tried = True  # the worker could not import the handler's module: send it by value
            try:
                blob = _handler_blob(handler, by_value=True)
                key = hashlib.blake2b(blob, digest_size=16).digest()
            except NotMovable:
                pass
            continue
        if outcome == "reload":
            for item in items[start:]:
                item.result = item.result or _error_invocation(item, ERROR_NOT_MOVABLE, why)
            return


def _exchange_steps(
    worker: _Worker, key: bytes, blob: bytes, items: list[_Item], start: int, memory_mb: int | None
) -> Generator[Step, Any, tuple[int, str, str]]:
    """Send items[start:] to one worker; collect results until done or the worker is lost.

    Returns (index of the first item without a result, "ok" | "lost" | "reload", why it must reload).
    """
    evict: list[bytes] = []
    send_blob = key not in worker.handlers
    if send_blob:
        worker.handlers[key] = None
        while len(worker.handlers) > MAX_HANDLERS_PER_WORKER:
            evict.append(worker.handlers.popitem(last=False)[0])
    else:
        worker.handlers.move_to_end(key)
    try:
        data = _dumps_message(key, blob if send_blob else None, _sync_for(worker, memory_mb), evict, items[start:])
    except NotMovable as exc:
        worker.handlers.pop(key, None)
        for item in items[start:]:
            item.result = _error_invocation(item, ERROR_NOT_MOVABLE, str(exc))
        return len(items), "ok", ""
    items[start].started = time.perf_counter()  # a worker that does not even take the call is past its timeout
    sent = yield (_SEND, worker, data, _deadline(items[start]))
    if sent is None:
        _timed_out(worker, items[start])
        return start + 1, "lost", ""
    if not sent:
        return _lost(worker, items, start, time.perf_counter()), "lost", ""
    if send_blob:
        reply = yield (_WAIT, worker, time.monotonic() + LOAD_TIMEOUT_S)
        if reply is None:
            worker.kill()
            for item in items[start:]:
                item.result = _error_invocation(
                    item,
                    ERROR_NOT_MOVABLE,
                    f"the handler's module did not load within {LOAD_TIMEOUT_S:g} s in the worker process",
                )
            return len(items), "lost", ""
        if type(reply) is not Loaded:  # it ended while loading (the module's own code exited, say)
            if worker.stopped:
                worker.kill()
                kind, text = STOPPED_ERROR, STOPPED_TEXT
            else:
                kind, text = ERROR_EXIT, worker.ended()
            for item in items[start:]:
                item.result = _error_invocation(item, kind, text)
            return len(items), "lost", ""
        if not reply.ok:
            worker.handlers.pop(key, None)
            if blob.startswith(_IMPORT_BLOB):  # the handler named by its import path: the platform's error
                for item in items[start:]:
                    item.result = _error_invocation(item, IMPORT_ERROR, reply.why)
                return len(items), "ok", ""
            why = (
                f"the handler cannot be loaded in the worker process ({reply.why}). Define it in a module the "
                'worker can import, or in the notebook itself; or call with isolation="none".'
            )
            if reply.import_error:
                return start, "reload", why
            for item in items[start:]:
                item.result = _error_invocation(item, ERROR_NOT_MOVABLE, why)
            return len(items), "ok", ""
        items[start].started = time.perf_counter()
    index = start
    while index < len(items):
        item = items[index]
        message = yield (_WAIT, worker, _deadline(item))
        if message is None:  # past the timeout: a hard stop
            _timed_out(worker, item)
            return index + 1, "lost", ""
        if isinstance(message, (Ended, Loaded)):  # (a Loaded now is a worker that does not follow the protocol)
            return _lost(worker, items, index, item.started), "lost", ""
        if message.call_id != item.call_id:
            continue  # output of a call that is over (a thread it left behind)
        if isinstance(message, Out):
            item.add_log(message.text)
        elif isinstance(message, CallBack):
            if not (yield (_SEND, worker, _call_back_reply(item, message), None)):
                return _lost(worker, items, index, item.started), "lost", ""
        elif isinstance(message, Result):
            item.result = _invocation_from(item, message)
            index += 1
            if index < len(items):
                items[index].started = time.perf_counter()
            if item.result.error is not None and item.result.error.type == "MemoryError":
                worker.retire()  # it leaves by itself after a MemoryError
                return index, "lost", ""
    return index, "ok", ""


def _deadline(item: _Item) -> float | None:
    """When the caller stops waiting for `item` (time.monotonic()): its timeout and a grace, from its start."""
    if item.timeout_s is None:
        return None
    backstop = BACKSTOP_S if _ALARM else 0.0  # (the worker's own alarm stops the handler on time)
    return time.monotonic() + item.timeout_s + GRACE_S + backstop - (time.perf_counter() - item.started)


def _timed_out(worker: _Worker, item: _Item) -> None:
    """`item` is past its timeout: the hard stop."""
    worker.kill()
    elapsed = (time.perf_counter() - item.started) * 1000.0
    item.result = Invocation(
        timed_out=True,
        duration_ms=max(elapsed, (item.timeout_s or 0) * 1000.0),
        logs=item.log_text(),
        timeout_s=item.timeout_s,
    )


def _drive(steps: Generator[Step, Any, _T]) -> _T:
    """Run an exchange on this thread, blocking as it waits; what the driver raised (Ctrl-C) goes in."""
    answer: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.send(answer) if error is None else steps.throw(error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        error = None
        try:
            op = step[0]
            if op == _WAIT:
                answer = _wait(step[1], step[2])
            elif op == _SEND:
                answer = _send(step[1], step[2])
            else:
                answer = _pool.take(step[1])
        except BaseException as exc:  # noqa: BLE001 - raised in the exchange, which kills its worker first
            error = exc


def _send(worker: _Worker, data: bytes) -> bool:
    try:
        worker.conn.send_bytes(data)
        return True
    except OSError:
        return False


def _wait(worker: _Worker, deadline: float | None) -> Message | None:
    """The next message from the worker; None past the deadline; `ENDED` when it is gone.

    The worker's socket and its process are both watched: a worker that ended is seen at
    once, even when a process its handler started still holds the socket open.
    """
    try:
        if worker.backlog:
            return _one(worker.backlog.pop())
        while True:
            timeout = None if deadline is None else deadline - time.monotonic()
            if timeout is not None and timeout <= 0:
                return None
            ready = worker.poller.poll(None if timeout is None else max(1, int(timeout * 1000) + 1))
            if not ready:
                continue
            socket = worker.conn.fileno()
            if not any(fd == socket for fd, _ in ready):  # not its socket: its process has ended
                return ENDED
            return _unpack(worker, worker.conn.recv_bytes())
    except (EOFError, OSError):
        return ENDED
    except Exception:  # noqa: BLE001 - an answer this process cannot read: the worker is not trusted further
        return ENDED


def _unpack(worker: _Worker, data: bytes) -> Message:
    """A message as it came from the worker; results held back and sent together wait in its backlog."""
    message = _message(data)
    if not isinstance(message, Held):
        return message
    worker.backlog = message.results[::-1]  # results held back by the worker, oldest last
    return _one(worker.backlog.pop())


def _one(data: bytes) -> Message:
    """A message held back in a `Held` (never itself a `Held`)."""
    message = _message(data)
    if isinstance(message, Held):
        raise ValueError("results held inside results")
    return message


def _lost(worker: _Worker, items: list[_Item], index: int, started: float) -> int:
    """The worker ended during items[index] (by itself, or a Stopper killed it): that item failed with why;
    the rest go elsewhere."""
    item = items[index]
    if worker.stopped:
        worker.kill()
        kind, text = STOPPED_ERROR, STOPPED_TEXT
    else:
        kind, text = ERROR_EXIT, worker.ended()
        if item.timeout_s is not None and _ALARM and _ended_by_alarm(worker.status):  # its own hard stop
            item.result = Invocation(
                timed_out=True,
                duration_ms=(item.timeout_s + GRACE_S) * 1000.0,
                logs=item.log_text(),
                timeout_s=item.timeout_s,
            )
            return index + 1
    item.result = _error_invocation(item, kind, text, (time.perf_counter() - started) * 1000.0)
    return index + 1


# --- the entry points ----------------------------------------------------------------------------


def call(
    handler: Handler | str, event: Any, context: Context, timeout_s: float | None, memory_mb: int | None = None
) -> Invocation:
    """Run `handler(event, context)` in a worker process; an `Invocation`, whatever happens."""
    item = _Item(_next_call_id(), event, context, timeout_s)
    _drive(_run_steps(handler, [item], memory_limit_mb() if memory_mb is None else memory_mb))
    assert item.result is not None
    return item.result


def call_many(
    handler: Handler | str,
    events: list[Any],
    contexts: list[Context],
    timeout_s: float | None,
    memory_mb: int | None = None,
) -> list[Invocation]:
    """Run the handler on each event in turn, in worker processes, one message per chunk of events.

    Each event keeps its own timeout, enforced here: a handler that hangs is killed, that
    event times out, and the rest go on in a fresh worker.
    """
    items = [_Item(_next_call_id(), e, c, timeout_s) for e, c in zip(events, contexts, strict=True)]
    _drive(_run_steps(handler, items, memory_limit_mb() if memory_mb is None else memory_mb))
    return [item.result for item in items]  # type: ignore[misc]
