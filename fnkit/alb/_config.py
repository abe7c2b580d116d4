"""The load balancer's target group, declared once (A3, A5, A11): `AlbConfig`.

`serve` (and `fnkit serve-alb`) take every setting; `outcome` takes `multi_value`; `run`
takes `multi_value` and `timeout_s`; `build_event` takes `multi_value`; `fnkit outcome`,
`fnkit replay`, `fnkit.replay` and the widgets make their options and fields from these
declarations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from .._settings.config import Config, setting
from ..rules import rule

FORMS = rule(
    "A3",
    "alb",
    "doc",
    "Multi-value headers off: a repeated header or query key keeps its last value; on: "
    "multiValueHeaders and multiValueQueryStringParameters with all values, never both forms.",
    severity="error or warning",
)


BAD_GATEWAY = rule(
    "A5", "alb", "observed", "The function raises, is throttled or times out: 502; a response over 1 MB: 502."
)


HEALTH_CHECK = rule(
    "A11",
    "alb",
    "doc",
    "Health check event: GET /, queryStringParameters {}, headers {user-agent: "
    'ELB-HealthChecker/2.0}, body "", isBase64Encoded false.',
    severity="warning",
)


@dataclass(frozen=True)
class AlbConfig(Config):
    """The settings of a target group whose target is a function."""

    multi_value: bool | None = setting(
        None,
        rule=FORMS.id,
        label="Multi-value headers",
        help="Multi-value headers on the target group: the event carries every value "
        "of repeated keys; None: as the event shows (off where fnkit makes "
        "the events).",
    )
    timeout_s: float | None = setting(
        None,
        rule=BAD_GATEWAY.id,
        above=0,
        option="--timeout",
        label="Function timeout (s)",
        help="The function's timeout: past it, the client gets 502; None: no timeout.",
    )
    health_check_interval_s: float | None = setting(
        None,
        rule=HEALTH_CHECK.id,
        above=0,
        label="Health check interval (s)",
        help="Send the health check event this often; None: no health checks.",
    )

    source = "alb"
    title = "the load balancer's target group"

    @property
    def multi_value_on(self) -> bool:
        """Multi-value headers on (None, not stated, is off: the target group's default)."""
        return bool(self.multi_value)


# The keywords each taker of settings accepts, for type checkers (`**settings: Unpack[...]`); see fnkit.queue._config.


class AlbMultiValueSetting(TypedDict, total=False):
    """`multi_value=` (`build_event`, `validate_event`, `validate_response`, `outcome`, ...)."""

    multi_value: bool | None


class AlbRunSettings(TypedDict, total=False):
    """`multi_value=` and `timeout_s=` (`run`)."""

    multi_value: bool | None
    timeout_s: float | None


class AlbSettings(TypedDict, total=False):
    """Every target group setting (`serve`, `AlbServer`)."""

    multi_value: bool | None
    timeout_s: float | None
    health_check_interval_s: float | None


__all__ = ["AlbConfig", "AlbMultiValueSetting", "AlbRunSettings", "AlbSettings"]
