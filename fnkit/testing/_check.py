"""`fnkit.check`: explore a handler's contract with valid events and keep, per rule, the smallest event that breaks it.

Events come from the hypothesis strategies of `fnkit.testing.strategies` (valid by construction);
the handler runs as `run` runs it (`isolation`: in this process, or in a worker process where a
hang or a crash is a finding, not the end of the check); what the platform then does is the source's
own `outcome`, and a finding is any issue that outcome reports on the handler's answer (an error or a
warning: the handler raised, timed out or exited; the response is invalid or ignored; it names ids not
in the batch; a FIFO group goes on after a failure; a size limit is passed). The rule of a finding is the
rule the outcome cites, never one named here. Each rule's first example is shrunk by hypothesis to the
smallest event that still shows that rule, and that event is what the finding holds.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._engine.outcome import what_it_did

CHECK_SOURCES = ("queue", "mail", "alb")
DEFAULT_EXAMPLES = 200


@dataclass(frozen=True)
class CheckFinding:
    """One rule a handler breaks: the rule (as the outcome cites it), the shrunk event, the handler's answer,
    the sentence that says what is wrong, and what the platform then does."""

    rule: str
    severity: str
    sentence: str
    platform: str
    event: Any
    answer: Any
    path: str = "$"

    @property
    def says(self) -> str:
        """The sentence, then what the platform does (once, when the platform's sentence already holds it)."""
        return self.platform if self.sentence in self.platform else f"{self.sentence} {self.platform}"

    def to_row(self) -> dict[str, Any]:
        """The finding as one row (rule, severity, sentence, platform, answer, event)."""
        return {
            "rule": self.rule,
            "severity": self.severity,
            "sentence": self.sentence,
            "platform": self.platform,
            "answer": self.answer,
            "event": self.event,
        }


@dataclass(frozen=True)
class CheckResult:
    """What `fnkit.check` found: one `CheckFinding` per rule (empty when the handler kept its contract)."""

    source: str
    handler: str
    examples: int
    seed: int | None
    findings: tuple[CheckFinding, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        """True when no example broke the contract."""
        return not self.findings

    @property
    def rules(self) -> list[str]:
        """The rules broken, one each, in the order first met."""
        return [f.rule for f in self.findings]

    def __iter__(self) -> Iterator[CheckFinding]:
        return iter(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    def __getitem__(self, index: int) -> CheckFinding:
        return self.findings[index]

    def rows(self) -> list[dict[str, Any]]:
        """One row per finding (one per rule)."""
        return [f.to_row() for f in self.findings]

    def __str__(self) -> str:
        head = f"{self.handler} ({self.source}, {self.examples} examples"
        head += f", seed {self.seed})" if self.seed is not None else ")"
        if self.ok:
            return f"{head}: no finding"
        lines = [f"{head}: {len(self.findings)} finding(s)"]
        lines.extend(f"[{f.rule}] {f.severity}: {f.says}" for f in self.findings)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from html import escape

        from .._cells import html_table

        if self.ok:
            return f"<p>{escape(str(self))}</p>"
        columns = ["rule", "severity", "sentence", "platform", "answer", "event"]
        return f"<p>{escape(str(self).splitlines()[0])}</p>" + html_table(self.rows(), columns)


def _strategy(source: str) -> Any:
    from . import strategies

    made: Any = {"queue": strategies.queue_events, "mail": strategies.mail_events, "alb": strategies.alb_events}
    return made[source]()


def _answer(outcome: Any) -> Any:
    invocation = outcome.invocation
    if invocation is None:
        return None
    if invocation.timed_out:
        return f"timed out after {invocation.timeout_s} s"
    if invocation.error is not None:
        return what_it_did(invocation.error)
    return invocation.returned


def _defects(outcome: Any) -> dict[str, CheckFinding]:
    """The contract defects the outcome reports, by the rule each issue cites (else the outcome's rule)."""
    found: dict[str, CheckFinding] = {}
    for issue in outcome.issues:
        if issue.severity not in ("error", "warning"):
            continue
        rule = issue.rule or outcome.rule
        if rule not in found:
            found[rule] = CheckFinding(
                rule, issue.severity, issue.message, outcome.explanation, None, _answer(outcome), issue.path
            )
    return found


def _name(handler: Any) -> str:
    if isinstance(handler, str):
        return handler
    module = getattr(handler, "__module__", None) or "?"
    return f"{module}:{getattr(handler, '__qualname__', type(handler).__name__)}"


def check(
    handler: Callable[[Any, Any], Any] | str,
    source: str = "queue",
    *,
    examples: int = DEFAULT_EXAMPLES,
    seed: int | None = 0,
    isolation: str | None = None,
    database: str | Path | None = None,
    timeout_s: float | None = None,
    events: Any = None,
) -> CheckResult:
    """Run `handler` on up to `examples` valid events of `source`; one finding per rule it breaks, each with
    the smallest event that shows it (shrunk by hypothesis).

    `seed`: the same seed, the same events and findings (None: a fresh draw each time). `isolation`:
    where the handler runs, as in `fnkit.invoke` ("none": in this process, for mocks; "process": a
    worker, so a hang or a crash is a finding; default: the project's setting). `database`: a folder
    where each found case is kept and tried first next time, for runs without a seed (hypothesis replays
    no database for a seeded run; default: none kept). `timeout_s`: the
    function's timeout (default: the source's). `events`: a hypothesis strategy of
    valid events to draw instead of the source's own (`fnkit.testing.strategies.queue_events(bodies=...)`
    for bodies your handler understands). Needs hypothesis (`fnkit[testing]`).
    """
    if source not in CHECK_SOURCES:
        raise ValueError(f"source must be one of {', '.join(CHECK_SOURCES)}, not {source!r}")
    if type(examples) is not int or examples < 1:
        raise ValueError(f"examples must be a whole number of at least 1, not {examples!r}")
    from .._optional import MissingDependency

    try:
        import hypothesis
        from hypothesis.database import DirectoryBasedExampleDatabase
        from hypothesis.errors import NoSuchExample
    except ModuleNotFoundError as exc:
        raise MissingDependency("hypothesis", extra="testing", feature="fnkit.check") from exc
    import importlib

    from .._settings.project import resolve_isolation

    module = importlib.import_module(f"fnkit.{source}")
    run = module.run
    chosen = resolve_isolation(isolation)
    options: dict[str, Any] = {"isolation": chosen}
    if timeout_s is not None:
        options["timeout_s"] = timeout_s
    strategy = _strategy(source) if events is None else events
    name = _name(handler)

    def defects(event: Any) -> dict[str, CheckFinding]:
        return _defects(run(handler, event, **options))

    quiet = hypothesis.settings(
        deadline=None,
        suppress_health_check=list(hypothesis.HealthCheck),
        verbosity=hypothesis.Verbosity.quiet,
        print_blob=False,
    )
    explore = hypothesis.settings(quiet, max_examples=examples, database=None, phases=[hypothesis.Phase.generate])
    # a rule's example is found and shrunk; hypothesis's explain phase (what varies in a failing test's input,
    # for its own report) would only spend time: fnkit shows the shrunk event itself
    shrinking = [p for p in hypothesis.Phase if p is not hypothesis.Phase.explain]
    met: list[str] = []

    def note(event: Any) -> bool:
        for rule in defects(event):
            if rule not in met:
                met.append(rule)
        return False

    def rng() -> random.Random | None:
        return None if seed is None else random.Random(seed)

    # hypothesis replays a database only for unseeded runs: the rules met before come first, their cases replayed
    remembered = _remembered(database, source, name) if database is not None and seed is None else None
    if remembered is not None and remembered.is_file():
        met.extend(r for r in remembered.read_text(encoding="utf-8").split() if r)
    try:
        hypothesis.find(strategy, note, settings=explore, random=rng())
    except NoSuchExample:
        pass
    store = DirectoryBasedExampleDatabase(str(database)) if remembered is not None else None
    findings: list[CheckFinding] = []
    for rule in met:
        shrink = hypothesis.settings(quiet, max_examples=examples, database=store, phases=shrinking)
        key = hashlib.sha256(f"fnkit check {source} {name} {rule}".encode()).digest()

        def shows(event: Any, rule: str = rule) -> bool:
            return rule in defects(event)

        try:
            event = hypothesis.find(strategy, shows, settings=shrink, random=rng(), database_key=key)
        except NoSuchExample:  # a flaky handler: met once, never again
            continue
        shown = defects(event).get(rule)
        if shown is not None:
            findings.append(
                CheckFinding(rule, shown.severity, shown.sentence, shown.platform, event, shown.answer, shown.path)
            )
    if remembered is not None:
        remembered.write_text("".join(f"{f.rule}\n" for f in findings), encoding="utf-8")
    return CheckResult(source, name, examples, seed, tuple(findings))


def _remembered(database: str | Path, source: str, name: str) -> Path:
    """The file in the database folder that lists the rules this handler broke last time."""
    folder = Path(database)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"rules-{hashlib.sha256(f'{source} {name}'.encode()).hexdigest()[:16]}.txt"


def check_handler(
    handler: Callable[[Any, Any], Any] | str,
    source: str = "queue",
    *,
    examples: int = 100,
    seed: int | None = 0,
    isolation: str | None = "none",
    events: Any = None,
    timeout_s: float | None = None,
) -> CheckResult:
    """`check` inside a test: fails listing each rule broken with its shrunk event and the handler's answer.

    In this process by default (`isolation="none"`), so mocks set up by the test (moto, a patched
    client) are what the handler talks to; returns the result when the handler kept its contract.
    """
    import json

    result = check(
        handler, source, examples=examples, seed=seed, isolation=isolation, events=events, timeout_s=timeout_s
    )
    if not result.ok:
        lines = [str(result)]
        for f in result.findings:
            lines.append(f"[{f.rule}] answer: {json.dumps(f.answer, default=str, ensure_ascii=False)}")
            lines.append(f"[{f.rule}] event: {json.dumps(f.event, default=str, ensure_ascii=False)}")
        raise AssertionError("\n".join(lines))
    return result


__all__ = ["CHECK_SOURCES", "CheckFinding", "CheckResult", "check", "check_handler"]
