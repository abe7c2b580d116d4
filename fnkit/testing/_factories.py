"""Event factories: each source's `build_event` with test-friendly defaults and a new seed per call."""

from __future__ import annotations

from typing import Any

from .._sources import source_module

# What a test gets when it says nothing: the smallest valid event of each source.
DEFAULTS: dict[str, dict[str, Any]] = {
    "queue": {"bodies": ["message 1"]},
    "mail": {"mail_from": "sender@example.org", "recipients": ["recipient@example.com"], "subject": "Hello"},
    "alb": {},
}


class EventFactory:
    """Calls `fnkit.<source>.build_event`: same arguments, the defaults above, and seeds 0, 1, 2, ... per call.

    Each call of one factory gets the next seed unless `seed=` is given, so two events built
    in one test have different ids, and a test builds the same events on every run.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self._build = source_module(source).build_event
        self._calls = 0

    def __call__(self, *args: Any, **keywords: Any) -> dict[str, Any]:
        """A valid event of this source; arguments as `build_event` takes them."""
        if self.source == "queue" and not args and "bodies" not in keywords:
            args = (DEFAULTS["queue"]["bodies"],)
        elif self.source != "queue":
            keywords = {**DEFAULTS[self.source], **keywords}
        keywords.setdefault("seed", self._calls)
        self._calls += 1
        event: dict[str, Any] = self._build(*args, **keywords)
        return event

    def __repr__(self) -> str:
        return f"<fnkit.testing.EventFactory {self.source!r}: fnkit.{self.source}.build_event, {self._calls} built>"


def event_factory(source: str) -> EventFactory:
    """A fresh factory of valid `source` events ('queue', 'mail' or 'alb'); ValueError for another name."""
    return EventFactory(source)
