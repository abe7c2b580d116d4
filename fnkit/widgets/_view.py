"""The panel that shows an outcome: a word, the reason, the deciding rule, the issues and a table."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any, Self

from .. import rules as _rules
from .._cells import short_ids_in
from .._engine.outcome import Outcome
from .._engine.report import Issue
from .._optional import require
from ._adapter import SourceAdapter
from ._ui import CSS, badge, issues_html, pre, table_html


class OutcomeView:
    """Widgets showing one outcome (or one problem); `summary` and `message` hold what is shown."""

    def __init__(self, adapter: SourceAdapter, *, idle: str = "not run yet") -> None:
        w = require("ipywidgets", extra="widgets", feature="fnkit.widgets")

        self.adapter = adapter
        self.summary = idle
        self.message = ""
        self.rule: str | None = None
        self.issues: list[Issue] = []
        self.rows: list[dict[str, Any]] = []
        self._rule_text = ""
        self.badge = w.HTML(badge(idle, "none"))
        self.badge.add_class(CSS["outcome"])
        self.reason = w.HTML("")
        self.reason.add_class(CSS["reason"])
        self.issue_list = w.HTML("")
        self.issue_list.add_class(CSS["issues"])
        self.table = w.HTML("")
        self.table.add_class(CSS["table"])
        self.details = w.HTML("")
        self.details.add_class(CSS["details"])
        self.box = w.VBox([self.badge, self.reason, self.issue_list, self.table, self.details])

    def show(self, outcome: Outcome, *, extra: Iterable[Issue] = (), details: str = "") -> None:
        """Show an outcome of this source (through the `Outcome` protocol: headline, tone, explanation, rule)."""
        word, tone = outcome.headline, outcome.tone
        rule = outcome.rule
        self.summary, self.rule = word, rule
        self.message = outcome.explanation
        own = list(outcome.issues)
        self.issues = [*extra, *own]
        try:
            self.rows = self.adapter.outcome_rows(outcome)
        except Exception as exc:  # a table that cannot be made must not hide the outcome  # noqa: BLE001
            self.rows = []
            details = f"(no table: {exc})" + details
        self.badge.value = badge(word, tone)
        rule_text = ""
        if rule:
            try:
                r = _rules.get(rule)
                rule_text = (
                    f" <span style='color:#57606a'>· rule <code>{escape(rule)}</code> "
                    f"({r.evidence}): {escape(r.summary)}</span>"
                )
            except KeyError:
                rule_text = f" <span style='color:#57606a'>· rule <code>{escape(rule)}</code></span>"
        self._rule_text = rule_text
        self.reason.value = _reason_html(self.message, rule_text)
        self.issue_list.value = issues_html(self.issues)
        cols = [c for c in self.adapter.columns if any(c in row for row in self.rows)] or None
        ids = self.adapter.id_columns
        shown = [
            {k: short_ids_in(v) if isinstance(v, str) and k not in ids else v for k, v in row.items()}
            for row in self.rows
        ]
        self.table.value = table_html(shown, cols, ids=ids)
        self.details.value = details

    def shown_as(self, word: str, tone: str, message: str) -> None:
        """Keep what is shown (issues, table, rule) under another word and sentence (a run that was stopped)."""
        self.summary, self.message = word, message
        self.badge.value = badge(word, tone)
        self.reason.value = _reason_html(message, self._rule_text if self.rule else "")

    def problem(
        self, word: str, message: str, issues: Iterable[Issue] = (), *, tone: str = "bad", details: str = ""
    ) -> None:
        """Show that no outcome could be decided, and why, in plain words."""
        self.summary, self.message, self.rule = word, message, None
        self.issues, self.rows = list(issues), []
        self.badge.value = badge(word, tone)
        self.reason.value = _reason_html(message)
        self.issue_list.value = issues_html(self.issues)
        self.table.value = ""
        self.details.value = details


def _reason_html(message: str, rule_text: str = "") -> str:
    """The reason, ids cut short (the whole sentence in the tooltip), then the deciding rule."""
    return (
        f"<div style='line-height:1.45;overflow-wrap:anywhere' title='{escape(message, quote=True)}'>"
        f"{escape(short_ids_in(message))}{rule_text}</div>"
    )


def details_html(invocation: Any) -> str:
    """What the handler returned and printed, for the runner."""
    if invocation is None:
        return ""
    parts = []
    text = getattr(invocation, "response_text", None)
    if getattr(invocation, "status", "") == "returned":
        if text is not None:
            shown = text if len(text) <= 2000 else text[:2000] + " …"
            parts.append(f"<b>returned</b>{pre(shown)}")
        elif getattr(invocation, "encode_error", None):
            parts.append(f"<b>returned</b> a value JSON cannot encode: {escape(str(invocation.encode_error))}")
    logs = getattr(invocation, "logs", "")
    if logs:
        shown = logs if len(logs) <= 2000 else logs[:2000] + " …"
        parts.append(f"<b>printed</b>{pre(shown, colour='#57606a')}")
    return "".join(parts)


class Shown:
    """What a widget with an OutcomeView (`self.view`) and config controls shows, read from Python."""

    view: OutcomeView
    config_controls: dict[str, Any]
    adapter: SourceAdapter
    source: str

    def _settings_controls(self, settings: dict[str, Any], width: str) -> dict[str, Any]:
        """One control per setting the widget shows, holding `settings` (checked by the source's configuration:
        a value out of range is a ValueError naming the rule), else the setting's default."""
        try:
            checked = self.adapter.check_settings(settings)
        except TypeError as exc:
            raise TypeError(f"{type(self).__name__}({self.source!r}) has {exc}") from None
        return {f.name: f.control(checked.get(f.name, f.default), width) for f in self.adapter.config}

    def set(self, **settings: Any) -> Self:
        """Set the settings shown as controls (queue: `report_batch_item_failures=False`; mail: `mode="async"`),
        checked by the source's configuration."""
        for name, value in self.adapter.check_settings(settings).items():
            field = next(f for f in self.adapter.config if f.name == name)
            self.config_controls[name].value = field.to_control(value)
        return self

    @property
    def summary(self) -> str:
        """The word shown as the outcome ('partial', '502 Bad Gateway', 'not run yet', ...)."""
        return self.view.summary

    @property
    def message(self) -> str:
        """The sentence shown under the outcome."""
        return self.view.message

    @property
    def issues(self) -> list[Issue]:
        """The issues shown (errors, warnings)."""
        return self.view.issues

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The rows of the table shown."""
        return self.view.rows

    @property
    def config(self) -> dict[str, Any]:
        """The outcome keywords set by the controls."""
        return {name: ctl.value for name, ctl in self.config_controls.items()}
