"""One protocol for what the platform does, whatever the source: `Outcome` (and `Tabular`, for what tabulates).

`BatchOutcome` (queue), `MailOutcome` (mail), `HttpOutcome` (load balancer) and a mail
rule's `MailRun` are `Outcome`s. The three sources' outcomes also share `kind` (a word for
what happened), `ok`, `issues` (the response's), `event_issues` (the event's, when `run`
validated it), `rows()` and `to_frame()`. Each is: the deciding `rule` (a catalogue id), whether it is
`inferred`, the sentence that explains it (`explanation`), a few words for a badge
(`headline`, in a `tone`), the `issues` and the `invocation`, one row per record /
recipient / request (`rows()`, whose `result_column` says what happened to the item), and
one summary row (`to_row()`). `fnkit.replay`, `fnkit.tabulate`, the command line and the
widgets read outcomes through this protocol only: they have no branch per source.

Each outcome shows itself in a notebook through one helper, `outcome_html` (assigned as
its `_repr_html_`), from `_display()`: the tables it shows and any preformatted text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

if TYPE_CHECKING:
    import pandas as pd

    from .codec import Invocation
    from .report import Report

TONES = ("good", "mixed", "bad", "none")
# the error type an invocation carries when the handler's process ended under it (os._exit, a crash, a
# kill): the platform's name for it, which is no exception the handler raised
PROCESS_ENDED = "Runtime.ExitError"


def what_it_did(error: Any, full: bool = True) -> str:
    """How a handler failed, for a sentence: 'raised KeyError: 'x'' or, when its process ended, 'exited (...)'.

    `full=False`: the exception type only ('raised KeyError'; 'exited' stays whole).
    """
    if error.type == PROCESS_ENDED:
        return f"exited ({error.message})" if error.message else "exited (its process ended)"
    return f"raised {error}" if full else f"raised {error.type}"


@runtime_checkable
class Tabular(Protocol):
    """Anything `fnkit.tabulate` turns into rows (outcomes, simulation runs, configurations)."""

    def rows(self) -> list[dict[str, Any]]:
        """One dict per record / recipient / request / setting."""

    def _repr_html_(self) -> str:
        """The result as HTML (Jupyter shows it)."""


@runtime_checkable
class Outcome(Tabular, Protocol):
    """What the platform does with one invocation's answer, and which rule decided it (any source)."""

    @property
    def source(self) -> str:
        """ "queue", "mail" or "alb"."""

    @property
    def rule(self) -> str:
        """The deciding rule's catalogue id."""

    @property
    def inferred(self) -> bool:
        """True when the deciding rule (or its reading) is fnkit's inference, not a documented fact."""

    @property
    def explanation(self) -> str:
        """The sentence that says what happens and why."""

    @property
    def headline(self) -> str:
        """A few words for a badge: "partial", "applied: 2 DEFAULT", "502 Bad Gateway"."""

    @property
    def tone(self) -> str:
        """How the badge is coloured: "good", "mixed", "bad" or "none"."""

    @property
    def issues(self) -> Report:
        """The response's issues (warnings such as lost failures included)."""

    @property
    def invocation(self) -> Invocation | None:
        """What happened when the handler ran (None when only a response was given)."""

    @property
    def result_column(self) -> str:
        """The column of `rows()` that says what happened to each item ("action", "status")."""

    def to_row(self) -> dict[str, Any]:
        """One summary row: source, outcome, rule, inferred, reason, items, errors, warnings."""


class Grid(NamedTuple):
    """One table an outcome shows: rows, their columns, and the columns holding long ids."""

    rows: list[dict[str, Any]]
    columns: list[str]
    ids: tuple[str, ...] = ()


class Display(NamedTuple):
    """What an outcome's HTML shows below its headline and sentence: tables, then preformatted text.

    `title`: the HTML's headline when it says more than the badge's (the request, for instance).
    """

    tables: list[Grid]
    preformatted: str | None = None
    title: str | None = None


def outcome_html(outcome: Any) -> str:
    """An outcome as HTML (its `_repr_html_`).

    The headline in its tone, the rule, the sentence, its tables, its issues.
    """
    from html import escape

    from .._cells import panel_html

    shown: Display = outcome._display()
    tag = " <i>(inferred)</i>" if outcome.inferred else ""
    issues = outcome.issues
    return panel_html(
        shown.title or outcome.headline,
        tone=outcome.tone,
        note=f"rule <code>{escape(outcome.rule)}</code>{tag}",
        sentence=outcome.explanation,
        tables=shown.tables,
        preformatted=shown.preformatted,
        after=issues._repr_html_() if len(issues) else "",
        css_class="fnkit-outcome",
    )


def outcome_frame(outcome: Any) -> pd.DataFrame:
    """An outcome's `rows()` as a pandas DataFrame (its `to_frame()`; pandas comes with `fnkit[frames]`)."""
    from .._optional import require

    require("pandas", extra="frames", feature=f"{type(outcome).__name__}.to_frame()")
    import pandas as pd

    return pd.DataFrame(outcome.rows())


def outcome_row(outcome: Any) -> dict[str, Any]:
    """An outcome's one summary row (its `to_row()`)."""
    issues = outcome.issues
    return {
        "source": outcome.source,
        "outcome": outcome.headline,
        "rule": outcome.rule,
        "inferred": outcome.inferred,
        "reason": outcome.explanation,
        "items": len(outcome.rows()),
        "errors": len(issues.errors),
        "warnings": len(issues.warnings),
    }


__all__ = ["TONES", "Display", "Grid", "Outcome", "Tabular", "outcome_frame", "outcome_html", "outcome_row"]
