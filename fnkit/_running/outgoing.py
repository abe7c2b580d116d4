"""What travels to a worker: the handler (by import path or by value), the event and the context, and the
state a call starts from (working directory, environment, imports path, logging levels, memory limit).
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
from operator import is_
from types import FunctionType, ModuleType
from typing import TYPE_CHECKING, Any

from .inprocess import (
    Context,
    Handler,
)
from .pool import _Worker
from .wire import (
    _IMPORT_BLOB,
    _PLAIN,
    _PROTOCOL,
    _UNSET,
    Call,
    CallItem,
    Pickled,
    _RemoteSpec,
    _short,
    pickled,
    to_worker,
)

if TYPE_CHECKING:
    pass

# --- moving a handler, an event, a context ------------------------------------------------------


class NotMovable(Exception):
    """The handler, the event or the context cannot be sent to a worker process."""


def _handler_blob(handler: Handler | str, by_value: bool = False) -> bytes:
    """How the handler travels: its import path when it has one (the worker imports it), else a copy."""
    if not by_value and type(handler) is FunctionType:  # a copy made for an earlier call may still be right
        known = _copies.get(id(handler))
        if known is not None and known[0] is handler:
            captured = _captured(handler)
            if captured is not None and _same(known[1], captured):
                return known[2]
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
            return _copy_of(handler)
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


_copies: dict[int, tuple[Any, tuple[Any, ...], bytes]] = {}  # id(function) -> (it, what it captured, its copy)
_names: dict[int, tuple[Any, tuple[str, ...]]] = {}  # id(code) -> (it, the global names it or code in it may read)


def _copy_of(handler: Any) -> bytes:
    """cloudpickle's copy of a handler (a function of a notebook, say), kept for the next call when nothing it
    captures can change (`_captured`): `_handler_blob` then sends it again, the same bytes a new copy would be."""
    import cloudpickle

    captured = _captured(handler)
    blob: bytes = cloudpickle.dumps(handler, _PROTOCOL)
    if captured is not None:
        if len(_copies) >= 256:
            _copies.clear()
        _copies[id(handler)] = (handler, captured, blob)
    return blob


_FROZEN = frozenset({str, int, float, bool, bytes, complex, type(None)})


def _captured(handler: Any) -> tuple[Any, ...] | None:
    """All that cloudpickle copies with a plain function, when each part of it is a value that cannot change (a
    number, a string, a module, a function or class that travels by name); None for anything else (a closure, a
    global list or dict, another function of the notebook: copied afresh every time)."""
    if type(handler) is not FunctionType or handler.__closure__ is not None or handler.__dict__:
        return None
    code = handler.__code__
    known = _names.get(id(code))  # (by id: a code object's hash is computed afresh each time)
    if known is not None and known[0] is code:
        names = known[1]
    else:
        names = tuple(sorted(_global_names(code)))
        if len(_names) >= 1024:
            _names.clear()
        _names[id(code)] = (code, names)
    found = handler.__globals__
    values = [found.get(name, _UNSET) for name in names]
    defaults = handler.__defaults__ or ()
    kwdefaults = tuple((handler.__kwdefaults__ or {}).items())
    annotations = tuple(handler.__annotations__.items())
    parts = [*values, *defaults, *(v for _, v in kwdefaults), *(v for _, v in annotations)]
    modules = False
    for value in parts:
        if type(value) in _FROZEN or value is _UNSET:
            continue
        if isinstance(value, ModuleType):
            modules = True  # (its submodules imported now travel too: the count of modules is part of it)
        elif not _by_name(value):
            return None
    return (
        code,
        handler.__name__,
        handler.__qualname__,
        handler.__module__,
        handler.__doc__,
        len(sys.modules) if modules else 0,
        *kwdefaults,
        *annotations,
        *parts,
    )


def _same(before: tuple[Any, ...], now: tuple[Any, ...]) -> bool:
    """Whether two captures hold the very same objects (`==` would take 1 for True, 0.0 for -0.0)."""
    return len(before) == len(now) and all(map(is_, before, now))


def _global_names(code: Any) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if type(const) is type(code):
            names |= _global_names(const)
    return names


def _by_name(value: Any) -> bool:
    """Whether cloudpickle sends `value` by name (a function, class or builtin of an importable module)."""
    import types

    if not isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)):
        return False
    import importlib

    decide = getattr(importlib.import_module("cloudpickle.cloudpickle"), "_should_pickle_by_reference", None)
    try:
        return bool(decide(value)) if decide is not None else False
    except Exception:  # noqa: BLE001 - not known: copied afresh
        return False


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
        else:  # (pickled: as data, its tuples would come back as lists)
            state[key] = Pickled(value)
    deadline = getattr(context, "_deadline", None)
    if deadline is not None:  # started here: what is left of it now
        remaining: float | None = max(0.0, deadline - context._clock())
    else:  # the clock starts in the worker
        remaining = getattr(context, "timeout_s", None)
    return type(context), state, services, remaining


def _dumps_message(key: bytes, blob: bytes | None, sync: dict[str, Any], evict: list[bytes], items: list[Any]) -> bytes:
    """The `Call` of `items` (each an `_Item` of fnkit._running.exchange: its `message` and its `event`) as bytes."""
    try:
        events = pickled([item.event for item in items])
        return to_worker(Call(key, blob, sync, evict, [item.message for item in items], events))
    except Exception as exc:  # noqa: BLE001 - an event or context of classes nothing can copy
        raise NotMovable(
            f"the event or the context cannot be sent to a worker process ({_short(exc)}); "
            "give JSON-like values (dicts, lists, strings, numbers), or call with "
            'isolation="thread".'
        ) from None


def call_item(
    call_id: int, context: Context, timeout_s: float | None, bound: tuple[int, Any] | None
) -> tuple[CallItem, list[Any]]:
    """What travels to the worker for one event besides the event itself, and the context's services (which stay
    here, called back)."""
    cls, state, services, remaining = _export_context(context)
    return CallItem(call_id, cls, state, remaining, timeout_s, *(bound or (None, None))), services


#: a key put in the root logger's cache of answers (whose keys are levels, numbers) once the levels are read:
#: `setLevel` on any logger empties every logger's cache (so does logging's configuration), and the levels are
#: then read again; logging itself answers from that cache until then
_LEVELS_READ = "fnkit: levels read"
_levels_read: dict[str, int] = {}


def _log_levels() -> dict[str, int]:
    """The level of each logger that has one ("": the root's), as the worker sets them."""
    global _levels_read
    import logging

    cache = getattr(logging.root, "_cache", None)
    if type(cache) is dict:
        if _LEVELS_READ in cache:
            return _levels_read
        cache[_LEVELS_READ] = True  # (before reading: a level set meanwhile empties it again)
    levels = {
        name: logger.level
        for name, logger in list(logging.Logger.manager.loggerDict.items())
        if isinstance(logger, logging.Logger) and logger.level
    }
    levels[""] = logging.root.level
    _levels_read = levels
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


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:
        return "/"
