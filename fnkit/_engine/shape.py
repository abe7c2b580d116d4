"""Shapes declared once, as data, and compiled.

One declaration of an event or response drives:
- the compiled check (`Shape.struct`): a msgspec Struct generated from the declaration
  (snake_case attributes renamed to the contract's keys, unknown keys forbidden, enums as
  Literal, every Text's pattern and length bounds and every list's length bounds as
  `msgspec.Meta`), so JSON text is decoded and checked in one pass and a Python value is
  checked in one `msgspec.convert`, in C. What msgspec cannot say (a field with two
  spellings holds at most one of them, a required one exactly one) is one plain function,
  `spelled_once`, run over the typed value;
- the typed parse: the Struct instances themselves, which also speak the dataclass
  protocol (`dataclasses.is_dataclass`, `dataclasses.fields`, FrozenInstanceError on
  assignment), with snake_case fields;
- the located walker (`Shape.walk`), run only when the compiled check rejects a value:
  it names every problem with its path, code, sentence and rule, never an exception; it
  asks a Text's constraint of msgspec too (`Text.broken`), so both ways test one thing;
- the lenient build (`Shape.lenient`): the same classes holding whatever a broken value
  has, so the semantic rules read one kind of value on both paths;
- the tables (`Shape.tables`): the value's lists of objects read as columns, once per call;
- the field table a notebook shows (`Shape.fields_table`) and the JSON Schema export
  (`Shape.json_schema`), which carries every enum, pattern, length bound and required
  key the compiled check enforces.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter
from types import GenericAlias
from typing import Annotated, Any, Literal

from ..rules import id_of, rule
from .columns import (
    Site,
    Spelling,
    TablePlan,
    Tables,
    columns_class,
    first_spelling,
    frozen,
    patterns_hold,
    read_tables,
    sites_of_patterns,
    snake,
    spelled_once,
    values_getters,
)
from .findings import Finding, Places, Table, place_below
from .patterns import PatternCheck
from .proved import holds, or_absent, type_ok
from .report import DIALECTS, Issue, child_path, describe, error
from .vocabulary import ANY as ANY
from .vocabulary import BOOL as BOOL
from .vocabulary import INT as INT
from .vocabulary import NUMBER as NUMBER
from .vocabulary import STR as STR
from .vocabulary import F as F
from .vocabulary import ListOf as ListOf
from .vocabulary import MapOf as MapOf
from .vocabulary import Nullable as Nullable
from .vocabulary import Scalar as Scalar
from .vocabulary import Text as Text
from .vocabulary import schema_of


@dataclass(eq=False)
class Shape:
    """An object shape: its fields, what to do with unknown keys, and the rule it cites."""

    name: str
    fields: list[F]
    rule: str
    unknown: str = "warn"  # "warn": unknown keys are warnings; "allow": silently kept
    doc: str = ""
    _struct: type[Any] | None = field(default=None, repr=False)
    _layout: tuple[tuple[TableSpec, ...], tuple[Spelling, ...], tuple[Patterned, ...]] | None = field(
        default=None, repr=False
    )

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
            typed: Any = msgspec.convert(value, self.struct)  # strict: msgspec's default (a keyword costs a parse)
        except (msgspec.ValidationError, RecursionError, UnicodeEncodeError):
            return None
        tables = self.tables(typed)
        return typed if self.spelled_once(typed, tables) and self.patterns_hold(typed, tables) else None

    def fast(self, value: Any) -> bool:
        """True when `value` surely has the shape: the compiled check accepts it."""
        return self.compiled(value) is not None

    @cached_property  # (read on every call: an attribute once found)
    def table_specs(self) -> tuple[TableSpec, ...]:
        """The lists of objects of the shape that are read as columns (see TableSpec)."""
        return (self._layout or self._find_layout())[0]

    @cached_property
    def spellings(self) -> tuple[Spelling, ...]:
        """The fields of the shape, at any depth, that have two spellings (see Spelling)."""
        return (self._layout or self._find_layout())[1]

    @cached_property
    def patterns(self) -> tuple[Patterned, ...]:
        """Each declared pattern of the shape, at any depth, with the places it governs (see `patterns_hold`)."""
        return (self._layout or self._find_layout())[2]

    def _find_layout(self) -> tuple[tuple[TableSpec, ...], tuple[Spelling, ...], tuple[Patterned, ...]]:
        specs = _find_tables(self)
        self._layout = (specs, _find_spellings(self, specs), _find_patterns(self, specs))
        return self._layout

    def patterns_hold(self, typed: Any, tables: Tables) -> bool:
        """True when every string of the compiled typed value meets its declared pattern: each pattern tested
        once over all the values it governs (`tables`: the value's tables), the cheapest way it allows."""
        return patterns_hold(self.pattern_sites, typed, tables)

    @cached_property
    def pattern_sites(self) -> tuple[tuple[Any, ...], ...]:
        """Every site of every declared pattern, pattern by pattern (see `columns.sites_of_patterns`)."""
        return sites_of_patterns(self.patterns)

    @cached_property
    def places(self) -> Places:
        """Where the value's tables' rows sit (for the engine to place what a rule found in a row)."""
        return Places((), {spec.name: (spec.down, spec.within) for spec in self.table_specs})

    @cached_property
    def table_plans(self) -> tuple[TablePlan, ...]:
        """Each table's reading, unpacked once (see `read_tables`)."""
        return tuple(spec.plan for spec in self.table_specs)

    def tables(self, typed: Any) -> Tables:
        """The tables of a compiled typed value: {name: {"at": row positions, column: values}} (see TableSpec)."""
        return read_tables(self.table_plans, typed, lenient=False)

    def lenient_tables(self, typed: Any) -> Tables:
        """The tables of a leniently built value: the rows that are objects of their shape, raw values in columns."""
        return read_tables(self.table_plans, typed, lenient=True)

    def spelled_once(self, typed: Any, tables: Tables | None = None) -> bool:
        """True when every field of the compiled typed value that has two spellings holds at most one of them (a
        required one: exactly one): what msgspec cannot check (`tables`: the value's tables, when read)."""
        return spelled_once(self.spellings, typed, tables)

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
        out = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": self.name, **schema_of(self)}
        if description:
            out["description"] = description
        return out


def attr_name(f: F) -> str:
    """The field's attribute in the typed parse, and its column's name in a table: interned, as the names a rule
    writes are, so that a rule's look-up of a column matches by identity."""
    return sys.intern(f.attr or snake(f.key))


def spelling_attr(f: F, key: str) -> str:
    """The Struct attribute that holds one spelling of an aliased field (`trace_header__1`: the second)."""
    keys = (f.key, *(k for _, k in f.aliases))
    return sys.intern(f"{attr_name(f)}__{keys.index(key)}")


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
    if isinstance(t, Text):
        return t.annotation
    if isinstance(t, Scalar):
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
        "__setattr__": frozen,
        "__delattr__": frozen,
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
        namespace[name] = property(first_spelling(tuple(slots)), doc=f.doc or None)
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
    down: tuple[str, ...] = ()  # the JSON keys from the root to the list that holds the rows
    within: tuple[str, ...] = ()  # the JSON keys from a row to this table's objects (nested tables)

    @cached_property
    def rows_of(self) -> Callable[[Any], Any]:
        """A root table's rows read from a compiled typed value (AttributeError: an object on the way is absent)."""
        return attrgetter(".".join(attr for _, attr in self.steps))

    @cached_property
    def row_type(self) -> type[Any]:
        return self.shape.struct

    @cached_property
    def held(self) -> dict[str, Callable[[Any], bool]]:
        """Each column's test that a cell holds its field's declared type (see `field_tests`)."""
        return field_tests(self.shape)

    @cached_property
    def plan(self) -> TablePlan:
        """The table's reading with every field unpacked once (see `read_tables`)."""
        one = attrgetter(self.names[0]) if len(self.names) == 1 else None
        steps = tuple((shape.struct, attr) for shape, attr in self.steps)
        rows_of = self.rows_of if self.parent is None else None
        columns = columns_class(self.name, self.names)
        return (
            self.name,
            self.parent,
            self.column,
            rows_of,
            steps,
            self.nullable,
            self.row_type,
            self.names,
            one,
            columns,
        )


def field_tests(shape: Shape) -> dict[str, Callable[[Any], bool]]:
    """Each Struct attribute's test that it holds its field's declared type, as in a compiled typed value (see
    `proved.holds`); None is held where the field may be absent, and so is an unused spelling of a field with two."""
    tests: dict[str, Callable[[Any], bool]] = {}
    for f in shape.fields:
        test = holds(f.type)
        if f.required is not True or f.aliases:
            test = or_absent(test)
        for slot in _slots(shape, f):
            tests[slot] = test
    return tests


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
                    Table(f"{parent.name}.{attr_name(f)}"),
                    inner,
                    (),
                    parent.name,
                    attr_name(f),
                    _struct_names(inner),
                    f.required is not True or isinstance(f.type, Nullable),
                    parent.down,
                    (*parent.within, f.key),
                )
                found.append(spec)
                nested(spec)

    def visit(s: Shape, prefix: str, steps: tuple[tuple[Shape, str], ...], keys: tuple[str, ...]) -> None:
        for f in s.fields:
            if f.aliases:
                continue
            inner = _strip_null(f.type)
            step = (*steps, (s, attr_name(f)))
            if isinstance(inner, ListOf) and isinstance(_strip_null(inner.item), Shape):
                row = _strip_null(inner.item)
                spec = TableSpec(
                    Table(prefix + attr_name(f)),
                    row,
                    step,
                    None,
                    None,
                    _struct_names(row),
                    isinstance(inner.item, Nullable),
                    (*keys, f.key),
                )
                found.append(spec)
                nested(spec)
            elif isinstance(inner, Shape):
                visit(inner, f"{prefix}{attr_name(f)}.", step, (*keys, f.key))

    visit(shape, "", (), ())
    return tuple(found)


# --- the declared patterns: each tested over the column of values it governs ----------------------------

#: a declared pattern's test, the places it governs, the (table, column) of those that are a table's column of
#: strings, and for each other place the function that reads its strings
Patterned = tuple[
    PatternCheck, tuple[Site, ...], tuple[tuple[str, str], ...], tuple[Callable[[Any, Tables], Collection[str]], ...]
]


def _find_patterns(shape: Shape, specs: tuple[TableSpec, ...]) -> tuple[Patterned, ...]:
    """Every Text with a pattern of the shape, at any depth, as its sites (an enum field's Text is not compiled)."""
    found: dict[str, list[Site]] = {}
    checks: dict[str, PatternCheck] = {}

    def descend(t: Any, table: str | None, column: str, steps: tuple[str, ...], absent: bool) -> None:
        absent, t = absent or isinstance(t, Nullable), _strip_null(t)
        if isinstance(t, Text) and t.check is not None:
            found.setdefault(t.check.pattern, []).append((table, column, steps, absent))
            checks[t.check.pattern] = t.check
        elif isinstance(t, ListOf):
            descend(t.item, table, column, (*steps, "*"), False)
        elif isinstance(t, MapOf):
            if t.keys is not None:
                descend(t.keys, table, column, (*steps, "*k"), False)
            descend(t.value, table, column, (*steps, "*v"), False)
        elif isinstance(t, Shape):
            for f in t.fields:
                for slot in _slots(t, f) if f.enum is None else ():
                    descend(f.type, table, column, (*steps, slot), f.required is not True or bool(f.aliases))

    def root(s: Shape, steps: tuple[str, ...]) -> None:  # as _find_tables reads the root: tables left to them
        for f in s.fields:
            inner = _strip_null(f.type)
            if not f.aliases and isinstance(inner, ListOf) and isinstance(_strip_null(inner.item), Shape):
                continue
            if not f.aliases and isinstance(inner, Shape):
                root(inner, (*steps, attr_name(f)))
            elif f.enum is None:
                for slot in _slots(s, f):
                    descend(f.type, None, "", (*steps, slot), f.required is not True or bool(f.aliases))

    root(shape, ())
    for spec in specs:  # a table's columns; an object field of its rows is a table of its own
        for f in spec.shape.fields:
            if (f.aliases or not isinstance(_strip_null(f.type), Shape)) and f.enum is None:
                for slot in _slots(spec.shape, f):
                    descend(f.type, spec.name, slot, (), f.required is not True or bool(f.aliases))
    return tuple((checks[p], tuple(sites), *values_getters(tuple(sites))) for p, sites in found.items())


def _slots(shape: Shape, f: F) -> tuple[str, ...]:
    return tuple(spelling_attr(f, k) for k in shape.keys_of(f)) if f.aliases else (attr_name(f),)


# --- fields with two spellings: what msgspec cannot check ------------------------------------


def _find_spellings(shape: Shape, specs: tuple[TableSpec, ...]) -> tuple[Spelling, ...]:
    # the steps that lead to each table's rows
    tables: dict[tuple[str | None, ...], str] = {}
    for spec in specs:
        if spec.parent is None:
            tables[(*(attr for _, attr in spec.steps), None)] = spec.name
        else:
            parent = next(steps for steps, name in tables.items() if name == spec.parent)
            tables[(*parent, spec.column)] = spec.name
    found: list[Spelling] = []

    def visit(t: Any, steps: tuple[str | None, ...]) -> None:
        t = _strip_null(t)
        if isinstance(t, ListOf):
            visit(t.item, (*steps, None))
        elif isinstance(t, MapOf):
            visit(t.value, (*steps, None))
        elif isinstance(t, Shape):
            for f in t.fields:
                if f.aliases:
                    slots = tuple(spelling_attr(f, key) for key in t.keys_of(f))
                    dialects = (DIALECTS[0], *(dialect for dialect, _ in f.aliases))  # (the key is the spec's)
                    found.append(Spelling(steps, slots, f.required is True, tables.get(steps), dialects))
                visit(f.type, (*steps, attr_name(f)))

    visit(shape, ())
    return tuple(found)


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


# --- the detailed walker -----------------------------------------------------


#: the codes of the walk's issues that say a value does not hold its declared type, or is missing: only then does a
#: leniently built value hold, somewhere, a value of another type than its declaration's (`TableSpec.held` tells where)
TYPE_ERRORS = ("type", "missing")


def _text_issue(t: Text, v: str, path: str, rule_id: str | None) -> Issue:
    return Issue(path, t.code, t.sentence(v), t.severity, t.rule or rule_id)


def _walk(v: Any, t: Any, path: str, out: list[Issue], rule_id: str | None) -> None:
    if isinstance(t, Nullable):
        if v is None:
            return
        t = t.inner
    if isinstance(t, Scalar):
        if not type_ok(t, v):
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
            out.append(two_spellings(path, present))
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
        out.extend(place_below(path, unknown_key(k, shape=shape)) for k in v if k not in allowed)


@rule(
    "G2",
    "any",
    "inferred",
    "Each field has one spelling per dialect ('provider' as in the spec, 'aws' as on the "
    "real platform); an event should not mix them.",
    origin="kit",
    severity="error or warning",
)
def two_spellings(path: str, present: list[str]) -> Issue:
    """G2: two spellings of one field in one object."""
    return error(
        child_path(path, present[1]),
        "conflict",
        f"'{present[0]}' and '{present[1]}' are two spellings of one field; keep one.",
        id_of(two_spellings),
    )


@rule(
    "G1",
    "any",
    "inferred",
    "A field the contract does not know is ignored by the platform; fnkit warns, since it is often a misspelling.",
    origin="kit",
    severity="warning",
)
def unknown_key(key: Any, *within: Any, shape: Shape | None = None, ignored: str | None = None) -> Finding:
    """G1: a key the reader does not know, at `within` (the keys down to the object that holds it) below the value
    it read. The engine's walk passes the `shape` that does not declare it (the sentence names the shape and a
    spelling that differs only in case); a reading of its own says what becomes of the key (`ignored`, the
    sentence after the key's name). Its findings name it, whichever reading places them."""
    if ignored is not None:
        return Finding("unknown", f"'{key}' {ignored}", (*within, key), "warning", None, unknown_key)
    hint = ""
    if isinstance(key, str) and shape is not None:
        for known in shape.allowed():
            if known.lower() == key.lower():
                hint = f" Did you mean '{known}'? Names are case-sensitive."
                break
    name = shape.name if shape is not None else "the value"
    return Finding(
        "unknown",
        f"'{key}' is not a field of {name}; it is ignored.{hint}",
        (*within, key),
        "warning",
        None,
        unknown_key,
    )
