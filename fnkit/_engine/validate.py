"""The contract engine: the one place that checks a value against a shape and its semantic rules.

`Contract(shape, checks, source=..., subject=...)` compiles the shape once. `check(value)`:
1. JSON text, bytes, `Raw` or a memoryview are decoded and checked in one pass by a
   `msgspec.json.Decoder` of the shape's Struct; a dict is checked (and typed) by one
   `msgspec.convert`. Either way the result is the typed value: every type, key, enum
   and length bound of the declaration held (msgspec checks them, in C). A field with
   two spellings is then asked to hold one (`Shape.spelled_once`; the dialect of the
   spelling held is noted, on the lenient path too), and each declared
   pattern is tested once over the column of strings it governs (`Shape.patterns_hold`).
2. Only when the compiled check rejects the value does the located walker run; it names
   every problem. The typed classes are then built leniently (raw values where types are
   wrong, None where keys are missing), so that
3. the semantic rules (`def check_x(value, seen) -> list[Finding]`, empty when fine) run
   once, over the typed value, on both paths. On the lenient path a field may hold
   anything; a check that declares the columns it reads (`reads`) is given only the rows
   whose cells there hold their declared types (the walk named the others), so it needs no
   guard for the split. A check
   says what it found below the value or a row of its tables (`fnkit._engine.findings`);
   the engine stamps each finding with the check's rule id and its absolute path.
`seen.tables` holds the columns of the value's lists of objects, read once per call and
shared by every check (`seen.tables["records"]["body"]`); `seen.saw("aws"|"provider")`
records which dialect spelling a check met; `seen.options` carries validator keywords.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any, TypeVar

from ..rules import id_of
from .columns import Tables, patterns_hold, read_tables, spelled_once
from .findings import ROOT, VALUE, Finding, Places, Row, Table, rule_of
from .proved import lists_held
from .report import MISSING, Issue, Raw, Report, bom_warning, decode_json, error, strip_bom, warning
from .shape import TYPE_ERRORS, Nullable, Shape, attr_name, field_tests, two_spellings, unknown_key

if TYPE_CHECKING:
    from msgspec.json import Decoder

Check = Callable[[Any, "Seen"], Iterable[Finding]]
_TEXT_OR_RAW = (str, bytes, bytearray, memoryview, Raw)
_C = TypeVar("_C", bound=Callable[..., Any])
_READS: dict[Any, tuple[Table, tuple[str, ...]]] = {}  # a check -> the table and the columns it reads (`reads`)


def reads(table: Table, *columns: str) -> Callable[[_C], _C]:
    """Declares that a check reads `table` (`seen.tables[table]`, or the list it is read from) and relies on the
    declared types of its `columns`; returns the check unchanged.

    A compiled typed value holds every declared type, so on that path nothing changes. On the lenient path (the
    walk has named every type error) the engine runs the check only when the table's list is where the shape puts
    it (`proved.lists_held`), and hands it the table's rows whose `columns` hold their declared types
    (`TableSpec.held`): the check reads each cell as its declared type, without a guard. Declare a column only where
    a row with a wrong-typed cell there gives the check nothing to say; a check that reports on such a value itself
    reads it whole. `VALUE` for `table`: the check reads the value's own `columns` (its fields; "envelope.mail_from":
    a field of an object field), and runs only when the value is an object of its shape whose `columns`, and the
    objects on their way, hold their declared types.
    """

    def declare(check: _C) -> _C:
        _READS[check] = (table, columns)
        return check

    return declare


class Seen:
    """What one call's checks share: the options, whether the value is typed, its tables, and the
    dialect spellings the checks met.

    `tables` holds the columns of the value's lists of objects, read once for all checks
    (`seen.tables["records"]["body"]`, with `["at"]` the rows' positions; see `Shape.tables`).
    """

    __slots__ = ("met", "options", "places", "tables")

    def __init__(
        self, options: dict[str, Any] | None = None, tables: Tables | None = None, places: Places = ROOT
    ) -> None:
        self.options = options if options is not None else _NO_OPTIONS
        self.tables = tables if tables is not None else _NO_TABLES
        self.places = places  # where the value's tables' rows sit (see `path_to`)
        # the dialect spelling the checks met: None (none yet), "aws", "provider", or MIXED (both); a string,
        # not a set, so that saying a spelling allocates nothing
        self.met: str | None = None

    def saw(self, dialect: str) -> None:
        met = self.met
        if met is None:
            self.met = dialect
        elif met != dialect:
            self.met = MIXED

    def path_to(self, row: Row | None, *at: Any) -> str:
        """The absolute path of the keys `at` below a row of the value's tables (or below the value), for a
        sentence that names another place than the finding's own."""
        return self.places.path_to(row, *at)

    def dialect(self) -> str | None:
        """The one dialect the checks saw, None when they saw none, "mixed" when they saw both."""
        return self.met


#: what `Seen.met` holds once the checks met both dialects' spellings
MIXED = "mixed"
_NO_OPTIONS: dict[str, Any] = {}
_NO_TABLES: Tables = {}
_new_seen = object.__new__


class Contract:
    """A shape compiled once, with the semantic checks that run over its typed values.

    A check is `def check_x(value, seen) -> list[Finding]`: it returns what it finds, an empty
    tuple or list when the value is fine (any iterable of findings works; a generator too). The
    engine makes each finding an `Issue` of the check's rule (or of the rule the finding names),
    at its absolute path (`Shape.places` says where the value's tables' rows sit).
    """

    __slots__ = (
        "_clean",
        "_convert",
        "_decoder",
        "_narrowed",
        "_owners",
        "_places",
        "_plans",
        "_rejected",
        "_sites",
        "_spellings",
        "_struct",
        "_undecodable",
        "checks",
        "plain",
        "shape",
        "source",
        "subject",
    )

    def __init__(
        self, shape: Shape, checks: Sequence[Check], *, source: str, subject: str = "event", plain: bool = False
    ) -> None:
        """`plain`: the checks read the decoded JSON value (dicts and lists), not the typed one."""
        self.shape = shape
        self.plain = plain
        self.checks = tuple(checks)
        if plain and any(check in _READS for check in self.checks):  # (the plain value has no proved types to give)
            raise ValueError("a check of a plain contract reads the decoded JSON value: it cannot declare `reads`")
        self.source = source
        self.subject = subject
        self._decoder: Decoder[Any] | None = None
        self._clean: dict[str | None, Report] = {}

    def _compile(self) -> Decoder[Any]:
        import msgspec

        self._struct = self.shape.struct
        self._spellings = self.shape.spellings or None
        self._sites = self.shape.pattern_sites
        self._plans = self.shape.table_plans
        self._places = self.shape.places
        self._owners = dict(zip(self.checks, map(rule_of, self.checks), strict=True))  # each check's rule id
        held = {spec.name: spec.held for spec in self.shape.table_specs}
        names = {spec.name: ("at", *spec.names) for spec in self.shape.table_specs}
        # each check that declares what it reads: (its table, the columns it relies on, their tests, every column)
        self._narrowed: dict[
            Any, tuple[Table, tuple[str, ...], tuple[Callable[[Any], bool], ...], tuple[str, ...]]
        ] = {}
        for check in self.checks:
            if check in _READS:
                table, columns = _READS[check]
                if table is VALUE:  # the value's own fields, a table of one row: each test reads the value
                    tests = tuple(_down(self.shape, column) for column in columns)
                    self._narrowed[check] = (table, columns, tests, ())
                else:
                    self._narrowed[check] = (table, columns, tuple(held[table][c] for c in columns), names[table])
        self._convert = msgspec.convert
        # msgspec cannot word an error about a lone surrogate (UnicodeEncodeError), and it raises
        # UnicodeDecodeError for invalid UTF-8 inside a key (inside a value it raises DecodeError)
        self._rejected = (msgspec.ValidationError, UnicodeEncodeError)
        self._undecodable = (msgspec.DecodeError, TypeError, UnicodeError)
        decoder: Decoder[Any] = msgspec.json.Decoder(self._struct)
        self._decoder = decoder
        return decoder

    def validate(self, value: Any, options: dict[str, Any] | None = None) -> Report:
        """Every problem of `value`; never raises."""
        return self.check(value, options)[0]

    def json_schema(self, *, title: str | None = None, also: tuple[Any, ...] = ()) -> dict[str, Any]:
        """A Draft 2020-12 JSON Schema of the structure the compiled check enforces, both dialects; the
        semantic rules (the checks', and the rules implemented by the functions or declarations in `also`, which
        the checks ask) are listed in its description, in catalogue order."""
        from .. import rules

        # in catalogue order: a rule's place does not depend on whether its function is a check or asked by one
        named = {*map(id_of, also)}
        ids = [r.id for r in rules.catalogue() if r.id in named or r.implementation in self.checks]
        semantic = "; ".join(f"{i}: {rules.get(i).summary.rstrip('.')}" for i in ids)
        description = (
            f"{self.shape.doc} Generated by fnkit from the declaration it validates with; both dialects "
            "(the spec's 'provider' spellings and the real platform's 'aws' ones) are accepted. Unknown "
            f"keys are allowed here (fnkit warns about them, rule {id_of(unknown_key)}). Integers are written "
            "without a fraction (200, not 200.0). Checks this schema cannot express, which fnkit applies: "
            f"{semantic or 'none'}."
        )
        schema = self.shape.json_schema(description=description)
        if title:
            schema["title"] = title
        return schema

    def located(self, value: Any, options: dict[str, Any] | None = None) -> Report:
        """The report of the located way alone (walk, lenient build, checks), whatever the compiled check says.

        `check` gives the same report faster; the tests hold the two to that.
        """
        return self.check(value, options, located=True)[0]

    def check(self, value: Any, options: dict[str, Any] | None = None, *, located: bool = False) -> tuple[Report, Any]:
        """(the report, the typed value or None when the value is not an object of the shape); never raises.

        `located`: the report of the located way alone (`located`).
        """
        compiled = not located
        try:  # (free in CPython 3.11 until something raises)
            decoder = self._decoder
            if decoder is None:
                decoder = self._compile()
            typed: Any = None
            notes: Any = ()  # what decoding the text said (a byte-order mark skipped, G0)
            if not compiled or self.plain:
                # the located way, or checks that read the plain value: decode the text once, with json
                value, notes = decode_json(value)
                if value is MISSING:
                    return Report(notes, self.source, None, self.subject), None
            elif type(value) is dict:
                try:  # checked and typed in one pass
                    typed = self._convert(value, self._struct)  # strict: msgspec's default (a keyword costs a parse)
                except self._rejected:
                    pass
            elif isinstance(value, _TEXT_OR_RAW):
                data, bom = strip_bom(value.data if isinstance(value, Raw) else value)
                if bom:
                    notes = [bom_warning()]
                try:  # decoded and checked in one pass
                    typed = decoder.decode(data)
                except self._undecodable:  # (a str with a lone surrogate, bytes that are not UTF-8)
                    # not JSON, or JSON of another shape: the standard decoder says which, and where
                    value, notes = decode_json(value)
                    if value is MISSING:
                        return Report(notes, self.source, None, self.subject), None
            if compiled and typed is None and type(value) is dict and self.plain:
                try:
                    typed = self._convert(value, self._struct)  # (strict: the default)
                except self._rejected:
                    pass
            tables: Tables | None
            spellings = self._spellings
            # the call's Seen, filled as `Seen.__init__` fills it, without type.__call__ and __init__'s frame (the
            # lenient path below makes its own)
            seen = _new_seen(Seen)
            if typed is not None:
                seen.options = options if options is not None else _NO_OPTIONS
                seen.places = self._places
                seen.met = None
                seen.tables = tables = read_tables(self._plans, typed, False)
                # each field with two spellings holds one (the seen one's dialect noted), and each pattern holds
                if (spellings is not None and not spelled_once(spellings, typed, tables, seen)) or (
                    self._sites and not patterns_hold(self._sites, typed, tables)
                ):
                    typed = None  # two spellings of one field, or a string that breaks its pattern: the walk says where
                    value, _ = decode_json(value)  # (the text the compiled check decoded, as plain values)
            issues: list[Issue]
            if typed is not None:
                issues = []
                read = value if self.plain else typed
                checks = self.checks
            else:
                issues = self.shape.walk(value)
                typed = self.shape.lenient(value)
                read = value if self.plain else typed
                checks = self.checks
                tables = None if self.plain else self.shape.lenient_tables(typed)
                # (a new Seen: the typed value's spellings may have been noted)
                seen = Seen(options, tables, self._places)
                if spellings is not None and tables is not None:  # the dialect of each spelling held
                    spelled_once(spellings, typed, tables, seen, lenient=True)
                if tables is not None and self._narrowed and any([i.code in TYPE_ERRORS for i in issues]):  # noqa: C419
                    # some value is not of its declared type: a check that declares what it reads gets the rows that are
                    self._run_narrowed(read, seen, typed, tables, issues)
                    checks = ()
            for check in checks:
                try:  # free in CPython 3.11 until something raises
                    found = check(read, seen)
                    if found:
                        issues += self._placed(found, self._owners[check])
                except Exception as exc:  # noqa: BLE001
                    issues.append(_unchecked(exc))
            if notes:
                issues[:0] = list(notes)
            dialect = seen.met
            if dialect == MIXED:
                issues.append(
                    warning(
                        "$",
                        "dialect",
                        "The event mixes the spec's 'provider' spellings with the real platform's 'aws' ones.",
                        id_of(two_spellings),
                    )
                )
                dialect = None
            if not issues:
                report = self._clean.get(dialect)
                if report is None:  # reports are immutable: one clean report per dialect serves every call
                    report = self._clean[dialect] = Report((), self.source, dialect, self.subject)
                return report, typed
            report = Report(issues, self.source, dialect, self.subject)
            return report, (typed if report.ok and isinstance(typed, self._struct) else None)
        except RecursionError:
            if located:  # the located way nests deeper than the compiled one: say what the compiled one says
                return self.check(value, options)
            return Report(
                [error("$", "limit", "The value nests too deeply to check.", id_of(decode_json))],
                self.source,
                None,
                self.subject,
            ), None

    def _run_narrowed(self, read: Any, seen: Seen, typed: Any, tables: Tables, issues: list[Issue]) -> None:
        """The checks over a leniently built value, in order: a check that declares what it reads (`reads`) runs
        only when its table's list is there, over the rows whose columns it relies on hold their declared types."""
        there = lists_held(self.shape.table_specs, typed)
        narrowed = self._narrowed
        failing: dict[tuple[str, str], set[int]] = {}  # each column's failing rows, once tested
        for check in self.checks:
            reading = narrowed.get(check)
            if reading is None:
                seen.tables = tables
            elif reading[0] is VALUE:
                if type(typed) is not self._struct or not all(test(typed) for test in reading[2]):
                    continue  # (a typed value is an object of its shape, its fields of their types)
                seen.tables = tables
            elif reading[0] not in there:
                continue  # (a typed value always has the list)
            else:
                seen.tables = _narrow(tables, failing, *reading)
            try:
                found = check(read, seen)
                if found:
                    issues += self._placed(found, self._owners[check])
            except Exception as exc:  # noqa: BLE001
                issues.append(_unchecked(exc))
        seen.tables = tables

    def _placed(self, found: Iterable[Finding], own: str | None) -> list[Issue]:
        """A check's findings as issues: at their absolute paths, of the check's rule (or the one a finding names)."""
        places: Places = self._places
        return [
            Issue(places.path(f), f.code, f.message, f.severity, own if f.of is None else rule_of(f.of)) for f in found
        ]


def _down(shape: Shape, dotted: str) -> Callable[[Any], bool]:
    """The test that the field at `dotted` (attributes down a value of `shape`: "envelope.mail_from") and each object
    on its way hold their declared types (an absent object on the way, where the declaration allows it, ends the
    test: a typed value may have it so too)."""
    steps = []
    for attr in dotted.split("."):
        f = next(f for f in shape.fields if attr_name(f) == attr)
        steps.append((attr, field_tests(shape)[attr]))
        inner = f.type.inner if isinstance(f.type, Nullable) else f.type
        if isinstance(inner, Shape):
            shape = inner

    def test(value: Any) -> bool:
        for attr, holds in steps:
            value = getattr(value, attr)
            if not holds(value):
                return False
            if value is None:
                return True
        return True

    return test


def _narrow(
    tables: Tables,
    found: dict[tuple[str, str], set[int]],
    name: str,
    columns: tuple[str, ...],
    tests: tuple[Callable[[Any], bool], ...],
    names: tuple[str, ...],
) -> Tables:
    """`tables` with table `name` holding only the rows whose `columns` pass their `tests` (the same tables when every
    row does; a new dict, the shared one untouched, when some does not). `found`: each column's failing rows, tested
    once per call (checks share columns)."""
    table = tables[name]
    failing: set[int] = set()
    for column, test in zip(columns, tests, strict=True):
        bad = found.get((name, column))
        if bad is None:
            cells = table[column]
            bad = found[name, column] = (
                set() if all(map(test, cells)) else {k for k, v in enumerate(cells) if not test(v)}
            )
        failing |= bad
    if not failing:
        return tables
    keep = [k for k in range(len(table["at"])) if k not in failing]
    if not keep:
        return {**tables, name: dict.fromkeys(names, ())}
    return {**tables, name: _Kept(table, itemgetter(*keep) if len(keep) > 1 else _one(keep[0]))}


class _Kept(dict[str, Any]):
    """The rows of a table a check is given (`_narrow`): each column read out of the whole table when the check first
    asks for it (a check reads a few of a table's columns)."""

    __slots__ = ("_rows", "_table")

    def __init__(self, table: dict[str, Any], rows: Callable[[Any], Any]) -> None:
        super().__init__()
        self._table = table
        self._rows = rows  # the kept rows of a column, in one C-level call

    def __missing__(self, key: str) -> Any:
        if key not in self._table:
            raise KeyError(key)
        column = self[key] = self._rows(self._table[key])
        return column


def _one(position: int) -> Callable[[Any], tuple[Any, ...]]:
    """The kept row of a column when one row is kept (`itemgetter` of one position gives the value, not a tuple)."""
    get = itemgetter(position)
    return lambda column: (get(column),)


def _unchecked(exc: Exception) -> Issue:
    """A check met a value so odd that its own guards missed it (a dict subclass whose items()
    raises, say): say so, never crash."""
    return warning(
        "$", "unchecked", f"One rule could not be checked on this value ({type(exc).__name__}: {exc}).", None
    )
