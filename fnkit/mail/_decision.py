"""What happens to one recipient (`Decision`): the value every mail rule's effect is stated in.

It sits below the event, the response and the outcome, so that a rule declared with the
event (M1: a recipient cut from a truncated event) states its effect in the same terms as
the outcome's rules (M3, M5 to M8).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import rules as _rules
from ..rules import rule

VIAS = ("recipients", "allRecipients", "fallback")
# M7 (inferred): the most restrictive action wins a conflict by default
RESTRICTIVENESS = {"DROP": 4, "BOUNCE": 3, "MOVE_TO_JUNK": 2, "DEFAULT": 1, "BYPASS_SPAM_CHECK": 0}


#: M5, declared with the decision it gives by default; implemented by `mail._response.coverage`
COVERAGE = rule(
    "M5",
    "mail",
    "doc",
    "Explicit recipients first; allRecipients covers the rest; a recipient covered by nothing "
    "gets the fallback; named recipients absent from the envelope are added.",
    severity="outcome",
)


@dataclass(frozen=True, slots=True)
class Decision:
    """What happens to one recipient: `action`, `via` (recipients | allRecipients | fallback), and why."""

    action: str
    via: str
    bounce_message: str | None = None
    rule: str = COVERAGE.id
    reason: str = ""

    @property
    def inferred(self) -> bool:
        """True when the deciding rule is fnkit's reading, not the platform's word."""
        return _rules.is_inferred(self.rule)
