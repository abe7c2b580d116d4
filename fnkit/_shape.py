"""Shapes declared once, as data, and compiled.

One declaration of an event or response drives:
- the compiled check (`Shape.struct`): a msgspec Struct generated from the declaration
  (snake_case attributes renamed to the contract's keys, unknown keys forbidden, enums as
  Literal, patterns and length bounds as `msgspec.Meta`), so JSON text is decoded and
  checked in one pass and a Python value is checked in one `msgspec.convert`;
- the typed parse: the Struct instances themselves, which also speak the dataclass
  protocol (`dataclasses.is_dataclass`, `dataclasses.fields`, FrozenInstanceError on
  assignment), with snake_case fields;
- the located walker (`Shape.walk`), run only when the compiled check rejects a value:
  it names every problem with its path, code, sentence and rule, never an exception;
- the lenient build (`Shape.lenient`): the same classes holding whatever a broken value
  has, so the semantic rules read one kind of value on both paths;
- the field table a notebook shows (`Shape.fields_table`) and the JSON Schema export
  (`Shape.json_schema`), which carries every enum, pattern, length bound and required
  key the compiled check enforces.
"""

from __future__ import annotations

import dataclasses
import json
import keyword
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from operator import is_not
from types import GenericAlias
from typing import Annotated, Any, Literal, TypeVar

from ._memo import Accepted
from ._report import Issue, Severity, child_path, describe, error, warning
from .rules import rule

#: a value's tables, read once (see TableSpec): {table name: {"at": row positions, column name: values}}
Tables = dict[str, dict[str, Any]]
#: the generated reading of a typed value's tables, and the generated check over a typed value and them
TablesReader = Callable[[Any], Tables]
PostCheck = Callable[[Any, Tables], bool]
#: a Text's constraint as its memos key it: (pattern, min_len, max_len)
ConstraintKey = tuple[str | None, int | None, int | None]

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
    """A JSON string with a constraint: a regular expression it must match, length bounds.

    When the string breaks the constraint, the walker reports `code` with `severity`,
    citing `rule` (else the field's rule), in the words of `message`: a template over
    `{value}` (the string), `{json}` (the string as JSON) and `{length}`, or a function of
    the string. `pattern` is searched (anchor it with ^ and $), as msgspec and JSON
    Schema do. Warning-severity constraints are left out of the JSON Schema: a value that
    breaks one still meets the contract.
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
    #: optional: a faster test of a whole column against `pattern`, True only when every value
    #: surely matches (False: unsure, the pattern decides value by value); tests hold it to the pattern
    column_test: Callable[[Sequence[str]], bool] | None = None
    #: False for values that rarely repeat (timestamps, sequence numbers): they are tested every time,
    #: not remembered; values that do repeat (ARNs, regions, header names) are tested once (see `accepted`)
    repeats: bool = True

    def broken(self, value: str) -> bool:
        """True when the string breaks the constraint (the pattern must match the whole string)."""
        return not _meets(self.pattern, self.min_len, self.max_len, self.repeats)(value)

    @property
    def meets(self) -> Callable[[str], bool]:
        """The compiled test of one string: True when it meets the constraint (bounds, then the pattern;
        a string already known to meet it is one look-up in the constraint's bounded memo)."""
        return _meets(self.pattern, self.min_len, self.max_len, self.repeats)

    def all_ok(self, values: Any) -> bool:
        """True when every string of `values` meets the constraint (a column at once, at C speed where it can)."""
        values = values if isinstance(values, (list, tuple, set, frozenset)) else list(values)
        if not values:
            return True
        if self.min_len is not None and min(map(len, values)) < self.min_len:
            return False
        if self.max_len is not None and max(map(len, values)) > self.max_len:
            return False
        if self.pattern is None:
            return True
        if self.column_test is not None and self.column_test(values):
            return True
        return all(map(_compiled(self.pattern), set(values)))

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


#: the pattern of a string of ASCII digits, and its column test (one join, two C-level tests)
DIGITS = r"^[0-9]+$"


def all_digits(values: Any) -> bool:
    """True when every string of `values` is ASCII digits, at least one (the pattern DIGITS)."""
    joined = "".join(values)
    # (bytes.isdigit reads ASCII digits a byte at a time, many times faster than str.isdigit's Unicode look-ups)
    return joined.isascii() and joined.encode().isdigit() and all(values)


_PATTERNS: dict[str, Callable[[str], Any]] = {}


def _compiled(pattern: str) -> Callable[[str], Any]:
    """The whole-string matcher of a pattern (anchors or not, the string must match entirely)."""
    found = _PATTERNS.get(pattern)
    if found is None:
        found = _PATTERNS[pattern] = re.compile(pattern).fullmatch
    return found


#: the strings known to meet each constraint (values that repeat, such as ARNs, regions, header names
#: and data types, are then tested once), each memo bounded by bytes (see fnkit/_memo.py)
_ACCEPTED: dict[ConstraintKey, Accepted] = {}
_MEETS: dict[tuple[str | None, int | None, int | None, bool], Callable[[str], bool]] = {}


def accepted(t: Text) -> Accepted:
    """The memo of strings known to meet the Text's constraint (one per constraint, bounded by bytes)."""
    key: ConstraintKey = (t.pattern, t.min_len, t.max_len)
    found = _ACCEPTED.get(key)
    if found is None:
        found = _ACCEPTED[key] = Accepted()
    return found


def _meets(pattern: str | None, min_len: int | None, max_len: int | None, repeats: bool) -> Callable[[str], bool]:
    key: ConstraintKey = (pattern, min_len, max_len)
    found = _MEETS.get((*key, repeats))
    if found is not None:
        return found
    low = min_len if min_len is not None else 0
    high = max_len if max_len is not None else float("inf")
    if pattern is None:

        def meets(s: str) -> bool:
            return low <= len(s) <= high
    elif not repeats:
        whole = _compiled(pattern)

        def meets(s: str) -> bool:
            return low <= len(s) <= high and whole(s) is not None
    else:
        ok = _ACCEPTED.setdefault(key, Accepted())
        whole = _compiled(pattern)

        def meets(s: str) -> bool:
            if s in ok:
                return True
            if not low <= len(s) <= high or whole(s) is None:
                return False
            ok.remember(s)
            return True

    _MEETS[(*key, repeats)] = meets
    return meets


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


C = TypeVar("C", bound=Callable[..., Any])


def _generated(fn: C, source: str) -> C:
    """`fn` with the Python source fnkit generated it from, as `fn.source` (to read what a shape compiles to)."""
    fn.__dict__["source"] = source
    return fn


def _frozen(self: Any, name: str, value: Any = None) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


@dataclass(eq=False)
class Shape:
    """An object shape: its fields, what to do with unknown keys, and the rule it cites."""

    name: str
    fields: list[F]
    rule: str
    unknown: str = "warn"  # "warn": unknown keys are warnings; "allow": silently kept
    doc: str = ""
    _struct: type[Any] | None = field(default=None, repr=False)
    _post_ok: Callable[[Any], bool] | None = field(default=None, repr=False)
    _compiled_parts: tuple[tuple[TableSpec, ...], TablesReader, PostCheck] | None = field(default=None, repr=False)

    def label(self) -> str:
        return "an object"

    def type_name(self) -> str:
        return "Object"

    # -- keys ---------------------------------------------------------------
    def keys_of(self, f: F) -> tuple[str, ...]:
        return (f.key, *(k for _, k in f.aliases))

    def allowed(self) -> frozenset[str]:
        return frozenset(k for f in self.fields for k in self.keys_of(f))

    def field(self, key: str) -> F:
        for f in self.fields:
            if key in self.keys_of(f):
                return f
        raise KeyError(key)

    # -- detailed validation ------------------------------------------------
    def walk(self, value: Any, path: str = "$") -> list[Issue]:
        """Every type, presence, enum, pattern and length problem of `value`, located."""
        out: list[Issue] = []
        _walk(value, self, path, out, self.rule)
        return out

    # -- the compiled check and the typed value ------------------------------
    @property
    def struct(self) -> type[Any]:
        """The msgspec Struct generated from this declaration (the typed parse's class)."""
        if self._struct is None:
            self._struct = _make_struct(self)
        return self._struct

    cls = struct  # the class the shape parses into

    def compiled(self, value: Any) -> Any:
        """The typed value when the Python `value` surely has the shape (every type, key, enum,
        pattern and bound right; one spelling per field), else None."""
        import msgspec

        try:
            typed: Any = msgspec.convert(value, self.struct, strict=True)
        except (msgspec.ValidationError, RecursionError, UnicodeEncodeError):
            return None
        return typed if self.post_ok(typed) else None

    def fast(self, value: Any) -> bool:
        """True when `value` surely has the shape: the compiled check accepts it."""
        return self.compiled(value) is not None

    @property
    def post_ok(self) -> Callable[[Any], bool]:
        """The generated check of what msgspec leaves to fnkit, over a typed value: one spelling per
        field (a required one present in one), and every Text pattern and length bound."""
        if self._post_ok is None:
            post, tables = self.post_check, self.tables

            def post_ok(typed: Any) -> bool:
                return post(typed, tables(typed))

            self._post_ok = _generated(post_ok, getattr(post, "source", ""))
        return self._post_ok

    @property
    def table_specs(self) -> tuple[TableSpec, ...]:
        """The lists of objects of the shape that are read as columns (see TableSpec)."""
        return (self._compiled_parts or self._compile_parts())[0]

    @property
    def tables(self) -> TablesReader:
        """The generated reading of a compiled typed value's tables: {name: {"at": positions, column: values}}."""
        return (self._compiled_parts or self._compile_parts())[1]

    @property
    def post_check(self) -> PostCheck:
        """`post_ok` over a typed value and its tables (read once, shared with the semantic checks)."""
        return (self._compiled_parts or self._compile_parts())[2]

    def lenient_tables(self, typed: Any) -> Tables:
        """The tables of a leniently built value: the rows that are objects of their shape, raw values in columns."""
        return lenient_tables(self.table_specs, typed)

    def _compile_parts(self) -> tuple[tuple[TableSpec, ...], TablesReader, PostCheck]:
        specs = _find_tables(self)
        parts = (specs, _tables_builder(specs), _post_checker(self, specs) or _always)
        self._compiled_parts = parts
        return parts

    def parse(self, value: Any) -> Any:
        """The typed value (assumes `value` has been validated; a broken value is built leniently)."""
        typed = self.compiled(value)
        return typed if typed is not None else self.lenient(value)

    def lenient(self, value: Any) -> Any:
        """The typed classes holding whatever `value` has: raw values where types are wrong, None for missing keys."""
        return _lenient(self, value)

    # -- documentation ------------------------------------------------------
    def fields_table(self, prefix: str = "") -> list[dict[str, str]]:
        """One row per field (nested shapes flattened with dotted names)."""
        rows: list[dict[str, str]] = []
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

    def json_schema(self, *, description: str | None = None) -> dict[str, Any]:
        """A JSON Schema (draft 2020-12) of the shape: every structural check the compiled layer makes."""
        out = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": self.name, **_schema(self)}
        if description:
            out["description"] = description
        return out


_MISS = object()
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake(name: str) -> str:
    """camelCase / PascalCase / ARN-suffixed names to snake_case (`eventSourceARN` -> `event_source_arn`)."""
    s = _CAMEL.sub("_", name).replace("-", "_").lower()
    return s + "_" if keyword.iskeyword(s) else s


def attr_name(f: F) -> str:
    return f.attr or snake(f.key)


def spelling_attr(f: F, key: str) -> str:
    """The Struct attribute that holds one spelling of an aliased field (`trace_header__1`: the second)."""
    keys = (f.key, *(k for _, k in f.aliases))
    return f"{attr_name(f)}__{keys.index(key)}"


def _strip_null(t: Any) -> Any:
    return t.inner if isinstance(t, Nullable) else t


def _unwrap(t: Any) -> Any:
    t = _strip_null(t)
    while isinstance(t, (ListOf, MapOf)):
        t = _strip_null(t.item if isinstance(t, ListOf) else t.value)
    return t


# --- compiling a shape to msgspec Structs ---------------------------------------------


def _annotation(t: Any, enum: tuple[Any, ...] | None = None) -> Any:
    import msgspec

    if isinstance(t, Nullable):
        return _annotation(t.inner, enum) | None
    if enum is not None:
        return Literal[tuple(enum)]
    if isinstance(t, Scalar):  # a Text's pattern and bounds are checked a column at a time (_post_checker)
        return {"str": str, "int": int, "bool": bool, "number": int | float, "any": Any}[t.kind]
    if isinstance(t, ListOf):
        inner = GenericAlias(tuple, (_annotation(t.item), ...))  # tuple[item, ...], made at run time
        if t.min_len is None and t.max_len is None:
            return inner
        return Annotated[inner, msgspec.Meta(min_length=t.min_len, max_length=t.max_len)]
    if isinstance(t, MapOf):
        return GenericAlias(dict, (_annotation(t.keys) if t.keys is not None else str, _annotation(t.value)))
    return t.struct


def _make_struct(shape: Shape) -> type[Any]:
    import msgspec

    specs: list[tuple[Any, ...]] = []
    rename: dict[str, str] = {}
    public: list[str] = []
    namespace: dict[str, Any] = {
        "__doc__": shape.doc or f"Typed {shape.name}.",
        "__setattr__": _frozen,
        "__delattr__": _frozen,
    }
    for f in shape.fields:
        annotation = _annotation(f.type, f.enum)
        name = attr_name(f)
        public.append(name)
        if not f.aliases:
            rename[name] = f.key
            specs.append((name, annotation) if f.required is True else (name, annotation, None))
            continue
        # one slot per spelling (a Struct field has one name); the public name reads whichever is there
        slots = []
        for key in shape.keys_of(f):
            slot = spelling_attr(f, key)
            rename[slot] = key
            specs.append((slot, annotation | msgspec.UnsetType, msgspec.UNSET))
            slots.append(slot)
        namespace[name] = property(_first_spelling(tuple(slots)), doc=f.doc or None)
    # the dataclass protocol: fields() lists the snake_case names, is_dataclass() is True
    protocol = dataclasses.make_dataclass(
        shape.name, [(n, Any, dataclasses.field(default=None)) for n in public], frozen=True
    )
    namespace["__dataclass_fields__"] = vars(protocol)["__dataclass_fields__"]
    return msgspec.defstruct(
        shape.name,
        specs,
        kw_only=True,
        rename=rename,
        gc=False,
        forbid_unknown_fields=shape.unknown == "warn",
        namespace=namespace,
        module=__name__,
    )


def _first_spelling(slots: tuple[str, ...]) -> Callable[[Any], Any]:
    import msgspec

    unset = msgspec.UNSET

    def read(self: Any) -> Any:
        for slot in slots:
            value = getattr(self, slot)
            if value is not unset:
                return value
        return None

    return read


# --- tables: the lists of objects read as columns, once per value -------------------------


@dataclass(frozen=True, eq=False)
class TableSpec:
    """A list of objects of a shape, read as columns: one tuple per field (each spelling of an
    aliased field its own), and `at`, each row's position in the list.

    `name` is the attribute path (`records`, `envelope.recipients`); an object field of a
    table's rows is a table of its own (`records.attributes`), read from its parent's column.
    Rows that are None (a nullable object) are left out, and so, on the lenient path, are
    rows that are not objects of the shape (the walk said what is wrong with them).
    """

    name: str
    shape: Shape
    steps: tuple[tuple[Shape, str], ...]  # root tables: ((Shape, attr), ...) from the root value to the list; else ()
    parent: str | None  # nested tables: the parent table, whose column `column` holds the objects
    column: str | None
    names: tuple[str, ...]  # the columns, in the Struct's field order
    nullable: bool = False  # rows may be None (a nullable object, or an absent optional one)


def _struct_names(shape: Shape) -> tuple[str, ...]:
    names: list[str] = []
    for f in shape.fields:
        names.extend(spelling_attr(f, k) for k in shape.keys_of(f)) if f.aliases else names.append(attr_name(f))
    return tuple(names)


def _find_tables(shape: Shape) -> tuple[TableSpec, ...]:
    found: list[TableSpec] = []

    def nested(parent: TableSpec) -> None:
        for f in parent.shape.fields:
            inner = _strip_null(f.type)
            if isinstance(inner, Shape) and not f.aliases:
                spec = TableSpec(
                    f"{parent.name}.{attr_name(f)}",
                    inner,
                    (),
                    parent.name,
                    attr_name(f),
                    _struct_names(inner),
                    f.required is not True or isinstance(f.type, Nullable),
                )
                found.append(spec)
                nested(spec)

    def visit(s: Shape, prefix: str, steps: tuple[tuple[Shape, str], ...]) -> None:
        for f in s.fields:
            if f.aliases:
                continue
            inner = _strip_null(f.type)
            step = (*steps, (s, attr_name(f)))
            if isinstance(inner, ListOf) and isinstance(_strip_null(inner.item), Shape):
                row = _strip_null(inner.item)
                spec = TableSpec(
                    prefix + attr_name(f), row, step, None, None, _struct_names(row), isinstance(inner.item, Nullable)
                )
                found.append(spec)
                nested(spec)
            elif isinstance(inner, Shape):
                visit(inner, f"{prefix}{attr_name(f)}.", step)

    visit(shape, "", ())
    return tuple(found)


_FEW_COLUMNS = 3  # up to this many columns, a comprehension per column beats astuple and zip


def _tables_builder(specs: tuple[TableSpec, ...]) -> TablesReader:
    """The generated reading of a compiled typed value's tables: one C-level pass per list of
    objects (msgspec's astuple, then zip into columns)."""
    from msgspec.structs import astuple

    lines = ["def tables(v0):"]
    consts: dict[str, Any] = {"ASTUPLE": astuple, "EMPTY_AT": range(0)}
    index = {spec.name: k for k, spec in enumerate(specs)}
    for k, spec in enumerate(specs):
        consts[f"E{k}"] = [()] * len(spec.names)
        if spec.parent is None:
            lines.append(f"    r = v0.{spec.steps[0][1]}")
            for _, attr in spec.steps[1:]:  # (an object on the way may be absent)
                lines.append(f"    r = r.{attr} if r is not None else None")
            lines.append(f"    at{k} = range(len(r)) if r else EMPTY_AT")
        else:
            parent = index[spec.parent]
            lines.append(f"    r = c{parent}[{specs[parent].names.index(spec.column)}]")
            lines.append(f"    at{k} = at{parent}")
        if spec.nullable:  # objects that are None (nullable, or an absent optional object) are left out
            lines.append("    if r and None in r:")
            lines.append("        keep = [i for i, x in enumerate(r) if x is not None]")
            lines.append(f"        at{k} = [at{k}[i] for i in keep]")
            lines.append("        r = [r[i] for i in keep]")
        if len(spec.names) <= _FEW_COLUMNS:  # a few columns: one comprehension each
            lines.append(f"    c{k} = [{', '.join(f'[x.{name} for x in r]' for name in spec.names)}] if r else E{k}")
        else:  # many: every row as a tuple (C-level), then zip into columns
            lines.append(f"    c{k} = [*zip(*map(ASTUPLE, r))] if r else E{k}")
    tables = ", ".join(
        f"{spec.name!r}: {{'at': at{k}, {', '.join(f'{name!r}: c{k}[{i}]' for i, name in enumerate(spec.names))}}}"
        for k, spec in enumerate(specs)
    )
    lines.append(f"    return {{{tables}}}")
    namespace = dict(consts)
    exec(compile("\n".join(lines), "<fnkit tables>", "exec"), namespace)
    reader: TablesReader = namespace["tables"]
    return _generated(reader, "\n".join(lines))


def lenient_tables(specs: tuple[TableSpec, ...], typed: Any) -> Tables:
    """The tables of a leniently built value: only rows that are objects of their shape (raw values in columns)."""
    from msgspec.structs import astuple

    out: Tables = {}
    for spec in specs:
        rows: Sequence[Any]
        if spec.parent is None:
            node = typed
            for shape, attr in spec.steps:
                node = getattr(node, attr) if type(node) is shape.struct else None
            rows = node if type(node) is tuple else ()
            at: Any = range(len(rows))
        else:
            assert spec.column is not None  # a nested table reads a column of its parent
            parent = out[spec.parent]
            rows, at = parent[spec.column], parent["at"]
        struct = spec.shape.struct
        keep = [i for i, x in enumerate(rows) if type(x) is struct]
        if len(keep) != len(rows):
            at = [at[i] for i in keep]
            rows = [rows[i] for i in keep]
        columns = [*zip(*map(astuple, rows), strict=True)] if rows else [()] * len(spec.names)
        out[spec.name] = {"at": at, **dict(zip(spec.names, columns, strict=True))}
    return out


# --- the generated post-check -----------------------------------------------------------


def _always(value: Any, tables: Any = None) -> bool:
    return True


def _needs_post(t: Any) -> bool:
    """True when values of `t` have something msgspec does not check: a Text constraint or two spellings."""
    t = _strip_null(t)
    if isinstance(t, Text):
        return t.pattern is not None or t.min_len is not None or t.max_len is not None
    if isinstance(t, ListOf):
        return _needs_post(t.item)
    if isinstance(t, MapOf):
        return (t.keys is not None and _needs_post(t.keys)) or _needs_post(t.value)
    if isinstance(t, Shape):
        return any(f.aliases or _needs_post(f.type) for f in t.fields)
    return False


class _PostGen:
    """Generates the check of what msgspec leaves to fnkit, over a typed value and its tables: one
    spelling per field (a required one in one of them), every Text pattern and length bound.

    A list of objects is checked a column at a time, from the tables (read once per value and
    shared with the semantic checks); each Text column is first looked up in the constraint's
    memo of accepted strings (`set.issuperset`: one C-level pass), and only what is new is tested,
    a column at once (the Text's column test, else its pattern over the distinct values).
    """

    def __init__(self, specs: tuple[TableSpec, ...]) -> None:
        self.lines: list[str] = []
        self.consts: dict[str, Any] = {}
        self.n = 0
        self.specs = {spec.name: spec for spec in specs}

    def var(self) -> str:
        self.n += 1
        return f"v{self.n}"

    def const(self, value: Any) -> str:
        self.n += 1
        self.consts[f"C{self.n}"] = value
        return f"C{self.n}"

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    # -- one value -------------------------------------------------------------
    def one(self, t: Any, x: str, depth: int, prefix: str) -> None:
        """Check the typed value in variable `x` (never None here) of type `t` (`prefix`: its attribute path)."""
        t = _strip_null(t)
        if isinstance(t, Text):
            self.single(t, x, depth)
        elif isinstance(t, ListOf):
            self.many(t.item, x, depth)
        elif isinstance(t, MapOf):
            self.map_of(t, f"({x},)", depth, one=x)
        elif isinstance(t, Shape):
            self.shape(t, x, depth, prefix)

    def single(self, t: Text, x: str, depth: int) -> None:
        """One string meets the Text's bounds and pattern (a string the memo knows: one look-up)."""
        if t.pattern is None:  # bounds alone: cheaper than any look-up
            if t.min_len is not None:
                self.emit(depth, f"if len({x}) < {t.min_len}: return False")
            if t.max_len is not None:
                self.emit(depth, f"if len({x}) > {t.max_len}: return False")
            return
        ok = self.const(accepted(t)) if t.repeats else ""
        if t.repeats:
            self.emit(depth, f"if {x} not in {ok}:")
            depth += 1
        if t.min_len is not None:
            self.emit(depth, f"if len({x}) < {t.min_len}: return False")
        if t.max_len is not None:
            self.emit(depth, f"if len({x}) > {t.max_len}: return False")
        whole = self.const(_compiled(t.pattern))
        if t.column_test is not None:  # often faster than the regular expression, even for one value
            self.emit(depth, f"if not {self.const(t.column_test)}(({x},)) and {whole}({x}) is None: return False")
        else:
            self.emit(depth, f"if {whole}({x}) is None: return False")
        if t.repeats:
            self.emit(depth, f"{ok}.remember({x})")

    def shape(self, t: Shape, x: str, depth: int, prefix: str) -> None:
        for f in t.fields:
            name = prefix + attr_name(f)
            if f.aliases:
                self.spellings(t, f, f"({x},)", depth)
                if _needs_post(f.type):
                    y = self.var()
                    self.emit(depth, f"{y} = {x}.{attr_name(f)}")
                    self.emit(depth, f"if {y} is not None:")
                    self.one(f.type, y, depth + 1, name + ".")
                continue
            if not _needs_post(f.type):
                continue
            inner = _strip_null(f.type)
            if isinstance(inner, ListOf) and name in self.specs:
                self.table(self.specs[name], depth)
                continue
            y = self.var()
            self.emit(depth, f"{y} = {x}.{attr_name(f)}")
            if f.required is True and not isinstance(f.type, Nullable):
                self.one(f.type, y, depth, name + ".")
            else:
                self.emit(depth, f"if {y} is not None:")
                self.one(f.type, y, depth + 1, name + ".")

    # -- a table's columns (read once per value) --------------------------------------
    def table(self, spec: TableSpec, depth: int) -> None:
        tv = self.var()
        self.emit(depth, f"{tv} = T[{spec.name!r}]")
        same: dict[tuple[Any, ...], list[tuple[Text, str]]] = defaultdict(list)
        for f in spec.shape.fields:
            if f.aliases:
                slots = [spelling_attr(f, key) for key in spec.shape.keys_of(f)]
                self.column_spellings(f, [f"{tv}[{s!r}]" for s in slots], f"len({tv}['at'])", depth)
                if _needs_post(f.type):
                    y = self.var()
                    cols = ", ".join(f"{tv}[{s!r}]" for s in slots)
                    self.emit(depth, f"{y} = [z for c in ({cols},) for z in c if z is not UNSET and z is not None]")
                    self.many(_strip_null(f.type), y, depth)
                continue
            sub = f"{spec.name}.{attr_name(f)}"
            if sub in self.specs:
                if _needs_post(f.type):
                    self.table(self.specs[sub], depth)
                continue
            if not _needs_post(f.type):
                continue
            y = self.var()
            if f.required is True and not isinstance(f.type, Nullable):
                self.emit(depth, f"{y} = {tv}[{attr_name(f)!r}]")
            else:  # absent optional fields read as None (a column of them all, or of none: no copy)
                col = f"{tv}[{attr_name(f)!r}]"
                self.emit(depth, f"{y} = {col}")
                self.emit(depth, f"if {y}.count(None) == len({y}): {y} = ()")
                self.emit(depth, f"elif None in {y}: {y} = [*filter(NOT_NONE, {y})]")
            inner = _strip_null(f.type)
            if isinstance(inner, Text):  # tested below, with the other columns of the same constraint
                same[(inner.pattern, inner.min_len, inner.max_len, inner.column_test, inner.repeats)].append((inner, y))
            else:
                self.many(inner, y, depth)
        # columns of one constraint (SentTimestamp and ApproximateFirstReceiveTimestamp, say) are one column
        for group in same.values():
            if len(group) == 1:
                self.column(group[0][0], group[0][1], depth)
            else:
                y = self.var()
                self.emit(depth, f"{y} = [{', '.join(f'*{col}' for _, col in group)}]")
                self.column(group[0][0], y, depth)

    def column_spellings(self, f: F, cols: list[str], n: str, depth: int) -> None:
        """At most one spelling of the field in each row (a required field: exactly one), from the columns."""
        unset = [f"{c}.count(UNSET)" for c in cols]
        if f.required is True:  # the usual case first: one spelling in every row, the others in none
            usual = " or ".join(
                f"({u} == 0 and {' + '.join(o for o in unset if o != u)} == {len(cols) - 1} * {n})" for u in unset
            )
            test = "!= 1"
        else:  # the usual case first: every spelling but one absent from every row
            usual = " or ".join(f"{' + '.join(o for o in unset if o != u)} == {len(cols) - 1} * {n}" for u in unset)
            test = "> 1"
        count = " + ".join(f"(x{i} is not UNSET)" for i in range(len(cols)))
        names = ", ".join(f"x{i}" for i in range(len(cols)))
        self.emit(
            depth, f"if not ({usual}) and any([{count} {test} for {names} in zip({', '.join(cols)})]): return False"
        )

    # -- a column of values (a list, tuple or dict view, None already dropped) -------------
    def many(self, t: Any, col: str, depth: int) -> None:
        """Check every value of the column `col` (values may be None where `t` is nullable)."""
        if isinstance(t, Nullable):
            y = self.var()
            self.emit(depth, f"{y} = [*filter(NOT_NONE, {col})]")
            col, t = y, t.inner
        if isinstance(t, Text):
            self.column(t, col, depth)
        elif isinstance(t, ListOf):
            y = self.var()
            self.emit(depth, f"{y} = [*chain.from_iterable({col})]")
            self.many(t.item, y, depth)
        elif isinstance(t, MapOf):
            self.map_of(t, col, depth)
        elif isinstance(t, Shape):
            for f in t.fields:
                if f.aliases:
                    self.spellings(t, f, col, depth)
                    if _needs_post(f.type):
                        y = self.var()
                        self.emit(depth, f"{y} = [z for x in {col} if (z := x.{attr_name(f)}) is not None]")
                        self.many(f.type, y, depth)
            wanted = [f for f in t.fields if not f.aliases and _needs_post(f.type)]
            if not wanted:
                return
            # every field to check, read in one pass over the objects and turned into columns
            columns = self.var()
            self.emit(depth, f"if {col}:")
            reads = ", ".join(f"x.{attr_name(f)}" for f in wanted)
            self.emit(depth + 1, f"{columns} = [*zip(*[({reads},) for x in {col}])]")
            for k, f in enumerate(wanted):
                y = self.var()
                if f.required is True and not isinstance(f.type, Nullable):
                    self.emit(depth + 1, f"{y} = {columns}[{k}]")
                else:  # absent optional fields read as None
                    self.emit(depth + 1, f"{y} = [*filter(NOT_NONE, {columns}[{k}])]")
                self.many(_strip_null(f.type), y, depth + 1)

    def map_of(self, t: MapOf, col: str, depth: int, one: str | None = None) -> None:
        """Every key and value of the objects of `col` (`one`: the one object, when there is one)."""
        if one is not None:
            self.emit(depth, f"if {one}:")
            keys, values = one, f"{one}.values()"
        else:
            self.emit(depth, f"if any({col}):")  # most objects of a column are often empty: nothing to flatten
            keys, values = self.var(), self.var()
            self.emit(depth + 1, f"{keys} = [*chain.from_iterable({col})]")
            self.emit(depth + 1, f"{values} = [*chain.from_iterable(map(dict.values, {col}))]")
        if t.keys is not None and _needs_post(t.keys):
            self.column(t.keys, keys, depth + 1)
        if _needs_post(t.value):
            self.many(t.value, values, depth + 1)
        if not (t.keys is not None and _needs_post(t.keys)) and not _needs_post(t.value):
            self.emit(depth + 1, "pass")

    def column(self, t: Text, col: str, depth: int) -> None:
        """Every string of `col` meets the Text's bounds and pattern (strings the memo knows: one C-level pass)."""
        if t.pattern is None:  # bounds alone: cheaper than any look-up
            self.emit(depth, f"if {col}:")
            if t.min_len is not None:
                self.emit(depth + 1, f"if min(map(len, {col})) < {t.min_len}: return False")
            if t.max_len is not None:
                self.emit(depth + 1, f"if max(map(len, {col})) > {t.max_len}: return False")
            if t.min_len is None and t.max_len is None:
                self.emit(depth + 1, "pass")
            return
        ok = self.const(accepted(t)) if t.repeats else ""
        if t.repeats:
            self.emit(depth, f"if {col} and not {ok}.issuperset({col}):")
        else:
            self.emit(depth, f"if {col}:")
        if t.min_len is not None:
            self.emit(depth + 1, f"if min(map(len, {col})) < {t.min_len}: return False")
        if t.max_len is not None:
            self.emit(depth + 1, f"if max(map(len, {col})) > {t.max_len}: return False")
        whole = self.const(_compiled(t.pattern))
        if t.column_test is not None:
            test = self.const(t.column_test)
            self.emit(depth + 1, f"if not {test}({col}) and not all(map({whole}, set({col}))): return False")
        else:
            self.emit(depth + 1, f"if not all(map({whole}, set({col}))): return False")
        if t.repeats:
            self.emit(depth + 1, f"{ok}.remember_all({col})")

    def spellings(self, t: Shape, f: F, col: str, depth: int) -> None:
        """At most one spelling of the field in each object of `col`; a required one in exactly one."""
        slots = [spelling_attr(f, key) for key in t.keys_of(f)]
        count = " + ".join(f"(x.{slot} is not UNSET)" for slot in slots)
        test = "!= 1" if f.required is True else "> 1"
        self.emit(depth, f"if any([{count} {test} for x in {col}]): return False")


def _post_checker(shape: Shape, specs: tuple[TableSpec, ...]) -> PostCheck | None:
    """The generated check (see _PostGen) of a typed value of `shape` and its tables; None when nothing is to check."""
    from itertools import chain

    import msgspec

    if not _needs_post(shape):
        return None
    gen = _PostGen(specs)
    gen.emit(0, "def post_ok(v0, T):")
    gen.shape(shape, "v0", 1, "")
    gen.emit(1, "return True")
    src = "\n".join(gen.lines)
    namespace: dict[str, Any] = {"NOT_NONE": _NOT_NONE, "chain": chain, "UNSET": msgspec.UNSET, **gen.consts}
    exec(compile(src, f"<fnkit post check: {shape.name}>", "exec"), namespace)
    post_ok: PostCheck = namespace["post_ok"]
    return _generated(post_ok, src)


_NOT_NONE = partial(is_not, None)  # filter(_NOT_NONE, xs): the values that are not None, at C speed


def _lenient(t: Any, v: Any) -> Any:
    if isinstance(t, Nullable):
        return None if v is None else _lenient(t.inner, v)
    if isinstance(t, ListOf):
        return tuple(_lenient(t.item, x) for x in v) if isinstance(v, list) else v
    if isinstance(t, MapOf):
        return {k: _lenient(t.value, x) for k, x in dict.items(v)} if isinstance(v, dict) else v
    if not isinstance(t, Shape) or not isinstance(v, dict):
        return v
    kwargs: dict[str, Any] = {}
    for f in t.fields:
        if not f.aliases:
            kwargs[attr_name(f)] = _lenient(f.type, v[f.key]) if f.key in v else None
            continue
        for key in t.keys_of(f):
            if key in v:
                kwargs[spelling_attr(f, key)] = _lenient(f.type, v[key])
    return t.struct(**kwargs)


# --- JSON Schema ---------------------------------------------------------------

_ANCHOR = re.compile(r"(?<!\\)\$")


def schema_pattern(pattern: str) -> str:
    """A declared pattern as JSON Schema states it: `$` made strict (`$(?!\\n)`), so that a validator that
    searches with Python's `re`, where `$` also matches before a final line break, agrees with ECMA-262."""
    return _ANCHOR.sub(lambda m: "$(?!\\n)", pattern)


def _schema(t: Any, enum: tuple[Any, ...] | None = None) -> dict[str, Any]:
    if isinstance(t, Nullable):
        if enum is not None:
            return {"enum": [*enum, None]}
        return {"anyOf": [_schema(t.inner), {"type": "null"}]}
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
        s = {"type": "array", "items": _schema(t.item)}
        if t.min_len is not None:
            s["minItems"] = t.min_len
        if t.max_len is not None:
            s["maxItems"] = t.max_len
        return s
    if isinstance(t, MapOf):
        s = {"type": "object", "additionalProperties": _schema(t.value)}
        if t.keys is not None:
            names = _schema(t.keys)
            names.pop("type", None)
            if names:
                s["propertyNames"] = names
        return s
    props: dict[str, Any] = {}
    conditions: list[dict[str, Any]] = []
    for f in t.fields:
        s = _schema(f.type, f.enum)
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


def _text_issue(t: Text, v: str, path: str, rule_id: str | None) -> Issue:
    return Issue(path, t.code, t.sentence(v), t.severity, t.rule or rule_id)


def _walk(v: Any, t: Any, path: str, out: list[Issue], rule_id: str | None) -> None:
    if isinstance(t, Nullable):
        if v is None:
            return
        t = t.inner
    if isinstance(t, Scalar):
        if not _type_ok(t, v):
            out.append(error(path, "type", f"Expected {t.label()}, got {describe(v)}.", rule_id))
        elif isinstance(t, Text) and t.broken(v):
            out.append(_text_issue(t, v, path, rule_id))
        return
    if isinstance(t, ListOf):
        if not isinstance(v, list):
            out.append(error(path, "type", f"Expected a list, got {describe(v)}.", rule_id))
            return
        n = len(v)
        if (t.min_len is not None and n < t.min_len) or (t.max_len is not None and n > t.max_len):
            if t.message:
                message = t.message.format(n=n, min=t.min_len, max=t.max_len)
            elif t.min_len is not None and n < t.min_len:
                message = f"The list needs at least {t.min_len} item(s), it has {n}."
            else:
                message = f"The list holds at most {t.max_len} item(s), it has {n}."
            out.append(error(path, "limit", message, t.rule or rule_id))
        for i, x in enumerate(v):
            _walk(x, t.item, f"{path}[{i}]", out, rule_id)
        return
    if isinstance(t, MapOf):
        if not isinstance(v, dict):
            out.append(error(path, "type", f"Expected an object, got {describe(v)}.", rule_id))
            return
        for k, x in dict.items(v):  # the dict itself, never a subclass's own items()
            if not isinstance(k, str):
                out.append(error(child_path(path, k), "type", f"Keys must be strings, got {describe(k)}.", rule_id))
                continue
            if t.keys is not None and t.keys.broken(k):
                out.append(_text_issue(t.keys, k, child_path(path, k), rule_id))
            _walk(x, t.value, child_path(path, k), out, rule_id)
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
                out.append(
                    error(child_path(path, f.key), "missing", f"The required field '{f.key}' is missing.", frule)
                )
            continue
        if len(present) > 1:
            out.append(_spellings(path, present))
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
                if f.message:
                    message = f.message.format(value=x)
                else:
                    message = f"'{x}' is not one of the allowed values: {', '.join(map(str, f.enum))}."
                out.append(error(p, "enum", message, frule))
    if shape.unknown == "warn":
        allowed = shape.allowed()
        out.extend(_unknown(shape, path, k) for k in v if k not in allowed)


@rule(
    "G2",
    "any",
    "inferred",
    "Each field has one spelling per dialect ('provider' as in the spec, 'aws' as on the "
    "real platform); an event should not mix them.",
    origin="kit",
    severity="error or warning",
)
def _spellings(path: str, present: list[str]) -> Issue:
    """G2: two spellings of one field in one object."""
    return error(
        child_path(path, present[1]),
        "conflict",
        f"'{present[0]}' and '{present[1]}' are two spellings of one field; keep one.",
        "G2",
    )


@rule(
    "G1",
    "any",
    "inferred",
    "A field the contract does not know is ignored by the platform; fnkit warns, since it is often a misspelling.",
    origin="kit",
    severity="warning",
)
def _unknown(shape: Shape, path: str, key: Any) -> Issue:
    """G1: a key the shape does not know."""
    hint = ""
    if isinstance(key, str):
        for known in shape.allowed():
            if known.lower() == key.lower():
                hint = f" Did you mean '{known}'? Names are case-sensitive."
                break
    return warning(
        child_path(path, key), "unknown", f"'{key}' is not a field of {shape.name}; it is ignored.{hint}", "G1"
    )
