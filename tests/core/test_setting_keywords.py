"""Each function that takes settings as keywords says which to type checkers: its `**settings` TypedDict holds
exactly the settings it declares with `with_settings`, each typed as declared."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from typing import Any, Literal, Unpack, get_args, get_origin

import fnkit
from fnkit._settings.config import settings_of


def _takers() -> list[Any]:
    found: list[Any] = []
    for info in pkgutil.walk_packages(fnkit.__path__, "fnkit."):
        if info.name.startswith(("fnkit.widgets", "fnkit.workshop")) or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            for candidate in (value, getattr(value, "__init__", None)):
                if settings_of(candidate)[0] is not None and candidate not in found:
                    found.append(candidate)
    return found


def _kinds(hint: object) -> set[object]:
    args = get_args(hint) if get_origin(hint) in (typing.Union, type(int | None)) else (hint,)
    out: set[object] = set()
    for arg in args:
        out |= {type(v) for v in get_args(arg)} if get_origin(arg) is Literal else {arg}
    return out


def test_every_taker_of_settings_types_its_keywords_as_its_declaration_says():
    takers = _takers()
    assert len(takers) >= 20  # build_event, run, outcome, validate_response, ... of each source
    for taker in takers:
        config_class, names = settings_of(taker)
        assert config_class is not None
        annotation = taker.__annotations__.get("settings")
        unpacked = eval(annotation, vars(inspect.getmodule(taker)))
        assert get_origin(unpacked) is Unpack, f"{taker.__qualname__}: **settings: Unpack[<TypedDict>]"
        typed = get_args(unpacked)[0]
        keys = typing.get_type_hints(typed)
        aliases = {alias for alias, name in config_class.aliases.items() if name in names}
        params = set(inspect.signature(taker).parameters)
        assert set(keys) - aliases == set(names), taker.__qualname__
        assert not (aliases & set(keys) & params), taker.__qualname__  # an alias typed twice
        for setting in config_class.settings(names):
            kinds = _kinds(keys[setting.name])
            assert setting.kind in kinds, (taker.__qualname__, setting.name)
            assert (type(None) in kinds) == setting.optional, (taker.__qualname__, setting.name)
            if setting.choices is not None:
                assert set(get_args(keys[setting.name])) == set(setting.choices), (taker.__qualname__, setting.name)
