"""The type vocabulary shapes are declared in, and how each type reads in JSON Schema.

`Scalar` (`STR`, `INT`, `BOOL`, `NUMBER`, `ANY`), `Text` (a string with a pattern and length bounds),
`Nullable`, `ListOf`, `MapOf` and `F` (one field of an object shape) are plain frozen values; `fnkit._engine.shape`
compiles them, with its `Shape`, to msgspec Structs, walks values against them and reads their tables.
`schema_of` says each of them as JSON Schema, every constraint the compiled check enforces.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any

from .patterns import PatternCheck, pattern_check, schema_pattern, whole
from .report import Severity

# --- type vocabulary ---------------------------------------------------------


@dataclass(frozen=True)
class Scalar:
    """A JSON scalar kind: `str`, `int` (not bool), `bool`, `number` or `any`."""

    kind: str

    def label(self) -> str:
        return {"str": "a string", "int": "an integer", "bool": "a boolean", "number": "a number", "any": "any value"}[
            self.kind
        ]

    def type_name(self) -> str:
        return {"str": "String", "int": "Integer", "bool": "Boolean", "number": "Number", "any": "Any"}[self.kind]


@dataclass(frozen=True)
class Text(Scalar):
    """A JSON string with a constraint: a regular expression it must match whole, length bounds.

    The length bounds compile to `msgspec.Meta` (`annotation`), tested in C; the pattern is
    tested per column of the shape's values (`check`, see `Shape.patterns_hold`); the walker
    asks msgspec the whole constraint (`broken`), and the tests hold the two ways equal.
    When the string breaks it, the walker reports `code` with `severity`, citing `rule`
    (else the field's rule), in the words of `message`: a template over `{value}` (the
    string), `{json}` (the string as JSON) and `{length}`, or a function of the string.
    `pattern` must match the whole string (it is anchored for msgspec, which searches).
    Warning-severity constraints are left out of the JSON Schema: a value that breaks one
    still meets the contract.
    """

    kind: str = "str"
    pattern: str | None = None
    min_len: int | None = None
    max_len: int | None = None
    rule: str | None = None
    code: str = "format"
    severity: Severity = "error"
    message: str | Callable[[str], str] | None = None
    doc: str = ""

    @cached_property
    def annotation(self) -> Any:
        """What the compiled Structs check in C: `Annotated[str, Meta(min_length=..., max_length=...)]`; the pattern
        is checked per column (`check`, `Shape.patterns_hold`), not once per string by msgspec."""
        import msgspec

        if self.min_len is None and self.max_len is None:
            return str
        return Annotated[str, msgspec.Meta(min_length=self.min_len, max_length=self.max_len)]

    @cached_property
    def check(self) -> PatternCheck | None:
        """The test of the declared pattern, derived from it (fnkit._engine.patterns); None without a pattern."""
        return None if self.pattern is None else pattern_check(self.pattern)

    @cached_property
    def _probe(self) -> tuple[Callable[..., Any], type[Any], type[Exception]]:
        """(msgspec.convert, a one-field Struct holding the whole constraint, the error it raises): msgspec's test."""
        import msgspec

        whole_pattern = None if self.pattern is None else whole(self.pattern)
        meta = msgspec.Meta(pattern=whole_pattern, min_length=self.min_len, max_length=self.max_len)
        probe = msgspec.defstruct("TextProbe", [("value", Annotated[str, meta])], array_like=True)
        return msgspec.convert, probe, msgspec.ValidationError

    def broken(self, value: str) -> bool:
        """True when the string breaks the constraint (msgspec's own test of `annotation`, as in the compiled check)."""
        convert, probe, rejected = self._probe
        try:
            convert((value,), probe)
        except rejected:
            return True
        return False

    def meets(self, value: str) -> bool:
        """True when the string meets the constraint."""
        return not self.broken(value)

    def sentence(self, value: str) -> str:
        if callable(self.message):
            return self.message(value)
        if self.message:
            return self.message.format(value=value, json=json.dumps(value), length=len(value))
        if self.max_len is not None and len(value) > self.max_len:
            return f"The text has {len(value)} characters; at most {self.max_len} are allowed."
        if self.min_len is not None and len(value) < self.min_len:
            return f"The text has {len(value)} characters; at least {self.min_len} are needed."
        return f"{json.dumps(value)} does not have the expected form."


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
    """A JSON array of `item`, with optional length bounds (`rule` and `message` for when they fail)."""

    item: Any
    min_len: int | None = None
    max_len: int | None = None
    rule: str | None = None
    message: str | None = None  # template over {n}, {min}, {max}

    def label(self) -> str:
        return "a list"

    def type_name(self) -> str:
        return f"list of {self.item.type_name()}"


@dataclass(frozen=True)
class MapOf:
    """A JSON object with free string keys whose values are all `value` (`keys`: a Text the keys must meet)."""

    value: Any
    keys: Text | None = None

    def label(self) -> str:
        return "an object"

    def type_name(self) -> str:
        return f"map string to {self.value.type_name()}"


@dataclass(frozen=True)
class F:
    """One field of an object shape.

    `key` is the spec's name; `aliases` maps a dialect to another spelling of the key.
    `required` is True, False, or a string naming a condition the shape's checks enforce.
    `enum`: the allowed values (`message`: a template over `{value}` said when another
    value is found, else a generic sentence).
    """

    key: str
    type: Any
    required: bool | str = True
    doc: str = ""
    rule: str | None = None
    enum: tuple[Any, ...] | None = None
    aliases: tuple[tuple[str, str], ...] = ()
    attr: str | None = None  # snake_case name in the typed parse
    message: str | None = None


# --- JSON Schema ---------------------------------------------------------------


def schema_of(t: Any, enum: tuple[Any, ...] | None = None) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a declared type: a scalar, a Text, a list, a map, or an object shape
    (anything with `fields`, `keys_of` and `doc`: `fnkit._engine.shape.Shape`)."""
    if isinstance(t, Nullable):
        if enum is not None:
            return {"enum": [*enum, None]}
        return {"anyOf": [schema_of(t.inner), {"type": "null"}]}
    if enum is not None:
        return {"enum": list(enum)}
    if isinstance(t, Text):
        s: dict[str, Any] = {"type": "string"}
        if t.severity == "error":
            if t.pattern is not None:
                s["pattern"] = schema_pattern(t.pattern)
            if t.min_len is not None:
                s["minLength"] = t.min_len
            if t.max_len is not None:
                s["maxLength"] = t.max_len
        elif t.doc:
            s["description"] = f"Warned about (not an error): {t.doc}"
        return s
    if isinstance(t, Scalar):
        return {
            "str": {"type": "string"},
            "int": {"type": "integer"},
            "bool": {"type": "boolean"},
            "number": {"type": "number"},
            "any": {},
        }[t.kind]
    if isinstance(t, ListOf):
        s = {"type": "array", "items": schema_of(t.item)}
        if t.min_len is not None:
            s["minItems"] = t.min_len
        if t.max_len is not None:
            s["maxItems"] = t.max_len
        return s
    if isinstance(t, MapOf):
        s = {"type": "object", "additionalProperties": schema_of(t.value)}
        if t.keys is not None:
            names = schema_of(t.keys)
            names.pop("type", None)
            if names:
                s["propertyNames"] = names
        return s
    props: dict[str, Any] = {}
    conditions: list[dict[str, Any]] = []
    for f in t.fields:
        s = schema_of(f.type, f.enum)
        if f.doc:
            s = {**s, "description": f.doc + (f" {s['description']}" if "description" in s else "")}
        keys = t.keys_of(f)
        for k in keys:
            props[k] = s
        if len(keys) > 1:
            conditions += [{"not": {"required": [a, b]}} for i, a in enumerate(keys) for b in keys[i + 1 :]]
            if f.required is True:
                conditions.append({"anyOf": [{"required": [k]} for k in keys]})
    out: dict[str, Any] = {"type": "object", "properties": props}
    req = [f.key for f in t.fields if f.required is True and not f.aliases]
    if req:
        out["required"] = req
    if conditions:
        out["allOf"] = conditions
    if t.doc:
        out["description"] = t.doc
    return out
