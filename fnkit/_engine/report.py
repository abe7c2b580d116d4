"""Issues, reports and the small value types every source shares."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, overload

from .._optional import require
from ..rules import id_of, rule
from .codec import _STRICT
from .codec import Raw as Raw
from .codec import loads_strict as loads_strict

if TYPE_CHECKING:
    import pandas as pd

Severity = Literal["error", "warning"]
#: how a field is spelled: "provider" (as in the spec) or "aws" (as on the real platform); G2
Dialect = Literal["provider", "aws"]
DIALECTS: tuple[str, ...] = ("provider", "aws")

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def child_path(path: str, key: Any) -> str:
    """The JSONPath-like path of `key` below `path` (`$.a`, `$['x-y']`, `$[3]`)."""
    if isinstance(key, int) and not isinstance(key, bool):
        return f"{path}[{key}]"
    if isinstance(key, str) and _IDENT.match(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key) if isinstance(key, str) else repr(key)}]".replace('["', "['").replace('"]', "']")


def path_of(*keys: Any) -> str:
    """The JSONPath-like path of the value reached by `keys` from the root: `path_of("Records", 3, "md5OfBody")`
    is `$.Records[3].md5OfBody` (each step as `child_path` writes it); the one way rules write a path."""
    path = "$"
    for key in keys:
        if type(key) is int:
            path += f"[{key}]"
            continue
        step = _STEPS.get(key) if type(key) is str else None
        if step is None:  # (a step of a string key does not depend on the path above it: it is written once)
            step = child_path("", key)
            if type(key) is str and len(_STEPS) < _MAX_STEPS:
                _STEPS[key] = step
        path += step
    return path


#: the step each string key adds to a path (`.body`, `['x-y']`), kept for the keys met first (bounded)
_STEPS: dict[str, str] = {}
_MAX_STEPS = 4096


@dataclass(frozen=True, slots=True)
class Issue:
    """One located problem: where (`path`), what kind (`code`), a sentence, and the rule."""

    path: str
    code: str
    message: str
    severity: Severity = "error"
    rule: str | None = None

    def __str__(self) -> str:
        tag = f" [{self.rule}]" if self.rule else ""
        return f"{self.path}: {self.severity}: {self.message}{tag}"


def error(path: str, code: str, message: str, rule: str | None) -> Issue:
    """An error-severity issue."""
    return Issue(path, code, message, "error", rule)


def warning(path: str, code: str, message: str, rule: str | None) -> Issue:
    """A warning-severity issue."""
    return Issue(path, code, message, "warning", rule)


class Report(Sequence[Issue]):
    """Every issue found in one value: a sequence of `Issue` with `.ok`, `.errors`, `.warnings`."""

    __slots__ = ("_issues", "dialect", "source", "subject")

    def __init__(
        self,
        issues: Iterable[Issue] = (),
        source: str | None = None,
        dialect: str | None = None,
        subject: str = "event",
    ) -> None:
        self._issues: tuple[Issue, ...] = tuple(issues)
        self.source = source
        self.dialect = dialect
        self.subject = subject

    @overload
    def __getitem__(self, index: int) -> Issue: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Issue, ...]: ...
    def __getitem__(self, index: int | slice) -> Issue | tuple[Issue, ...]:
        return self._issues[index]

    def __len__(self) -> int:
        return len(self._issues)

    def __iter__(self) -> Iterator[Issue]:
        return iter(self._issues)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Report):
            return self._issues == other._issues and self.source == other.source
        if isinstance(other, (list, tuple)):
            return list(self._issues) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    @property
    def ok(self) -> bool:
        """True when no issue is an error (warnings allowed)."""
        issues = self._issues
        return not issues or not any(i.severity == "error" for i in issues)  # (a clean report: no generator made)

    @property
    def errors(self) -> list[Issue]:
        """The error-severity issues."""
        return [i for i in self._issues if i.severity == "error"]

    @property
    def warnings(self) -> list[Issue]:
        """The warning-severity issues."""
        return [i for i in self._issues if i.severity == "warning"]

    def codes(self) -> list[str]:
        """The issue codes, in order (handy in tests and notebooks)."""
        return [i.code for i in self._issues]

    def rules(self) -> list[str | None]:
        """The rule ids the issues cite, in order."""
        return [i.rule for i in self._issues]

    def as_data(self) -> list[Any]:
        """The report as plain data, to travel between processes: [dialect, [[path, code, message, severity, rule],
        ...]] (`Report.from_data` reads it back)."""
        return [self.dialect, [[i.path, i.code, i.message, i.severity, i.rule] for i in self._issues]]

    @classmethod
    def from_data(cls, data: Any, source: str | None, subject: str = "event") -> Report:
        """The report `as_data` wrote; TypeError or ValueError when `data` is not of that form."""
        dialect, rows = data
        return cls([Issue(*row) for row in rows], source, dialect, subject)

    def to_frame(self) -> pd.DataFrame:
        """One row per issue as a pandas DataFrame (path, code, severity, message, rule)."""
        require("pandas", extra="frames", feature="Report.to_frame()")
        import pandas as pd

        return pd.DataFrame(
            [
                {
                    "source": self.source,
                    "path": i.path,
                    "severity": i.severity,
                    "code": i.code,
                    "message": i.message,
                    "rule": i.rule,
                }
                for i in self._issues
            ],
            columns=["source", "path", "severity", "code", "message", "rule"],
        )

    def summary(self) -> str:
        """One line: valid or not, with counts."""
        what = self.source or "value"
        if not self._issues:
            return f"valid {what} {self.subject}"
        state = "valid" if self.ok else "invalid"
        return f"{state} {what} {self.subject}: {len(self.errors)} error(s), {len(self.warnings)} warning(s)"

    def __repr__(self) -> str:
        body = "".join(f"\n  {i}" for i in self._issues)
        return f"<Report {self.summary()}{body}>"

    def _repr_html_(self) -> str:
        from .._cells import panel_html

        columns = ["path", "severity", "code", "message", "rule"]
        return panel_html(
            self.summary(), rows=[{c: getattr(i, c) for c in columns} for i in self._issues], columns=columns
        )


class ContractError(ValueError):
    """Raised by `parse_event` when the value breaks the contract; `.report` says how."""

    def __init__(self, report: Report) -> None:
        self.report = report
        first = report.errors[:3]
        more = f" (and {len(report.errors) - 3} more)" if len(report.errors) > 3 else ""
        super().__init__("; ".join(str(i) for i in first) + more)


_MISSING = object()

_BOM = "\ufeff"
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = {b"\xff\xfe": "UTF-16 little-endian (bytes FF FE)", b"\xfe\xff": "UTF-16 big-endian (bytes FE FF)"}


def bom_warning() -> Issue:
    """G0: the warning for one leading UTF-8 byte-order mark (skipped, the content is checked)."""
    return warning(
        "$",
        "bom",
        "The text starts with a UTF-8 byte-order mark (BOM: bytes EF BB BF, U+FEFF), as .NET "
        "and Windows tools write it; JSON text has none (RFC 8259) and the platform never sends "
        "one. fnkit skipped it and checked the rest.",
        id_of(decode_json),
    )


def strip_bom(value: Any) -> tuple[Any, bool]:
    """(`value` without one leading UTF-8 byte-order mark, True when there was one); other values pass through."""
    if isinstance(value, str):
        return (value[1:], True) if value.startswith(_BOM) else (value, False)
    if isinstance(value, (bytes, bytearray)):
        return (bytes(value[3:]), True) if value.startswith(_UTF8_BOM) else (value, False)
    if isinstance(value, memoryview):
        return (value[3:], True) if value[:3] == _UTF8_BOM else (value, False)
    return value, False


@rule(
    "G0",
    "any",
    "inferred",
    "An event or response given as text or bytes must be UTF-8 JSON; one leading UTF-8 "
    "byte-order mark is skipped with a warning and the rest is checked.",
    origin="kit",
    severity="error or warning",
)
def decode_json(value: Any, rule: str | None = None) -> tuple[Any, list[Issue]]:
    """Turn JSON text or bytes into a value; other values pass through untouched (G0: else a located error).

    One leading UTF-8 byte-order mark is skipped, with a warning naming it (G0), so the content is still checked.
    `rule`: the rule the errors cite when a rule of the caller's decides what text that is not JSON means (G0
    when None).
    """
    if isinstance(value, Raw):
        value = value.data
    value, bom = strip_bom(value)
    notes = [bom_warning()] if bom else []
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            rule = rule or id_of(decode_json)
            head = bytes(value[:2])
            if head in _UTF16_BOMS:
                return _MISSING, [
                    error(
                        "$",
                        "format",
                        f"The bytes are {_UTF16_BOMS[head]}: they start with a UTF-16 "
                        "byte-order mark, not UTF-8 text, so they cannot be JSON as "
                        "the platform sends it. Save the file as UTF-8.",
                        rule,
                    )
                ]
            return _MISSING, [
                error(
                    "$",
                    "format",
                    # the position in the bytes as given, the skipped byte-order mark counted
                    f"The bytes are not UTF-8 text (bad byte at position {exc.start + (3 if bom else 0)}), "
                    "so they cannot be JSON.",
                    rule,
                )
            ]
    if isinstance(value, str):
        try:
            return _STRICT.decode(value), notes
        except (ValueError, RecursionError) as exc:
            rule = rule or id_of(decode_json)
            where = f" at line {exc.lineno}, column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
            reason = (
                exc.msg
                if isinstance(exc, json.JSONDecodeError)
                else ("it nests too deeply" if isinstance(exc, RecursionError) else str(exc))
            )
            if value.startswith(_BOM):
                reason += " (the text starts with a second byte-order mark, U+FEFF)"
            return _MISSING, [*notes, error("$", "format", f"The text is not valid JSON{where}: {reason}.", rule)]
    return value, notes


MISSING = _MISSING


def describe(value: Any) -> str:
    """A learner-friendly name for the type of `value`, with a short preview."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, int):
        if value.bit_length() > 10_000:  # str() refuses past 4,300 digits: say how long, not what
            return f"a number (an integer of about {int(value.bit_length() * 0.30103):,} digits)"
        return f"a number ({value})"
    if isinstance(value, float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        preview = value if len(value) <= 30 else value[:27] + "..."
        return f"a string ({json.dumps(preview)})"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    return f"a Python {type(value).__name__}"
