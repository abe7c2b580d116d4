"""Handlers in a worker process: a hard stop is a kill, never an injected exception.

`fnkit.invoke(..., isolation="process")` lands here. The caller's process keeps a pool of
warm worker processes; each call goes to an idle one over a socket (pickle for the event;
the handler by its import path when it has one, else by cloudpickle, so functions from a
notebook cell or `__main__` travel too) and comes back as an `Invocation`. Nothing the
worker sends is unpickled here: results, errors, output and reports travel as data
(msgpack of JSON-like values, strings, numbers), so a handler's return value can never
run code in the caller. Whatever the handler does (exits, crashes in C, loops
while swallowing every exception, blocks in a system call, eats memory past the limit),
the caller waits at most the timeout plus a short grace, kills that worker if it must,
and the next call gets a fresh one.

Where workers come from: on POSIX, a small "zygote" process (started once, single
threaded, with fnkit preloaded) forks each worker, so a threaded caller such as a Jupyter
kernel or a web server is never forked itself and a new worker costs a few milliseconds.
Elsewhere each worker is its own new interpreter (multiprocessing's spawn). Workers die
with the caller: the zygote leaves when its control socket closes and takes its workers
with it.

Each call starts from the state the caller set (working directory, environment, imports
path, memory limit: a hard limit, which the handler cannot raise); every process the
handler started is ended and reaped with its call (the worker is their subreaper); a
worker that ended while idle is never handed a call.

Inside a worker, output is captured per call (print, sys.stderr, logging; the caller's
logging levels are followed), the context is a copy of the caller's with its deadline,
and what a handler changes on the context (a simulator's virtual `context.sleep`) comes
back. Services on the context that must stay in the caller (the mail content API) are
called back over the same socket while the handler runs. `report(topic, value)` lets
code running in the handler send facts back to the caller (`Invocation.reports`).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import signal
import socket
import struct
import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from ._codec import HandlerError, Invocation, Raw, encode_response, loads_strict
from ._invoke import (
    DEFAULT_MEMORY_LIMIT_MB,
    GRACE_S,
    IMPORT_ERROR,
    MAX_LOG_CHARS,
    Context,
    Handler,
    HandlerImportError,
    Unsendable,
    _call_handler,
    _Capture,
    _current,
    _internal_error,
    _prepare,
    check_memory_limit,
    finished,
    load_handler,
)
from ._stop import STOPPED_ERROR, current_stopper

if TYPE_CHECKING:
    import asyncio

# The messages on a worker's socket are sequences whose first item names them:
#   caller -> worker (pickled: the worker trusts its caller)
#                     ("call" | "batch", key, handler blob | None, sync, evicted keys, [CallMessage, ...]),
#                     ("exit",); and the reply to an "rpc": (ok, value or exception)
#   worker -> caller (msgpack: data only, never a pickle)
#                     ["loaded", ok, why, is_import_error], ["out", call_id, text],
#                     ["rpc", call_id, slot, method, args, kwargs], a ResultMessage,
#                     ["results", [msgpack of a ResultMessage, ...]] for results held back and sent together
# and ("ended",) is the caller's own word for a worker whose socket closed (or that ended).
Message = Sequence[Any]
# (call_id, event, context class, context state, seconds left, timeout_s)
CallMessage = tuple[int, Any, "type[Context]", dict[str, Any], float | None, float | None]
# ["result", call_id, "returned" | "error", payload, duration_ms, context changes, reports, timeout_s]
#   payload of "returned": [kind, value, JSON text | None, why not JSON | None, type name, repr]
#     kind "data" (value is the returned value as data), "raw" (value is Raw's str or bytes),
#     "opaque" (it cannot travel as data: value is None; type name and repr say what it was)
#     "json" (it cannot travel as data but JSON encodes it: value is None, the caller reads the JSON text)
#   payload of "error": [type, message, traceback]
#   reports: [[topic, kind, value, type name, repr], ...] with the same kinds
ResultMessage = Sequence[Any]

LOAD_TIMEOUT_S = 30.0  # loading the handler in a worker (its module's imports) is the platform's "init"
MAX_IDLE_WORKERS = 8
IDLE_WINDOW_S = 30.0  # idle workers are kept for as many calls at once as there were in this long
MAX_HANDLERS_PER_WORKER = 32
ERROR_NOT_MOVABLE = "fnkit.IsolationError"
ERROR_EXIT = "Runtime.ExitError"  # the name the real platform gives a function whose process ended
STOPPED_TEXT = "the handler was stopped before it returned: its worker process was killed (Stopper.stop)"
STOPPED_BEFORE = "the call was stopped before the handler started (Stopper.stop)"

_PROTOCOL = pickle.HIGHEST_PROTOCOL
#: a worker stops its own handler past the timeout (an alarm whose default action ends the process), timed on
#: the handler's own run; the caller's own deadline is a backstop this much later (transfer and queueing are
#: not the function's time: a loaded machine must not make a handler that returned in time look timed out)
_ALARM = hasattr(signal, "setitimer")
BACKSTOP_S = 2.0

#: What the isolation layer has done in this process (see `fnkit.isolation.stats`).
STATS = {"workers_started": 0, "workers_killed": 0, "worker_crashes": 0, "calls": 0}


def memory_limit_mb() -> int:
    """The memory limit of each worker process in MB (`FNKIT_MEMORY_LIMIT_MB`, default 1024)."""
    try:
        value = int(os.environ.get("FNKIT_MEMORY_LIMIT_MB", DEFAULT_MEMORY_LIMIT_MB))
    except ValueError:
        return DEFAULT_MEMORY_LIMIT_MB
    return value if value > 0 else DEFAULT_MEMORY_LIMIT_MB


# ==================================================================================================
# The worker's side
# ==================================================================================================


class _Remote:
    """In a worker: a service of the caller's context (the mail content API), called back over the socket."""

    def __init__(
        self, slot: int, methods: tuple[str, ...], text: str, call_id: int, closed_error: type[Exception]
    ) -> None:
        self._slot = slot
        self._methods = methods
        self._text = text
        self._call_id = call_id  # a service belongs to one invocation: kept for later, it refuses
        self._closed_error = closed_error

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self._methods:
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return _worker_state.call_back(self._call_id, self._slot, name, args, kwargs, self._closed_error)

        call.__name__ = name
        return call

    def __repr__(self) -> str:
        return self._text


class _RemoteSpec:
    """How a caller's service travels to the worker: its slot, method names, repr, and what it raises once its
    invocation is over (the service's `_remote_closed_error`, the mail content API's MessageFrozenError)."""

    __slots__ = ("closed_error", "methods", "slot", "text")

    def __init__(self, slot: int, methods: tuple[str, ...], text: str, closed_error: type[Exception]) -> None:
        self.slot, self.methods, self.text, self.closed_error = slot, methods, text, closed_error


class _WorkerState:
    """The worker's connection and the call in progress (one per worker process)."""

    def __init__(self) -> None:
        self.conn: Any = None
        self.send_lock = threading.Lock()
        self.call_lock = threading.RLock()  # a call-back and the end of a call never overlap
        self.call_id: int | None = None
        self.pending = ""
        self.memory_mb: int | None = None
        self.results: list[bytes] = []
        self.results_since = 0.0
        self.held = threading.Event()  # results are held back: the flusher sends them within a few ms
        self.flusher: threading.Thread | None = None
        self.baseline: tuple[str | None, dict[str, str], list[str]] = (None, {}, [])
        self.rlimit: tuple[int, int] | None = None
        self.environ_data: dict[Any, Any] = {}
        self.fd_output: _FdOutput | None = None  # file descriptors 1 and 2, read into the call's output

    def send(self, message: Message) -> None:
        """Send one message to the caller (as data), after any results held back."""
        data = _ENCODE(message)
        with self.send_lock:
            self._send_results()  # results held back go first: the caller reads in order
            self.conn.send_bytes(data)

    def hold_result(self, data: bytes, last: bool) -> None:
        """Results of a batch travel together (every 5 ms, 64 at most): fewer wake-ups for both sides."""
        with self.send_lock:
            self.results.append(data)
            now = time.perf_counter()
            if last or len(self.results) >= 64 or now - self.results_since > 0.005:
                self._send_results()
            else:  # held: they must not wait for the next handler, which may never return
                if self.flusher is None:
                    self.flusher = threading.Thread(target=self._flush_held, name="fnkit-results", daemon=True)
                    self.flusher.start()
                self.held.set()

    def _flush_held(self) -> None:
        """Send results held back 5 ms at most after they were held, even while the next handler runs on."""
        while True:
            self.held.wait()
            time.sleep(0.005)
            with self.send_lock:
                self.held.clear()
                try:
                    self._send_results()
                except OSError:  # the caller has gone: so does this worker
                    return

    def _send_results(self) -> None:
        if self.results:
            data, self.results = self.results, []
            self.conn.send_bytes(_ENCODE(("results", data)))
        self.results_since = time.perf_counter()

    def call_back(
        self,
        call_id: int,
        slot: int,
        method: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        closed_error: type[Exception] = RuntimeError,
    ) -> Any:
        """Call `method` of the caller's service `slot` for the running call; its value, or raise what it raised."""
        with self.call_lock:
            if self.call_id is None or self.call_id != call_id:
                raise closed_error(f"This invocation is over; {method}() of its service is closed.")
            self.flush()
            try:
                data = _ENCODE(("rpc", self.call_id, slot, method, args, kwargs))
            except (TypeError, ValueError, OverflowError) as exc:
                raise TypeError(
                    f"the arguments of {method}() cannot travel to the caller's process as data ({exc}): "
                    "give strings, bytes, numbers, lists or dicts"
                ) from None
            with self.send_lock:
                self._send_results()
                self.conn.send_bytes(data)
            ok, value = pickle.loads(self.conn.recv_bytes())  # from the caller, which the worker trusts
        if ok:
            return value
        raise value

    def write(self, text: str) -> None:
        """Output of the running call: sent on by the line."""
        if self.call_id is None:
            return  # a thread the handler left behind, printing between calls: nobody reads it
        self.pending += text
        if "\n" in text or len(self.pending) > 8192:
            self.flush()

    def flush(self) -> None:
        """Send the running call's output written so far."""
        if self.pending and self.call_id is not None:
            text, self.pending = self.pending, ""
            self.send(("out", self.call_id, text))


_worker_state = _WorkerState()


class _WorkerStream:
    """sys.stdout and sys.stderr in a worker: every line goes to the caller as it is written."""

    encoding = "utf-8"
    errors = "strict"

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        _worker_state.write(text)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        _worker_state.flush()

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        raise OSError("the handler's output is captured; it has no file descriptor")


class _WorkerCapture(_Capture):
    """In a worker, the invocation's capture: logging records go to the caller like printed lines."""

    __slots__ = ()

    def write(self, text: str) -> int:
        _worker_state.write(text)
        return len(text)


class _FdOutput:
    """What reaches file descriptors 1 and 2 in a worker (`os.write`, C code, a child process's output): read from
    a pipe into the running call's output, like a print. A thread reads it as it comes (a full pipe would block
    the handler); the call's end reads what is left first."""

    def __init__(self) -> None:
        read_end, write_end = os.pipe()
        for fd in (1, 2):
            os.dup2(write_end, fd)
        os.close(write_end)
        os.set_blocking(read_end, False)
        self.fd = read_end
        self.lock = threading.Lock()
        import codecs

        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        threading.Thread(target=self._loop, name="fnkit-fd-output", daemon=True).start()

    def _loop(self) -> None:
        import select

        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        while True:
            poller.poll()
            with _worker_state.call_lock:  # (the lock the end of a call holds: one order, call_lock first)
                if not self.drain():
                    return

    def drain(self) -> bool:
        """Pass on what is in the pipe now; False once it is closed."""
        with self.lock:
            while True:
                try:
                    data = os.read(self.fd, 1 << 16)
                except BlockingIOError:
                    return True
                except OSError:
                    return False
                if not data:
                    return False
                text = self.decoder.decode(data)
                if text:
                    _worker_state.write(text)


def _worker_setup() -> None:
    import logging

    from ._invoke import _LogCapture

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller stops its handler, not the terminal's Ctrl-C
    if _ALARM:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)  # the alarm past a handler's timeout ends this worker
    try:  # its own process group: a kill of the worker from the caller takes the handler's children too
        os.setpgid(0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not POSIX
        pass
    _prctl(PR_SET_CHILD_SUBREAPER, 1)  # the handler's orphaned grandchildren become the worker's to end
    sys.stdout = sys.stderr = _WorkerStream()
    if os.name == "posix":
        _worker_state.fd_output = _FdOutput()
    sys.stdin = open(os.devnull)  # noqa: SIM115 - a handler reading input gets end of file (open for its life)
    logging.getLogger().addHandler(_LogCapture())


def _set_memory_limit(mb: int | None) -> None:
    """The worker's address space limit, hard as well as soft: a handler cannot lift it (a worker keeps one
    limit for its life; the caller hands a call that wants another to another worker)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = resource.RLIM_INFINITY if not mb else int(mb) * 1024 * 1024
    if hard != resource.RLIM_INFINITY and (limit == resource.RLIM_INFINITY or limit > hard):
        limit = hard
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _worker_state.rlimit = (limit, limit)


PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> None:
    """Linux's prctl(2), where there is one."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(option, value, 0, 0, 0)
    except Exception:  # noqa: BLE001 - elsewhere the worker does without
        pass


def _leader_ended(pid: int) -> bool:
    """Linux: whether the main thread of process `pid` has ended (its /proc entry is gone, or says zombie or dead);
    elsewhere False (the pidfd and the socket are all there is to go by)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except FileNotFoundError:
        return os.path.isdir("/proc/self")  # no entry on a system that has them: it has ended
    except (OSError, IndexError):
        return False


def _child_pids() -> list[int]:
    """This process's children (Linux: /proc/self/task/*/children; else a scan of /proc)."""
    me = os.getpid()
    pids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{me}/task"):
            with open(f"/proc/{me}/task/{task}/children") as f:
                pids.extend(int(pid) for pid in f.read().split())
        return pids
    except OSError:
        pass
    try:
        names = os.listdir("/proc")
    except OSError:  # pragma: no cover - no /proc: nothing to find
        return pids
    for name in names:
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == me:
                pids.append(int(name))
    return pids


def end_children(rounds: int = 200) -> int:
    """End and reap every process this one started and their descendants (orphans come to a subreaper).

    Cheap when there are none: one waitpid that says so. Returns how many were reaped.
    """
    reaped = 0
    for _ in range(rounds):
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid:
            reaped += 1
            continue
        for child in _child_pids():
            try:
                os.kill(child, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(-1, 0)
            reaped += 1
        except ChildProcessError:
            return reaped
    return reaped


def _apply_sync(sync: dict[str, Any]) -> None:
    """Become like the caller now; what is set here is what every call then starts from."""
    if not sync:  # the caller is as it was: the baseline stands (copying the environment costs tens of µs)
        return
    import logging

    if "environ" in sync:  # the caller's environment now (a handler reads its configuration there)
        os.environ.clear()
        os.environ.update(sync["environ"])
    if "sys_path" in sync:
        sys.path[:] = sync["sys_path"]
    if "cwd" in sync:
        try:
            os.chdir(sync["cwd"])
        except OSError:
            pass
    if "levels" in sync:
        manager = logging.Logger.manager
        for name, logger in list(manager.loggerDict.items()):
            if isinstance(logger, logging.Logger) and name not in sync["levels"]:
                logger.setLevel(logging.NOTSET)
        for name, level in sync["levels"].items():
            (logging.getLogger(name) if name else logging.getLogger()).setLevel(level)
    if "memory_mb" in sync:
        _worker_state.memory_mb = sync["memory_mb"]
        _set_memory_limit(sync["memory_mb"])
    _worker_state.baseline = (_getcwd(), dict(os.environ), list(sys.path))
    _worker_state.environ_data = dict(_environ_data())


def _environ_data() -> Any:
    """The environment as the OS holds it (encoded: compared in microseconds, where os.environ decodes all)."""
    data = getattr(os.environ, "_data", None)
    return data if isinstance(data, dict) else dict(os.environ)


def _getcwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None


def _restore_baseline() -> bool:
    """Undo what the last handler changed of the process (directory, environment, imports path, memory limit).

    False when it cannot be undone (the handler lowered the worker's hard memory limit): the
    worker then leaves after this call.
    """
    cwd, environ, path = _worker_state.baseline
    if cwd is not None and _getcwd() != cwd:
        try:
            os.chdir(cwd)
        except OSError:
            return False
    if _environ_data() != _worker_state.environ_data:
        os.environ.clear()
        os.environ.update(environ)
    if sys.path != path:
        sys.path[:] = path
    if _worker_state.rlimit is not None:
        import resource

        if resource.getrlimit(resource.RLIMIT_AS) != _worker_state.rlimit:
            return False
    return True


def _rebuild_context(cls: type[Context], state: dict[str, Any], remaining_s: float | None, call_id: int) -> Context:
    context = cls.__new__(cls)
    attrs = context.__dict__  # where the caller's context kept this state (`_export_context` read it there)
    attrs.update(state)
    for key in [key for key, value in state.items() if type(value) is _RemoteSpec]:
        spec = state[key]
        attrs[key] = _Remote(spec.slot, spec.methods, spec.text, call_id, spec.closed_error)
    attrs["_clock"] = time.monotonic
    attrs["_deadline"] = None if remaining_s is None else time.monotonic() + remaining_s
    return context


_ENCODE = msgspec.msgpack.Encoder().encode
_DECODE = msgspec.msgpack.Decoder().decode
_UNENCODABLE = (TypeError, ValueError, OverflowError, RecursionError, msgspec.EncodeError)


def _encodable(value: Any) -> bool:
    try:
        _ENCODE(value)
        return True
    except _UNENCODABLE:
        return False
    except Exception:  # noqa: BLE001 - a container whose own methods raise
        return False


def _as_data(value: Any) -> list[Any]:
    """[kind, value, type name, repr] of a value that travels to the caller: as data, as Raw, or as its repr."""
    if isinstance(value, Raw):
        data = value.data
        if isinstance(data, str) and not data.isascii():  # text with a surrogate: its bytes, which are not UTF-8
            data = data.encode("utf-8", "surrogatepass")
        return ["raw", data, "Raw", ""]
    if _encodable(value):
        return ["data", value, type(value).__name__, ""]
    return ["opaque", None, type(value).__name__, Unsendable(value).text]


_BIG_RESULT = 8 << 20  # bytes: a result this big is checked against the room left under the memory limit


def _size_of(value: Any, text: str | None) -> int:
    """About how many bytes `value` takes as a message: its JSON text's length, or its own for text and bytes."""
    if isinstance(value, Raw):
        return len(value.data)
    if isinstance(value, (str, bytes, bytearray)) and text is None:
        return len(value)
    return 0 if text is None else len(text)


def _room_for(size: int) -> bool:
    """Whether `size` more bytes fit under this worker's memory limit (its address space as it is now)."""
    limit = _worker_state.rlimit
    if limit is None:
        return True
    try:
        with open("/proc/self/statm", "rb") as statm:
            used = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):  # not Linux: msgspec's own check is all there is
        return True
    return used + size <= limit[0]


def _past_the_limit(what: str, detail: str = "") -> str:
    """The sentence of a call that ran out of the worker's memory: what needed it, the limit, how to raise it."""
    limit = _worker_state.memory_mb
    return (
        f"{what} than the worker's limit"
        + (f" ({limit:,} MB)" if limit else "")
        + " allows"
        + (f" ({detail})" if detail else "")
        + ". Raise the limit with invoke(..., memory_limit_mb=N) or the FNKIT_MEMORY_LIMIT_MB environment variable."
    )


def _context_changes(context: Any, state: dict[str, Any]) -> dict[str, Any]:
    """What the handler changed on its context (a virtual `sleep`, say), as far as it can travel back as data."""
    changes = {}
    sent = state.get
    for key, value in vars(context).items():
        if sent(key, _UNSET) is value or key == "_clock" or key == "_deadline" or type(value) is _Remote:
            continue
        if _encodable(value):  # what cannot travel as data stays in the worker
            changes[key] = value
    return changes


def _run_one(
    handler: Handler,
    call_id: int,
    event: Any,
    ctx_cls: type[Context],
    ctx_state: dict[str, Any],
    remaining_s: float | None,
    timeout_s: float | None,
) -> tuple[bytes, bool]:
    """Run the handler once in this worker; the result message, encoded, and whether it ran out of memory."""
    context = _rebuild_context(ctx_cls, ctx_state, remaining_s, call_id)
    capture = _WorkerCapture()
    token = _current.set(capture)
    with _worker_state.call_lock:
        _worker_state.call_id = call_id
        _worker_state.pending = ""
    if timeout_s is not None and _ALARM:  # the hard stop, on the handler's own time: the kernel ends this worker
        signal.setitimer(signal.ITIMER_REAL, timeout_s + GRACE_S)
    try:
        status, value, duration_ms = _call_handler(handler, event, context)
    finally:
        if timeout_s is not None and _ALARM:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if _ALARM and signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL:  # the handler took the alarm over
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
        _current.reset(token)
        with _worker_state.call_lock:  # waits for a call-back another thread of the handler is making
            if _worker_state.fd_output is not None:
                _worker_state.fd_output.drain()
            _worker_state.flush()
            _worker_state.call_id = None
    out_of_memory = status == "error" and value.type == "MemoryError"
    if out_of_memory:
        value = HandlerError(
            "MemoryError", _past_the_limit("the handler needed more memory", value.message), value.traceback
        )
    if status == "returned":
        text, why = encode_response(value)
        size = _size_of(value, text)
        if size > _BIG_RESULT and not _room_for(3 * size):  # (msgspec's buffer grows in steps and must not fail)
            status, out_of_memory = "error", True
            payload: list[Any] = [
                "MemoryError",
                _past_the_limit(
                    f"the handler returned {size / 1e6:,.0f} MB, and sending it back to the caller needs more memory"
                ),
                "",
            ]
        elif isinstance(value, Raw):
            payload = ["raw", value.data, text, why, "Raw", ""]
        elif size > _BIG_RESULT and text is not None:  # a big value travels once, as its JSON text
            payload = ["json", None, text, why, type(value).__name__, ""]
        else:
            payload = ["data", value, text, why, type(value).__name__, ""]
    else:
        payload = [value.type, value.message, value.traceback]
    reports = [[topic, "data", fact, "", ""] for topic, fact in capture.reports]
    message = [
        "result",
        call_id,
        status,
        payload,
        duration_ms,
        _context_changes(context, ctx_state),
        reports,
        timeout_s,
    ]
    try:
        return _ENCODE(message), out_of_memory
    except Exception:  # noqa: BLE001 - something in it cannot travel as data: say what it was instead
        pass
    if status == "returned":
        kind, data, type_name, shown = _as_data(value)
        if kind == "opaque" and payload[2] is not None:  # it cannot travel as data, but as its JSON text it can
            kind, shown = "json", ""  # (the caller reads it back from the text: what the platform would read)
        message[3] = [kind, data, payload[2], payload[3], type_name, shown]
    message[6] = [[str(topic), *_as_data(fact)] for topic, fact in capture.reports]
    try:
        return _ENCODE(message), out_of_memory
    except Exception as exc:  # noqa: BLE001 - (a topic that is not a string, say)
        error = [ERROR_NOT_MOVABLE, f"the handler's result could not be sent back to the caller: {_short(exc)}", ""]
        return _ENCODE(["result", call_id, "error", error, duration_ms, {}, [], timeout_s]), out_of_memory


def _load(blob: bytes) -> Handler:
    """The handler a caller sent: ("import", "module:attr") is imported here, as the platform does; else unpickled."""
    import cloudpickle  # noqa: F401 - what unpickles a handler copied by value

    if blob.startswith(_IMPORT_BLOB):
        return load_handler(pickle.loads(blob[len(_IMPORT_BLOB) :]))
    handler: Handler = pickle.loads(blob)
    return handler


_IMPORT_BLOB = b"fnkit-import:"  # a handler blob that names an import path (a pickle never starts so)


def _worker_loop(conn: Any) -> None:
    """Serve calls on `conn` until it closes."""
    _worker_state.conn = conn
    _worker_setup()
    handlers: dict[bytes, Handler] = {}
    while True:
        try:
            message = pickle.loads(conn.recv_bytes())  # from the caller, which the worker trusts
        except (EOFError, OSError):
            return
        kind = message[0]
        if kind == "exit":
            return
        if kind not in ("call", "batch"):
            continue
        _, key, blob, sync, evict, items = message
        _apply_sync(sync)
        for old in evict:
            handlers.pop(old, None)
        if blob is not None:
            try:
                handlers[key] = _load(blob)
            except BaseException as exc:  # noqa: BLE001 - the caller says why the handler cannot load
                why = str(exc) if isinstance(exc, HandlerImportError) else f"{type(exc).__name__}: {exc}"
                _worker_state.send(("loaded", False, why, isinstance(exc, ImportError)))
                end_children()
                if not _restore_baseline():
                    return
                continue
            _worker_state.send(("loaded", True, "", False))
        handler = handlers[key]
        _worker_state.results_since = time.perf_counter()
        for number, (call_id, event, ctx_cls, ctx_state, remaining_s, timeout_s) in enumerate(items, 1):
            data, out_of_memory = _run_one(handler, call_id, event, ctx_cls, ctx_state, remaining_s, timeout_s)
            end_children()  # what the handler started ends with its call
            clean = _restore_baseline()
            _worker_state.hold_result(data, number == len(items) or out_of_memory or not clean)
            if out_of_memory or not clean:
                return  # a worker that ran out of memory, or whose limit was lowered, is not trusted again


def _die_with_parent() -> None:
    """Linux: this worker gets SIGKILL when the zygote that forked it ends (the zygote ends with the caller)."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # elsewhere the socket's end of file is the only signal


def _worker_main_fd(fd: int) -> None:
    from multiprocessing.connection import Connection

    _worker_loop(Connection(fd))


def _worker_main_conn(conn: Any) -> None:  # pragma: no cover - the spawn start method (non-POSIX)
    _worker_loop(conn)


# --- the zygote ---------------------------------------------------------------------------------------


def _end_strays(workers: set[int], ended: dict[int, int]) -> None:
    """In the zygote: end and reap every child that is not a live worker (processes a killed worker's handler
    started, which came to the zygote as their subreaper); a worker reaped on the way keeps its status."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if not pid:
            break
        if pid in workers:
            workers.discard(pid)
            ended[pid] = status
    for pid in _child_pids():
        if pid not in workers:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
    while len(ended) > 1024:  # statuses nobody asked for
        ended.pop(next(iter(ended)))


def _zygote_main(control_fd: int) -> None:
    """Fork a worker for each socket the caller sends; reap on request; leave when the caller goes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)  # what a killed worker's handler left running comes here, to be ended
    control = socket.socket(fileno=control_fd)
    children: set[int] = set()
    ended: dict[int, int] = {}  # workers reaped while ending strays, by pid: their status, until asked
    try:
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(control, 64, 1)
            except OSError:
                break
            if not data:
                break
            if data[:1] == b"F" and fds:
                pid = os.fork()
                if pid == 0:  # the worker
                    control.close()
                    _die_with_parent()
                    try:
                        _worker_main_fd(fds[0])
                    finally:
                        os._exit(0)
                for fd in fds:
                    os.close(fd)
                children.add(pid)
                control.sendall(b"P" + pid.to_bytes(8, "little"))
            elif data[:1] == b"W":
                pid = int.from_bytes(data[1:9], "little")
                status = ended.pop(pid, -1)
                if pid in children:
                    children.discard(pid)
                    try:
                        status = os.waitpid(pid, 0)[1]
                    except ChildProcessError:
                        pass
                control.sendall(b"S" + status.to_bytes(8, "little", signed=True))
                _end_strays(children, ended)
            else:
                for fd in fds:
                    os.close(fd)
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass


# ==================================================================================================
# The caller's side
# ==================================================================================================


def _exit_text(status: int) -> str:
    """What an exit status says, in words."""
    if status < 0:
        return "the handler's process ended (its exit status is unknown)"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        why = {
            "SIGSEGV": ": a crash in C code (through ctypes, say)",
            "SIGBUS": ": a crash in C code",
            "SIGABRT": ": aborted, often an allocation that failed past the memory limit",
            "SIGKILL": ": killed from outside (the system may have run out of memory)",
        }.get(name, "")
        return f"the handler's process was killed by signal {number} ({name}){why}"
    if os.WIFEXITED(status):
        return f"the handler's process exited with code {os.WEXITSTATUS(status)}"
    return f"the handler's process ended with status {status}"


class _Zygote:
    """The caller's end of the zygote: ask it for a worker, ask it to reap one."""

    def __init__(self) -> None:
        import subprocess

        mine, theirs = socket.socketpair()
        code = (
            "import sys; from fnkit._isolate import _zygote_preload, _zygote_main; "
            "_zygote_preload(sys.argv[2:]); _zygote_main(int(sys.argv[1]))"
        )
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # the caller's imports, from the start
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, str(theirs.fileno()), *_loaded_sources()],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
            cwd=os.getcwd(),
        )
        theirs.close()
        self.control = mine
        self.lock = threading.Lock()

    def alive(self) -> bool:
        """Whether the zygote process still runs."""
        return self.process.poll() is None

    def fork(self) -> tuple[int, socket.socket]:
        """A new worker: its pid and the caller's end of its socket."""
        mine, theirs = socket.socketpair()
        try:
            with self.lock:
                socket.send_fds(self.control, [b"F"], [theirs.fileno()])
                reply = _recv_exact(self.control, 9)
        finally:
            theirs.close()
        if reply[:1] != b"P":
            mine.close()
            raise OSError("the worker factory did not answer")
        return int.from_bytes(reply[1:], "little"), mine

    def reap(self, pid: int) -> int:
        """Wait for worker `pid` to end; its exit status (-1 when unknown)."""
        with self.lock:
            self.control.sendall(b"W" + pid.to_bytes(8, "little"))
            reply = _recv_exact(self.control, 9)
        return int.from_bytes(reply[1:], "little", signed=True)

    def close(self) -> None:
        """Close the control socket: the zygote leaves, and takes its workers with it."""
        try:
            self.control.close()
        except OSError:
            pass


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise OSError("the worker factory has gone")
        data += chunk
    return data


def _loaded_sources() -> list[str]:
    """The sources the caller has imported (the packages of fnkit that offer `build_event`): their context
    classes and services travel to the workers. Found, not named: the sources sit above this module."""
    return sorted(
        name
        for name, module in list(sys.modules.items())
        if name.startswith("fnkit.") and name.count(".") == 1 and "build_event" in getattr(module, "__dict__", {})
    )


def _zygote_preload(modules: Sequence[str] = ()) -> None:
    """What every worker needs, imported once in the zygote so that forks start warm: `modules` are the
    caller's sources (their context classes and the mail content API)."""
    import importlib
    import json  # noqa: F401
    import logging  # noqa: F401
    import multiprocessing.connection  # noqa: F401

    import cloudpickle  # noqa: F401

    for name in modules:
        importlib.import_module(name)


_zygote: _Zygote | None = None
_zygote_lock = threading.Lock()


def _use_zygote() -> bool:
    wanted = os.environ.get("FNKIT_ISOLATION_START", "")
    if wanted == "spawn":
        return False
    return hasattr(os, "fork") and hasattr(socket, "send_fds") and sys.platform != "win32"


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when process `pid` ends (Linux 5.3+), or None."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:  # pragma: no cover - not Linux
        return None
    try:
        fd: int = opener(pid)
        return fd
    except OSError:  # pragma: no cover - an old kernel
        return None


class _Worker:
    """The caller's handle on one worker process."""

    def __init__(self) -> None:
        from multiprocessing.connection import Connection

        self.process: Any = None
        self.pid = 0
        self.zygote: _Zygote | None = None
        if _use_zygote():
            global _zygote
            with _zygote_lock:
                if _zygote is None or not _zygote.alive():
                    if _zygote is not None:
                        _zygote.close()
                    _zygote = _Zygote()
                zygote = _zygote
            try:
                self.pid, sock = zygote.fork()
            except OSError:
                with _zygote_lock:  # a dead zygote: one fresh try
                    if _zygote is zygote:
                        zygote.close()
                        _zygote = _Zygote()
                    zygote = _zygote
                self.pid, sock = zygote.fork()
            self.zygote = zygote
            self.conn = Connection(sock.detach())
        else:  # pragma: no cover - exercised with FNKIT_ISOLATION_START=spawn
            import multiprocessing

            mp = multiprocessing.get_context("spawn")
            mine, theirs = mp.Pipe()
            self.process = mp.Process(target=_worker_main_conn, args=(theirs,), daemon=True)
            self.process.start()
            theirs.close()
            self.pid = self.process.pid
            self.conn = mine
        STATS["workers_started"] += 1
        self.pool = _pool
        self.pool.counted(1)
        self.pidfd = _pidfd(self.pid)  # readable once the worker has ended, whoever holds its socket
        import select

        self.poller = select.poll()
        self.poller.register(self.conn.fileno(), select.POLLIN)
        if self.pidfd is not None:
            self.poller.register(self.pidfd, select.POLLIN)
        self.memory_mb: int | object | None = _UNSET  # its limit, set with its first call, for its life
        self.handlers: OrderedDict[bytes, None] = OrderedDict()
        self.synced: dict[str, Any] = {}
        self.backlog: list[bytes] = []
        self.channel: _Channel | None = None  # an event loop watching its socket, during an exchange
        self.stray = False  # it said more than it was asked: never handed another call
        self.dead = False
        self.status: int | None = None
        self.stopped = False  # killed by a Stopper from another thread; the thread using it cleans up
        self.state_lock = threading.Lock()  # `dead` is set under it, so a stop never signals a reaped pid

    def _mark_dead(self) -> bool:
        """Mark it dead; False when it was already."""
        with self.state_lock:
            if self.dead:
                return False
            self.dead = True
        self.pool.counted(-1)
        return True

    def has_ended(self) -> bool:
        """Whether its process has ended (or its socket says something while idle): never hand it a call."""
        if self.dead or self.stray or (self.channel is not None and self.channel.said_more()):
            return True
        try:  # its process has ended, or its socket says something (an idle worker says nothing): one poll
            if self.poller.poll(0):
                return True
        except (OSError, RuntimeError):
            return True
        # its main thread has ended while another thread of it lives on (a zombie leader, whose socket stays open
        # and whose pidfd says nothing until the last thread ends): ended all the same
        return _leader_ended(self.pid)

    def _signal(self) -> None:
        """SIGKILL to it and to its process group (what its handler started and left running)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except (OSError, AttributeError):
            pass

    def stop_from_outside(self) -> None:
        """Kill it now, from another thread (a Stopper); the thread waiting on it sees it end and reaps it."""
        with self.state_lock:
            if self.dead:
                return
            self.stopped = True
            self._signal()

    def send(self, message: Message) -> None:
        """Send one message to the worker."""
        self.conn.send_bytes(pickle.dumps(message, _PROTOCOL))

    def kill(self) -> None:
        """Stop it now (SIGKILL) and collect its exit status."""
        if not self._mark_dead():
            return
        STATS["workers_killed"] += 1
        self._signal()
        self._reap()

    def ended(self) -> str:
        """After its socket closed by itself: why it ended, in words."""
        if self._mark_dead():
            self._signal()  # it may only have closed its socket: make sure it is gone before waiting for it
            self._reap()
            # (its own alarm past a handler's timeout is the hard stop the caller would have made: a kill)
            STATS["workers_killed" if _ended_by_alarm(self.status) else "worker_crashes"] += 1
        return _exit_text(self.status if self.status is not None else -1)

    def _reap(self) -> None:
        if self.channel is not None:  # the loop stops watching before the descriptors close
            self.channel.close()
        try:
            self.conn.close()
        except OSError:
            pass
        if self.pidfd is not None:
            try:
                os.close(self.pidfd)
            except OSError:
                pass
            self.pidfd = None
        try:
            if self.zygote is not None:
                self.status = self.zygote.reap(self.pid)
            elif self.process is not None:  # pragma: no cover - spawn
                self.process.join(5)
                code = self.process.exitcode
                self.status = -1 if code is None else (((-code) & 0x7F) if code < 0 else (code << 8))
        except OSError:
            self.status = -1

    def retire(self) -> None:
        """Let it go quietly (it exits when its socket closes)."""
        if not self._mark_dead():
            return
        if self.channel is not None:
            self.channel.close()
        try:
            self.send(("exit",))
            self.conn.poll(1.0)  # it leaves at once; a worker that does not is killed
        except OSError:
            pass
        self._signal()
        self._reap()


class _Pool:
    """Idle workers, ready for the next call."""

    def __init__(self) -> None:
        self.idle: list[_Worker] = []
        self.live = 0  # workers alive, idle or busy
        self.peak = 0  # the most busy at once lately, and since when
        self.peak_at = 0.0
        self.lock = threading.Lock()

    def take(
        self, memory_mb: int | None, start: bool = True, loop: asyncio.AbstractEventLoop | None = None
    ) -> _Worker | None:
        """An idle worker with that memory limit (or none yet), or a new one (None with `start=False`); never one
        that has ended. `loop`: the running loop of the caller (an idle worker another loop watches is that loop's)."""
        ended: list[_Worker] = []
        chosen: _Worker | None = None
        with self.lock:
            while chosen is None:
                best = self._best(memory_mb, loop)
                if best is None:
                    break
                worker = self.idle.pop(best)
                if worker.has_ended():
                    ended.append(worker)
                else:
                    chosen = worker
        for worker in ended:  # (a zygote that was killed took its idle workers with it)
            worker.ended()
        if chosen is None and start:
            chosen = _Worker()
        return chosen

    def _best(self, memory_mb: int | None, loop: asyncio.AbstractEventLoop | None) -> int | None:
        """The index of the idle worker to take: the newest with that memory limit (or none yet), and on a loop
        the newest that loop watches already. Under the lock."""
        best = None
        for index in range(len(self.idle) - 1, -1, -1):
            worker = self.idle[index]
            channel = worker.channel
            if channel is not None and channel.loop is not loop:
                if not channel.loop.is_closed():
                    continue  # another loop's
                channel.forget()  # its loop is closed: nothing watches it any more
                channel = None
            if worker.memory_mb is not _UNSET and worker.memory_mb != memory_mb:
                continue
            if channel is not None or loop is None:
                return index
            if best is None:
                best = index
        return best

    def give_back(self, worker: _Worker) -> None:
        """Keep a worker for the next call (or retire it when enough are idle, or reap it when stopped).

        A worker an event loop watches stays watched while idle (on the loop's thread, the next call there
        takes it as it is; another thread leaves it to that loop).
        """
        if worker.stopped:  # a Stopper killed it just as its call ended: reap it, never hand it out again
            worker.kill()
        if worker.dead:
            return
        with self.lock:
            # idle: MAX_IDLE_WORKERS more than were busy at once lately (the most in the last IDLE_WINDOW_S): a
            # steady load of many calls at once, or several servers taking turns, keeps its workers, where a new
            # one for each call would be a fork each; after it they go, one a call
            busy, now = self.live - len(self.idle), time.monotonic()  # (the one given back still counts as busy)
            if busy >= self.peak or now - self.peak_at > IDLE_WINDOW_S:
                self.peak, self.peak_at = busy, now
            self.idle.append(worker)
            if len(self.idle) <= MAX_IDLE_WORKERS + self.peak:
                return
            oldest = self.idle.pop(0)  # the newest is the likeliest to be asked for again
        _let_go(oldest)

    def counted(self, change: int) -> None:
        """A worker started (1) or ended (-1)."""
        with self.lock:
            self.live = max(0, self.live + change)

    def shutdown(self) -> None:
        """Retire every idle worker."""
        with self.lock:
            workers, self.idle = self.idle, []
        for worker in workers:
            _let_go(worker)

    def release(self, loop: asyncio.AbstractEventLoop) -> None:
        """On `loop`'s thread, as it stops: the idle workers it watches are watched no more (any thread may take
        them)."""
        with self.lock:
            watched = [w.channel for w in self.idle if w.channel is not None and w.channel.loop is loop]
        for channel in watched:
            channel.close()


def _let_go(worker: _Worker) -> None:
    """Retire an idle worker; one an event loop watches is retired on that loop's thread."""
    channel = worker.channel
    if channel is not None and not channel.on_its_loop():
        if not channel.loop.is_closed() and channel.loop.is_running():
            try:
                channel.loop.call_soon_threadsafe(worker.retire)
                return
            except RuntimeError:  # closed just now
                pass
        channel.forget()  # nothing runs that loop: nobody else touches its watch
    worker.retire()


_pool = _Pool()


def shutdown() -> None:
    """Stop every idle worker and the zygote (the next call starts them again)."""
    global _zygote
    _pool.shutdown()
    with _zygote_lock:
        zygote, _zygote = _zygote, None
    if zygote is not None:
        zygote.close()
        try:
            zygote.process.wait(5)
        except Exception:  # noqa: BLE001
            pass


def _after_fork_in_child() -> None:
    """A process forked from the caller must not share its workers or its zygote."""
    global _zygote, _pool
    for worker in _pool.idle:
        try:
            worker.conn.close()
        except OSError:
            pass
    if _zygote is not None:
        _zygote.close()
    _zygote = None
    _pool = _Pool()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


import atexit  # noqa: E402

atexit.register(shutdown)


# --- moving a handler, an event, a context ------------------------------------------------------


class NotMovable(Exception):
    """The handler, the event or the context cannot be sent to a worker process."""


def _handler_blob(handler: Handler | str, by_value: bool = False) -> bytes:
    """How the handler travels: its import path when it has one (the worker imports it), else a copy."""
    import cloudpickle

    path = handler if isinstance(handler, str) else (None if by_value else _import_path_of(handler))
    if path is not None:
        return _IMPORT_BLOB + pickle.dumps(path, _PROTOCOL)
    assert not isinstance(handler, str)
    try:
        if not by_value:
            if getattr(handler, "__module__", "__main__") not in ("__main__", None):
                try:  # a function of an importable module travels by name: plain pickle is the cheapest
                    return pickle.dumps(handler, _PROTOCOL)
                except Exception:  # noqa: BLE001 - a lambda, a nested function: cloudpickle copies it
                    pass
            return cloudpickle.dumps(handler, _PROTOCOL)
        module = sys.modules.get(getattr(handler, "__module__", "") or "")
        if module is None:
            return cloudpickle.dumps(handler, _PROTOCOL)
        with _by_value_lock:
            cloudpickle.register_pickle_by_value(module)
            try:
                return cloudpickle.dumps(handler, _PROTOCOL)
            finally:
                cloudpickle.unregister_pickle_by_value(module)
    except RecursionError:
        name = type(handler).__name__
        raise NotMovable(
            f"the handler (a {name} object) is too deeply nested to copy to a worker process: an application "
            "object such as Mangum(app) usually is. Give its import path instead, 'module:attribute' (the "
            'worker imports it, as the platform does), or call with isolation="none".'
        ) from None
    except Exception as exc:  # noqa: BLE001
        name = getattr(handler, "__qualname__", None) or type(handler).__name__
        raise NotMovable(
            f"the handler {name} cannot be sent to a worker process ({_short(exc)}). It refers, through its "
            "closure or the globals it uses, to something that cannot be copied to another process (a lock, "
            "an open file or socket, a generator, a running thread...). Define the handler at the top level "
            "of a cell or module and create such objects inside it, or give its import path 'module:attribute'; "
            'or call with isolation="none" to run it in this process.'
        ) from None


_paths: dict[int, tuple[Any, str | None]] = {}  # id(handler) -> (the handler, its import path or None)


def _import_path_of(handler: Any) -> str | None:
    """ "module:name" of a callable object (not a function or class) that is a global of an importable module.

    `handler = Mangum(app)` in app.py is found as "app:handler": the worker imports it, where a
    copy would drag the whole application along.
    """
    import types

    if isinstance(handler, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)):
        return None  # pickle names these itself (or cloudpickle copies them)
    known = _paths.get(id(handler))
    if known is not None and known[0] is handler:
        return known[1]
    found = None
    for name, module in list(sys.modules.items()):
        if name == "__main__" or not getattr(module, "__file__", None):
            continue
        try:
            attrs = vars(module)
        except TypeError:
            continue
        for attr, value in list(attrs.items()):
            if value is handler and attr.isidentifier():
                found = f"{name}:{attr}"
                break
        if found:
            break
    if len(_paths) > 256:
        _paths.clear()
    _paths[id(handler)] = (handler, found)
    return found


_by_value_lock = threading.Lock()


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 300 else text[:297] + "..."


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _export_context(context: Context) -> tuple[type[Context], dict[str, Any], list[Any], float | None]:
    """The context as the worker rebuilds it: its class, its plain state, its services, the time left."""
    try:
        context.aws_request_id  # noqa: B018 - a lazy context (a simulator's) makes its names now
    except AttributeError:
        pass
    state: dict[str, Any] = {}
    services: list[Any] = []
    local_only = type(context)._local_only
    for key, value in vars(context).items():
        if type(value) in _PLAIN:
            state[key] = value
            continue
        if key in ("_clock", "_deadline") or key in local_only:
            continue
        methods = getattr(type(value), "_remote_methods", None)
        if methods:
            services.append(value)
            closed_error = getattr(type(value), "_remote_closed_error", RuntimeError)
            state[key] = _RemoteSpec(len(services) - 1, tuple(methods), repr(value), closed_error)
        else:
            state[key] = value
    deadline = getattr(context, "_deadline", None)
    if deadline is not None:  # started here: what is left of it now
        remaining: float | None = max(0.0, deadline - context._clock())
    else:  # the clock starts in the worker
        remaining = getattr(context, "timeout_s", None)
    return type(context), state, services, remaining


def _dumps_message(message: Message) -> bytes:
    try:
        return pickle.dumps(message, _PROTOCOL)
    except Exception:  # noqa: BLE001 - an event or context of classes only cloudpickle can move
        import cloudpickle

        try:
            return cloudpickle.dumps(message, _PROTOCOL)
        except Exception as exc:  # noqa: BLE001
            raise NotMovable(
                f"the event or the context cannot be sent to a worker process ({_short(exc)}); "
                "give JSON-like values (dicts, lists, strings, numbers), or call with "
                'isolation="thread".'
            ) from None


def _log_levels() -> dict[str, int]:
    import logging

    levels = {
        name: logger.level
        for name, logger in list(logging.Logger.manager.loggerDict.items())
        if isinstance(logger, logging.Logger) and logger.level
    }
    levels[""] = logging.root.level
    return levels


def _sync_for(worker: _Worker, memory_mb: int | None) -> dict[str, Any]:
    """What the worker must change to be like the caller now: environment, imports path, directory, logging
    levels, memory limit."""
    synced = worker.synced
    sync: dict[str, Any] = {}
    if synced.get("sys_path", _UNSET) != sys.path:  # (each is compared first, and copied only when it changed)
        sync["sys_path"] = list(sys.path)
    cwd = _cwd()
    if synced.get("cwd", _UNSET) != cwd:
        sync["cwd"] = cwd
    levels = _log_levels()
    if synced.get("levels", _UNSET) != levels:
        sync["levels"] = levels
    if synced.get("memory_mb", _UNSET) != memory_mb:
        sync["memory_mb"] = memory_mb
    worker.memory_mb = memory_mb  # for its life: the limit is a hard one
    synced.update(sync)
    # the encoded mapping: compared in microseconds, where dict(os.environ) decodes all
    encoded = getattr(os.environ, "_data", None)
    if not isinstance(encoded, dict):  # pragma: no cover - another mapping in os.environ
        encoded = dict(os.environ)
    if synced.get("environ_raw", _UNSET) != encoded:
        synced["environ_raw"] = dict(encoded)
        sync["environ"] = dict(os.environ)
    return sync


_UNSET = object()


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:
        return "/"


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

    def __init__(self, call_id: int, event: Any, context: Context, timeout_s: float | None) -> None:
        self.call_id = call_id
        self.event = event
        self.context = context
        self.timeout_s = timeout_s
        self.result: Invocation | None = None
        self.logs: list[str] = []
        self.log_size = 0
        self.started = 0.0
        cls, state, services, remaining = _export_context(context)
        self.services = services
        self.message: CallMessage = (call_id, event, cls, state, remaining, timeout_s)

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


def _finish(item: _Item, message: ResultMessage) -> Invocation:
    """The `Invocation` of a result the worker sent (as data: nothing in it is unpickled)."""
    _, _, status, payload, duration_ms, changes, facts, timeout_s = message
    if isinstance(changes, dict):
        for key, value in changes.items():
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
        return finished(status, float(duration_ms), logs, timeout_s, reports, error=error)
    kind, value, text, why, type_name, shown = payload
    if kind == "json":  # a value that could not travel as data (a lone surrogate, an int past 64 bits): its JSON
        returned: Any = loads_strict(text)
    else:
        returned = _from_data(kind, value, type_name, shown)
    return finished(
        status,
        float(duration_ms),
        logs,
        timeout_s,
        reports,
        returned=returned,
        response_text=text,
        encode_error=why,
    )


_FRAME_LINE = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in ')


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


def _from_data(kind: str, value: Any, type_name: str, shown: str) -> Any:
    """A value as it travelled: the data itself, a `Raw`, or an `Unsendable` saying what it was."""
    if kind == "data":
        return value
    if kind == "raw":
        return Raw(value)
    return _unsendable(str(type_name), str(shown))


def _unsendable(type_name: str, text: str) -> Unsendable:
    value = Unsendable.__new__(Unsendable)
    value.type_name, value.text = type_name, text
    return value


def _call_back_reply(item: _Item, message: Message) -> bytes:
    """The caller's answer to a worker's call of a service (pickled: the worker trusts its caller)."""
    _, _call_id, slot, method, args, kwargs = message
    try:
        service = item.services[slot]
        if not isinstance(method, str) or method not in getattr(type(service), "_remote_methods", ()):
            raise AttributeError(f"{type(service).__name__} offers no method {method!r} to a handler")
        value = getattr(service, method)(*args, **{str(k): v for k, v in kwargs.items()})
        reply: tuple[bool, Any] = (True, value)
    except Exception as exc:  # noqa: BLE001 - raised again in the handler, as the service raised it
        reply = (False, exc)
    try:
        return pickle.dumps(reply, _PROTOCOL)
    except Exception as exc:  # noqa: BLE001
        return pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")), _PROTOCOL)


# The exchange with workers is written once, as generators that say what they need done and decide on what
# comes back; they never wait themselves. A driver does the waiting: `_drive` blocks the calling thread (the
# synchronous API), `_Driver` runs them by callbacks on an event loop (the servers). The steps:
#   (_TAKE, memory_mb)                 -> a worker (from the pool, or a new one)
#   (_SEND, worker, data, deadline)    -> True: sent; False: the worker is gone; None: not taken by the deadline
#   (_WAIT, worker, deadline)          -> the worker's next message; None past the deadline; ("ended",)
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
    outgoing: Message = (
        "batch" if len(items) - start > 1 else "call",
        key,
        blob if send_blob else None,
        _sync_for(worker, memory_mb),
        evict,
        [item.message for item in items[start:]],
    )
    try:
        data = _dumps_message(outgoing)
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
        if reply[0] != "loaded":  # it ended while loading (the module's own code exited, say)
            if worker.stopped:
                worker.kill()
                kind, text = STOPPED_ERROR, STOPPED_TEXT
            else:
                kind, text = ERROR_EXIT, worker.ended()
            for item in items[start:]:
                item.result = _error_invocation(item, kind, text)
            return len(items), "lost", ""
        if not reply[1]:
            worker.handlers.pop(key, None)
            if blob.startswith(_IMPORT_BLOB):  # the handler named by its import path: the platform's error
                for item in items[start:]:
                    item.result = _error_invocation(item, IMPORT_ERROR, str(reply[2]))
                return len(items), "ok", ""
            why = (
                f"the handler cannot be loaded in the worker process ({reply[2]}). Define it in a module the "
                'worker can import, or in the notebook itself; or call with isolation="none".'
            )
            if reply[3]:
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
        if message[0] == "ended":
            return _lost(worker, items, index, item.started), "lost", ""
        kind = message[0]
        if message[1] != item.call_id:
            continue  # output of a call that is over (a thread it left behind)
        if kind == "out":
            item.add_log(message[2])
        elif kind == "rpc":
            if not (yield (_SEND, worker, _call_back_reply(item, message), None)):
                return _lost(worker, items, index, item.started), "lost", ""
        elif kind == "result":
            item.result = _finish(item, message)
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
    """The next message from the worker; None past the deadline; ("ended",) when it is gone.

    The worker's socket and its process are both watched: a worker that ended is seen at
    once, even when a process its handler started still holds the socket open.
    """
    try:
        if worker.backlog:
            return _message(worker.backlog.pop())
        while True:
            timeout = None if deadline is None else deadline - time.monotonic()
            if timeout is not None and timeout <= 0:
                return None
            ready = worker.poller.poll(None if timeout is None else max(1, int(timeout * 1000) + 1))
            if not ready:
                continue
            if not worker.conn.poll(0):  # not its socket: its process has ended
                return ("ended",)
            return _unpack(worker, worker.conn.recv_bytes())
    except (EOFError, OSError):
        return ("ended",)
    except Exception:  # noqa: BLE001 - an answer this process cannot read: the worker is not trusted further
        return ("ended",)


def _unpack(worker: _Worker, data: bytes) -> Message:
    """A message as it came from the worker; results held back and sent together wait in its backlog."""
    message = _message(data)
    if message[0] != "results":
        return message
    worker.backlog = list(message[1])[::-1]  # results held back by the worker, oldest last
    return _message(worker.backlog.pop())


def _message(data: bytes) -> Message:
    """A message from a worker, read as data (a list whose first item is its kind); ValueError when it is not."""
    message = _DECODE(data)
    if not isinstance(message, list) or not message or not isinstance(message[0], str):
        raise ValueError("not a message")
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


def _ended_by_alarm(status: int | None) -> bool:
    """Whether a worker's exit status says its alarm ended it (the handler ran past its timeout)."""
    return status is not None and status >= 0 and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM


# --- the exchange on an event loop ----------------------------------------------------------------

_READ_SIZE = 1 << 18
_FRAME_HEAD = struct.Struct("!i")  # multiprocessing.connection's framing: a signed length, big-endian,
_FRAME_LONG = struct.Struct("!iQ")  # or -1 and a 64-bit length for a message over 2 GiB


class _Channel:
    """A worker's socket watched by an event loop: no thread waits for the worker.

    The loop reads whatever arrives (the socket is non-blocking meanwhile) and cuts it into
    whole messages with the framing of `multiprocessing.connection`, which the worker writes;
    the worker's pidfd tells the loop when its process ends. Writing waits for room in the
    socket, with a deadline. The watch stays while the worker is idle between the loop's
    calls (what it would say then, or its end, marks it as not to be used); `close` (when it
    is reaped, or the loop stops: `release_loop`) hands the socket back as the synchronous
    path knows it: blocking, and nothing half read.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, worker: _Worker) -> None:
        self.loop = loop
        self.worker = worker
        self.fd = worker.conn.fileno()
        self.pidfd = worker.pidfd
        self.buffer = bytearray()
        self.frames: deque[bytes] = deque()
        self.ended = False  # end of file, a broken framing, or the process has ended
        self.listener: Callable[[], None] | None = None  # called when something happens on the channel
        os.set_blocking(self.fd, False)
        loop.add_reader(self.fd, self._readable)
        if self.pidfd is not None:
            loop.add_reader(self.pidfd, self._exited)
        self.watched = True
        worker.channel = self

    def close(self) -> None:
        """Stop watching (on the loop's thread); the socket is blocking again."""
        if self.worker.channel is self:
            self._unwatch()
            self.forget()

    def forget(self) -> None:
        """Leave the worker as the blocking path knows it, without a word to the loop (closed, or not running).
        A worker that said more than it was asked is not used again."""
        worker = self.worker
        if worker.channel is not self:
            return
        worker.channel = None
        try:
            os.set_blocking(self.fd, True)
        except OSError:
            pass
        if self.buffer or self.frames:
            worker.stray = True

    def on_its_loop(self) -> bool:
        """Whether this thread runs the loop that watches the channel."""
        import asyncio

        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    def said_more(self) -> bool:
        """While idle: the worker said something nobody asked for, or ended (seen by the loop)."""
        return self.ended or bool(self.buffer) or bool(self.frames)

    def _unwatch(self) -> None:
        if self.watched:
            self.watched = False
            self.loop.remove_reader(self.fd)
            if self.pidfd is not None:
                self.loop.remove_reader(self.pidfd)

    def _readable(self) -> None:
        try:
            chunk = os.read(self.fd, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            self.buffer += chunk
            self._cut()
        else:
            self._end()
        self._wake()

    def _exited(self) -> None:
        """Its process has ended: what it wrote before is still read, then the channel ends."""
        for _ in range(64):  # (bounded: a process its handler started might hold the socket and write on)
            try:
                chunk = os.read(self.fd, _READ_SIZE)
            except OSError:
                break
            if not chunk:
                break
            self.buffer += chunk
        self._cut()
        self._end()
        self._wake()

    def _end(self) -> None:
        self.ended = True
        self._unwatch()  # (an ended socket or process is readable for ever)

    def _cut(self) -> None:
        """Whole messages out of what was read."""
        buffer, frames = self.buffer, self.frames
        pos, end = 0, len(buffer)
        while end - pos >= 4:
            (size,) = _FRAME_HEAD.unpack_from(buffer, pos)
            head = 4
            if size < 0:
                if size != -1:  # not the framing: the worker is not trusted further
                    self._end()
                    break
                if end - pos < _FRAME_LONG.size:
                    break
                size = _FRAME_LONG.unpack_from(buffer, pos)[1]
                head = _FRAME_LONG.size
            if end - pos - head < size:
                break
            frames.append(bytes(buffer[pos + head : pos + head + size]))
            pos += head + size
        if pos:
            del buffer[:pos]

    def _wake(self) -> None:
        listener = self.listener
        if listener is not None:
            listener()

    def next_message(self) -> Message | None:
        """The worker's next message if it has come (("ended",) once it has ended), else None. Never waits."""
        worker = self.worker
        try:
            if worker.backlog:
                return _message(worker.backlog.pop())
            if self.frames:
                return _unpack(worker, self.frames.popleft())
        except Exception:  # noqa: BLE001 - an answer this process cannot read: the worker is not trusted further
            return ("ended",)
        return ("ended",) if self.ended else None

    def write(self, view: memoryview) -> memoryview | None:
        """Write what the socket takes now; what is left (empty: all of it), or None when the worker is gone."""
        try:
            return view[os.write(self.fd, view) :]
        except BlockingIOError:
            return view
        except OSError:
            return None


class _Driver:
    """Runs an exchange on an event loop by callbacks: each step goes as far as it can at once, then waits for
    the worker's socket, its end, room to write or a deadline; then `done(value, error)`, on the loop.

    No task and no future per call: the worker's answer is read, the exchange finished and `done` called in
    the one callback that read it. `cancel()` kills the worker in use (the exchange sees CancelledError).
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        steps: Generator[Step, Any, Any],
        done: Callable[[Any, BaseException | None], None],
    ) -> None:
        self.loop = loop
        self.steps = steps
        self.done = done
        self.over = False
        self.channel: _Channel | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.writing = False
        self.step: Step = ()
        self.view = memoryview(b"")

    def start(self) -> None:
        self._advance(None, None)

    def cancel(self) -> None:
        """Stop now: the worker in use is killed."""
        if not self.over:
            import asyncio

            self._unwait()
            self._advance(None, asyncio.CancelledError())

    def _advance(self, answer: Any, error: BaseException | None) -> None:
        while True:
            try:
                step = self.steps.send(answer) if error is None else self.steps.throw(error)
            except StopIteration as stop:
                self._finish(stop.value, None)
                return
            except BaseException as exc:  # noqa: BLE001 - handed to `done`
                self._finish(None, exc)
                return
            answer, error = None, None
            self.step = step
            try:
                op = step[0]
                if op == _TAKE:
                    worker = _pool.take(step[1], start=False, loop=self.loop)
                    if worker is None:  # a new worker process: started on a thread, so the loop goes on
                        self.loop.run_in_executor(None, _Worker).add_done_callback(self._made)
                        return
                    answer = worker
                    continue
                worker = step[1]
                self.channel = worker.channel if worker.channel is not None else _Channel(self.loop, worker)
                if op == _SEND:
                    data = step[2]
                    n = len(data)
                    head = _FRAME_HEAD.pack(n) if n <= 0x7FFFFFFF else _FRAME_LONG.pack(-1, n)
                    self.view = memoryview(head + data)
                    ready, answer = self._try_send()
                else:
                    ready, answer = self._try_wait()
                if not ready:
                    self._arm()
                    return
            except BaseException as exc:  # noqa: BLE001 - raised in the exchange, which kills its worker first
                error = exc

    def _try_wait(self) -> tuple[bool, Any]:
        """(True, the next message or None past the deadline), or (False, None) to wait on."""
        assert self.channel is not None
        message = self.channel.next_message()
        if message is not None:
            return True, message
        deadline = self.step[2]
        if deadline is not None and time.monotonic() >= deadline:
            return True, None
        return False, None

    def _try_send(self) -> tuple[bool, bool | None]:
        """(True, sent: True, gone: False, past the deadline: None), or (False, None) to wait for room."""
        assert self.channel is not None
        view = self.channel.write(self.view)
        if view is None:
            return True, False
        self.view = view
        if not view:
            return True, True
        if self.channel.ended:
            return True, False
        deadline = self.step[3]
        if deadline is not None and time.monotonic() >= deadline:
            return True, None
        return False, None

    def _arm(self) -> None:
        """Wait for the channel (and room to write), or the deadline."""
        channel = self.channel
        assert channel is not None
        channel.listener = self._resume
        deadline = self.step[2] if self.step[0] == _WAIT else self.step[3]
        if deadline is not None:
            self.timer = self.loop.call_later(max(0.0, deadline - time.monotonic()), self._resume)
        if self.step[0] == _SEND:
            self.writing = True
            self.loop.add_writer(channel.fd, self._resume)

    def _unwait(self) -> None:
        channel = self.channel
        if channel is not None:
            channel.listener = None
            if self.writing:
                self.writing = False
                self.loop.remove_writer(channel.fd)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _resume(self) -> None:
        if self.over:
            return
        self._unwait()
        try:
            ready, answer = self._try_send() if self.step[0] == _SEND else self._try_wait()
        except BaseException as exc:  # noqa: BLE001
            self._advance(None, exc)
            return
        if ready:
            self._advance(answer, None)
        else:
            self._arm()

    def _made(self, future: asyncio.Future[_Worker]) -> None:
        """A new worker process is there (on the loop)."""
        if future.cancelled():
            return
        error = future.exception()
        if self.over:  # cancelled meanwhile: the new worker waits in the pool
            if error is None:
                _pool.give_back(future.result())
            return
        if error is not None:
            self._advance(None, error)
        else:
            self._advance(future.result(), None)

    def _finish(self, value: Any, error: BaseException | None) -> None:
        self.over = True
        self._unwait()
        self.done(value, error)


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


def release_loop(loop: asyncio.AbstractEventLoop) -> None:
    """On the thread of `loop`, before it closes: the idle workers it watches go back to every caller."""
    _pool.release(loop)


def call_soon(
    handler: Handler | str,
    event: Any,
    context: Context,
    timeout_s: float | None,
    done: Callable[[Invocation | None, BaseException | None], None],
    memory_mb: int | None = None,
) -> _Driver:
    """`call` for the running event loop's thread: it starts the call and returns; `done(invocation, None)` (or
    `done(None, error)` for a bug of fnkit's) comes on the loop when it is over. The loop watches the worker's
    socket and process: no thread waits. The same exchange as `call`, with the same guarantees (the hard stop
    past the timeout, the memory limit, results as data); `.cancel()` on what it returns kills the worker."""
    import asyncio

    item = _Item(_next_call_id(), event, context, timeout_s)
    steps = _run_steps(handler, [item], memory_limit_mb() if memory_mb is None else memory_mb)

    def finished(value: Any, error: BaseException | None) -> None:
        done(item.result if error is None else None, error)

    driver = _Driver(asyncio.get_running_loop(), steps, finished)
    driver.start()
    return driver


async def call_async(
    handler: Handler | str, event: Any, context: Context, timeout_s: float | None, memory_mb: int | None = None
) -> Invocation:
    """`call_soon`, awaited: cancelling the task kills the worker it was using."""
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future[Invocation] = loop.create_future()

    def done(invocation: Invocation | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            assert invocation is not None
            future.set_result(invocation)

    if sys.platform == "win32":  # pragma: no cover - a pipe, not a socket, that a loop can watch: on a thread
        return await loop.run_in_executor(None, call, handler, event, context, timeout_s, memory_mb)
    driver = call_soon(handler, event, context, timeout_s, done, memory_mb)
    try:
        return await future
    except asyncio.CancelledError:
        driver.cancel()
        raise


def invoke_soon(
    handler: Handler | str,
    event: Any,
    done: Callable[[Invocation], None],
    *,
    timeout_s: float | None = None,
    context: Context | None = None,
    memory_limit_mb: int | None = None,
) -> _Driver | None:
    """`fnkit.invoke(handler, event, isolation="process", ...)` started on the running loop (the servers use it):
    `done(invocation)` on the loop when it is over; never an error (a bug of fnkit's is the invocation's
    error). `.cancel()` on what it returns kills the worker. ValueError at once for a wrong `memory_limit_mb`."""
    memory_mb = check_memory_limit(memory_limit_mb)
    context = _prepare(context, timeout_s)

    def finished(invocation: Invocation | None, error: BaseException | None) -> None:
        if invocation is None:
            import asyncio

            if isinstance(error, asyncio.CancelledError):
                return  # cancelled: nobody waits
            invocation = _internal_error(error or RuntimeError("no result"), timeout_s)
        done(invocation)

    try:
        return call_soon(handler, event, context, timeout_s, finished, memory_mb)
    except Exception as exc:  # noqa: BLE001 - a bug of fnkit's must not look like the caller's
        import asyncio

        asyncio.get_running_loop().call_soon(done, _internal_error(exc, timeout_s))
        return None


async def invoke_async(
    handler: Handler | str,
    event: Any,
    *,
    timeout_s: float | None = None,
    context: Context | None = None,
    memory_limit_mb: int | None = None,
) -> Invocation:
    """`fnkit.invoke(handler, event, isolation="process", ...)` awaited on an event loop (the servers use it).

    The handler runs in a worker process, as with `invoke`; the loop goes on serving while it
    runs. Never raises (but ValueError for a wrong `memory_limit_mb`, as `invoke`).
    """
    memory_mb = check_memory_limit(memory_limit_mb)
    context = _prepare(context, timeout_s)
    try:
        return await call_async(handler, event, context, timeout_s, memory_mb)
    except Exception as exc:  # noqa: BLE001 - a bug of fnkit's must not look like the caller's
        return _internal_error(exc, timeout_s)
