"""What travels to a worker: the handler (by import path or by value), the event and the context, and the
state a call starts from (working directory, environment, imports path, logging levels, memory limit).
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
from typing import TYPE_CHECKING, Any

from .inprocess import (
    Context,
    Handler,
)
from .pool import _Worker
from .wire import _IMPORT_BLOB, _PLAIN, _PROTOCOL, _UNSET, Call, _RemoteSpec, _short

if TYPE_CHECKING:
    pass

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


def _dumps_message(message: Call) -> bytes:
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


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:
        return "/"
