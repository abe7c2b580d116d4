"""Small pieces every widget shares: CSS class names, HTML rendering, plain-words errors."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from html import escape
from typing import Any, Self

from .._cells import html_table, short_ids_in
from .._engine.outcome import what_it_did
from .._engine.report import Issue, Report
from .._learner.plain import json_problem as json_problem
from .._learner.plain import locate_error as locate_error

# CSS classes on the key controls, so a browser (and a person reading the DOM) finds them.
CSS = {
    "builder": "fnkit-builder",
    "runner": "fnkit-runner",
    "explorer": "fnkit-explorer",
    "preview": "fnkit-preview",
    "issues": "fnkit-issues",
    "outcome": "fnkit-outcome",
    "reason": "fnkit-reason",
    "table": "fnkit-table",
    "run": "fnkit-run",
    "stop": "fnkit-stop",  # the runner's Stop button (shown while a handler runs)
    "running": "fnkit-running",  # on the runner while a handler runs
    "clock": "fnkit-clock",  # the runner's "running… 3.2 s"
    "response": "fnkit-response",
    "form": "fnkit-form",
    "reset": "fnkit-reset",
    "handler": "fnkit-handler",
    "details": "fnkit-details",
    "field_error": "fnkit-field-error",
}

COLOURS = {"good": "#1a7f37", "mixed": "#9a6700", "bad": "#cf222e", "none": "#57606a"}

_BADGE = "display:inline-block;padding:2px 10px;border-radius:12px;color:#fff;font-weight:600"


def label_width(labels: Iterable[str]) -> str:
    """A description width that fits the longest label whole (CSS `ch`: the width of one digit)."""
    return f"{max([10, *(len(label) + 3 for label in labels)])}ch"


def field_class(name: str) -> str:
    """The CSS class of one builder field (`fnkit-field-bodies`)."""
    return "fnkit-field-" + name.replace("_", "-")


def badge(text: str, tone: str) -> str:
    """A coloured pill with the outcome's word."""
    colour = COLOURS.get(tone, COLOURS["none"])
    return f"<span class='fnkit-outcome-badge' style='{_BADGE};background:{colour}'>{escape(text)}</span>"


def issues_html(issues: Iterable[Issue], *, empty: str = "") -> str:
    """A list of issues, errors first, each with its path, sentence and rule (long ids cut with an ellipsis)."""
    items = sorted(issues, key=lambda i: i.severity != "error")
    if not items:
        return f"<span style='color:{COLOURS['good']}'>{escape(empty)}</span>" if empty else ""
    lines = []
    for i in items:
        mark, colour = ("✖", COLOURS["bad"]) if i.severity == "error" else ("⚠", COLOURS["mixed"])
        rule = f" <code>[{escape(i.rule)}]</code>" if i.rule else ""
        where = f"<code>{escape(i.path)}</code>: " if i.path else ""
        lines.append(
            f"<li style='color:{colour}'>{mark} {where}<span style='color:#24292f' "
            f"title='{escape(i.message, quote=True)}'>{escape(short_ids_in(i.message))}</span>{rule}</li>"
        )
    return f"<ul style='margin:2px 0;padding-left:18px;line-height:1.45;overflow-wrap:anywhere'>{''.join(lines)}</ul>"


def table_html(rows: list[dict[str, Any]], columns: list[str] | None = None, *, ids: Iterable[str] = ()) -> str:
    """A readable HTML table of row dicts (no pandas needed): `fnkit._cells.html_table`, ids cut with an ellipsis."""
    if not rows:
        return ""
    return html_table(rows, columns, ids=set(ids))


def pre(text: str, *, colour: str | None = None) -> str:
    """Preformatted text, escaped."""
    style = (
        f" style='color:{colour};white-space:pre-wrap;margin:2px 0'"
        if colour
        else " style='white-space:pre-wrap;margin:2px 0'"
    )
    return f"<pre{style}>{escape(text)}</pre>"


def error_sentence(error: Any) -> str:
    """A raised error in plain words, located in the learner's code when possible."""
    where = locate_error(getattr(error, "traceback", "") or "")
    text = f"Your handler {what_it_did(error)}"
    if where:
        text += f" ({where})"
    text += "."
    if error.type == "TypeError" and "positional argument" in (error.message or ""):
        text += " A handler takes two arguments: def handler(event, context)."
    return text


def report_of(issues: Iterable[Issue], source: str | None, subject: str) -> Report:
    """A Report from loose issues."""
    return Report(list(issues), source, None, subject)


class Guard:
    """Re-entrancy guard: widget updates made by code must not look like the learner's edits."""

    def __init__(self) -> None:
        self._local = threading.local()

    def __enter__(self) -> Self:
        self._local.depth = getattr(self._local, "depth", 0) + 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._local.depth -= 1

    @property
    def active(self) -> bool:
        return getattr(self._local, "depth", 0) > 0
