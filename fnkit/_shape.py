"""Shapes declared once, as data.

One declaration of an event or response drives:
- the detailed validator (`Shape.walk`): located `Issue`s, never an exception;
- a generated fast checker (`Shape.fast`): True when the value surely has the shape,
  so a valid value costs a handful of type checks;
- the typed parse (`Shape.parse`): frozen dataclasses with snake_case fields;
- the field table a notebook shows (`Shape.fields_table`) and a JSON Schema export.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, make_dataclass
from typing import Any

from ._report import Issue, child_path, describe, error, warning

# --- type vocabulary ---------------------------------------------------------


@dataclass(frozen=True)
class Scalar:
    """A JSON scalar kind: `str`, `int` (not bool), `bool`, `number` or `any`."""

    kind: str

    def label(self) -> str:
        return {"str": "a string", "int": "an integer", "bool": "a boolean", "number": "a number", "any": "any value"}[self.kind]

    def type_name(self) -> str:
        return {"str": "String", "int": "Integer", "bool": "Boolean", "number": "Number", "any": "Any"}[self.kind]


STR = Scalar("str")
INT = Scalar("int")
BOOL = Scalar("bool")
NUMBER = Scalar("number")
ANY = Scalar("any")


@dataclass(frozen=True)
class Nullable:
    """`inner` or null."""

    inner: Any

    def label(self) -> str:
        return f"{self.inner.label()} or null"

    def type_name(self) -> str:
        return f"{self.inner.type_name()} or null"


@dataclass(frozen=True)
class ListOf:
    """A JSON array of `item`, with optional length bounds."""

    item: Any
    min_len: int | None = None
    max_len: int | None = None

    def label(self) -> str:
        return "a list"

    def type_name(self) -> str:
        return f"list of {self.item.type_name()}"


@dataclass(frozen=True)
class MapOf:
    """A JSON object with free string keys whose values are all `value`."""

    value: Any

    def label(self) -> str:
        return "an object"

    def type_name(self) -> str:
        return f"map string to {self.value.type_name()}"


@dataclass(frozen=True)
class F:
    """One field of an object shape.

    `key` is the spec's name; `aliases` maps a dialect to another spelling of the key.
    `required` is True, False, or a string naming a condition the shape's checks enforce.
    """

    key: str
    type: Any
    required: bool = True
    doc: str = ""
    rule: str | None = None
    enum: tuple | None = None
    aliases: tuple[tuple[str, str], ...] = ()
    attr: str | None = None  # snake_case name in the typed parse


@dataclass
class Shape:
    """An object shape: its fields, what to do with unknown keys, and the rule it cites."""

    name: str
    fields: list[F]
    rule: str
    unknown: str = "warn"  # "warn": unknown keys are warnings; "allow": silently kept
    doc: str = ""
    _fast: Callable[[Any], bool] | None = field(default=None, repr=False)
    _cls: type | None = field(default=None, repr=False)

    def label(self) -> str:
        return "an object"

    def type_name(self) -> str:
        return "Object"

    # -- keys ---------------------------------------------------------------
    def keys_of(self, f: F) -> tuple[str, ...]:
        return (f.key,) + tuple(k for _, k in f.aliases)

    def allowed(self) -> frozenset[str]:
        return frozenset(k for f in self.fields for k in self.keys_of(f))

    def field(self, key: str) -> F:
        for f in self.fields:
            if key in self.keys_of(f):
                return f
        raise KeyError(key)

    # -- detailed validation ------------------------------------------------
    def walk(self, value: Any, path: str = "$") -> list[Issue]:
        """Every type, presence and enum problem of `value`, located."""
        out: list[Issue] = []
        _walk(value, self, path, out, self.rule)
        return out

    # -- fast check ---------------------------------------------------------
    @property
    def fast(self) -> Callable[[Any], bool]:
        """A generated predicate: True only when `value` has every type, key and enum right."""
        if self._fast is None:
            self._fast = _compile(self)
        return self._fast

    # -- typed parse --------------------------------------------------------
    @property
    def cls(self) -> type:
        """The frozen dataclass this shape parses into."""
        if self._cls is None:
            specs = []
            for f in self.fields:
                specs.append((attr_name(f), Any, field(default=None)))
            self._cls = make_dataclass(self.name, specs, frozen=True, slots=True)
            self._cls.__doc__ = self.doc or f"Typed {self.name}."
        return self._cls

    def parse(self, value: dict) -> Any:
        """Build the typed value (assumes `value` has been validated)."""
        kwargs = {}
        for f in self.fields:
            v = _MISS
            for k in self.keys_of(f):
                if k in value:
                    v = value[k]
                    break
            kwargs[attr_name(f)] = None if v is _MISS else _parse(f.type, v)
        return self.cls(**kwargs)

    # -- documentation ------------------------------------------------------
    def fields_table(self, prefix: str = "") -> list[dict]:
        """One row per field (nested shapes flattened with dotted names)."""
        rows = []
        for f in self.fields:
            name = prefix + f.key
            req = f.required if isinstance(f.required, str) else ("yes" if f.required else "no")
            rows.append(
                {
                    "field": name,
                    "type": f.type.type_name(),
                    "required": req,
                    "values": ", ".join(map(str, f.enum)) if f.enum else "",
                    "aliases": ", ".join(f"{d}: {k}" for d, k in f.aliases),
                    "meaning": f.doc,
                    "rule": f.rule or self.rule,
                }
            )
            inner = _unwrap(f.type)
            if isinstance(inner, Shape):
                sep = "[]." if isinstance(_strip_null(f.type), ListOf) else "."
                rows.extend(inner.fields_table(name + sep))
        return rows

    def json_schema(self) -> dict:
        """A JSON Schema (draft 2020-12) of the shape."""
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": self.name, **_schema(self)}


_MISS = object()
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake(name: str) -> str:
    """camelCase / PascalCase / ARN-suffixed names to snake_case (`eventSourceARN` -> `event_source_arn`)."""
    s = _CAMEL.sub("_", name).replace("-", "_").lower()
    return s + "_" if keyword.iskeyword(s) else s


def attr_name(f: F) -> str:
    return f.attr or snake(f.key)


def _strip_null(t: Any) -> Any:
    return t.inner if isinstance(t, Nullable) else t


def _unwrap(t: Any) -> Any:
    t = _strip_null(t)
    while isinstance(t, (ListOf, MapOf)):
        t = _strip_null(t.item if isinstance(t, ListOf) else t.value)
    return t


def _parse(t: Any, v: Any) -> Any:
    if v is None:
        return None
    t = _strip_null(t)
    if isinstance(t, Shape):
        return t.parse(v)
    if isinstance(t, ListOf):
        return tuple(_parse(t.item, x) for x in v)
    if isinstance(t, MapOf):
        return {k: _parse(t.value, x) for k, x in v.items()}
    return v


def _schema(t: Any) -> dict:
    if isinstance(t, Nullable):
        return {"anyOf": [_schema(t.inner), {"type": "null"}]}
    if isinstance(t, Scalar):
        return {"str": {"type": "string"}, "int": {"type": "integer"}, "bool": {"type": "boolean"},
                "number": {"type": "number"}, "any": {}}[t.kind]
    if isinstance(t, ListOf):
        s = {"type": "array", "items": _schema(t.item)}
        if t.min_len is not None:
            s["minItems"] = t.min_len
        if t.max_len is not None:
            s["maxItems"] = t.max_len
        return s
    if isinstance(t, MapOf):
        return {"type": "object", "additionalProperties": _schema(t.value)}
    props = {}
    for f in t.fields:
        s = _schema(f.type)
        if f.enum:
            s = {**s, "enum": list(f.enum)}
        if f.doc:
            s = {**s, "description": f.doc}
        for k in t.keys_of(f):
            props[k] = s
    out = {"type": "object", "properties": props}
    req = [f.key for f in t.fields if f.required is True and not f.aliases]
    if req:
        out["required"] = req
    return out


# --- the detailed walker -----------------------------------------------------


def _type_ok(t: Scalar, v: Any) -> bool:
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


def _walk(v: Any, t: Any, path: str, out: list[Issue], rule: str | None) -> None:
    if isinstance(t, Nullable):
        if v is None:
            return
        t = t.inner
    if isinstance(t, Scalar):
        if not _type_ok(t, v):
            out.append(error(path, "type", f"Expected {t.label()}, got {describe(v)}.", rule))
        return
    if isinstance(t, ListOf):
        if not isinstance(v, list):
            out.append(error(path, "type", f"Expected a list, got {describe(v)}.", rule))
            return
        if t.min_len is not None and len(v) < t.min_len:
            out.append(error(path, "limit", f"The list needs at least {t.min_len} item(s), it has {len(v)}.", rule))
        if t.max_len is not None and len(v) > t.max_len:
            out.append(error(path, "limit", f"The list holds at most {t.max_len} item(s), it has {len(v)}.", rule))
        for i, x in enumerate(v):
            _walk(x, t.item, f"{path}[{i}]", out, rule)
        return
    if isinstance(t, MapOf):
        if not isinstance(v, dict):
            out.append(error(path, "type", f"Expected an object, got {describe(v)}.", rule))
            return
        for k, x in dict.items(v):  # the dict itself, never a subclass's own items()
            if not isinstance(k, str):
                out.append(error(child_path(path, k), "type", f"Keys must be strings, got {describe(k)}.", rule))
                continue
            _walk(x, t.value, child_path(path, k), out, rule)
        return
    # an object shape
    shape: Shape = t
    if not isinstance(v, dict):
        out.append(error(path, "type", f"Expected an object ({shape.name}), got {describe(v)}.", shape.rule))
        return
    for f in shape.fields:
        keys = shape.keys_of(f)
        present = [k for k in keys if k in v]
        frule = f.rule or shape.rule
        if not present:
            if f.required is True:
                out.append(error(child_path(path, f.key), "missing", f"The required field '{f.key}' is missing.", frule))
            continue
        if len(present) > 1:
            out.append(error(child_path(path, present[1]), "conflict",
                             f"'{present[0]}' and '{present[1]}' are two spellings of one field; keep one.", "G2"))
        k = present[0]
        x = v[k]
        p = child_path(path, k)
        n_before = len(out)
        _walk(x, f.type, p, out, frule)
        if f.enum is not None and len(out) == n_before and x is not None:
            try:
                known = x in f.enum
            except TypeError:
                known = False
            if not known:
                choices = ", ".join(map(str, f.enum))
                out.append(error(p, "enum", f"'{x}' is not one of the allowed values: {choices}.", frule))
    if shape.unknown == "warn":
        allowed = shape.allowed()
        for k in v:
            if k not in allowed:
                out.append(_unknown(shape, path, k))


def _unknown(shape: Shape, path: str, key: Any) -> Issue:
    hint = ""
    if isinstance(key, str):
        for known in shape.allowed():
            if known.lower() == key.lower():
                hint = f" Did you mean '{known}'? Names are case-sensitive."
                break
    return warning(child_path(path, key), "unknown",
                   f"'{key}' is not a field of {shape.name}; it is ignored.{hint}", "G1")


# --- the generated fast checker ---------------------------------------------


class _Gen:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.consts: dict[str, Any] = {}
        self.n = 0

    def var(self) -> str:
        self.n += 1
        return f"v{self.n}"

    def const(self, value: Any) -> str:
        self.n += 1
        name = f"C{self.n}"
        self.consts[name] = value
        return name

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def check(self, t: Any, var: str, depth: int) -> None:
        if isinstance(t, Nullable):
            self.emit(depth, f"if {var} is not None:")
            self.check(t.inner, var, depth + 1)
            return
        if isinstance(t, Scalar):
            if t.kind == "any":
                self.emit(depth, "pass")
            elif t.kind == "number":
                self.emit(depth, f"if type({var}) is not int and type({var}) is not float: return False")
            else:
                self.emit(depth, f"if type({var}) is not {t.kind}: return False")
            return
        if isinstance(t, ListOf):
            self.emit(depth, f"if type({var}) is not list: return False")
            if t.min_len is not None:
                self.emit(depth, f"if len({var}) < {t.min_len}: return False")
            if t.max_len is not None:
                self.emit(depth, f"if len({var}) > {t.max_len}: return False")
            item = self.var()
            self.emit(depth, f"for {item} in {var}:")
            self.check(t.item, item, depth + 1)
            return
        if isinstance(t, MapOf):
            self.emit(depth, f"if type({var}) is not dict: return False")
            inner = _strip_null(t.value)
            if isinstance(inner, Scalar) and inner.kind == "str" and not isinstance(t.value, Nullable):
                # keys of a JSON object are strings; values checked in one pass
                item = self.var()
                self.emit(depth, f"for {item} in {var}.values():")
                self.emit(depth + 1, f"if type({item}) is not str: return False")
                key = self.var()
                self.emit(depth, f"for {key} in {var}:")
                self.emit(depth + 1, f"if type({key}) is not str: return False")
            else:
                key, item = self.var(), self.var()
                self.emit(depth, f"for {key}, {item} in {var}.items():")
                self.emit(depth + 1, f"if type({key}) is not str: return False")
                self.check(t.value, item, depth + 1)
            return
        shape: Shape = t
        self.emit(depth, f"if type({var}) is not dict: return False")
        keys = self.var()
        self.emit(depth, f"{keys} = {var}.keys()")
        # A missing required key raises KeyError below (caught: slow path). When the object
        # has exactly as many keys as required fields, no optional or unknown key can be
        # present, so their checks are skipped. A required field with several spellings
        # counts towards that number but is always checked (it may be the missing one).
        required = [f for f in shape.fields if f.required is True and len(shape.keys_of(f)) == 1]
        aliased = [f for f in shape.fields if f.required is True and len(shape.keys_of(f)) > 1]
        optional = [f for f in shape.fields if f not in required and f not in aliased]
        if optional or shape.unknown == "warn":
            self.emit(depth, f"if len({var}) != {len(required) + len(aliased)}:")
            if shape.unknown == "warn":
                allowed = self.const(shape.allowed())
                self.emit(depth + 1, f"if not ({keys} <= {allowed}): return False")
            if optional:
                self._fields(shape, optional, var, keys, depth + 1)
            else:
                self.emit(depth + 1, "pass")
        self._fields(shape, required, var, keys, depth)
        if aliased:
            self._fields(shape, aliased, var, keys, depth)

    def _fields(self, shape: "Shape", fields: list, var: str, keys: str, depth: int) -> None:
        # plain scalars: one expression, no temporaries
        default = {"str": "''", "int": "0", "bool": "False"}
        conds, done = [], set()
        for f in fields:
            if f.enum is not None:
                continue
            ft = f.type
            nullable = isinstance(ft, Nullable)
            base = ft.inner if nullable else ft
            if not (isinstance(base, Scalar) and base.kind in default):
                continue
            keys_f = shape.keys_of(f)
            if f.required is True and len(keys_f) == 1 and not nullable:
                conds.append(f"type({var}[{keys_f[0]!r}]) is not {base.kind}")
            elif f.required is not True and not nullable:
                conds.extend(f"type({var}.get({k!r}, {default[base.kind]})) is not {base.kind}" for k in keys_f)
            elif f.required is not True and nullable and len(keys_f) == 1:
                x = self.var()
                conds.append(f"(({x} := {var}.get({keys_f[0]!r})) is not None and type({x}) is not {base.kind})")
            else:
                continue
            if len(keys_f) > 1:
                conds.append("(" + " + ".join(f"({k!r} in {keys})" for k in keys_f) + ") > 1")
            done.add(f.key)
        if conds:
            self.emit(depth, "if " + " or ".join(conds) + ": return False")
        for f in fields:
            if f.key in done:
                continue
            keys_f = shape.keys_of(f)
            x = self.var()
            if f.required is True and len(keys_f) == 1:
                self.emit(depth, f"{x} = {var}[{keys_f[0]!r}]")
                self._field(f, x, depth)
                continue
            if len(keys_f) > 1:
                # two spellings present at once goes to the slow path
                self.emit(depth, "if (" + " + ".join(f"({k!r} in {keys})" for k in keys_f) + ") > 1: return False")
            self.emit(depth, f"{x} = " + "".join(f"{var}.get({k!r}, " for k in keys_f) + "MISS" + ")" * len(keys_f))
            if f.required is True:
                self.emit(depth, f"if {x} is MISS: return False")
                self._field(f, x, depth)
            else:
                self.emit(depth, f"if {x} is not MISS:")
                self._field(f, x, depth + 1)

    def _field(self, f: F, x: str, depth: int) -> None:
        self.check(f.type, x, depth)
        if f.enum is not None:
            enum = self.const(frozenset(f.enum))
            if isinstance(f.type, Nullable):
                self.emit(depth, f"if {x} is not None and {x} not in {enum}: return False")
            else:
                self.emit(depth, f"if {x} not in {enum}: return False")


def _compile(shape: Shape) -> Callable[[Any], bool]:
    gen = _Gen()
    gen.emit(0, "def fast(v0):")
    gen.emit(1, "try:")
    gen.check(shape, "v0", 2)
    gen.emit(1, "except (KeyError, TypeError, AttributeError, RecursionError):")
    gen.emit(2, "return False")
    gen.emit(1, "return True")
    src = "\n".join(gen.lines)
    namespace: dict[str, Any] = {"MISS": _MISS, **gen.consts}
    exec(compile(src, f"<fnkit fast check: {shape.name}>", "exec"), namespace)
    fn = namespace["fast"]
    fn.__doc__ = f"True when the value surely has the shape {shape.name}."
    fn.source = src
    return fn


def iter_checks(checks: list[Callable[..., Iterator[Issue]]], value: Any, ctx: Any) -> list[Issue]:
    """Run each rule check (a generator of issues) over `value`."""
    out: list[Issue] = []
    for check in checks:
        out.extend(check(value, ctx))
    return out
