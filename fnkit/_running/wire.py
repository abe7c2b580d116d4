"""The protocol between the caller and its worker processes: what travels, and how it is read.

The caller sends msgpack with pickles inside (the worker trusts its caller); the worker sends data only
(msgpack of JSON-like values), so nothing a worker sends is ever unpickled.
"""

from __future__ import annotations

import os
import pickle
import re
import signal
from typing import TYPE_CHECKING, Any

import msgspec

from .._engine.codec import Raw
from .inprocess import (
    Context,
    Unsendable,
)

if TYPE_CHECKING:
    pass


# The messages on a worker's socket, each a msgspec Struct whose fields have names.
#   caller -> worker: `Call` and `Exit` as msgpack (tagged and array-like, so a message is [tag, field, ...]),
#   with what is not data inside pickled (the worker trusts its caller): the events of a `Call` as one pickle,
#   and a context's class, its attributes that are not plain values and the judge as msgpack extensions holding
#   pickles (`to_worker`); a `Call` that msgpack cannot carry (a context attribute holding a lone surrogate)
#   travels as one pickle instead. The `Reply` to a `CallBack` is pickled.
#   worker -> caller (msgpack: data only, never a pickle): `Loaded`, `Out`, `CallBack`, `Result`, and `Held`
#   for results sent together
# and `ENDED` is the caller's own word for a worker whose socket closed (or that ended).


class CallItem(msgspec.Struct, array_like=True, frozen=True):
    """One event to run (the event itself travels in its `Call`'s `events`): the context travels as its class and
    its state, with the seconds left."""

    call_id: int
    context_class: type[Context]
    context_state: dict[str, Any]
    remaining_s: float | None
    timeout_s: float | None
    #: the caller's bound on the response JSON in UTF-8 bytes: past it the worker sends its size and what `judge`
    #: (the caller's rule, run here on the text and its size) makes of it, never the value: the caller's memory
    #: stays bounded whatever is returned
    max_response: int | None = None
    judge: Any = None  # (text, size) -> data


class Call(msgspec.Struct, tag="call", array_like=True, frozen=True):
    """Run `items` (their events: `events`, one pickle of a list in their order) with the handler `key` (its `blob`
    sent when the worker does not have it yet), after taking the caller's state (`sync`) and forgetting the
    handlers `evict`."""

    key: bytes
    blob: bytes | None
    sync: dict[str, Any]
    evict: list[bytes]
    items: list[CallItem]
    events: bytes


class Exit(msgspec.Struct, tag="exit", array_like=True, frozen=True):
    """Leave: the caller retires this worker."""


class Pickled:
    """A value that travels to a worker as a pickle inside a msgpack message (a context attribute that is not a
    plain value: msgpack would turn its tuples into lists). Pickled on its own, it is its value."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __reduce__(self) -> tuple[Any, tuple[Any]]:
        return _itself, (self.value,)


def _itself(value: Any) -> Any:
    return value


class Reply(msgspec.Struct, array_like=True, frozen=True):
    """The caller's answer to a `CallBack`: the value, or the exception the service raised (`ok` False)."""

    ok: bool
    value: Any


class Loaded(msgspec.Struct, tag="loaded", array_like=True, frozen=True):
    """The handler a `Call` sent was loaded (`ok`), or why not (and whether it was an import that failed)."""

    ok: bool
    why: str
    import_error: bool


class Out(msgspec.Struct, tag="out", array_like=True, frozen=True):
    """Output the running call wrote (print, logging, file descriptors 1 and 2)."""

    call_id: int
    text: str


class CallBack(msgspec.Struct, tag="rpc", array_like=True, frozen=True):
    """The running call calls `method` of the caller's service `slot` (the mail content API, say)."""

    call_id: int
    slot: int
    method: str
    args: list[Any]
    kwargs: dict[str, Any]


class Result(msgspec.Struct, tag="result", array_like=True):
    """How one call ended. `payload` of "returned": [kind, value, JSON text | None, why not JSON | None,
    type name, repr], where kind is "data" (value is the returned value as data), "raw" (value is Raw's str or
    bytes), "opaque" (it cannot travel as data: value is None; type name and repr say what it was) or "json"
    (it cannot travel as data but JSON encodes it: value is None, the caller reads the JSON text) or "too large"
    (its JSON text is over the call's `max_response`: value is [its size in UTF-8 bytes, the judge's data or
    None], the text is None); of
    "error": [type, message, traceback]. `reports`: [[topic, kind, value, type name, repr], ...]."""

    call_id: int
    status: str  # "returned" | "error"
    payload: list[Any]
    duration_ms: float
    changes: dict[str, Any]  # what the handler changed on its context, as data
    reports: list[list[Any]]
    timeout_s: float | None


class Held(msgspec.Struct, tag="results", array_like=True, frozen=True):
    """Results held back by the worker and sent together (each one an encoded `Result`), oldest first."""

    results: list[bytes]


class Ended(msgspec.Struct, tag="ended", array_like=True, frozen=True):
    """The caller's own word: the worker's socket closed, or its process ended."""


ENDED = Ended()
FromWorker = Loaded | Out | CallBack | Result | Held
Message = Loaded | Out | CallBack | Result | Ended

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


_ENCODE = msgspec.msgpack.Encoder().encode
_DECODE = msgspec.msgpack.Decoder().decode

_EXT_PICKLE, _EXT_CLASS = 1, 2  # msgpack extensions to a worker: a pickle; a class, pickled by reference
_class_pickles: dict[type, bytes] = {}  # each context class's pickle, made once (a class travels by reference)


def pickled(value: Any) -> bytes:
    """`value` as a pickle (cloudpickle's, for what only it can copy: a class or function of a notebook)."""
    try:
        return pickle.dumps(value, _PROTOCOL)
    except Exception:  # noqa: BLE001 - what only cloudpickle can move (or nothing can: its error goes up)
        import cloudpickle

        return cloudpickle.dumps(value, _PROTOCOL)


def _extension(value: Any) -> msgspec.msgpack.Ext:
    """What is not data in a message to a worker: a msgpack extension holding its pickle."""
    if type(value) is Pickled:
        return msgspec.msgpack.Ext(_EXT_PICKLE, pickled(value.value))
    if isinstance(value, type):
        known = _class_pickles.get(value)
        if known is None:
            try:
                known = pickle.dumps(value, _PROTOCOL)
            except Exception:  # noqa: BLE001 - a class only cloudpickle can copy: sent afresh each time
                return msgspec.msgpack.Ext(_EXT_PICKLE, pickled(value))
            if len(_class_pickles) < 64:
                _class_pickles[value] = known
        return msgspec.msgpack.Ext(_EXT_CLASS, known)
    return msgspec.msgpack.Ext(_EXT_PICKLE, pickled(value))


_TO_WORKER = msgspec.msgpack.Encoder(enc_hook=_extension).encode


def to_worker(message: Call | Exit) -> bytes:
    """A message to a worker as bytes: msgpack, else (what msgpack cannot carry) one pickle of it."""
    try:
        return _TO_WORKER(message)
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError):  # a lone surrogate, an int past 64 bits
        return pickled(message)


_classes: dict[bytes, Any] = {}  # in a worker: each class a caller sent, by its pickle


def _from_extension(code: int, data: memoryview) -> Any:
    if code == _EXT_CLASS:
        blob = bytes(data)
        known = _classes.get(blob)
        if known is None:
            known = pickle.loads(blob)
            if len(_classes) < 256:
                _classes[blob] = known
        return known
    return pickle.loads(data)


_FROM_CALLER = msgspec.msgpack.Decoder(Call | Exit, ext_hook=_from_extension).decode


def from_caller(data: bytes) -> Call | Exit:
    """A message from the caller (in a worker, which trusts its caller): msgpack, or one pickle (`to_worker`)."""
    if data[:1] == b"\x80":  # a pickle's first byte (an empty map in msgpack, which no message is)
        message: Call | Exit = pickle.loads(data)
        return message
    decoded: Call | Exit = _FROM_CALLER(data)
    return decoded


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


_IMPORT_BLOB = b"fnkit-import:"  # a handler blob that names an import path (a pickle never starts so)


_PLAIN = frozenset({str, int, float, bool, type(None)})


_UNSET = object()


_FRAME_LINE = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in ')


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


_READ = msgspec.msgpack.Decoder(FromWorker).decode


def _message(data: bytes) -> Loaded | Out | CallBack | Result | Held:
    """A message from a worker, read as data into its Struct; msgspec.ValidationError when it is not one."""
    message: Loaded | Out | CallBack | Result | Held = _READ(data)
    return message


def _ended_by_alarm(status: int | None) -> bool:
    """Whether a worker's exit status says its alarm ended it (the handler ran past its timeout)."""
    return status is not None and status >= 0 and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM


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


class _RemoteSpec:
    """How a caller's service travels to the worker: its slot, method names, repr, and what it raises once its
    invocation is over (the service's `_remote_closed_error`, the mail content API's MessageFrozenError)."""

    __slots__ = ("closed_error", "methods", "slot", "text")

    def __init__(self, slot: int, methods: tuple[str, ...], text: str, closed_error: type[Exception]) -> None:
        self.slot, self.methods, self.text, self.closed_error = slot, methods, text, closed_error


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 300 else text[:297] + "..."
