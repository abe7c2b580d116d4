"""The contract engine: the one place that checks a value against a shape and its semantic rules.

`Contract(shape, checks, source=..., subject=...)` compiles the shape once. `check(value)`:
1. JSON text, bytes, `Raw` or a memoryview are decoded and checked in one pass by a
   `msgspec.json.Decoder` of the shape's Struct; a dict is checked (and typed) by one
   `msgspec.convert`. Either way the result is the typed value.
2. Only when the compiled check rejects the value does the located walker run; it names
   every problem. The typed classes are then built leniently (raw values where types are
   wrong, None where keys are missing), so that
3. the semantic rules (small generators `def check_x(value, seen) -> Iterator[Issue]`)
   run once, over the typed value, on both paths. On the lenient path a field may hold
   anything, so a check guards with isinstance where a wrong type is possible.
`seen.saw("aws"|"provider")` records which dialect spelling a check met; `seen.options`
carries validator keywords.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ._report import MISSING, Issue, Raw, Report, decode_json, error, warning
from ._shape import Shape

Check = Callable[[Any, "Seen"], Iterator[Issue]]
_TEXT = (str, bytes, bytearray, memoryview)


class Seen:
    """What the checks noticed while walking: which dialect spellings, and options."""

    __slots__ = ("dialects", "options")

    def __init__(self, options: dict | None = None) -> None:
        self.dialects: set[str] = set()
        self.options = options or {}

    def saw(self, dialect: str) -> None:
        self.dialects.add(dialect)

    def dialect(self) -> str | None:
        if len(self.dialects) == 1:
            return next(iter(self.dialects))
        if not self.dialects:
            return None
        return "mixed"


class Contract:
    """A shape compiled once, with the semantic checks that run over its typed values."""

    __slots__ = ("shape", "checks", "source", "subject", "plain", "_decoder", "_struct", "_post_ok", "_clean")

    def __init__(self, shape: Shape, checks: list[Check], *, source: str, subject: str = "event",
                 plain: bool = False) -> None:
        """`plain`: the checks read the decoded JSON value (dicts and lists), not the typed one."""
        self.shape = shape
        self.plain = plain
        self.checks = list(checks)
        self.source = source
        self.subject = subject
        self._decoder = None
        self._struct = None
        self._post_ok = None
        self._clean: dict[str | None, Report] = {}

    def _compile(self) -> None:
        import msgspec

        self._struct = self.shape.struct
        self._post_ok = self.shape.post_ok
        self._decoder = msgspec.json.Decoder(self._struct)

    def check(self, value: Any, options: dict | None = None) -> tuple[Report, Any]:
        """(the report, the typed value or None when the value is not an object of the shape); never raises."""
        try:
            return self._check(value, options)
        except RecursionError:
            return Report([error("$", "limit", "The value nests too deeply to check.", "G0")], self.source, None,
                          self.subject), None

    def validate(self, value: Any, options: dict | None = None) -> Report:
        """Every problem of `value`; never raises."""
        return self.check(value, options)[0]

    def located(self, value: Any, options: dict | None = None) -> Report:
        """The report of the located way alone (walk, lenient build, checks), whatever the compiled check says.

        `check` gives the same report faster; the tests hold the two to that.
        """
        try:
            return self._check(value, options, compiled=False)[0]
        except RecursionError:
            return self.check(value, options)[0]

    def _check(self, value: Any, options: dict | None, compiled: bool = True) -> tuple[Report, Any]:
        import msgspec

        if self._decoder is None:
            self._compile()
        typed = None
        if not compiled or self.plain:
            # the located way, or checks that read the plain value: decode the text once, with json
            value, issues = decode_json(value, "G0")
            if value is MISSING:
                return Report(issues, self.source, None, self.subject), None
        elif isinstance(value, _TEXT) or isinstance(value, Raw):
            try:  # decoded and checked in one pass
                typed = self._decoder.decode(value.data if isinstance(value, Raw) else value)
            except (msgspec.DecodeError, TypeError):
                # not JSON, or JSON of another shape: the standard decoder says which, and where
                value, issues = decode_json(value, "G0")
                if value is MISSING:
                    return Report(issues, self.source, None, self.subject), None
        if compiled and typed is None and type(value) is dict:
            try:  # checked and typed in one pass
                typed = msgspec.convert(value, self._struct, strict=True)
            except msgspec.ValidationError:
                pass
        seen = Seen(options)
        if typed is not None and self._post_ok(typed):
            issues = []
            read = value if self.plain else typed
            for check in self.checks:
                issues.extend(check(read, seen))
        else:
            if typed is not None:  # decoded, but a spelling or a Text constraint is wrong: walk the plain value
                value, _ = decode_json(value, "G0")
            issues = self.shape.walk(value)
            typed = self.shape.lenient(value)
            read = value if self.plain else typed
            for check in self.checks:
                try:
                    issues.extend(check(read, seen))
                except (TypeError, AttributeError, KeyError, ValueError, IndexError) as exc:  # pragma: no cover
                    # a check met a value so odd that its own guards missed it: say so, never crash
                    issues.append(warning("$", "unchecked", f"One rule could not be checked on this value ({exc}).", None))
        dialect = seen.dialect()
        if dialect == "mixed":
            issues.append(warning("$", "dialect", "The event mixes the spec's 'provider' spellings with the real "
                                                  "platform's 'aws' ones.", "G2"))
            dialect = None
        if not issues:
            report = self._clean.get(dialect)
            if report is None:  # reports are immutable: one clean report per dialect serves every call
                report = self._clean[dialect] = Report((), self.source, dialect, self.subject)
            return report, typed
        report = Report(issues, self.source, dialect, self.subject)
        return report, (typed if report.ok and isinstance(typed, self._struct) else None)
