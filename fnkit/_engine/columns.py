"""What the engine reads of a compiled typed value without its declaration: names, columns, sites.

`fnkit._engine.shape` finds, once per shape, where things sit in its values (tables, fields with two
spellings, the strings each declared pattern governs); this module reads them out of a value:
`objects_at` and `spelled_once` (a field with two spellings holds one), `values_getters` and
`site_values` (the strings at one site of a pattern). `snake` gives the Structs' attribute names, `frozen` and
`first_spelling` parts of their classes.
"""

from __future__ import annotations

import dataclasses
import keyword
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from operator import attrgetter, itemgetter
from typing import Any

#: a value's tables, read once (see TableSpec): {table name: {"at": row positions, column name: values}}
Tables = dict[str, dict[str, Any]]
#: one table's reading, unpacked once from its declaration (`TableSpec.plan`): its name; the parent table and the
#: parent's column that holds its rows (nested tables), else None, None; a root table's rows getter; the same as
#: (row Struct, attribute) steps for the lenient path; whether rows may be None; the rows' Struct; the column names;
#: the one column's getter when the table has one column, else None; the table's class of columns (`columns_class`)
TablePlan = tuple[
    str,
    str | None,
    str | None,
    Callable[[Any], Any] | None,
    tuple[tuple[type[Any], str], ...],
    bool,
    type[Any],
    tuple[str, ...],
    Callable[[Any], Any] | None,
    type[Any],
]
#: where a pattern's values sit: (the table whose column holds them, or None for the root; the column, or ""; the steps
#: from there: an attribute, "*" a list's items, "*k" a map's keys, "*v" its values; whether some may be absent)
Site = tuple[str | None, str, tuple[str, ...], bool]

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake(name: str) -> str:
    """camelCase / PascalCase / ARN-suffixed names to snake_case (`eventSourceARN` -> `event_source_arn`); each
    name worked out once (the names are a declaration's keys, which the lenient build asks for every object)."""
    s = _SNAKES.get(name)
    if s is None:
        s = _CAMEL.sub("_", name).replace("-", "_").lower()
        s = _SNAKES[name] = s + "_" if keyword.iskeyword(s) else s
    return s


_SNAKES: dict[str, str] = {}


def frozen(self: Any, name: str, value: Any = None) -> None:
    """A Struct's `__setattr__` and `__delattr__`: the typed values are frozen, as frozen dataclasses are."""
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def first_spelling(slots: tuple[str, ...]) -> Callable[[Any], Any]:
    """The getter of a field with two spellings: whichever of its slots holds a value, else None."""
    import msgspec

    unset = msgspec.UNSET

    def read(self: Any) -> Any:
        for slot in slots:
            value = getattr(self, slot)
            if value is not unset:
                return value
        return None

    return read


def values_getters(
    sites: tuple[Site, ...],
) -> tuple[tuple[tuple[str, str], ...], tuple[Callable[[Any, Tables], Collection[str]], ...]]:
    """How the engine reads the strings of `sites` out of a compiled typed value, each site once per value: the
    (table, column) of each site that is a table's column of strings (read in place, no call), and for each site
    outside the tables one function: a chain of attributes in one C-level `attrgetter`, a map's keys as the map
    itself and its values as its view (a pattern's memo asks them without a copy). A site below a table's column
    is read from the column by `patterns_hold`."""
    columns: list[tuple[str, str]] = []
    others = []
    for site in sites:
        table, column, steps, absent = site
        if table is None:
            others.append(_site_getter(site))
        elif not steps and not absent:
            columns.append((table, column))
    return tuple(columns), tuple(others)


def _site_getter(site: Site) -> Callable[[Any, Tables], Collection[str]]:
    """The function that reads the strings of a site outside the tables."""
    _, _, steps, absent = site
    attrs = tuple(step for step in steps if not step.startswith("*"))
    rest = steps[len(attrs) :]
    if not attrs or steps[: len(attrs)] != attrs or rest not in _READS or (absent and rest):
        return partial(site_values, site)
    return _READS[rest](attrgetter(".".join(attrs)))


def _read_value(get: Callable[[Any], Any]) -> Callable[[Any, Tables], Collection[str]]:
    def read(typed: Any, tables: Tables) -> Collection[str]:
        try:
            value = get(typed)
        except AttributeError:  # an object on the way is absent
            return ()
        return (value,) if type(value) is str else ()

    return read


def _read_keys(get: Callable[[Any], Any]) -> Callable[[Any, Tables], Collection[str]]:
    def read(typed: Any, tables: Tables) -> Collection[str]:
        try:
            value = get(typed)
        except AttributeError:
            return ()
        return value or ()  # (the map itself: its keys)

    return read


def _read_values(get: Callable[[Any], Any]) -> Callable[[Any, Tables], Collection[str]]:
    def read(typed: Any, tables: Tables) -> Collection[str]:
        try:
            value = get(typed)
        except AttributeError:
            return ()
        return value.values() if value else ()

    return read


def _read_items(get: Callable[[Any], Any]) -> Callable[[Any, Tables], Collection[str]]:
    def read(typed: Any, tables: Tables) -> Collection[str]:
        try:
            value = get(typed)
        except AttributeError:
            return ()
        return [x for items in value.values() if items for x in items] if value else ()

    return read


# what follows the attributes, read in one call: the string, a map's keys, its values, the items of its lists
_READS = {(): _read_value, ("*k",): _read_keys, ("*v",): _read_values, ("*v", "*"): _read_items}


def _some_held(column: Sequence[Any]) -> bool:
    """True when some row holds the column's field (an absent one is None, or UNSET for a spelling not used; an
    empty string is held)."""
    n = len(column)
    absent = column.count(None)
    if absent == n:  # (the usual absent field: one count)
        return False
    return absent + column.count(_UNSET if _UNSET is not None else _load_unset()) < n


def site_values(site: Site, typed: Any, tables: Tables) -> Any:
    """The strings at one site of a compiled typed value (absent objects and values left out)."""
    table, column, steps, absent = site
    values: Any = tables[table][column] if table is not None else (typed,)
    for step in steps:
        if step == "*":
            values = [x for items in values if items for x in items]
        elif step == "*k":
            values = [k for items in values if items for k in items]
        elif step == "*v":
            values = [x for items in values if items for x in items.values()]
        else:  # (an absent object is None, or UNSET in a field with two spellings: both false)
            values = [getattr(x, step) for x in values if x]
    if absent and values and not all([type(v) is str for v in values]):  # noqa: C419 - a list is faster here
        values = [v for v in values if type(v) is str]
    return values


def sites_of_patterns(
    patterns: Sequence[tuple[Any, tuple[Site, ...], Any, Sequence[Any]]],
) -> tuple[tuple[Any, ...], ...]:
    """Every site of every declared pattern (`patterns`: each one's check, its sites, and the functions that read
    the sites that are not a table's column of strings), pattern by pattern, as `patterns_hold` reads them: (the
    pattern's check, the test of its memo, the table and column of a site in a table, and None for a table's column
    of strings, read in place, else the site; None, None and the function that reads a site outside the tables)."""
    found: list[tuple[Any, ...]] = []
    for check, sites, _, readers in patterns:
        read = iter(readers)  # (one function for each site outside the tables)
        for site in sites:
            table, column, steps, absent = site
            if table is None:
                found.append((check, check.known, None, None, next(read)))
            else:
                found.append((check, check.known, table, column, site if steps or absent else None))
    return tuple(found)


def patterns_hold(sites: Sequence[tuple[Any, ...]], typed: Any, tables: Tables) -> bool:
    """True when every string at the `sites` (see `sites_of_patterns`) of a compiled typed value meets its pattern,
    each pattern tested once over all the values it governs, what its memo lacks in one go."""
    pending: Any = None  # the last pattern whose memo lacked strings, and those strings
    lacking: Any = None
    # the last column found to hold nothing below it (sites below one column follow each other; the two tests
    # agree there: a column with sites below it holds maps, lists or objects, never a false string)
    empty: Any = None
    for check, known, table, column, read in sites:  # pattern by pattern, each site once
        if table is None:  # a site outside the tables, read by its function
            values = read(typed, tables)
        elif read is None:  # a table's column of strings, read in place
            values = tables[table][column]
        else:  # strings below a table's column (`read`: the site), read when some row holds something there
            held = tables[table][column]
            if held is empty:
                continue
            # a row that is None, UNSET or an empty map or list has nothing below it: `any` is exact there
            # (the usual absent field, all None, is told by one count without a call)
            if not (any(held) if read[2] else held.count(None) != len(held) and _some_held(held)):
                empty = held
                continue
            values = site_values(read, typed, tables)
        if values and not known(values):  # what the memo lacks is tested in one go per pattern, in order
            if check is pending:
                lacking = [*lacking, *values]
            else:
                if pending is not None and not pending.tested(lacking):
                    return False
                pending, lacking = check, values
    return pending is None or pending.tested(lacking)


_NO_ROWS = range(0)
_RANGES = tuple(range(n) for n in range(16))  # the positions of a table of fewer than 16 rows (immutable: shared)
# msgspec's astuple and asdict, once msgspec is loaded (it is imported when first needed: `import fnkit` stays light)
_astuple: Callable[[Any], tuple[Any, ...]] | None = None
_asdict: Callable[[Any], dict[str, Any]] = dict


def _load_msgspec() -> Callable[[Any], tuple[Any, ...]]:
    global _astuple, _asdict
    import msgspec

    _asdict = msgspec.structs.asdict
    _astuple = msgspec.structs.astuple
    return _astuple


def columns_class(name: str, names: tuple[str, ...]) -> type[Any]:
    """The class a table's columns are made into before they become its dict: a msgspec Struct of the fields "at"
    and `names`, in that order (made with the columns by position and read out whole by msgspec's asdict, in C: a
    dict of the right size at once, cheaper than a dict grown key by key)."""
    import msgspec

    return msgspec.defstruct(f"{name} columns", ["at", *names])


def read_tables(plans: Sequence[TablePlan], value: Any, lenient: bool) -> Tables:
    """The tables of a typed value: each list of objects as columns, one C-level pass per table (msgspec's
    astuple, then zip; a one-column table by its getter). `lenient`: the value was built leniently, so an object
    on the way may be anything, and only the rows that are objects of their shape are kept."""
    astuple = _astuple or _load_msgspec()
    asdict = _asdict
    out: Tables = {}
    for name, parent, column, rows_of, steps, nullable, struct, names, one, columns in plans:
        rows: Any
        at: Sequence[int]
        if parent is not None:
            table = out[parent]
            rows, at = table[column], table["at"]  # type: ignore[index]
        else:
            if lenient:
                rows = value
                for row_type, attr in steps:  # (on the lenient path an object on the way may be anything)
                    rows = getattr(rows, attr) if type(rows) is row_type else None
            else:
                try:
                    rows = rows_of(value)  # type: ignore[misc]
                except AttributeError:  # an optional object on the way is absent
                    rows = None
            if type(rows) is not tuple:
                rows = ()
            n = len(rows)
            at = _RANGES[n] if n < 16 else range(n)
        if rows and (lenient or nullable) and not all([type(x) is struct for x in rows]):  # noqa: C419 - a list is faster
            keep = [i for i, x in enumerate(rows) if type(x) is struct]
            at = [at[i] for i in keep]
            rows = [rows[i] for i in keep]
        if one is not None:  # one column (50 addresses): read by column, cheaper than astuple and zip
            out[name] = {names[0]: [*map(one, rows)], "at": at}
        elif rows:  # (every row has every column; one row's columns without a map and a star: a replay's events)
            out[name] = asdict(columns(at, *(zip(*map(astuple, rows)) if len(rows) > 1 else zip(astuple(rows[0])))))  # noqa: B905
        else:
            out[name] = dict.fromkeys(names, ())
            out[name]["at"] = at
    return out


# --- fields with two spellings: what msgspec cannot check ------------------------------------


@dataclass(frozen=True)
class Spelling:
    """A field with two spellings (`slots`: the Struct attribute of each; `dialects`: the dialect each spelling
    belongs to) in the objects found at `steps` from the root (attribute names; None: every item of a list or value
    of a map), which are the rows of `table` when they are a table's."""

    steps: tuple[str | None, ...]
    slots: tuple[str, ...]
    required: bool
    table: str | None
    dialects: tuple[str, ...] = ()

    @cached_property
    def columns(self) -> Callable[[dict[str, Any]], Sequence[Sequence[Any]]]:
        """The table's column of each spelling, read in one call (a field has two spellings or more)."""
        return itemgetter(*self.slots)


def objects_at(value: Any, steps: tuple[str | None, ...]) -> list[Any]:
    """The objects found at `steps` from a compiled typed value (absent ones left out)."""
    objects = [value]
    for step in steps:
        if step is None:
            objects = [x for o in objects for x in (o.values() if type(o) is dict else o) if x is not None]
        else:
            objects = [x for x in map(attrgetter(step), objects) if x is not None]
    return objects


_UNSET: Any = None  # msgspec.UNSET, once msgspec is loaded (`import fnkit` stays light)


def _load_unset() -> Any:
    global _UNSET
    import msgspec

    _UNSET = msgspec.UNSET
    return _UNSET


def spelled_once(
    spellings: Sequence[Spelling], typed: Any, tables: Tables | None, seen: Any = None, *, lenient: bool = False
) -> bool:
    """True when each object holds at most one spelling of each field that has two (a required field: exactly one).

    `tables`: the value's tables, when read. `seen` (a `Seen`), when given, is told the dialect of each spelling some
    object holds, and every field is then read whatever the answer. `lenient`: the value was built leniently (the
    walk has named what is wrong), so a field outside the tables may sit below anything: it is passed over."""
    UNSET = _UNSET if _UNSET is not None else _load_unset()  # noqa: N806
    once = True
    for site in spellings:
        table = site.table
        columns: Sequence[Sequence[Any]]
        if table is not None and tables is not None:
            columns = site.columns(tables[table])  # one C-level call
        elif lenient:
            continue
        else:
            objects = objects_at(typed, site.steps)
            columns = [[*map(attrgetter(slot), objects)] for slot in site.slots]
        n = len(columns[0])
        unused, whole, i = 0, False, 0  # the spellings no object holds; whether every object holds one of them
        for column in columns:  # (C-level counts)
            absent = column.count(UNSET)
            if absent == n:
                unused += 1
            elif seen is not None:
                seen.saw(site.dialects[i])
            if absent == 0:
                whole = True
            i += 1  # noqa: SIM113 - an enumerate is one more object a call
        if unused >= len(columns) - 1:  # one spelling in use at most (the usual case)
            if site.required and not whole:
                once = False
        else:
            held = [sum([x is not UNSET for x in row]) for row in zip(*columns, strict=True)]
            if not (all(h == 1 for h in held) if site.required else max(held) <= 1):
                once = False
        if not once and seen is None:
            return False
    return once
