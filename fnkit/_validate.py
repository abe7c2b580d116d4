"""The one place that walks a value against a shape and its rule checks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ._report import MISSING, Issue, Report, decode_json, error, warning
from ._shape import Shape

Check = Callable[[Any, "Seen"], Iterator[Issue]]


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


def validate_value(
    value: Any,
    shape: Shape,
    checks: list[Check],
    *,
    source: str,
    subject: str = "event",
    options: dict | None = None,
) -> Report:
    """Decode `value` when it is JSON text or bytes, then report every problem; never raises."""
    try:
        return _validate(value, shape, checks, source, subject, options)
    except RecursionError:
        return Report([error("$", "limit", "The value nests too deeply to check.", "G0")], source, None, subject)


def _validate(value, shape, checks, source, subject, options) -> Report:
    value, issues = decode_json(value, "G0")
    if value is MISSING:
        return Report(issues, source, None, subject)
    seen = Seen(options)
    fast = shape.fast(value)
    if not fast:
        issues.extend(shape.walk(value))
    for check in checks:  # when the shape holds, only the rule checks remain
        try:
            issues.extend(check(value, seen))
        except Exception as exc:  # noqa: BLE001
            # a check met a value so odd that its own guards missed it (a dict subclass whose
            # items() raises, say): say so, never crash
            issues.append(warning("$", "unchecked", f"One rule could not be checked on this value "
                                  f"({type(exc).__name__}: {exc}).", None))
    dialect = seen.dialect()
    if dialect == "mixed":
        issues.append(warning("$", "dialect", "The event mixes the spec's 'provider' spellings with the real platform's 'aws' ones.", "G2"))
        dialect = None
    return Report(issues, source, dialect, subject)
