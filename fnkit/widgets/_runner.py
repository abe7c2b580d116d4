"""HandlerRunner: run an example handler or your own on the built event; outcome, reason, rule, table."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from html import escape
from typing import Any

from .._engine.findings import place
from .._engine.report import ContractError, Issue
from .._optional import require
from .._running.handler_rules import raised, timed_out
from ..isolation import STOPPED_ERROR
from ._adapter import adapter_for
from ._builder import EventBuilder
from ._ui import COLOURS, CSS, error_sentence, issues_html, label_width
from ._view import OutcomeView, Shown, details_html

MAX_TIMEOUT_S = 30.0


class HandlerRunner(Shown):
    """Run a handler on an event the way the platform would, and show what the platform does.

    `HandlerRunner(builder=b, handler=fn)` runs `fn` (or an example, chosen in the
    dropdown) on `b.event` when the button is pressed or `run()` is called; `outcome`,
    `summary` (the word shown), `message` (the reason) and `issues` hold the result. A
    handler that raises, hangs or returns junk is shown as what it is, never as a
    traceback alone; the runner's `timeout_s` (default 1 s, at most 30) stops a hanging
    handler.

    The handler runs in a worker process (`fnkit.invoke`'s "process" isolation), so
    nothing it does can freeze the kernel. The button starts it and returns at once: the
    runner shows "running… 3.2 s" and a Stop button, which kills the worker process.
    From Python: `run()` waits (Jupyter's interrupt stops it), `start()` does not,
    `stop()` stops, `wait()` waits; `running`, `elapsed_s` and `stopped` say where it is.
    """

    def __init__(
        self,
        builder: EventBuilder | None = None,
        handler: Callable[..., Any] | str | None = None,
        *,
        event: Any = None,
        source: str | None = None,
        timeout_s: float = 1.0,
        **config: Any,
    ) -> None:
        w = require("ipywidgets", extra="widgets", feature="fnkit.widgets.HandlerRunner")

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
        self.stopped = False  # the last run was stopped (the Stop button, stop(), or Jupyter's interrupt)
        self._job: _Job | None = None
        self._lock = threading.Lock()  # one run at a time
        self._ui_lock = threading.RLock()  # the run's thread and its clock never draw over each other

        options: list[tuple[str, Callable[..., Any]]] = []
        if callable(handler):
            options.append((f"your handler: {getattr(handler, '__name__', 'handler')}", handler))
        elif handler is not None and handler not in self.adapter.examples:
            raise ValueError(
                f"no example handler {handler!r} for {self.source}; examples: {', '.join(self.adapter.examples)}"
            )
        options.extend((f"example: {name}", fn) for name, fn in self.adapter.examples.items())
        chosen = handler if callable(handler) else self.adapter.examples[handler or self.adapter.default_example]
        width = label_width(["Handler", *(f.label for f in self.adapter.config if f.kind != "bool")])
        self.handler_choice = w.Dropdown(
            options=options,
            value=chosen,
            description="Handler",
            style={"description_width": width},
            layout=w.Layout(width="98%"),
            tooltip="Your own function, or one of the examples.",
        )
        self.handler_choice.add_class(CSS["handler"])
        self.config_controls = self._settings_controls(config, width)
        self.button = w.Button(
            description="Run handler",
            icon="play",
            button_style="primary",
            tooltip="Invoke the handler with the event, as the platform would.",
        )
        self.button.add_class(CSS["run"])
        self.button.on_click(lambda _: self.start())  # never waits: the kernel stays free for Stop
        self.stop_button = w.Button(
            description="Stop",
            icon="stop",
            button_style="danger",
            tooltip="Stop the handler now: its worker process is killed; the kernel stays free.",
            layout=w.Layout(display="none", width="auto"),
        )
        self.stop_button.add_class(CSS["stop"])
        self.stop_button.on_click(lambda _: self.stop())
        self.clock = w.HTML("", layout=w.Layout(display="none", margin="0 0 0 8px"))
        self.clock.add_class(CSS["clock"])
        self.view = OutcomeView(self.adapter)
        title = w.HTML(f"<b>Handler runner</b> · {escape(self.adapter.title.lower())}")
        controls = w.HBox([self.button, self.stop_button, self.clock], layout=w.Layout(align_items="center"))
        self.widget = w.VBox([title, self.handler_choice, *self.config_controls.values(), controls, self.view.box])
        self.widget.add_class(CSS["runner"])
        self.widget.add_class(f"fnkit-runner-{self.source}")

    # --- the Python face ------------------------------------------------------------

    @property
    def handler(self) -> Callable[..., Any]:
        """The handler that `run()` calls."""
        handler: Callable[..., Any] = self.handler_choice.value
        return handler

    def use(self, handler: Callable[..., Any] | str) -> HandlerRunner:
        """Choose the handler: a function, or the name of an example."""
        if isinstance(handler, str):
            if handler not in self.adapter.examples:
                raise ValueError(f"no example handler {handler!r}; examples: {', '.join(self.adapter.examples)}")
            handler = self.adapter.examples[handler]
        values = [v for _, v in self.handler_choice.options]
        if handler not in values:
            label = f"your handler: {getattr(handler, '__name__', 'handler')}"
            self.handler_choice.options = [
                (label, handler),
                *[(lab, v) for lab, v in self.handler_choice.options if not lab.startswith("your handler")],
            ]
        self.handler_choice.value = handler
        return self

    def run(self) -> Any:
        """Run the handler on the current event and wait; the outcome (None when nothing could be decided).

        From a cell this waits until the handler is done, so the notebook's outputs are
        the same run after run. Jupyter's interrupt (■) stops it: the handler's worker
        process is killed, the runner shows "stopped", and the KeyboardInterrupt goes on
        to end the cell. The button does not wait (see `start`).
        """
        self._start(waited=True)
        try:
            return self.wait()
        except KeyboardInterrupt:
            self._stop("interrupt")
            raise

    def start(self) -> bool:
        """Start the handler on the current event and return at once (what the Run button does).

        While it runs the runner shows "running… 3.2 s" and a Stop button; `stop()` stops
        it, `wait()` waits for it. False when a run is already going on.
        """
        return self._start(waited=False)

    def _start(self, *, waited: bool) -> bool:
        with self._lock:
            if self.running:
                return False
            job = _Job()
            self._job = job
            self.runs += 1
            self.outcome = self.invocation = None
            self.stopped = False
        plan: _Plan | _Problem
        try:
            plan = self._plan()  # read the form here, on the caller's thread: what is run is what was shown
        except Exception as exc:  # noqa: BLE001 - the widget shows everything, it never raises
            plan = _fnkit_error(exc)
        job.plan = plan
        if isinstance(plan, _Problem):  # nothing to run: said at once
            with self._ui_lock:
                self.view.problem(plan.word, plan.message, plan.issues)
                job.ended = time.monotonic()
                job.done.set()
            return True
        self._show_running(plan, waited)
        job.thread = threading.Thread(target=self._work, args=(job, plan), name="fnkit-runner", daemon=True)
        job.thread.start()
        threading.Thread(target=self._tick, args=(job,), name="fnkit-runner-clock", daemon=True).start()
        return True

    def stop(self) -> bool:
        """Stop the run in progress now (what the Stop button does): its worker process is killed.

        Returns when the runner shows "stopped" (at most a few seconds; in practice at
        once), so the kernel answers again right away. False when nothing was running.
        """
        return self._stop("button")

    def wait(self, timeout_s: float | None = None) -> Any:
        """Wait for the run in progress (if any) to end; its outcome (None when stopped or nothing was decided)."""
        job = self._job
        if job is not None and not job.done.wait(timeout_s):
            raise TimeoutError(f"the handler is still running after {timeout_s:g} s; runner.stop() stops it")
        return self.outcome

    @property
    def running(self) -> bool:
        """True while a run started by `start()` (or the button) has not ended."""
        job = self._job
        return job is not None and not job.done.is_set()

    @property
    def elapsed_s(self) -> float:
        """Seconds the current run has taken so far (or the last run took)."""
        job = self._job
        if job is None:
            return 0.0
        end = job.ended if job.ended is not None else time.monotonic()
        return end - job.started

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
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

    def _plan(self) -> _Plan | _Problem:
        """What a run will do, read from the form now: a handler and event to run, or a problem to show."""
        event, report = self._current_event()
        if event is None:
            issues = list(report) if report is not None else []
            return _Problem(
                "no event",
                "The event builder cannot make an event right now: fix the problems it shows, then run again.",
                issues,
            )
        if isinstance(event, (str, bytes)):
            try:
                event = json.loads(event)
            except ValueError:
                pass
        check = self.adapter.module.validate_event(event)
        if not check.ok:
            return _Problem(
                "invalid event",
                "The platform never sends an event like this one, so the handler was not "
                "run: fix the problems below first.",
                list(check),
            )
        handler: object = self.handler  # whatever was chosen: a notebook can set anything
        if not callable(handler):
            return _Problem(
                "no handler",
                f"The handler is {type(handler).__name__}, not a function: pass def handler(event, context): ...",
            )
        return _Plan(handler, event, dict(self.config), self.timeout_s)

    def _work(self, job: _Job, plan: _Plan) -> None:
        """The run itself, on its own thread: invoke in a worker process (under the job's Stopper), then show."""
        try:
            problem: _Problem
            try:
                with job.stopper:  # a handler past the timeout is killed by fnkit.invoke itself
                    outcome = self.adapter.run(plan.handler, plan.event, plan.config, plan.timeout_s)
            except ContractError as exc:
                problem = _Problem(
                    "invalid event",
                    "The platform never sends an event like this one, so the handler was not run.",
                    list(exc.report),
                )
            except Exception as exc:  # noqa: BLE001 - shown, never raised
                problem = _fnkit_error(exc)
            else:
                job.ended = time.monotonic()
                invocation = getattr(outcome, "invocation", None)
                error = getattr(invocation, "error", None)
                if error is not None and error.type == STOPPED_ERROR:
                    with self._ui_lock:
                        self.invocation = invocation
                        self._show_stopped(job, plan)
                    return
                with self._ui_lock:
                    self.outcome, self.invocation = outcome, invocation
                    self._show_outcome(outcome, invocation)
                return
            with self._ui_lock:
                self.view.problem(problem.word, problem.message, problem.issues)
        except Exception as exc:  # noqa: BLE001 - a bug of the display itself: say so, never leave "running…"
            with self._ui_lock:
                self.view.problem("fnkit error", _fnkit_error(exc).message)
        finally:
            if job.ended is None:
                job.ended = time.monotonic()
            with self._ui_lock:
                job.done.set()
                self._show_idle()

    def _stop(self, how: str) -> bool:
        job = self._job
        if job is None or job.done.is_set():
            return False
        job.stop_reason = job.stop_reason or how
        job.stopper.stop()
        job.done.wait(STOP_WAIT_S)
        return True

    def _tick(self, job: _Job) -> None:
        """The running clock: 'running… 3.2 s', ten times a second, until the run ends."""
        while not job.done.wait(TICK_S):
            with self._ui_lock:
                if job.done.is_set():
                    return
                self.clock.value = _clock_html(time.monotonic() - job.started)

    # --- what is shown ------------------------------------------------------------------

    def _show_running(self, plan: _Plan, waited: bool) -> None:
        timeout = f"Your handler is running (this runner's timeout: {plan.timeout_s:g} s)."
        if waited:  # the kernel is busy with the cell that waits: a click on Stop would only queue behind it
            said = (
                f"{timeout} The cell that called run() waits for it: ■ (Kernel → Interrupt Kernel) stops it now. "
                "Run handler does not wait, and offers a Stop button."
            )
        else:
            said = f"{timeout} Stop stops it now; the notebook stays usable meanwhile."
        with self._ui_lock:
            self.view.problem("running…", said, tone="none")
            self.clock.value = _clock_html(0.0)
            self.clock.layout.display = ""
            self.stop_button.layout.display = "none" if waited else ""
            self.stop_button.disabled = False
            self.button.disabled = True
            self.widget.add_class(CSS["running"])

    def _show_idle(self) -> None:
        self.clock.value = ""
        self.clock.layout.display = "none"
        self.stop_button.layout.display = "none"
        self.button.disabled = False
        self.widget.remove_class(CSS["running"])

    def _show_outcome(self, outcome: Any, invocation: Any) -> None:
        extra: list[Issue] = []
        if invocation is not None:
            if getattr(invocation, "timed_out", False):
                said = (
                    f"Your handler did not return within {self.timeout_s:g} s (this runner's timeout), "
                    "so it was stopped and the platform counts the invocation as timed out."
                )
                extra += place(timed_out(invocation, "timeout", said), by=timed_out)
            elif getattr(invocation, "error", None) is not None:
                extra += place(raised(invocation, "error", error_sentence(invocation.error)), by=raised)
        self.view.show(outcome, extra=extra, details=details_html(invocation))
        if extra:  # the runner's plain-words sentence replaces the outcome's shorter one for the same fact
            same = {"error", "raised", "timeout"}
            kept = [i for i in getattr(outcome, "issues", ()) if not (i.path == "$" and i.code in same)]
            self.view.issues = [*extra, *kept]
            self.view.issue_list.value = issues_html(self.view.issues)

    def _show_stopped(self, job: _Job, plan: _Plan) -> None:
        """'stopped': said plainly, with what the platform does with a handler that does not return (its rule)."""
        from .._engine.codec import Invocation

        self.stopped = True
        self.outcome = None
        elapsed = (job.ended or time.monotonic()) - job.started
        who = "Jupyter's interrupt stopped" if job.stop_reason == "interrupt" else "You stopped"
        said = (
            f"{who} the handler after {elapsed:.1f} s, before it returned: its worker process was killed, and "
            "the kernel is free."
        )
        timed_out = Invocation(timed_out=True, timeout_s=plan.timeout_s, duration_ms=plan.timeout_s * 1000.0)
        if_timeout = self.adapter.outcome(plan.event, timed_out, plan.config)
        then = if_timeout.explanation
        platform = (
            "On the platform nobody presses Stop: a handler that never returns is stopped at its timeout, "
            f"and then: {then[:1].lower() + then[1:]}"
        )
        self.view.show(if_timeout, details=details_html(self.invocation))
        # the outcome's own "timed out" line would only repeat the sentence above
        self.view.issues = [i for i in self.view.issues if not (i.path == "$" and i.code == "timeout")]
        self.view.issue_list.value = issues_html(self.view.issues)
        self.view.shown_as("stopped", "bad", f"{said} {platform}")


TICK_S = 0.1  # how often the running clock moves
STOP_WAIT_S = 5.0  # stop() waits at most this long for the runner to show "stopped" (a kill takes milliseconds)


def _clock_html(seconds: float) -> str:
    return f"<span style='color:{COLOURS['none']}'>running… {seconds:.1f} s</span>"


class _Plan:
    """A run to make: the handler, the event and the settings, read when the run started."""

    def __init__(self, handler: Callable[..., Any], event: Any, config: dict[str, Any], timeout_s: float) -> None:
        self.handler, self.event, self.config, self.timeout_s = handler, event, config, timeout_s


class _Problem:
    """No run: what to show instead."""

    def __init__(self, word: str, message: str, issues: list[Issue] | None = None) -> None:
        self.word, self.message, self.issues = word, message, issues or []


def _fnkit_error(exc: BaseException) -> _Problem:
    return _Problem(
        "fnkit error",
        f"fnkit could not run this handler: {type(exc).__name__}: {exc}. This is a bug in "
        "fnkit; the handler itself may be fine.",
    )


class _Job:
    """One run: its thread, its Stopper, its clock, and why it was stopped (if it was)."""

    def __init__(self) -> None:
        from ..isolation import Stopper

        self.stopper = Stopper()
        self.started = time.monotonic()
        self.ended: float | None = None
        self.done = threading.Event()
        self.stop_reason = ""  # "button" or "interrupt"
        self.plan: _Plan | _Problem | None = None
        self.thread: threading.Thread | None = None
