"""HandlerRunner: run an example handler or your own on the built event; outcome, reason, rule, table."""

from __future__ import annotations

import json
from html import escape
from typing import Any, Callable

from .._report import ContractError, Issue
from ._adapter import adapter_for
from ._builder import EventBuilder
from ._ui import CSS, error_sentence, issues_html, label_width
from ._view import OutcomeView, Shown, details_html

MAX_TIMEOUT_S = 30.0


class HandlerRunner(Shown):
    """Run a handler on an event the way the platform would, and show what the platform does.

    `HandlerRunner(builder=b, handler=fn)` runs `fn` (or an example, chosen in the
    dropdown) on `b.event` when the button is pressed or `run()` is called; `outcome`,
    `summary` (the word shown), `message` (the reason) and `issues` hold the result. A
    handler that raises, hangs or returns junk is shown as what it is, never as a
    traceback alone; the runner's `timeout_s` (default 1 s) stops a hanging handler.
    """

    def __init__(self, builder: EventBuilder | None = None, handler: Callable | str | None = None, *,
                 event: Any = None, source: str | None = None, timeout_s: float = 1.0, **config: Any) -> None:
        import ipywidgets as w

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
        if builder is None and event is None:
            builder = EventBuilder(self.source)
        self.builder = builder
        self._event = event
        self.timeout_s = min(float(timeout_s), MAX_TIMEOUT_S)
        self.outcome: Any = None
        self.invocation: Any = None
        self.runs = 0

        options: list[tuple[str, Callable]] = []
        if callable(handler):
            options.append((f"your handler: {getattr(handler, '__name__', 'handler')}", handler))
        elif handler is not None and handler not in self.adapter.examples:
            raise ValueError(f"no example handler {handler!r} for {self.source}; examples: {', '.join(self.adapter.examples)}")
        options.extend((f"example: {name}", fn) for name, fn in self.adapter.examples.items())
        chosen = handler if callable(handler) else self.adapter.examples[handler or self.adapter.default_example]
        width = label_width(["Handler", *(f.label for f in self.adapter.config if f.kind != "bool")])
        self.handler_choice = w.Dropdown(options=options, value=chosen, description="Handler",
                                         style={"description_width": width}, layout=w.Layout(width="98%"),
                                         tooltip="Your own function, or one of the examples.")
        self.handler_choice.add_class(CSS["handler"])
        self.config_controls = {}
        unknown = set(config) - {f.name for f in self.adapter.config}
        if unknown:
            raise TypeError(f"HandlerRunner({self.source!r}) has no setting {', '.join(sorted(unknown))}; settings: {', '.join(f.name for f in self.adapter.config)}")
        for f in self.adapter.config:
            ctl = f.control(config.get(f.name, f.default), width)
            self.config_controls[f.name] = ctl
        self.button = w.Button(description="Run handler", icon="play", button_style="primary",
                               tooltip="Invoke the handler with the event, as the platform would.")
        self.button.add_class(CSS["run"])
        self.button.on_click(lambda _: self.run())
        self.view = OutcomeView(self.adapter)
        title = w.HTML(f"<b>Handler runner</b> · {escape(self.adapter.title.lower())}")
        self.widget = w.VBox([title, self.handler_choice, *self.config_controls.values(), self.button, self.view.box])
        self.widget.add_class(CSS["runner"])
        self.widget.add_class(f"fnkit-runner-{self.source}")

    # --- the Python face ------------------------------------------------------------

    @property
    def handler(self) -> Callable:
        """The handler that `run()` calls."""
        return self.handler_choice.value

    def use(self, handler: Callable | str) -> "HandlerRunner":
        """Choose the handler: a function, or the name of an example."""
        if isinstance(handler, str):
            if handler not in self.adapter.examples:
                raise ValueError(f"no example handler {handler!r}; examples: {', '.join(self.adapter.examples)}")
            handler = self.adapter.examples[handler]
        values = [v for _, v in self.handler_choice.options]
        if handler not in values:
            label = f"your handler: {getattr(handler, '__name__', 'handler')}"
            self.handler_choice.options = [(label, handler), *[(lab, v) for lab, v in self.handler_choice.options if not lab.startswith("your handler")]]
        self.handler_choice.value = handler
        return self

    def set(self, **config: Any) -> "HandlerRunner":
        """Set outcome keywords (for the queue: `report_batch_item_failures=False`)."""
        for name, value in config.items():
            if name not in self.config_controls:
                raise TypeError(f"no setting {name!r}; settings: {', '.join(self.config_controls)}")
            f = next(f for f in self.adapter.config if f.name == name)
            self.config_controls[name].value = f.to_control(value)
        return self

    def run(self) -> Any:
        """Run the handler on the current event; the outcome (None when nothing could be decided)."""
        self.runs += 1
        self.outcome = self.invocation = None
        try:
            self._run()
        except Exception as exc:  # noqa: BLE001 - the widget shows everything, it never raises
            self.view.problem("fnkit error", f"fnkit could not run this handler: {type(exc).__name__}: {exc}. This is a bug in fnkit; the handler itself may be fine.")
        return self.outcome

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        bundle = self.widget._repr_mimebundle_(**kwargs) or {}
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        name = getattr(self.handler, "__name__", "handler")
        return f"HandlerRunner({self.source!r}, handler={name}: {self.summary})"

    # --- behaviour --------------------------------------------------------------------

    def _current_event(self) -> Any:
        if self.builder is not None:
            return self.builder.event, self.builder.report
        return self._event, None

    def _run(self) -> None:
        event, report = self._current_event()
        if event is None:
            issues = list(report) if report is not None else []
            self.view.problem("no event", "The event builder cannot make an event right now: fix the problems it shows, then run again.", issues)
            return
        if isinstance(event, (str, bytes)):
            try:
                event = json.loads(event)
            except ValueError:
                pass
        check = self.adapter.module.validate_event(event)
        if not check.ok:
            self.view.problem("invalid event", "The platform never sends an event like this one, so the handler was not run: fix the problems below first.", check)
            return
        handler = self.handler
        if not callable(handler):
            self.view.problem("no handler", f"The handler is {type(handler).__name__}, not a function: pass def handler(event, context): ...")
            return
        try:  # a handler past the timeout is stopped by fnkit.invoke itself
            outcome = self.adapter.run(handler, event, self.config, self.timeout_s)
        except ContractError as exc:
            self.view.problem("invalid event", "The platform never sends an event like this one, so the handler was not run.", exc.report)
            return
        self.outcome = outcome
        invocation = getattr(outcome, "invocation", None)
        self.invocation = invocation
        extra: list[Issue] = []
        if invocation is not None:
            if getattr(invocation, "timed_out", False):
                extra.append(Issue("$", "timeout", f"Your handler did not return within {self.timeout_s:g} s (this runner's timeout), so it was stopped and the platform counts the invocation as timed out.", "error", "H4"))
            elif getattr(invocation, "error", None) is not None:
                extra.append(Issue("$", "error", error_sentence(invocation.error), "error", "H3"))
        self.view.show(outcome, extra=extra, details=details_html(invocation))
        if extra:  # the runner's plain-words sentence replaces the outcome's shorter one for the same fact
            same = {"error", "raised", "timeout"}
            kept = [i for i in getattr(outcome, "issues", ()) if not (i.path == "$" and i.code in same)]
            self.view.issues = [*extra, *kept]
            self.view.issue_list.value = issues_html(self.view.issues)
