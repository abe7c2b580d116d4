"""A mail-flow rule on a virtual clock: attempts, retries with backoff, the fallback (M2, M3, M8).

Schedule (M3 says "exponential backoff" and no more; this is fnkit's reading, configurable):
attempt 1 starts at 0 s. When an attempt fails, it ends after its duration on the virtual
clock: the full `response_timeout_s` when the function did not answer in time, else 0
(the handler's real run time is kept on the attempt's invocation but never moves the
virtual clock, so runs are the same every time); the next attempt starts `backoff_initial_s` (60 s) later, and each
further wait is `backoff_factor` (2) times the one before, capped at `backoff_max_s`
(30 min): waits of 1, 2, 4, 8, 16, 30, 30... minutes. An attempt starts only if its whole
response window still ends within the rule timeout, so no attempt starts after the rule
timeout and none runs past it. Rule timeout 0: no retries. Then the fallback action
applies to all recipients. Every attempt carries the same event, so the same
`invocationId` (M1). No real time passes: only the handler's own call is real, and it is
cut at `response_timeout_s`.

An asynchronous rule invokes once; the answer is ignored and delivery is unaffected (M8).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Unpack

from .._engine.codec import Invocation
from .._engine.outcome import Display, Grid, outcome_html, outcome_row
from .._engine.report import Report
from .._optional import require
from .._running.inprocess import Handler, stops_in_one_sentence
from .._settings.config import with_settings
from .._settings.project import Isolation
from ._config import MailConfig, MailSettings
from ._content import MessageStore

if TYPE_CHECKING:
    import pandas as pd
from ._event import decode_event
from ._outcome import (
    MailOutcome,
    _n,
    call_handler,
    ensure_message,
    envelope_recipients,
    fallback_outcome,
    invocation_failure,
    outcome,
    with_content,
)

RESULTS = ("applied", "error", "timeout", "invalid", "ignored")
# MailRule.run's bound on attempts when the caller sets none: the rule timeout ends the retries on the
# virtual clock, but short waits (backoff_max_s) under a long rule timeout could mean thousands of real
# calls of a handler that always fails
BOUND_ATTEMPTS = 25


@dataclass(frozen=True)
class Attempt:
    """One invocation of the function by the rule: when (virtual s), what came of it."""

    number: int
    time_s: float
    invocation_id: str
    result: str  # applied | error | timeout | invalid | ignored (asynchronous)
    invocation: Invocation
    issues: Report
    duration_s: float

    def row(self) -> dict[str, Any]:
        """The attempt as a table row."""
        return {
            "source": "mail",
            "attempt": self.number,
            "time_s": self.time_s,
            "invocation_id": self.invocation_id,
            "result": self.result,
            "duration_s": self.duration_s,
            "error": str(self.invocation.error) if self.invocation.error else None,
            "issues": "; ".join(str(i) for i in self.issues.errors),
        }


@dataclass(frozen=True)
class MailRun:
    """What a `MailRule` did with one message: its attempts and the final outcome."""

    attempts: tuple[Attempt, ...]
    outcome: MailOutcome
    rule_timeout_s: float
    # None, or the sentence saying the run stopped at MailRule.run's bound on attempts
    stopped: str | None = None

    @property
    def delivered_content(self) -> bytes | None:
        """The raw message delivered after a replacement (M9), or None when unchanged."""
        return self.outcome.delivered_content

    @property
    def invocation_id(self) -> str:
        """The invocationId every attempt carried."""
        return self.attempts[0].invocation_id

    def rows(self) -> list[dict[str, Any]]:
        """One dict per recipient (the outcome's rows), with the number of attempts."""
        return [{**row, "attempts": len(self.attempts)} for row in self.outcome.rows()]

    def attempt_rows(self) -> list[dict[str, Any]]:
        """One dict per attempt."""
        return [a.row() for a in self.attempts]

    def to_frame(self) -> pd.DataFrame:
        """The recipients' rows as a pandas DataFrame."""
        require("pandas", extra="frames", feature="MailRun.to_frame()")
        import pandas as pd

        return pd.DataFrame(self.rows())

    def attempts_frame(self) -> pd.DataFrame:
        """The attempts as a pandas DataFrame."""
        require("pandas", extra="frames", feature="MailRun.attempts_frame()")
        import pandas as pd

        return pd.DataFrame(self.attempt_rows())

    def __repr__(self) -> str:
        steps = ", ".join(f"{a.result}@{a.time_s:g}s" for a in self.attempts)
        text = f"<MailRun {_n(len(self.attempts), 'attempt')} ({steps}) -> {self.outcome!r}>"
        return text if self.stopped is None else f"{text}\n{self.stopped}"

    # -- the Outcome protocol: the final outcome's, with the attempts ------------------------

    source: ClassVar[str] = "mail"
    result_column: ClassVar[str] = "action"

    @property
    def rule(self) -> str:
        """The rule that decided the final outcome."""
        return self.outcome.rule

    @property
    def inferred(self) -> bool:
        """True when the final outcome's rule (or its reading) is inferred."""
        return self.outcome.inferred

    @property
    def explanation(self) -> str:
        """The final outcome's sentence (which says how many attempts failed first)."""
        return self.outcome.explanation

    @property
    def headline(self) -> str:
        """The final outcome's headline ("applied: 2 DEFAULT")."""
        return self.outcome.headline

    @property
    def tone(self) -> str:
        """The final outcome's tone."""
        return self.outcome.tone

    @property
    def issues(self) -> Report:
        """The final outcome's issues."""
        return self.outcome.issues

    @property
    def invocation(self) -> Invocation | None:
        """The last attempt's invocation."""
        return self.outcome.invocation

    def _display(self) -> Display:
        attempts = [
            {"attempt": a.number, "time (s)": a.time_s, "result": a.result, "invocationId": a.invocation_id}
            for a in self.attempts
        ]
        grid = Grid(attempts, ["attempt", "time (s)", "result", "invocationId"], ("invocationId",))
        return Display([grid, *self.outcome._display().tables])

    to_row = outcome_row
    _repr_html_ = outcome_html


class MailRule:
    """A mail-flow rule invoking a function: synchronous or asynchronous, fallback, rule timeout (M2).

    Its settings are a `MailConfig` (`config=`, or its fields as keywords); a configuration
    the platform refuses raises ValueError naming the rule. `seed`: the jitter's; `store`:
    the `MessageStore` holding the raw messages (default: `default_store()`).
    """

    @with_settings(MailConfig)
    def __init__(
        self, *, config: MailConfig | None = None, seed: int = 0, store: Any = None, **settings: Unpack[MailSettings]
    ) -> None:
        config = MailConfig.of(config, settings, MailRule.__init__)
        self.config = config
        self.seed = seed
        self.store = store

    def __getattr__(self, name: str) -> Any:
        # the settings read as attributes (rule.mode, rule.fallback_action, ...): the config's, never a copy
        config = self.__dict__.get("config")
        if config is None or name not in MailConfig.names():
            raise AttributeError(f"'MailRule' object has no attribute {name!r}")
        return getattr(config, name)

    def __repr__(self) -> str:
        return (
            f"MailRule(mode={self.mode!r}, fallback_action={self.fallback_action!r}, "
            f"rule_timeout_minutes={self.rule_timeout_minutes:g}, response_timeout_s={self.response_timeout_s:g})"
        )

    @property
    def rule_timeout_s(self) -> float:
        """The rule timeout in seconds."""
        return self.config.rule_timeout_s

    def backoff_s(self, retry: int, rng: random.Random | None = None) -> float:
        """The wait before retry number `retry` (1 = the first retry)."""
        wait: float = min(self.backoff_initial_s * self.backoff_factor ** (retry - 1), self.backoff_max_s)
        if self.jitter and rng is not None:
            wait *= 1 + self.jitter * rng.uniform(-1, 1)
        return wait

    def schedule(self) -> list[float]:
        """Start times (virtual s) of the attempts when every one of them times out."""
        rng = random.Random(self.seed)
        times, t = [0.0], 0.0
        while self.mode == "sync":
            t = round(t + self.response_timeout_s + self.backoff_s(len(times), rng), 3)
            if t + self.response_timeout_s > self.rule_timeout_s:
                return times
            times.append(t)
        return times

    @stops_in_one_sentence("the mail rule's run")
    def run(
        self,
        handler: Handler | str,
        event: Any,
        *,
        max_attempts: int | None = None,
        isolation: Isolation | None = None,
    ) -> MailRun:
        """Deliver `event` through this rule: invoke `handler`, retry on failure, fall back (M3).

        The retries end with the rule timeout; besides, the run stops after `max_attempts` attempts
        (BOUND_ATTEMPTS, 25, when not given), and then says so in `MailRun.stopped` (a RuntimeWarning
        too) when the rule would have gone on retrying.
        `isolation`: where the handler runs ("none", the default: in this process, like a call;
        "process" or "thread", see `fnkit.invoke`).
        """
        if max_attempts is not None and max_attempts < 1:
            raise ValueError(f"max_attempts must be 1 or more, not {max_attempts!r}")
        from ._content import default_store

        value, _ = decode_event(event)
        store = self.store if self.store is not None else default_store()
        ensure_message(store, value)
        base = store.now_s
        limit = BOUND_ATTEMPTS if max_attempts is None else max_attempts
        try:
            attempts, clients, final, stopped = self._attempts(handler, value, store, base, isolation, limit)
        finally:
            store.now_s = base
        final = with_content(final, clients, store, value["messageId"])
        if stopped is not None:
            import warnings

            warnings.warn(stopped, RuntimeWarning, stacklevel=3)
        return MailRun(tuple(attempts), final, self.rule_timeout_s, stopped)

    def _attempts(
        self,
        handler: Handler | str,
        event: dict[str, Any],
        store: MessageStore,
        base: float,
        isolation: str | None,
        limit: int,
    ) -> tuple[list[Attempt], list[Any], MailOutcome, str | None]:
        """Invoke until an attempt counts, the rule timeout leaves no room (virtual clock from `base`) or
        `limit` attempts are made; the last with the sentence saying the run stopped there."""
        rng = random.Random(self.seed)
        attempts: list[Attempt] = []
        clients: list[Any] = []  # each attempt's message content API (what it replaced)
        t = 0.0
        while True:
            store.now_s = base + t
            invocation, client = call_handler(
                handler,
                event,
                store=store,
                mode=self.mode,
                timeout_s=self.response_timeout_s,
                attempt=len(attempts) + 1,
                at_s=t,
                isolation=isolation,
            )
            clients.append(client)
            result_outcome = outcome(event, invocation, config=self.config)
            result, duration = self._result(invocation, result_outcome)
            attempts.append(
                Attempt(
                    len(attempts) + 1, t, event["invocationId"], result, invocation, result_outcome.issues, duration
                )
            )
            if result in ("applied", "ignored") or self.mode == "async":
                return attempts, clients, self._finish_applied(result_outcome, attempts), None
            next_t = t + duration + self.backoff_s(len(attempts), rng)
            if next_t + self.response_timeout_s > self.rule_timeout_s:
                return attempts, clients, self._finish_fallback(event, result_outcome, attempts), None
            if len(attempts) >= limit:
                stopped = (
                    f"The simulation stopped at its bound of {_n(limit, 'attempt')}, all failed, at {t:,.0f} virtual "
                    f"seconds: the rule would retry until its timeout ({self.rule_timeout_minutes:g} min) and "
                    "then apply the fallback action shown here."
                )
                return attempts, clients, self._finish_fallback(event, result_outcome, attempts, True), stopped
            t = round(next_t, 3)

    def _result(self, invocation: Invocation, result_outcome: MailOutcome) -> tuple[str, float]:
        """What came of one attempt, and how long it took on the virtual clock."""
        took = 0.0  # real run time would make the schedule differ from run to run
        failure = invocation_failure(invocation, self.response_timeout_s)
        if failure is not None and failure[0] == "timeout":
            took = self.response_timeout_s
        if self.mode == "async":
            return (failure[0] if failure else "ignored"), took
        if result_outcome.status == "applied":
            return "applied", took
        return (failure[0] if failure else "invalid"), took

    def _finish_applied(self, result_outcome: MailOutcome, attempts: list[Attempt]) -> MailOutcome:
        if len(attempts) == 1:
            return result_outcome
        last = attempts[-1]
        prefix = (
            f"After {_n(len(attempts) - 1, 'failed attempt')} (same invocationId), attempt {last.number} "
            f"at {last.time_s:g} s succeeded. "
        )
        return replace(result_outcome, reason=prefix + result_outcome.reason)

    def _finish_fallback(
        self, event: dict[str, Any], last: MailOutcome, attempts: list[Attempt], bound: bool = False
    ) -> MailOutcome:
        if bound:
            when = "the simulation stopped there (its bound); the rule would retry until its timeout, then fall back"
        elif self.rule_timeout_s == 0:
            when = "with a rule timeout of 0 there are no retries"
        else:
            when = (
                f"the rule timeout of {self.rule_timeout_minutes:g} min leaves no time for another attempt "
                f"(next wait {self.backoff_s(len(attempts)):g} s)"
            )
        why = f"{_n(len(attempts), 'attempt')} failed (the last: {last.cause}); {when}"
        fallen: MailOutcome = fallback_outcome(
            envelope_recipients(event),
            self.fallback_action,
            why,
            list(last.issues),
            inferred=last.inferred_reading,
            invocation=attempts[-1].invocation,
        )
        return fallen
