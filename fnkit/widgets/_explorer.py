"""ResponseExplorer: edit a response, see the platform's decision live; the spec's forms one click away."""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any

from .._engine.report import Issue, Raw, decode_json
from .._optional import require
from ..rules import id_of
from ._adapter import adapter_for
from ._builder import EventBuilder
from ._ui import CSS, issues_html, json_problem, label_width
from ._view import OutcomeView, Shown


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


class ResponseExplorer(Shown):
    """Type a response (or press one of the spec's forms) and see what the platform does with it.

    From Python: `x = ResponseExplorer(event, source="queue"); x.set_text('{"batchItemFailures": []}')`,
    then `x.outcome`, `x.summary` (the word shown), `x.message`, `x.issues`;
    `x.press("empty id")` loads one of the forms listed in `x.forms`.
    """

    def __init__(
        self,
        event: Any = None,
        source: str | None = None,
        *,
        builder: EventBuilder | None = None,
        text: str | None = None,
        **config: Any,
    ) -> None:
        w = require("ipywidgets", extra="widgets", feature="fnkit.widgets.ResponseExplorer")

        if source is None:
            if builder is not None:
                source = builder.source
            elif event is not None:
                from .._sources import detect_source

                source = detect_source(event) or "queue"
            else:
                source = "queue"
        self.adapter = adapter_for(source)
        self.source = self.adapter.source
        if event is None and builder is None:
            event = self.adapter.build({f.name: f.default for f in self.adapter.all_fields})
        self.builder = builder
        self._event = event
        self.outcome: Any = None
        groups_seen = list(dict.fromkeys(form.group for form in self.adapter.forms))
        width = label_width(["Response", *groups_seen, *(f.label for f in self.adapter.config if f.kind != "bool")])
        self.config_controls = self._settings_controls(config, width)
        for ctl in self.config_controls.values():
            ctl.observe(lambda _: self._decide(), names="value")
        self.response = w.Textarea(
            value="",
            rows=8,
            description="Response",
            style={"description_width": width},
            layout=w.Layout(width="98%"),
            tooltip="What the handler returns, as JSON text.",
        )
        self.response.add_class(CSS["response"])
        self.response.observe(lambda _: self._decide(), names="value")
        self.form_buttons: dict[str, Any] = {}
        rows = []
        groups: dict[str, list[Any]] = {}
        for form in self.adapter.forms:
            b = w.Button(
                description=form.label,
                tooltip=form.note or f"{form.group}: {form.label}",
                layout=w.Layout(width="auto", max_width="100%"),
            )
            b.add_class(CSS["form"])
            b.add_class(f"fnkit-form-{_slug(form.key)}")
            b.on_click(lambda _, label=form.label: self.press(label))
            self.form_buttons[form.label] = b
            groups.setdefault(form.group, []).append(b)
        for group, buttons in groups.items():
            head = w.HTML(
                f"<span style='display:inline-block;width:{width};color:#57606a'>{escape(group)}</span>",
                layout=w.Layout(flex="0 0 auto"),
            )
            # the buttons wrap within their own box, so a second line stays beside the group's name
            rows.append(w.HBox([head, w.HBox(buttons, layout=w.Layout(flex_flow="row wrap", flex="1 1 auto"))]))
        self.view = OutcomeView(self.adapter, idle="no response yet")
        title = w.HTML(f"<b>Response explorer</b> · {escape(self.adapter.title.lower())}")
        self.widget = w.VBox([title, *rows, *self.config_controls.values(), self.response, self.view.box])
        self.widget.add_class(CSS["explorer"])
        self.widget.add_class(f"fnkit-explorer-{self.source}")
        if builder is not None:
            builder.on_change(lambda _: self._decide())
        self.set_text(text if text is not None else self.adapter.default_response(self.event or {}))

    # --- the Python face ------------------------------------------------------------

    @property
    def event(self) -> Any:
        """The event the responses are judged against."""
        # the builder's (a dict or None), or the one given: a dict, or JSON text still to decode
        return self.builder.event if self.builder is not None else self._event

    @property
    def text(self) -> str:
        """The response text."""
        text: str = self.response.value
        return text

    @property
    def forms(self) -> dict[str, str]:
        """The spec's forms for the current event: label -> response text."""
        event = self.event or {}
        return {f.label: f.text(event) for f in self.adapter.forms}

    def set_text(self, text: str) -> ResponseExplorer:
        """Set the response text; the decision follows at once."""
        if self.response.value == text:
            self._decide()
        else:
            self.response.value = text
        return self

    def press(self, label: str) -> ResponseExplorer:
        """Load one of the spec's forms, as its button does: its label in `forms`, or its short key ("wrong key
        name")."""
        forms = self.forms
        if label not in forms:
            by_key = {f.key: f.label for f in self.adapter.forms}
            if label not in by_key:
                raise ValueError(f"no form {label!r}; forms: {', '.join(forms)}")
            label = by_key[label]
        return self.set_text(forms[label])

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs) or {}
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        return f"ResponseExplorer({self.source!r}: {self.summary})"

    # --- behaviour --------------------------------------------------------------------

    def _decide(self) -> None:
        self.outcome = None
        try:
            event = self.event
            if event is None:
                self.view.problem(
                    "no event",
                    "The event builder cannot make an event right now: fix the problems it shows first.",
                    list(self.builder.report) if self.builder is not None else [],
                )
                return
            if isinstance(event, (str, bytes, bytearray)):
                problem = json_problem(
                    event.decode("utf-8", "replace") if not isinstance(event, str) else event, "event"
                )
                if problem is not None:
                    self.view.problem(
                        "invalid event",
                        "The event given to the explorer is not JSON, so no response can be judged against it.",
                        [problem],
                    )
                    return
                event = json.loads(event)
            check = self.adapter.module.validate_event(event)
            if not check.ok:
                self.view.problem(
                    "invalid event",
                    "The platform never sends an event like this one: fix it before judging responses to it.",
                    check,
                )
                return
            text = self.response.value
            extra: list[Issue] = []
            if text.strip():
                problem = json_problem(text, "response")
                if problem is not None:
                    extra.append(problem)
            else:
                extra.append(
                    Issue(
                        "$",
                        "format",
                        "The response is empty: that is not JSON. "
                        "(A handler that returns nothing sends null: type null to see that case.)",
                        "error",
                        id_of(decode_json),
                    )
                )
            self.outcome = self.adapter.outcome(event, Raw(text), self.config)
            self.view.show(self.outcome, extra=extra)
            if extra:
                # the explorer's located sentence says "not JSON" in plainer words than the outcome's
                own = getattr(self.outcome, "issues", ()) or ()
                self.view.issues = [*extra, *[i for i in own if not (i.code == "format" and i.path == "$")]]
                self.view.issue_list.value = issues_html(self.view.issues)
        except Exception as exc:  # noqa: BLE001 - the widget shows everything, it never raises
            self.view.problem(
                "fnkit error",
                f"fnkit could not decide this response: {type(exc).__name__}: {exc}. This is a bug in fnkit.",
            )
