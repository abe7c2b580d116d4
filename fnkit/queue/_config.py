"""The queue and its poller, declared once (Q1, Q2, Q3, Q7, Q11): `QueueConfig`.

`QueueSim` takes every setting; `outcome`, `run` and `validate_response` take
`report_batch_item_failures`; the function timeout is `function_timeout_s`, also taken as
`timeout_s` (the name `run` and the other sources use); `build_event` takes `fifo`; the command line, `fnkit.replay`
and the widgets make their options and fields from these declarations.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict

from .._settings.config import Config, setting
from ..rules import id_of, rule

DEFAULT_BATCH = 10  # Q1
MAX_BATCH_STANDARD = 10_000
MAX_BATCH_FIFO = 10
MAX_WINDOW_S = 300
MAX_VISIBILITY_S = 43_200  # Q3: 12 hours


FIFO_GROUPS = rule(
    "Q9",
    "queue",
    "doc",
    "FIFO: at most one batch in flight per message group; order kept within a group; a batch may mix groups.",
    severity="behaviour",
)


DEDUPLICATION = rule(
    "Q11",
    "queue",
    "contract",
    "FIFO deduplication: a 5-minute window over the whole queue; a duplicate send is "
    "accepted but not delivered; content-based id = SHA-256 hex of the body.",
    severity="behaviour",
)


BATCH_LIMITS = rule(
    "Q1",
    "queue",
    "doc",
    "Batch size 1-10,000 (standard) or 1-10 (FIFO), default 10; window 0-300 s, needed "
    "(>= 1 s) above 10; no window for FIFO (and at most 6 MB per invocation payload: Q17).",
    severity="error or warning",
)


FUNCTION_FAILED = rule(
    "Q6",
    "queue",
    "doc",
    "The function raises, times out or crashes: nothing is deleted and the whole batch returns "
    "after the visibility timeout.",
    severity="outcome",
)


REPORTING_OFF = rule(
    "Q7",
    "queue",
    "inferred",
    "Reporting (ReportBatchItemFailures) off and the function succeeded: the response is "
    "ignored and the whole batch is deleted; returned failures are lost.",
    severity="outcome",
)


@rule(
    "Q3",
    "queue",
    "doc",
    "Visibility timeout 30 s by default (0-43,200); maxReceiveCount 10 by default with a "
    "dead-letter queue; FIFO queues have FIFO dead-letter queues.",
    severity="refusal",
)
@dataclass(frozen=True)
class QueueConfig(Config):
    """The settings of a queue and of the poller that invokes the function (the event source mapping).

    A configuration the platform refuses raises ValueError naming the rule (Q1, Q2, Q3, Q11).
    """

    fifo: bool = setting(
        False,
        rule=FIFO_GROUPS.id,
        label="FIFO queue",
        help="An ordered (FIFO) queue: records carry message groups; one batch per group in flight.",
    )
    batch_size: int = setting(
        DEFAULT_BATCH,
        rule=BATCH_LIMITS.id,
        minimum=1,
        maximum=MAX_BATCH_STANDARD,
        label="Batch size",
        help="Records per invocation at most: 1-10,000, 1-10 for a FIFO queue; above 10 needs a batching window.",
    )
    batch_window_s: float = setting(
        0,
        rule=BATCH_LIMITS.id,
        minimum=0,
        maximum=MAX_WINDOW_S,
        label="Batching window (s)",
        help="How long the poller gathers records before invoking: 0-300 s; none on a FIFO queue.",
    )
    report_batch_item_failures: bool = setting(
        True,
        rule=REPORTING_OFF.id,
        option="--no-report-failures",
        label="Report batch item failures",
        help="Partial-batch reporting (ReportBatchItemFailures); off, the response is ignored and failures are lost.",
    )
    function_timeout_s: float = setting(
        3,
        rule=FUNCTION_FAILED.id,
        above=0,
        label="Function timeout (s)",
        help="The function's timeout: past it, nothing is deleted and the whole batch returns.",
    )
    visibility_timeout_s: float = setting(
        30,
        rule="Q3",
        minimum=0,
        maximum=MAX_VISIBILITY_S,
        label="Visibility timeout (s)",
        help="How long a received message stays hidden: 0-43,200 s, at least the function timeout.",
    )
    max_receive_count: int | None = setting(
        None,
        rule="Q3",
        minimum=1,
        label="Max receive count",
        help="Receives before a message moves to the dead-letter queue; None: no dead-letter queue.",
    )
    content_based_deduplication: bool = setting(
        False,
        rule=DEDUPLICATION.id,
        label="Content-based deduplication",
        help="FIFO only: a message without a deduplication id is deduplicated by the SHA-256 of its body.",
    )

    source = "queue"
    title = "the queue and its poller"
    #: the name `run`, `invoke` and the other sources use
    aliases: ClassVar[dict[str, str]] = {"timeout_s": "function_timeout_s"}

    if TYPE_CHECKING:  # what the __init__ below takes, for type checkers (the dataclass makes the real one)

        def __init__(
            self,
            fifo: bool = False,
            batch_size: int = DEFAULT_BATCH,
            batch_window_s: float = 0,
            report_batch_item_failures: bool = True,
            function_timeout_s: float = 3,
            visibility_timeout_s: float = 30,
            max_receive_count: int | None = None,
            content_based_deduplication: bool = False,
            *,
            timeout_s: float = 3,
        ) -> None: ...

    @property
    def timeout_s(self) -> float:
        """The function timeout in seconds: `function_timeout_s` under the name every source uses."""
        return self.function_timeout_s

    def _check_together(self) -> None:
        self._batch_fits_the_queue()
        self._visibility_covers_the_function()
        if self.content_based_deduplication and not self.fifo:
            raise ValueError(f"content_based_deduplication belongs to FIFO queues: fifo=True ({DEDUPLICATION.id}).")

    def _batch_fits_the_queue(self) -> None:
        """Q1 between fields: a FIFO queue's batch size and window; a large batch needs a window."""
        if self.fifo and self.batch_size > MAX_BATCH_FIFO:
            raise ValueError(
                f"a FIFO queue takes a batch_size of 1-{MAX_BATCH_FIFO}, not {self.batch_size} ({BATCH_LIMITS.id})."
            )
        if self.fifo and self.batch_window_s:
            raise ValueError(
                f"a FIFO queue takes no batching window: batch_window_s must be 0, not {self.batch_window_s:g} "
                f"({BATCH_LIMITS.id})."
            )
        if self.batch_size > DEFAULT_BATCH and self.batch_window_s < 1:
            raise ValueError(
                f"a batch_size above {DEFAULT_BATCH} needs a batching window of at least 1 s; got "
                f"batch_size={self.batch_size}, batch_window_s={self.batch_window_s:g} ({BATCH_LIMITS.id})."
            )

    @rule(
        "Q2",
        "queue",
        "observed",
        "A configuration whose queue visibility timeout is below the function timeout is refused.",
        severity="refusal",
    )
    def _visibility_covers_the_function(self) -> None:
        """Q2: the platform refuses a visibility timeout below the function timeout."""
        if self.visibility_timeout_s < self.function_timeout_s:
            raise ValueError(
                f"the queue's visibility timeout ({self.visibility_timeout_s:g} s) is below the function "
                f"timeout ({self.function_timeout_s:g} s): the platform refuses this configuration "
                f"({id_of(QueueConfig._visibility_covers_the_function)})."
            )


_generated_init = QueueConfig.__init__


def _init_taking_timeout_s(self: QueueConfig, *args: Any, **keywords: Any) -> None:
    """`QueueConfig(timeout_s=...)`: the function timeout under the name every source uses."""
    _generated_init(self, *args, **QueueConfig._unaliased(keywords))


_init_taking_timeout_s.__signature__ = inspect.signature(_generated_init)  # type: ignore[attr-defined]
QueueConfig.__init__ = _init_taking_timeout_s  # type: ignore[method-assign]


# The keywords each taker of settings accepts, for type checkers (`**settings: Unpack[...]`): a misspelt keyword is a
# type error before it is a TypeError at run time. tests/core/test_setting_keywords.py holds each equal to the
# settings its function declares with `with_settings`.


class QueueFifoSetting(TypedDict, total=False):
    """`fifo=` (`build_event`, `queue_arn`)."""

    fifo: bool


class QueueReportingSetting(TypedDict, total=False):
    """`report_batch_item_failures=` (`outcome`, `run`, `validate_response`)."""

    report_batch_item_failures: bool


class QueueSettings(TypedDict, total=False):
    """Every queue setting, and `timeout_s` for `function_timeout_s` (`QueueSim`)."""

    fifo: bool
    batch_size: int
    batch_window_s: float
    report_batch_item_failures: bool
    function_timeout_s: float
    visibility_timeout_s: float
    max_receive_count: int | None
    content_based_deduplication: bool
    timeout_s: float


__all__ = [
    "DEFAULT_BATCH",
    "MAX_BATCH_FIFO",
    "MAX_BATCH_STANDARD",
    "MAX_VISIBILITY_S",
    "MAX_WINDOW_S",
    "QueueConfig",
    "QueueFifoSetting",
    "QueueReportingSetting",
    "QueueSettings",
]
