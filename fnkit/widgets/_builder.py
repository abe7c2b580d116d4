"""EventBuilder: form fields, a live JSON preview you may edit, live validation."""

from __future__ import annotations

import json
from collections.abc import Callable
from html import escape
from typing import Any

from .._engine.report import Issue, Report, decode_json
from .._optional import require
from ..rules import id_of
from ._adapter import adapter_for
from ._fields import FieldError
from ._ui import COLOURS, CSS, Guard, issues_html, json_problem, label_width


class EventBuilder:
    """Build an event of one source with a form; see its JSON and its validation live.

    From Python: `b = EventBuilder("queue", seed=0); b.set(bodies=["a", "b"], fifo=True)`,
    then `b.event` (a dict, or None when no valid JSON can be made), `b.report` (what is
    wrong, located), `b.text` (the JSON shown). Editing the preview by hand (or
    `b.set_text(...)`) replaces the event with that text; `b.reset()` goes back to the form.
    """

    def __init__(self, source: str = "queue", **values: Any) -> None:
        w = require("ipywidgets", extra="widgets", feature="fnkit.widgets.EventBuilder")

        self.adapter = adapter_for(source)
        self.source = self.adapter.source
        self._guard = Guard()
        self._listeners: list[Callable[[EventBuilder], None]] = []
        self._event: dict[str, Any] | None = None
        self._text = ""
        self._report = Report((), self.source)
        self._edited = False
        self._fields = {f.name: f for f in self.adapter.all_fields}
        unknown = set(values) - set(self._fields)
        if unknown:
            raise TypeError(
                f"EventBuilder({self.source!r}) has no field {', '.join(sorted(unknown))}; "
                f"fields: {', '.join(self._fields)}"
            )
        width = label_width(f.label for f in self._fields.values() if f.kind != "bool")
        self.controls = {}
        self.field_errors = {}  # name -> the HTML under the field that says what is wrong with it
        for name, f in self._fields.items():
            ctl = f.control(values.get(name, f.default), width)
            ctl.observe(self._on_form, names="value")
            self.controls[name] = ctl
            error = w.HTML("", layout=w.Layout(display="none", margin=f"0 0 4px calc({width} + 8px)"))
            error.add_class(CSS["field_error"])
            self.field_errors[name] = error
        self.preview = w.Textarea(
            value="",
            rows=18,
            layout=w.Layout(width="98%"),
            description="Event JSON",
            style={"description_width": label_width(["Event JSON"])},
            tooltip="The event as JSON; edit it by hand to try broken events.",
        )
        self.preview.add_class(CSS["preview"])
        self.preview.observe(self._on_text, names="value")
        self.status = w.HTML("")
        self.issue_list = w.HTML("")
        self.issue_list.add_class(CSS["issues"])
        self.reset_button = w.Button(
            description="Rebuild from the form",
            icon="undo",
            tooltip="Throw away the hand edits and build the event from the form again.",
            layout=w.Layout(display="none", width="auto"),
        )
        self.reset_button.add_class(CSS["reset"])
        self.reset_button.on_click(lambda _: self.reset())
        title = w.HTML(f"<b>{escape(self.adapter.title)} builder</b>")
        # each field with its own error under it; the event's problems under the JSON they are about
        form = w.VBox(
            [w.VBox([self.controls[n], self.field_errors[n]]) for n in self._fields],
            layout=w.Layout(width="48%", min_width="320px"),
        )
        right = w.VBox(
            [self.preview, self.issue_list, self.reset_button], layout=w.Layout(width="50%", min_width="320px")
        )
        self.widget = w.VBox([title, self.status, w.HBox([form, right], layout=w.Layout(flex_flow="row wrap"))])
        self.widget.add_class(CSS["builder"])
        self.widget.add_class(f"fnkit-builder-{self.source}")
        self._rebuild()

    # --- the Python face ----------------------------------------------------------------

    @property
    def event(self) -> dict[str, Any] | None:
        """The current event (a fresh copy), or None when the form or the JSON text cannot make one."""
        return json.loads(json.dumps(self._event)) if self._event is not None else None

    @property
    def text(self) -> str:
        """The JSON text shown in the preview."""
        return self._text

    @property
    def report(self) -> Report:
        """What is wrong with the current event (or with the form), located; `.ok` when nothing is."""
        return self._report

    @property
    def issues(self) -> list[Issue]:
        """The issues of `report`, as a list."""
        return list(self._report)

    @property
    def edited(self) -> bool:
        """True while the event comes from a hand-edited JSON text instead of the form."""
        return self._edited

    @property
    def values(self) -> dict[str, Any]:
        """The form's values, as Python values (lists for lines, dicts for JSON fields)."""
        out = {}
        for name, f in self._fields.items():
            try:
                out[name] = f.from_control(self.controls[name].value)
            except FieldError:
                out[name] = self.controls[name].value
        return out

    def set(self, **values: Any) -> EventBuilder:
        """Set form fields (`bodies=[...]`, `fifo=True`, ...); the event is rebuilt once."""
        unknown = set(values) - set(self._fields)
        if unknown:
            raise TypeError(f"no field {', '.join(sorted(unknown))}; fields: {', '.join(self._fields)}")
        with self._guard:
            for name, value in values.items():
                self.controls[name].value = self._fields[name].to_control(value)
        self._edited = False
        self._rebuild()
        return self

    def set_text(self, text: str) -> EventBuilder:
        """Replace the event by this JSON text, as if typed into the preview."""
        with self._guard:
            self.preview.value = text
        self._take_text(text)
        return self

    def reset(self) -> EventBuilder:
        """Forget hand edits: build the event from the form again."""
        self._edited = False
        self._rebuild()
        return self

    def on_change(self, callback: Callable[[EventBuilder], None]) -> None:
        """Call `callback(builder)` whenever the event changes."""
        self._listeners.append(callback)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs) or {}
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        what = self.adapter.describe_event(self._event) if self._event is not None else "no event"
        state = "edited by hand" if self._edited else "from the form"
        return f"EventBuilder({self.source!r}: {what}, {self._report.summary()}, {state})"

    # --- behaviour ------------------------------------------------------------------

    def _on_form(self, change: dict[str, Any]) -> None:
        if self._guard.active:
            return
        self._edited = False
        self._rebuild()

    def _on_text(self, change: dict[str, Any]) -> None:
        if self._guard.active:
            return
        self._take_text(change["new"])

    def _rebuild(self) -> None:
        try:
            values = {name: f.from_control(self.controls[name].value) for name, f in self._fields.items()}
            event = self.adapter.build(values)
        except FieldError as exc:
            self._form_problem(exc.field.name, str(exc))
            return
        except (ValueError, TypeError, KeyError) as exc:
            self._form_problem(None, f"The form cannot make an event: {exc}.")
            return
        self._event = event
        self._text = json.dumps(event, indent=2, ensure_ascii=False)
        with self._guard:
            self.preview.value = self._text
        self._report = self._validate(event)
        self._show()

    def _form_problem(self, name: str | None, message: str) -> None:
        """A form value that cannot make an event: said beside its field (or under the JSON when no field is to
        blame)."""
        self._event = None
        where = self._fields[name].label if name in self._fields else "form"
        self._report = Report([Issue(where, "form", message, "error", None)], self.source, None, "form")
        self._show(note="The preview still shows the last event the form could build.", field=name)

    def _take_text(self, text: str) -> None:
        self._edited = True
        self._text = text
        problem = (
            json_problem(text, "event")
            if text.strip()
            else Issue(
                "$",
                "format",
                "The event text is empty: write a JSON object, or press 'Rebuild from the form'.",
                "error",
                id_of(decode_json),
            )
        )
        if problem is not None:
            self._event = None
            self._report = Report([problem], self.source, None, "event")
        else:
            value = json.loads(text)
            self._event = value if isinstance(value, dict) else None
            self._report = self._validate(value)
        self._show()

    def _validate(self, event: Any) -> Report:
        try:
            report: Report = self.adapter.module.validate_event(event)
            return report
        except Exception as exc:  # the widget must stay usable whatever happens  # noqa: BLE001
            return Report(
                [
                    Issue(
                        "$",
                        "internal",
                        f"fnkit could not check this event ({type(exc).__name__}: {exc}).",
                        "error",
                        None,
                    )
                ],
                self.source,
            )

    def _show(self, note: str = "", field: str | None = None) -> None:
        report = self._report
        origin = "edited by hand" if self._edited else "built from the form"
        if report.ok:
            what = self.adapter.describe_event(self._event) if self._event is not None else ""
            warn = f", {len(report.warnings)} warning(s)" if report.warnings else ""
            line = (
                f"<span style='color:{COLOURS['good']}'>✔ valid {escape(self.adapter.title.lower())}</span> "
                f"({escape(what)}{warn}) · {origin}"
            )
        elif field is not None:
            line = (
                f"<span style='color:{COLOURS['bad']}'>✖ {escape(self._fields[field].label)}</span>: "
                f"see the note under it · {origin}"
            )
        else:
            line = f"<span style='color:{COLOURS['bad']}'>✖ {len(report.errors)} problem(s)</span> · {origin}"
        if note:
            line += f" · <i>{escape(note)}</i>"
        self.status.value = line
        for name, error in self.field_errors.items():
            if name == field:
                message = report.errors[0].message
                error.value = f"<span style='color:{COLOURS['bad']};line-height:1.4'>✖ {escape(message)}</span>"
                error.layout.display = ""
            else:
                error.value, error.layout.display = "", "none"
        self.issue_list.value = issues_html(report) if field is None else ""
        self.reset_button.layout.display = "" if self._edited else "none"
        for callback in list(self._listeners):
            try:
                callback(self)
            except Exception:  # noqa: BLE001 - a listener's bug must not break the builder
                pass
