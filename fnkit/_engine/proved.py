"""What the engine has proved of a leniently built value: which cells hold their declared types, which lists are there.

A compiled typed value holds every declared type. A value that broke its shape is built leniently instead (the
walk has named every problem), so a cell may hold anything. A check that declares what it reads
(`fnkit._engine.validate.reads`) is given only what holds, so it reads each cell as its declared type, without a
guard: `holds` is the test of one declared type (what `TableSpec.held` asks of each column), `lists_held` says
which tables' lists are where the declaration puts them. `type_ok` is the walk's test of a scalar's kind, the one
both ask.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from .vocabulary import ListOf, MapOf, Nullable, Scalar


def type_ok(t: Scalar, v: Any) -> bool:
    """True when `v` is of the scalar kind `t` declares (the walk's type test: anything else is its type error)."""
    k = t.kind
    if k == "str":
        return isinstance(v, str)
    if k == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if k == "bool":
        return isinstance(v, bool)
    if k == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return True


_CLASSES: dict[str, type[Any]] = {"str": str, "bool": bool}  # the kinds whose type test is one isinstance


def holds(t: Any) -> Callable[[Any], bool]:
    """The test that a value of a leniently built value holds the declared type `t` as a compiled typed value would
    (no type error of the walk's at or below it): a scalar of its kind, None where nullable, a tuple or dict of such,
    an object of its Struct class (whose fields are places of their own). Constraints on a value (patterns, enums,
    lengths) are not types: a string that breaks its pattern holds the type str."""
    if isinstance(t, Nullable):
        inner = holds(t.inner)
        return lambda v: v is None or inner(v)
    if isinstance(t, Scalar):
        if t.kind in _CLASSES:  # `type_ok`'s isinstance, as a C-level call (no Python frame a cell)
            return _CLASSES[t.kind].__instancecheck__
        return partial(type_ok, t)
    if isinstance(t, ListOf):
        item = holds(t.item)
        return lambda v: type(v) is tuple and all(map(item, v))
    if isinstance(t, MapOf):
        value = holds(t.value)
        return lambda v: type(v) is dict and all(isinstance(k, str) for k in v) and all(map(value, v.values()))
    struct = t.struct  # an object shape
    return lambda v: type(v) is struct


def or_absent(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """`test`, with an absent field held too: None (an optional field) or UNSET (a spelling not used)."""
    import msgspec

    unset = msgspec.UNSET
    return lambda v: v is None or v is unset or test(v)


def lists_held(specs: Sequence[Any], typed: Any) -> frozenset[str]:
    """The tables (`specs`: a shape's `TableSpec`s) whose list is where the declaration puts it in a leniently built
    value: each object on the way of its Struct class and the list a tuple, or absent where the declaration allows
    it (optional or nullable), as in a compiled typed value. A nested table's list is its parent's."""
    held: set[str] = set()
    for spec in specs:
        if spec.parent is not None:
            if spec.parent in held:
                held.add(spec.name)
            continue
        value: Any = typed
        for (shape, attr), key in zip(spec.steps, spec.down, strict=True):
            if type(value) is not shape.struct:
                break
            value = getattr(value, attr)
            if value is None:
                f = shape.field(key)
                if f.required is not True or isinstance(f.type, Nullable):
                    held.add(spec.name)  # absent, as a typed value may have it: its table has no rows
                break
        else:
            if type(value) is tuple:
                held.add(spec.name)
    return frozenset(held)
