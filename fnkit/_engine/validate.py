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
   anything, so a check guards with isinstance where a wrong type is possible. A check
   says what it found below the value or a row of its tables (`fnkit._engine.findings`);
   the engine stamps each finding with the check's rule id and its absolute path.
`seen.tables` holds the columns of the value's lists of objects, read once per call and
shared by every check (`seen.tables["records"]["body"]`); `seen.saw("aws"|"provider")`
records which dialect spelling a check met; `seen.options` carries validator keywords.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..rules import id_of
from .columns import Tables, patterns_hold, read_tables, spelled_once
from .findings import ROOT, Finding, Places, Row, rule_of
from .report import MISSING, Issue, Raw, Report, bom_warning, decode_json, error, strip_bom, warning
from .shape import Shape, two_spellings, unknown_key

if TYPE_CHECKING:
    from msgspec.json import Decoder

Check = Callable[[Any, "Seen"], Iterable[Finding]]
_TEXT_OR_RAW = (str, bytes, bytearray, memoryview, Raw)


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
            seen = Seen(options, None, self._places)
            if typed is not None:
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
            else:
                issues = self.shape.walk(value)
                typed = self.shape.lenient(value)
                read = value if self.plain else typed
                tables = None if self.plain else self.shape.lenient_tables(typed)
                seen = Seen(
                    options, tables, self._places
                )  # (a new one: the typed value's spellings may have been noted)
                if spellings is not None and tables is not None:  # the dialect of each spelling held
                    spelled_once(spellings, typed, tables, seen, lenient=True)
            for check in self.checks:
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

    def _placed(self, found: Iterable[Finding], own: str | None) -> list[Issue]:
        """A check's findings as issues: at their absolute paths, of the check's rule (or the one a finding names)."""
        places: Places = self._places
        return [
            Issue(places.path(f), f.code, f.message, f.severity, own if f.of is None else rule_of(f.of)) for f in found
        ]


def _unchecked(exc: Exception) -> Issue:
    """A check met a value so odd that its own guards missed it (a dict subclass whose items()
    raises, say): say so, never crash."""
    return warning(
        "$", "unchecked", f"One rule could not be checked on this value ({type(exc).__name__}: {exc}).", None
    )
