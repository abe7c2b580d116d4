"""The exercises by id, what a check found (`CheckResult`), and the sentences every exercise shares."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from .._cells import short_ids_in, shorten
from .._engine.outcome import PROCESS_ENDED, what_it_did
from ._history import cell_run, stale_note
from ._placeholders import placeholders

CASE_TIMEOUT_S = 2.0
SHOWN_FINDINGS = 3


@dataclass
class CheckResult:
    """What a check found: `status` ('not done yet', 'passed', 'failed'), `message`, `problems` (one sentence each)."""

    exercise: str
    status: str
    message: str
    problems: list[str] = field(default_factory=list)
    cases: int = 0
    passed_cases: int = 0

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @staticmethod
    def status_of(message: str) -> str:
        """The status a check's message says ('passed', 'not done yet', 'failed'): how its text output is read back."""
        if message.startswith("done: all "):
            return "passed"
        return "not done yet" if message.startswith("not done yet") else "failed"

    def __str__(self) -> str:
        lines = [f"{self.exercise}: {self.message}"]
        lines += [f"  - {p}" for p in self.problems]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        from .._cells import panel_html

        tone = {"passed": "good", "failed": "bad"}.get(self.status, "mixed")
        mark = {"passed": "✔", "failed": "✘"}.get(self.status, "…")
        return panel_html(
            f"{mark} {self.exercise}: {self.message}",
            tone=tone,
            items=self.problems,
            css_class=f"fnkit-check fnkit-check-{self.status.replace(' ', '-')}",
            style="overflow-wrap:anywhere",
        )


@dataclass
class Case:
    """One hidden case: a name a learner understands, the event, and what the check needs."""

    name: str
    event: Mapping[str, Any]
    expect: Any = None
    config: dict[str, Any] = field(default_factory=dict)


class Finding(str):  # noqa: SLOT000 - it holds its `key`; a str subclass cannot have slots for it
    """One sentence a judge found, with the `key` of its kind: cases with the same key are one finding, said once."""

    key: str

    def __new__(cls, sentence: str, key: str | None = None) -> Self:
        self = super().__new__(cls, sentence)
        self.key = key if key is not None else getattr(sentence, "key", sentence)
        return self


class StopCases(Exception):
    """Stop running cases (the handler hangs: running more would only make the learner wait)."""


def _quote_names(names: list[str]) -> str:
    quoted = [f"'{n}'" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _findings(failures: list[tuple[str, Finding]]) -> list[str]:
    """One line per finding, naming every case it holds for: a finding is said once, with its first case's details."""
    by_key: dict[str, list[tuple[str, Finding]]] = {}
    for name, sentence in failures:
        by_key.setdefault(sentence.key, []).append((name, sentence))
    lines = []
    for group in by_key.values():
        names = [name for name, _ in group]
        sentences = {sentence for _, sentence in group}
        if len(sentences) == 1:  # the very same sentence: name every case
            lines.append(f"{'case' if len(names) == 1 else 'cases'} {_quote_names(names)}: {group[0][1]}")
        else:  # the same finding with other details: the first case's sentence, the others named
            lines.append(f"case '{names[0]}' (also {_quote_names(names[1:])}): {group[0][1]}")
    return lines


def not_done(label: str, handler: Any) -> CheckResult | None:
    """'not done yet' (naming every `...` left, with its cell and line) or 'failed' for a non-function.

    None when the handler is runnable.
    """
    if handler is None or handler is Ellipsis:
        return CheckResult(
            label, "not done yet", "not done yet: write your handler in its cell, run that cell, then this check."
        )
    if not callable(handler):
        return CheckResult(
            label,
            "failed",
            f"the handler is {type(handler).__name__}, not a function: write def handler(event, context): ...",
        )
    left = placeholders(handler)
    if not left:
        return None
    name = getattr(handler, "__name__", "your handler")
    run = cell_run(getattr(handler, "__code__", None))
    name += f" (as cell [{run}] defined it)" if run is not None else ""
    what = "a placeholder (...)" if len(left) == 1 else f"{len(left)} placeholders (...)"
    return CheckResult(
        label,
        "not done yet",
        f"not done yet: {name} still holds {what}; replace {'it' if len(left) == 1 else 'each'} "
        "with your code, run the handler's cell, then this check.",
        [str(p) for p in left],
    )


@dataclass
class Exercise:
    """One exercise: id, source, title, the hidden cases, and the judge of one case."""

    id: str
    source: str
    title: str
    cases: Callable[[], list[Case]]
    judge: Callable[[Callable[..., Any], Case], str | None]  # None when the case passes, else one sentence

    def check(self, handler: Any) -> CheckResult:
        """The hidden cases' verdict on `handler`; first, whether it is what its cell now says (`stale_note`)."""
        graded = self._grade(handler)
        note = stale_note(handler) if callable(handler) else None
        if note is None:
            return graded
        return CheckResult(
            self.id, "not done yet", note, [f"the earlier version: {graded.message}"], graded.cases, graded.passed_cases
        )

    def _grade(self, handler: Any) -> CheckResult:
        unfinished = not_done(self.id, handler)
        if unfinished is not None:
            return unfinished
        cases = self.cases()
        failures: list[tuple[str, Finding]] = []
        passed = 0
        for n, case in enumerate(cases, 1):
            try:
                problem = self.judge(handler, case)
            except StopCases as stop:
                return CheckResult(
                    self.id,
                    "failed",
                    f"the check stopped at hidden case {n} of {len(cases)}:",
                    [f"case '{case.name}': {stop}"],
                    len(cases),
                    passed,
                )
            except Exception as exc:  # noqa: BLE001 - a check must explain, never crash
                problem = f"the check itself failed ({type(exc).__name__}: {exc}); tell the workshop's teacher."
            if problem is None:
                passed += 1
            else:
                failures.append((case.name, Finding(short_ids_in(problem), getattr(problem, "key", None))))
        if not failures:
            return CheckResult(self.id, "passed", f"done: all {len(cases)} hidden cases pass.", [], len(cases), passed)
        findings = _findings(failures)
        shown = findings[:SHOWN_FINDINGS]
        if len(findings) > len(shown):
            shown.append(f"… and {len(findings) - len(shown)} more finding(s) once these are fixed.")
        return CheckResult(
            self.id, "failed", f"{len(cases) - passed} of {len(cases)} hidden cases fail:", shown, len(cases), passed
        )


_EXERCISES: dict[str, Exercise] = {}


def register(exercise: Exercise) -> Exercise:
    """Add an exercise to the workshop (its id must be new)."""
    if exercise.id in _EXERCISES:
        raise ValueError(f"two exercises have the id {exercise.id!r}")
    _EXERCISES[exercise.id] = exercise
    return exercise


def exercises() -> dict[str, str]:
    """Every exercise id with its title."""
    return {e.id: e.title for e in _EXERCISES.values()}


SOURCE_NAMES = {"queue": "the message queue", "mail": "the mail flow", "alb": "the load balancer"}


@dataclass
class ExerciseList:
    """The exercises of one source (or all), as the registry holds them: what a lesson's closing cell shows."""

    source: str | None
    rows: list[tuple[str, str]]

    def headline(self) -> str:
        on = f" on {SOURCE_NAMES.get(self.source, self.source)}" if self.source else ""
        return f"{len(self.rows)} exercise{'' if len(self.rows) == 1 else 's'}{on}:"

    def __str__(self) -> str:
        return "\n".join([self.headline(), *(f"- {exercise_id}: {title}" for exercise_id, title in self.rows)])

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        from .._cells import panel_html

        rows = [{"exercise": exercise_id, "what to do": title} for exercise_id, title in self.rows]
        return panel_html(self.headline(), rows=rows, css_class="fnkit-exercises")


def exercise_list(source: str | None = None) -> ExerciseList:
    """The exercises (of one source: "queue", "mail", "alb"), each with its id and title, from the registry."""
    return ExerciseList(source, [(e.id, e.title) for e in _EXERCISES.values() if source in (None, e.source)])


def check(exercise_id: str, handler: Any) -> CheckResult:
    """Run the hidden cases of an exercise on `handler`; a result that says what is wrong, one sentence per finding."""
    exercise = _EXERCISES.get(exercise_id)
    if exercise is None:
        known = ", ".join(_EXERCISES)
        return CheckResult(
            str(exercise_id), "failed", f"there is no exercise '{exercise_id}'; the exercises are: {known}."
        )
    return exercise.check(handler)


def try_it(handler: Any, event: Any, **config: Any) -> Any:
    """Run `handler` on an event of your own (a dict, or JSON text) as the platform would: the outcome, or why not.

    Never raises: an unfinished handler is "not done yet", JSON text that does not parse is
    located (line and column), an event the platform would never send is explained.
    """
    unfinished = not_done("try it", handler)
    if unfinished is not None:
        return unfinished
    from .. import _sources
    from .._engine.report import ContractError
    from .._learner.plain import json_problem

    if isinstance(event, (bytes, bytearray)):
        event = bytes(event).decode("utf-8", "replace")
    if isinstance(event, str):
        problem = json_problem(event, "event") if event.strip() else None
        if problem is not None or not event.strip():
            why = problem.message if problem is not None else "The event text is empty: write a JSON object."
            return CheckResult("try it", "failed", why)
    source = _sources.detect_source(event)
    if source is None:
        return CheckResult(
            "try it",
            "failed",
            "this is not an event of the queue, the mail flow or the load balancer: "
            "build one with queue.build_event, mail.build_event or alb.build_event.",
        )
    try:
        # the kernel must survive any handler: a worker process, whatever `run`'s own default
        return _sources.source_module(source).run(handler, event, **{"isolation": "process", **config})
    except ContractError as exc:
        issues = list(exc.report)
        return CheckResult(
            "try it",
            "failed",
            f"the platform never sends an event like this {source} event, so the handler was not run:",
            [short_ids_in(str(i)) for i in issues[:5]],
        )
    except TypeError as exc:  # a keyword this source's run does not take
        return CheckResult("try it", "failed", f"{source}.run does not take these settings: {exc}.")


# --- sentences every exercise shares ---------------------------------------------------------


def _where(error: Any) -> str:
    from .._learner.plain import locate_error

    return locate_error(error.traceback or "")


def raised_sentence(error: Any, hint: str = "", consequence: str = "") -> str:
    """'your handler raised KeyError: 'x' (in h, line 3: ...), <consequence>; <hint>' as one sentence."""
    if error.type == PROCESS_ENDED:
        text = f"your handler {what_it_did(error)}"
    else:
        text = f"your handler raised {error.type}" + (f": {shorten(error.message, 120)}" if error.message else "")
    where = _where(error)
    if where:
        text += f" ({shorten(where, 100)})"
    if consequence:
        text += f", {consequence}"
    return Finding(text + (f"; {hint.rstrip('.')}." if hint else "."), f"raised {error.type} {where} {hint}")


def _error_hint(error: Any) -> str:
    message = error.message or ""
    if error.type == "TypeError" and "'str' and 'int'" in message:
        return "every value in a record's attributes is a string: turn it into a number with int(...) before comparing."
    if error.type == "TypeError" and "positional argument" in message:
        return "a handler takes two arguments: def handler(event, context)."
    return ""


def invocation_problem(invocation: Any, hint: str = "", consequence: str = "") -> str | None:
    """One sentence for a handler that raised (StopCases for one that hung); None when it returned."""
    if invocation is None:
        return None
    if invocation.timed_out:
        raise StopCases(
            f"your handler did not return within {CASE_TIMEOUT_S:g} s, so it was stopped and the other "
            "cases were not run: look for a loop that never ends."
        )
    if invocation.error is not None:
        return raised_sentence(invocation.error, _error_hint(invocation.error) or hint, consequence)
    return None


def returned(invocation: Any) -> Any:
    """The value the handler returned, as the platform reads it.

    Decoded JSON; the Python value when JSON cannot encode it.
    """
    if invocation is None:
        return None
    if getattr(invocation, "encode_error", None):
        return invocation.returned
    return invocation.response()


def kind_of(value: Any) -> str:
    """'a list', 'a str', 'bytes', 'None' ... for a sentence."""
    if value is None:
        return "None"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    name = type(value).__name__
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"
