"""What a rule returns, and how the engine turns it into located, attributed issues.

A rule function decides; it does not say which rule it is, nor where the value it was given sits.
It returns `Finding`s: a code, a sentence, a severity and where the problem is *below what it was
given* (`at`: the keys from that value down to the problem; `row`: a row of one of the value's
tables, `seen.tables[...]`, by the position its table gives it in `["at"]`):

    @rule("QS7", "queue", "contract", "Message ids are unique: one batch never holds the same messageId twice.")
    def check_unique_ids(event, seen):
        table = seen.tables[RECORDS]
        first = {}
        for i, mid in zip(table["at"], table["message_id"]):
            if mid in first:
                return [problem("conflict", f"messageId '{mid}' appears twice.", "messageId", row=RECORDS.row(i))]
            first[mid] = i
        return []

The engine stamps the rest (`place`): the rule id from the declaration of the function it called
(or of the function or declaration a finding names with `of=`, when a rule's function reports a
declared rule's problem), and the absolute path, from where the value sits and where each table's
rows sit in it (`Places`, derived once from the shape). `path_of` is the one way a path is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from ..rules import declared_by, rule
from .report import Issue, Severity, child_path, path_of


class Row(NamedTuple):
    """One row of a value's table: the table's name (`"records"`, `"records.attributes"`) and the row's
    position in the list that holds it (what its table's `["at"]` column gives)."""

    table: str
    position: int


class Table(str):
    """The name of one of a shape's tables (`RECORDS = Table("records")`): the key of its columns in
    `seen.tables`, and how a rule says which row it found something in (`RECORDS.row(i)`) without
    writing where the table sits in the value: the engine knows that (`Places`)."""

    __slots__ = ()

    def __new__(cls, name: str) -> Table:  # noqa: PYI034 - the one Table of its name, not a new one
        """The one Table of a name: the engine keys a value's tables by the same objects the rules name them with,
        so a rule's look-up of its table matches by identity."""
        known = _TABLES.get(name)
        if known is None:
            known = _TABLES[name] = super().__new__(cls, name)
        return known

    def row(self, position: int) -> Row:
        """The row at `position` of this table (a position the table's `["at"]` column gave)."""
        return Row(self, position)


_TABLES: dict[str, Table] = {}
#: the value a check is given, read as a table of one row: `reads(VALUE, *fields)` declares the check reads the value's
#: own fields (it has no rows to find something in: its findings sit below the value)
VALUE = Table("$")


class Finding(NamedTuple):
    """What a rule found: a code, a sentence, a severity, and where, relative to what the rule was given.

    `at`: the keys from the value (or from `row`, a row of one of its tables) down to the problem;
    `of`: the function or declaration of the rule the finding belongs to, when it is not the rule of the
    function that returns it (a declared rule whose problems a function finds). Made by `problem` and
    `caution`; the engine places it (`place`).
    """

    code: str
    message: str
    at: tuple[Any, ...] = ()
    severity: Severity = "error"
    row: Row | None = None
    of: Any = None


def problem(code: str, message: str, *at: Any, row: Row | None = None, of: Any = None) -> Finding:
    """An error found at the keys `at` below the value (or `row`) a rule was given."""
    return Finding(code, message, at, "error", row, of)


def caution(code: str, message: str, *at: Any, row: Row | None = None, of: Any = None) -> Finding:
    """A warning found at the keys `at` below the value (or `row`) a rule was given."""
    return Finding(code, message, at, "warning", row, of)


class Places(NamedTuple):
    """Where a value sits (`base`: the keys from the root to it) and where its tables' rows sit in it
    (`tables`: a table's name -> (the keys down to the list, the keys from a row to the table's objects))."""

    base: tuple[Any, ...] = ()
    tables: Mapping[str, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}

    def keys(self, finding: Finding) -> tuple[Any, ...]:
        """The keys from the root to what `finding` names."""
        row = finding.row
        if row is None:
            return (*self.base, *finding.at)
        down, within = self.tables[row.table]
        return (*self.base, *down, row.position, *within, *finding.at)

    def path(self, finding: Finding) -> str:
        """The absolute JSON path of what `finding` names."""
        return path_of(*self.keys(finding))

    def path_to(self, row: Row | None, *at: Any) -> str:
        """The absolute JSON path of the keys `at` below `row` (or below the value), for a sentence that names
        another place ("already appears at $.Records[0]")."""
        return self.path(Finding("", "", at, "error", row))


#: a value at the root, with no tables
ROOT = Places()


def rule_of(implementation: Any) -> str | None:
    """The id of the rule a function or declaration implements, None when it implements none (a check that
    only records a dialect, say)."""
    declared = declared_by(implementation)
    return declared.id if declared is not None else None


@rule(
    "H2",
    "any",
    "inferred",
    "A returned value that JSON cannot encode (a set, bytes, NaN) is an invalid JSON response.",
    origin="kit",
)
def cannot_encode(why: str | None, code: str, sentence: str, severity: Severity = "error") -> list[Finding]:
    """H2: a returned value JSON cannot encode is an invalid JSON response. `why`: what `codec.encode_response`,
    the one encoding of a returned value, said of it (None: it encoded it, nothing to say); `code`, `sentence` and
    `severity`: how the reading of the response words it (a source that ignores the response warns). Its findings
    name it, whichever reading places them."""
    if why is None:
        return []
    return [Finding(code, sentence, (), severity, None, cannot_encode)]


def place(found: Iterable[Finding], by: Any, places: Places = ROOT) -> list[Issue]:
    """The issues of a rule's findings: each located (`places`: where the value the rule read sits) and
    attributed (to the rule `by` implements, the function that found them, or to the rule a finding names)."""
    own = rule_of(by)
    return [Issue(places.path(f), f.code, f.message, f.severity, own if f.of is None else rule_of(f.of)) for f in found]


def place_below(path: str, found: Finding, by: Any = None) -> Issue:
    """The issue of one finding of a value the engine's walk reads, which knows where the value sits as a path
    (`$.Records[0]`), not as keys: `place` for the walk. Attributed as `place` does (a finding without `of`, to the
    rule `by` implements)."""
    for key in found.at:
        path = child_path(path, key)
    return Issue(path, found.code, found.message, found.severity, rule_of(by if found.of is None else found.of))


__all__ = [
    "ROOT",
    "VALUE",
    "Finding",
    "Places",
    "Row",
    "Table",
    "cannot_encode",
    "caution",
    "place",
    "place_below",
    "problem",
    "rule_of",
]
