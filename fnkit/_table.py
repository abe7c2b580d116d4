"""Tables at the edge: anything fnkit returns, as a pandas DataFrame (an `fnkit.Table`), one row per item.

Above the sources and the core: nothing below imports it. How a cell is shown is fnkit/_cells.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._frame import Table


def rows_of(item: Any) -> list[dict[str, Any]]:
    """The rows one item contributes (an outcome or anything `Tabular`, a report, an invocation, a plain dict)."""
    from ._engine.codec import Invocation
    from ._engine.outcome import Tabular
    from ._engine.report import Report

    if isinstance(item, Tabular):
        return list(item.rows())
    if isinstance(item, Report):
        return [
            {
                "source": item.source,
                "path": i.path,
                "severity": i.severity,
                "code": i.code,
                "message": i.message,
                "rule": i.rule,
            }
            for i in item
        ]
    if isinstance(item, Invocation):
        return [
            {
                "status": item.status,
                "returned": item.response_text,
                "error": str(item.error) if item.error else None,
                "timed_out": item.timed_out,
                "duration_ms": round(item.duration_ms, 3),
                "logs": item.logs,
            }
        ]
    if isinstance(item, dict):
        return [item]
    raise TypeError(f"tabulate does not know how to show {type(item).__name__}")


def tabulate(items: Any) -> Table:
    """One DataFrame row per record / recipient / request / issue, from one item or many (or a DataFrame).

    The DataFrame (an `fnkit.Table`) shows itself readably in a notebook: whole texts,
    left-aligned, "—" where a value is absent.
    """
    from ._optional import require

    require("pandas", extra="frames", feature="fnkit.tabulate")
    from ._engine.report import Report
    from ._frame import Table

    if hasattr(items, "columns") and hasattr(items, "to_dict"):  # a DataFrame already: the same rows, shown readably
        return Table(items)
    # one item (a Report is a sequence of issues, but one item all the same) or many
    from ._engine.outcome import Tabular

    if isinstance(items, (Report, Tabular)) or not isinstance(items, Iterable) or isinstance(items, (dict, str, bytes)):
        items = [items]
    rows: list[dict[str, Any]] = []
    for item in items:
        rows.extend(rows_of(item))
    return Table(rows)
