"""The worker's side: what runs in a worker process (its loop, one call, its output, its memory limit, its
state between calls). Nothing here runs in the caller's process.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # (signal's own C module)
import os
import pickle
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from .._engine.codec import HandlerError, Raw, encode_response
from .inprocess import (
    GRACE_S,
    Context,
    Handler,
    HandlerImportError,
    _call_handler,
    _Capture,
    _current,
    load_handler,
)
from .wire import (
    _ALARM,
    _ENCODE,
    _IMPORT_BLOB,
    _UNSET,
    ERROR_NOT_MOVABLE,
    Call,
    CallBack,
    CallItem,
    Held,
    Loaded,
    Out,
    Reply,
    Result,
    _as_data,
    _encodable,
    _RemoteSpec,
    _short,
    from_caller,
)

if TYPE_CHECKING:
    pass


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

    def send(self, message: Loaded | Out) -> None:
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
                if not self.held.is_set():  # (setting it again wakes nobody: a lock and a notify saved)
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
            self.conn.send_bytes(_ENCODE(Held(data)))
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
                data = _ENCODE(CallBack(self.call_id, slot, method, list(args), kwargs))
            except (TypeError, ValueError, OverflowError) as exc:
                raise TypeError(
                    f"the arguments of {method}() cannot travel to the caller's process as data ({exc}): "
                    "give strings, bytes, numbers, lists or dicts"
                ) from None
            with self.send_lock:
                self._send_results()
                self.conn.send_bytes(data)
            reply: Reply = pickle.loads(self.conn.recv_bytes())  # from the caller, which the worker trusts
        if reply.ok:
            return reply.value
        raise reply.value

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
            self.send(Out(self.call_id, text))


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
        import select

        self.waiting = select.poll()  # whether anything is in the pipe (asked at each call's end: cheaper than a read)
        self.waiting.register(read_end, select.POLLIN)
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
        if not self.waiting.poll(0):  # nothing written, and its write ends open (a closed pipe polls as ready)
            return True
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

    from .inprocess import _LogCapture

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


def open_stat(pid: int) -> int | None:
    """Linux: a descriptor of process `pid`'s /proc stat, read afresh at each `_leader_ended` (opening it each time
    costs more than the read); None elsewhere."""
    try:
        return os.open(f"/proc/{pid}/stat", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None


def _leader_ended(pid: int, stat: int | None = None) -> bool:
    """Linux: whether the main thread of process `pid` has ended (its /proc entry is gone, or says zombie or dead);
    elsewhere False (the pidfd and the socket are all there is to go by). `stat`: its `open_stat`, when open."""
    if stat is not None:
        try:
            return os.pread(stat, 1024, 0).rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
        except ProcessLookupError:  # the process is gone
            return True
        except (OSError, IndexError):
            return False
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


def _over_bound(text: str | None, bound: int | None) -> int | None:
    """The UTF-8 size of the response JSON `text` when over the caller's `bound` (None within it, or unbounded)."""
    if bound is None or text is None or 4 * len(text) <= bound:  # (at most 4 bytes a character)
        return None
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return size if size > bound else None


def _judged(item: CallItem, text: str | None, size: int) -> Any:
    """What the caller's judge makes of a response over its bound, as data (None without one, or if it fails)."""
    if item.judge is None or text is None:
        return None
    try:
        verdict = item.judge(text, size)
        _ENCODE(verdict)
    except Exception:  # noqa: BLE001 - the caller then tells the size alone
        return None
    return verdict


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


_getsignal = _signal.getsignal  # (signal.getsignal's C function, without the enum it wraps the answer in)


def _run_one(handler: Handler, item: CallItem, event: Any) -> tuple[bytes, bool]:
    """Run the handler once in this worker; the result message, encoded, and whether it ran out of memory."""
    call_id, ctx_state, timeout_s = item.call_id, item.context_state, item.timeout_s
    context = _rebuild_context(item.context_class, ctx_state, item.remaining_s, call_id)
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
        if _ALARM and _getsignal(signal.SIGALRM) != signal.SIG_DFL:  # the handler took the alarm over
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
        over = _over_bound(text, item.max_response)
        if over is not None:  # the verdict, not the value: the caller never holds what it would refuse
            payload: list[Any] = ["too large", [over, _judged(item, text, over)], None, None, type(value).__name__, ""]
        elif size > _BIG_RESULT and not _room_for(3 * size):  # (msgspec's buffer grows in steps and must not fail)
            status, out_of_memory = "error", True
            payload = [
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
    message = Result(call_id, status, payload, duration_ms, _context_changes(context, ctx_state), reports, timeout_s)
    try:
        return _ENCODE(message), out_of_memory
    except Exception:  # noqa: BLE001 - something in it cannot travel as data: say what it was instead
        pass
    if status == "returned":
        kind, data, type_name, shown = _as_data(value)
        if kind == "opaque" and payload[2] is not None:  # it cannot travel as data, but as its JSON text it can
            kind, shown = "json", ""  # (the caller reads it back from the text: what the platform would read)
        message.payload = [kind, data, payload[2], payload[3], type_name, shown]
    message.reports = [[str(topic), *_as_data(fact)] for topic, fact in capture.reports]
    try:
        return _ENCODE(message), out_of_memory
    except Exception as exc:  # noqa: BLE001 - (a topic that is not a string, say)
        error = [ERROR_NOT_MOVABLE, f"the handler's result could not be sent back to the caller: {_short(exc)}", ""]
        return _ENCODE(Result(call_id, "error", error, duration_ms, {}, [], timeout_s)), out_of_memory


def _load(blob: bytes) -> Handler:
    """The handler a caller sent: ("import", "module:attr") is imported here, as the platform does; else unpickled."""
    import cloudpickle  # noqa: F401 - what unpickles a handler copied by value

    if blob.startswith(_IMPORT_BLOB):
        return load_handler(pickle.loads(blob[len(_IMPORT_BLOB) :]))
    handler: Handler = pickle.loads(blob)
    return handler


def _worker_loop(conn: Any) -> None:
    """Serve calls on `conn` until it closes."""
    _worker_state.conn = conn
    _worker_setup()
    handlers: dict[bytes, Handler] = {}
    while True:
        try:
            message = from_caller(conn.recv_bytes())  # from the caller, which the worker trusts
        except (EOFError, OSError):
            return
        if type(message) is not Call:  # Exit
            return
        key, blob, items = message.key, message.blob, message.items
        _apply_sync(message.sync)
        for old in message.evict:
            handlers.pop(old, None)
        if blob is not None:
            try:
                handlers[key] = _load(blob)
            except BaseException as exc:  # noqa: BLE001 - the caller says why the handler cannot load
                why = str(exc) if isinstance(exc, HandlerImportError) else f"{type(exc).__name__}: {exc}"
                _worker_state.send(Loaded(False, why, isinstance(exc, ImportError)))
                end_children()
                if not _restore_baseline():
                    return
                continue
            _worker_state.send(Loaded(True, "", False))
        handler = handlers[key]
        _worker_state.results_since = time.perf_counter()
        events = pickle.loads(message.events)
        for number, (item, event) in enumerate(zip(items, events, strict=True), 1):
            data, out_of_memory = _run_one(handler, item, event)
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
