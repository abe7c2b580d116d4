"""Tables at the edge: anything fnkit returns, as a pandas DataFrame."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def rows_of(item: Any) -> list[dict]:
    """The rows one item contributes (outcome, report, invocation, simulation result or plain dict)."""
    from ._invoke import Invocation
    from ._report import Report

    if hasattr(item, "rows") and callable(item.rows):
        return list(item.rows())
    if isinstance(item, Report):
        return [
            {"source": item.source, "path": i.path, "severity": i.severity, "code": i.code, "message": i.message, "rule": i.rule}
            for i in item
        ]
    if isinstance(item, Invocation):
        return [{
            "status": item.status,
            "returned": item.response_text,
            "error": str(item.error) if item.error else None,
            "timed_out": item.timed_out,
            "duration_ms": round(item.duration_ms, 3),
            "logs": item.logs,
        }]
    if isinstance(item, dict):
        return [item]
    raise TypeError(f"tabulate does not know how to show {type(item).__name__}")


def tabulate(items: Any):
    """One DataFrame row per record / recipient / request / issue, from one item or many."""
    import pandas as pd

    from ._report import Report

    # one item (a Report is a sequence of issues, but one item all the same) or many
    if isinstance(items, Report) or not isinstance(items, Iterable) or isinstance(items, (dict, str, bytes)) \
            or hasattr(items, "rows"):
        items = [items]
    rows: list[dict] = []
    for item in items:
        rows.extend(rows_of(item))
    return pd.DataFrame(rows)
