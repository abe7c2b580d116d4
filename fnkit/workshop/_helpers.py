"""What the exercises' handlers call: orders for the queue, emails and mailboxes for mail.

Two of them say what they were asked to do with `fnkit.isolation.report`, which works
wherever the handler runs (in a worker process too): `process_order` reports each call (what it
got, and what it raised), `park` each message id. A check reads them back from its invocation
(`Watched.of`), so its feedback says what the handler did, not what it should have done.
"""

from __future__ import annotations

import email
import email.policy
import json
from dataclasses import dataclass, field
from typing import Any

from .._learner.emails import DISCLAIMER as DISCLAIMER
from .._learner.emails import EXECUTABLE_EXTENSIONS as EXECUTABLE_EXTENSIONS
from .._learner.emails import FIXED_DATE as FIXED_DATE
from .._learner.emails import add_disclaimer as add_disclaimer
from .._learner.emails import attachment_names as attachment_names
from .._learner.emails import email_message as email_message
from ..isolation import report

PROCESSED = "process_order"  # the topic `process_order` reports each body under
PARKED = "park"  # the topic `park` reports each message id under


class BadOrder(ValueError):
    """Raised by `process_order` for an order that cannot be processed."""


@dataclass(frozen=True)
class OrderCall:
    """One call of `process_order`: the body (None when not text), what it got ('a str', 'a dict'), what it raised."""

    body: str | None
    got: str
    raised: str | None = None

    @classmethod
    def of(cls, value: Any) -> OrderCall:
        if isinstance(value, dict):
            return cls(value.get("body"), str(value.get("got", "a str")), value.get("raised"))
        return cls(value if isinstance(value, str) else None, "a str")


@dataclass
class Watched:
    """What a handler did during one invocation: its calls of process_order and the messages parked, in order."""

    calls: list[OrderCall] = field(default_factory=list)
    parked: list[Any] = field(default_factory=list)

    @property
    def processed(self) -> list[str | None]:
        """The bodies process_order was given, in order (None for one that was not text)."""
        return [c.body for c in self.calls]

    def call_for(self, body: str) -> OrderCall | None:
        """The first call of process_order with `body`, or None when it was never given that body."""
        return next((c for c in self.calls if c.body == body), None)

    def not_text(self) -> OrderCall | None:
        """The first call that got something other than the body text (a dict from json.loads...), if any."""
        return next((c for c in self.calls if c.got != "a str"), None)

    @classmethod
    def of(cls, invocation: Any) -> Watched:
        """Read from what `process_order` and `park` reported during the invocation (`Invocation.reports`)."""
        reports = getattr(invocation, "reports", None) or ()
        return cls(
            [OrderCall.of(value) for topic, value in reports if topic == PROCESSED],
            [value for topic, value in reports if topic == PARKED],
        )


def _kind(value: Any) -> str:
    name = type(value).__name__
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def _parse_order(body: Any) -> dict[str, Any]:
    try:
        order = json.loads(body)
    except (TypeError, ValueError):
        raise BadOrder(f"the body is not JSON: {str(body)[:40]!r}") from None
    if not isinstance(order, dict):
        raise BadOrder("the body is not an order object")
    qty = order.get("qty")
    if not isinstance(qty, int) or isinstance(qty, bool) or qty <= 0:
        raise BadOrder(f"order {order.get('order')!r} has qty {qty!r}; it needs a whole number above 0")
    return order


def process_order(body: Any) -> dict[str, Any]:
    """Process one order (a message body such as '{"order": 7, "qty": 2}'); raises BadOrder when it is bad.

    An order is bad when the body is not JSON, not an object, or its qty is not a whole
    number above 0.
    """
    text = body if isinstance(body, str) else None
    try:
        order = _parse_order(body)
    except BadOrder as exc:
        report(PROCESSED, {"body": text, "got": _kind(body), "raised": str(exc)})
        raise
    report(PROCESSED, {"body": text, "got": _kind(body), "raised": None})
    return order


def is_good_order(body: Any) -> bool:
    """True when `process_order(body)` would succeed (it is not recorded as processed)."""
    try:
        _parse_order(body)
        return True
    except BadOrder:
        return False


def park(record: object) -> None:
    """Set a message aside for a person to look at (it will not be retried); `record` is the queue record."""
    mid = record.get("messageId") if isinstance(record, dict) else None
    report(PARKED, mid)
    print(f"parked message {mid}")


# --- mail ------------------------------------------------------------------------------------

FORMER_STAFF = frozenset(
    {"dan.old@example.org", "eve.gone@example.org", "walt.retired@example.org", "zoe.left@example.org"}
)


def body_text(raw: bytes) -> str:
    """The plain-text body of a raw message ("" when it has none)."""
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    part = msg.get_body(preferencelist=("plain",))
    return part.get_content() if part is not None else ""


def has_disclaimer(raw: bytes | None, text: str = DISCLAIMER) -> bool:
    """True when the plain-text body of the raw message holds the disclaimer."""
    if not raw:
        return False
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    part = msg.get_body(preferencelist=("plain",))
    return part is not None and text in part.get_content()


def mailbox_full(address: object) -> bool:
    """True when the recipient's mailbox is full (in this workshop: addresses starting with 'full')."""
    return isinstance(address, str) and address.lower().startswith("full")
