"""The mail-flow rule, declared once (M2, M3, M4, M6, M7): `MailConfig`.

`MailRule` takes every setting; `outcome` and `run` take the ones one attempt depends on
(mode, fallback action, response timeout, conflict policy, the opt-in extra action types,
the recipients limit); `validate_response` the ones the response check reads; the
command line (`fnkit outcome`, `fnkit replay`, `fnkit serve-mail`), `fnkit.replay` and the
widgets make their options and fields from these declarations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypedDict

from .._settings.config import Config, setting
from ..rules import rule

ACTION_TYPES = ("BOUNCE", "DROP", "DEFAULT")  # the contract's action types (M4)
EXTENSION_TYPES = ("BYPASS_SPAM_CHECK", "MOVE_TO_JUNK")  # the real platform, inbound only (M4)
RECIPIENTS_LIMIT = 500  # outbound (M6, inferred)
MODES = ("sync", "async")
CONFLICT_POLICIES = ("most-restrictive", "first", "last")
RESPONSE_TIMEOUT_S = 15.0  # M3
RULE_TIMEOUT_MAX_MINUTES = 240  # M2


ASYNCHRONOUS = rule(
    "M8",
    "mail",
    "contract",
    "An asynchronous rule does not affect delivery; its response is ignored.",
    severity="outcome",
)


FALLBACK = rule(
    "M3",
    "mail",
    "contract",
    "A synchronous attempt fails when the function raises, does not answer within 15 s, or "
    "returns an invalid response; it is retried with backoff until the rule timeout, then the fallback applies to "
    "all recipients.",
    severity="outcome",
)


UNIQUE_ACTIONS = rule(
    "M6",
    "mail",
    "contract",
    "Only 10 unique actions count; what only later actions cover gets the fallback action. "
    "Outbound responses over 500 recipients are invalid (inferred).",
    severity="error or warning",
)


CONFLICTS = rule(
    "M7",
    "mail",
    "inferred",
    "One recipient in two explicit actions is a conflict; by default the most restrictive "
    "wins (DROP > BOUNCE > MOVE_TO_JUNK > DEFAULT > BYPASS_SPAM_CHECK).",
    severity="outcome",
)


RESPONSE_FORM = rule(
    "M4",
    "mail",
    "contract",
    "A valid response has at least one action; each action.type is BOUNCE, DROP or DEFAULT; "
    "bounceMessage only for BOUNCE; recipients a list of strings; allRecipients a boolean; at most 256 KB.",
)


@rule(
    "M2",
    "mail",
    "doc",
    "A rule is synchronous or asynchronous, has a fallback action, and a rule timeout of 0-240 minutes.",
    severity="refusal",
)
@dataclass(frozen=True)
class MailConfig(Config):
    """The settings of a mail-flow rule that invokes a function.

    A configuration the platform (or fnkit) refuses raises ValueError naming the rule (M2,
    M3, M6, M7). The backoff settings are fnkit's reading of M3's "exponential backoff".
    """

    mode: str = setting(
        "sync",
        rule="M2",
        choices=MODES,
        label="Rule mode",
        help="sync: the function's answer decides delivery; async: it is ignored (M8).",
    )
    fallback_action: str = setting(
        "DEFAULT",
        rule="M2",
        choices=sorted(ACTION_TYPES, key=lambda a: a != "DEFAULT"),
        option="--fallback",
        label="Fallback action",
        help="What every recipient gets when the function fails or answers nonsense (an action, not a function).",
    )
    rule_timeout_minutes: float = setting(
        0,
        rule="M2",
        minimum=0,
        maximum=RULE_TIMEOUT_MAX_MINUTES,
        label="Rule timeout (min)",
        help="How long failed attempts are retried: 0-240 minutes; 0, no retries.",
    )
    response_timeout_s: float = setting(
        RESPONSE_TIMEOUT_S,
        rule=FALLBACK.id,
        above=0,
        label="Response timeout (s)",
        help="How long the service waits for an answer (15 s), whatever the function's own timeout.",
    )
    conflict_policy: str = setting(
        "most-restrictive",
        rule=CONFLICTS.id,
        choices=CONFLICT_POLICIES,
        label="Conflict policy",
        help="One recipient in two actions: the most restrictive action wins, or the first or last entry naming it.",
    )
    extensions: bool = setting(
        False,
        rule=RESPONSE_FORM.id,
        label="Extra action types",
        help="Accept BYPASS_SPAM_CHECK and MOVE_TO_JUNK (inbound only), as the real platform does.",
    )
    recipients_limit: int = setting(
        RECIPIENTS_LIMIT,
        rule=UNIQUE_ACTIONS.id,
        minimum=1,
        label="Recipients limit",
        help="At most this many recipients in an outbound response (500).",
    )
    backoff_initial_s: float = setting(
        60.0,
        rule=FALLBACK.id,
        above=0,
        label="First retry after (s)",
        help="The wait before the first retry (fnkit's reading of the backoff).",
    )
    backoff_factor: float = setting(
        2.0,
        rule=FALLBACK.id,
        minimum=1,
        label="Backoff factor",
        help="Each further wait is this many times the one before.",
    )
    backoff_max_s: float = setting(
        1800.0,
        rule=FALLBACK.id,
        above=0,
        label="Longest wait (s)",
        help="No wait between attempts is longer than this (30 min).",
    )
    jitter: float = setting(
        0.0,
        rule=FALLBACK.id,
        minimum=0,
        below=1,
        label="Jitter",
        help="Each wait varies by up to this fraction, seeded (0: none).",
    )

    source = "mail"
    title = "the mail-flow rule"
    project = ("extensions",)  # `[tool.fnkit] extensions = true`: the real service's action types everywhere

    def _check_together(self) -> None:
        if self.backoff_max_s < self.backoff_initial_s:
            raise ValueError(
                f"backoff_max_s ({self.backoff_max_s:g} s) must be at least backoff_initial_s "
                f"({self.backoff_initial_s:g} s) ({FALLBACK.id})."
            )

    @property
    def rule_timeout_s(self) -> float:
        """The rule timeout in seconds."""
        return self.rule_timeout_minutes * 60.0


# The keywords each taker of settings accepts, for type checkers (`**settings: Unpack[...]`); see fnkit.queue._config.
_Mode = Literal["sync", "async"]
_Action = Literal["DEFAULT", "BOUNCE", "DROP"]
_Policy = Literal["most-restrictive", "first", "last"]


class MailAttemptSettings(TypedDict, total=False):
    """The settings one attempt depends on (`outcome`, `run`)."""

    mode: _Mode
    fallback_action: _Action
    response_timeout_s: float
    conflict_policy: _Policy
    extensions: bool
    recipients_limit: int


class MailResponseSettings(TypedDict, total=False):
    """The settings the response check reads (`validate_response`)."""

    mode: _Mode
    extensions: bool
    recipients_limit: int
    conflict_policy: _Policy


class MailSettings(TypedDict, total=False):
    """Every mail-flow rule setting (`MailRule`, `serve`)."""

    mode: _Mode
    fallback_action: _Action
    rule_timeout_minutes: float
    response_timeout_s: float
    conflict_policy: _Policy
    extensions: bool
    recipients_limit: int
    backoff_initial_s: float
    backoff_factor: float
    backoff_max_s: float
    jitter: float


__all__ = [
    "ACTION_TYPES",
    "CONFLICT_POLICIES",
    "EXTENSION_TYPES",
    "MODES",
    "RECIPIENTS_LIMIT",
    "RESPONSE_TIMEOUT_S",
    "RULE_TIMEOUT_MAX_MINUTES",
    "MailAttemptSettings",
    "MailConfig",
    "MailResponseSettings",
    "MailSettings",
]
