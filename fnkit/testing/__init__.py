"""fnkit in your own test suite: assertions, event factories, a pytest plugin, hypothesis strategies.

- `assert_valid(event_or_response)`: fails listing every issue of the event or response.
- `assert_outcome(handler, event, kind=..., failed_ids=..., status=..., ...)`: runs the
  handler as the platform would and fails printing the outcome's table.
- `event_factory(source)`: a builder with defaults and a fresh seed per call; the pytest
  plugin (`fnkit.testing.plugin`, registered when fnkit is installed) offers one per source
  as the fixtures `queue_event`, `mail_event` and `alb_event`, typed for a test that annotates them:
  `def test_it(queue_event: QueueEventFactory)` (each returns the source's `fnkit.types` event).
- `fnkit.testing.strategies`: hypothesis strategies of valid events and responses
  (`pip install 'fnkit[testing]'`); importing `fnkit.testing` imports neither hypothesis
  nor pandas.
"""

from __future__ import annotations

from ._assertions import assert_outcome, assert_valid
from ._factories import AlbEventFactory, EventFactory, MailEventFactory, QueueEventFactory, event_factory

__all__ = [
    "AlbEventFactory",
    "EventFactory",
    "MailEventFactory",
    "QueueEventFactory",
    "assert_outcome",
    "assert_valid",
    "event_factory",
]
