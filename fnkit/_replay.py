"""Replay: one handler over many events of any source, one row per record / recipient / request."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Callable

from ._invoke import capturing
from ._report import MISSING, ContractError, decode_json
from ._sources import detect_source, source_module

_COLUMNS = ["event", "source", "item", "result", "rule", "inferred", "reason"]


def _keywords(fn: Callable) -> set[str]:
    return {name for name, p in inspect.signature(fn).parameters.items() if p.kind is p.KEYWORD_ONLY}


def iter_events(events: Any) -> Iterable[Any]:
    """Events from a list, a JSON Lines file (optionally .gz) or a JSON file holding a list."""
    if isinstance(events, (str, Path)):
        from .corpus import load

        return load(events)
    if isinstance(events, dict):
        return [events]
    return events


def replay(handler: Callable[[Any, Any], Any], events: Any, **config: Any):
    """Run `handler` over every event (any source) and tabulate what the platform would do.

    Keywords go to each source's `run` when it takes them (`report_batch_item_failures`,
    `mode`, `fallback_action`, `multi_value`, `timeout_s`, `isolation`, ...); `source=` forces one source.
    One row per record / recipient / request; an invalid event is one row saying why.
    """
    import pandas as pd

    forced = config.pop("source", None)
    label = config.pop("label", None)
    runners: dict[str, tuple[Callable, dict]] = {}
    rows: list[dict] = []
    with capturing():
        for index, event in enumerate(iter_events(events)):
            value, issues = decode_json(event, "G0")
            source = forced or (detect_source(value) if value is not MISSING else None)
            if source is None:
                message = issues[0].message if issues else "not an event of a known source"
                rows.append({"event": index, "source": None, "item": None, "result": "invalid event", "rule": "G3" if not issues else "G0",
                             "inferred": True, "reason": message})
                continue
            if source not in runners:
                run = source_module(source).run
                accepted = _keywords(run)
                runners[source] = (run, {k: v for k, v in config.items() if k in accepted})
            run, options = runners[source]
            try:
                result = run(handler, value, **options)
            except ContractError as exc:
                first = exc.report.errors[0]
                rows.append({"event": index, "source": source, "item": None, "result": "invalid event", "rule": first.rule,
                             "inferred": False, "reason": f"{first.path}: {first.message}"})
                continue
            for row in result.rows():
                row["event"] = index
                row.setdefault("result", _result_of(source, row))
                rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        frame = pd.DataFrame(columns=_COLUMNS)
    ordered = [c for c in _COLUMNS if c in frame.columns] + [c for c in frame.columns if c not in _COLUMNS]
    frame = frame[ordered]
    if label is not None:
        frame.insert(0, "handler", label)
    return frame


def _result_of(source: str, row: dict) -> Any:
    # a common column across sources: what happened to this item
    if source == "queue":
        return row.get("action")
    if source == "mail":
        return row.get("action")
    return row.get("status")


def dumps_events(events: Iterable[Any]) -> str:
    """Events as JSON Lines text."""
    return "".join(json.dumps(e, separators=(",", ":"), ensure_ascii=False) + "\n" for e in events)
