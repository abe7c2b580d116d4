"""How the commands that run a handler import it: MODULE:FUNCTION or path/to/file.py:FUNCTION, from --app-dir."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ._formats import ERROR


class HandlerNotFound(Exception):
    """A MODULE:FUNCTION that cannot be imported or named; the message is one line."""


def _add_app_dirs(app_dirs: Sequence[str]) -> None:
    """Put the application's folders first on sys.path, then the current folder (fnkit's workers copy sys.path)."""
    folders = [str(Path(d).resolve()) for d in app_dirs] + [str(Path.cwd())]
    for folder in reversed(folders):
        if folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)


def _export_app_dirs(app_dirs: Sequence[str]) -> None:
    """The application's folders on PYTHONPATH too, for processes that start from the environment (Dask's)."""
    if app_dirs:
        old = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [*(str(Path(d).resolve()) for d in app_dirs), *([old] if old else [])]
        )


def resolve_handler(spec: str, app_dirs: Sequence[str] = ()) -> Callable[..., Any]:
    """`module:function` or `path/to/file.py:function` → the function; HandlerNotFound (one line) when it is not."""
    import importlib

    target, _, attr = spec.rpartition(":")
    if not target or not attr:
        raise HandlerNotFound(f"give the handler as MODULE:FUNCTION (app:handler), not {spec!r}")
    _add_app_dirs(app_dirs)
    if target.endswith(".py"):
        path = Path(target).resolve()
        if not path.is_file():
            raise HandlerNotFound(f"cannot import the handler {spec!r}: no such file {target}")
        sys.path.insert(0, str(path.parent))
        target = path.stem
    try:
        module = importlib.import_module(target)
    except SyntaxError as exc:
        where = f" ({exc.filename}:{exc.lineno})" if exc.filename else ""
        raise HandlerNotFound(f"cannot import the handler {spec!r}: SyntaxError: {exc.msg}{where}") from None
    except ModuleNotFoundError as exc:
        if exc.name != target:  # the module is there; something it imports is not
            raise HandlerNotFound(
                f"cannot import the handler {spec!r}: importing {target} raised ModuleNotFoundError: {exc}"
            ) from None
        hint = "" if app_dirs else "; give its folder with --app-dir"
        raise HandlerNotFound(f"cannot import the handler {spec!r}: {exc}{hint}") from None
    except Exception as exc:  # noqa: BLE001 - whatever the module raises on import, said in one line
        raise HandlerNotFound(
            f"cannot import the handler {spec!r}: importing {target} raised {type(exc).__name__}: {exc}"
        ) from None
    handler = getattr(module, attr, None)
    if handler is None:
        raise HandlerNotFound(f"the module {target!r} ({module.__file__}) has no {attr!r}")
    if not callable(handler):
        raise HandlerNotFound(f"{spec!r} is {type(handler).__name__}, not a function")
    found: Callable[..., Any] = handler
    return found


def _load_handler(spec: str, app_dirs: Sequence[str] = ()) -> Callable[..., Any]:
    """The handler of a serve command; one line and exit status 2 when it cannot be imported."""
    try:
        return resolve_handler(spec, app_dirs)
    except HandlerNotFound as exc:
        print(f"fnkit: {exc}", file=sys.stderr)
        raise SystemExit(ERROR) from None
