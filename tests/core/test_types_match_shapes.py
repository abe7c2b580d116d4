"""`fnkit.types` says what the declared shapes say: every field, whether it is required, whether it may be null."""

from __future__ import annotations

import typing
from typing import Any, Literal, NotRequired, Required, get_args, get_origin, get_type_hints, is_typeddict

import pytest

from fnkit import alb, mail, queue, types
from fnkit._engine.shape import ListOf, MapOf, Nullable, Scalar, Shape
from fnkit.queue._contents import MESSAGE_ATTRIBUTE

PAIRS = [
    (types.QueueEvent, queue.EVENT_SHAPE),
    (types.QueueResponse, queue.RESPONSE_SHAPE),
    (types.MailEvent, mail.EVENT_SHAPE),
    (types.MailResponse, mail.RESPONSE_SHAPE),
    (types.AlbEvent, alb.EVENT_SHAPE),
    (types.AlbResponse, alb.RESPONSE_SHAPE),
]
_SCALARS: dict[str, set[Any]] = {"str": {str}, "int": {int}, "bool": {bool}, "number": {int, float}}


def _required(typed: Any) -> dict[str, bool]:
    """Each key of a TypedDict, and whether it is required (NotRequired/Required or the class's totality)."""
    hints = get_type_hints(typed, include_extras=True)
    out = {}
    for key, hint in hints.items():
        origin = get_origin(hint)
        out[key] = True if origin is Required else False if origin is NotRequired else bool(typed.__total__)
    return out


def _bare(hint: Any) -> Any:
    return get_args(hint)[0] if get_origin(hint) in (Required, NotRequired) else hint


def _differences(hint: Any, declared: Any, where: str) -> list[str]:
    """How a type hint differs from a declared type (nested shapes, lists, maps, scalars, null), as sentences."""
    args = set(get_args(hint)) if get_origin(hint) in (typing.Union, type(int | str)) else {hint}
    nullable = type(None) in args
    if isinstance(declared, Nullable) != nullable:
        return [f"{where}: the shape says {'null is' if nullable is False else 'no null'} allowed, the type not"]
    declared = declared.inner if isinstance(declared, Nullable) else declared
    (inner,) = args - {type(None)} or {Any}
    if isinstance(declared, Shape):
        return _compare(inner, declared, where) if is_typeddict(inner) else [f"{where}: an object, typed {inner}"]
    if isinstance(declared, ListOf):
        if get_origin(inner) is not list:
            return [f"{where}: a list, typed {inner}"]
        return _differences(get_args(inner)[0], declared.item, where + "[]")
    if isinstance(declared, MapOf):
        if get_origin(inner) is not dict or get_args(inner)[0] is not str:
            return [f"{where}: a map of strings, typed {inner}"]
        return _differences(get_args(inner)[1], declared.value, where + "{}")
    assert isinstance(declared, Scalar)
    if declared.kind == "any" or inner is Any:
        return []
    if get_origin(inner) is Literal:
        kinds = {type(v) for v in get_args(inner)}
    else:
        kinds = {inner}
    return [] if kinds <= _SCALARS[declared.kind] else [f"{where}: {declared.kind}, typed {inner}"]


def _compare(typed: Any, shape: Shape, where: str) -> list[str]:
    hints = get_type_hints(typed, include_extras=True)
    required = _required(typed)
    problems = []
    declared_keys = set()
    for f in shape.fields:
        for key in shape.keys_of(f):
            declared_keys.add(key)
            at = f"{where}.{key}"
            if key not in hints:
                problems.append(f"{at}: declared, missing from {typed.__name__}")
                continue
            # a field with two spellings is required as either; the type has both keys, neither required
            must = f.required is True and not f.aliases
            if required[key] != must:
                problems.append(f"{at}: {'required' if must else 'optional'} in the shape, not in {typed.__name__}")
            enum = f.enum
            hint = _bare(hints[key])
            if enum is not None and get_origin(hint) is Literal and set(get_args(hint)) != set(enum):
                problems.append(f"{at}: the values {sorted(enum)}, typed {hint}")
            problems += _differences(hint, f.type, at)
    problems += [f"{where}.{key}: in {typed.__name__}, not in the shape" for key in hints if key not in declared_keys]
    return problems


@pytest.mark.parametrize(("typed", "shape"), PAIRS, ids=[t.__name__ for t, _ in PAIRS])
def test_each_typed_dict_has_every_field_its_shape_declares_with_its_optionality_and_nullability(typed, shape):
    assert _compare(typed, shape, "$") == []


def test_the_comparison_sees_a_missing_field_a_wrong_optionality_and_a_wrong_nullability():
    from typing import TypedDict

    class Attribute(TypedDict):
        dataType: str
        stringValue: str  # nullable and optional in the shape
        binaryValue: NotRequired[str | None]
        stringListValues: NotRequired[list[str]]
        # binaryListValues missing

    found = _compare(Attribute, MESSAGE_ATTRIBUTE, "$")
    assert any("stringValue: optional" in p for p in found)
    assert any("stringValue: the shape says null" in p for p in found)
    assert any("binaryListValues: declared, missing" in p for p in found)
