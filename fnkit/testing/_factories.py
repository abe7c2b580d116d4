"""Event factories: each source's `build_event` with test-friendly defaults and a new seed per call.

One class per source says, for type checkers, what its calls take and return: a handler
annotated with `fnkit.types.QueueEvent` takes `queue_event()` as it is, and a misspelt keyword
is a type error. Each `__call__` takes `build_event`'s arguments (tests/testing hold the two
equal), with the factory's defaults and seed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Unpack, cast, overload

from .._sources import source_module

if TYPE_CHECKING:
    from .._settings.project import Dialect
    from ..alb._config import AlbConfig, AlbMultiValueSetting
    from ..queue._config import QueueConfig, QueueFifoSetting
    from ..types import AlbEvent, MailEvent, QueueEvent

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

    def __call__(self, *args: Any, **keywords: Any) -> Any:
        """A valid event of this source; arguments as `build_event` takes them (each subclass says which, typed)."""
        return self._make(args, keywords)

    def _make(self, args: tuple[Any, ...], keywords: dict[str, Any]) -> Any:
        if self.source == "queue" and not args and "bodies" not in keywords:
            args = (DEFAULTS["queue"]["bodies"],)
        elif self.source == "mail" and keywords.get("message") is not None:
            # a message speaks for itself: its From, To, Cc and Subject, not the factory's stand-ins
            pass
        elif self.source != "queue":
            keywords = {**DEFAULTS[self.source], **keywords}
        if keywords.get("seed") is None:
            keywords["seed"] = self._calls
        self._calls += 1
        return self._build(*args, **keywords)

    def __repr__(self) -> str:
        return f"<fnkit.testing.EventFactory {self.source!r}: fnkit.{self.source}.build_event, {self._calls} built>"


class QueueEventFactory(EventFactory):
    """The `queue_event` fixture: `fnkit.queue.build_event` (one body, "message 1", when none is given)."""

    def __init__(self) -> None:
        super().__init__("queue")

    def __call__(  # the same call as build_event's, spelt out for type checkers
        self,
        bodies: Sequence[Any] | str | None = None,
        *,
        group_ids: Sequence[str] | None = None,
        dedup_ids: Sequence[str] | None = None,
        message_attributes: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        queue_arn: str | None = None,
        region: str | None = None,
        receive_counts: Sequence[int] | None = None,
        trace_header: str | None = None,
        sent_timestamp_ms: int | None = None,
        dialect: Dialect | None = None,
        seed: int | None = None,
        config: QueueConfig | None = None,
        **settings: Unpack[QueueFifoSetting],
    ) -> QueueEvent:
        """A valid queue batch event (`fnkit.queue.build_event`'s arguments)."""
        called = dict(locals())
        given = {k: v for k, v in called.items() if k not in ("self", "bodies", "settings")}
        return cast("QueueEvent", self._make(() if bodies is None else (bodies,), {**given, **settings}))


class MailEventFactory(EventFactory):
    """The `mail_event` fixture: `fnkit.mail.build_event`, from sender@example.org to recipient@example.com.

    With `message=`, the message's own headers say who sends, to whom and about what.
    """

    def __init__(self) -> None:
        super().__init__("mail")

    def __call__(  # the same call as build_event's, spelt out for type checkers
        self,
        *,
        mail_from: str | None = None,
        recipients: Any = None,
        subject: str | None = None,
        sender: str | None = None,
        flow_direction: Literal["INBOUND", "OUTBOUND"] = "INBOUND",
        message: Any = None,
        summary_version: str | None = None,
        dialect: Dialect | None = None,
        seed: int | None = None,
        store: Any = None,
        **more: Any,
    ) -> MailEvent:
        """A valid mail-flow event (`fnkit.mail.build_event`'s arguments)."""
        called = dict(locals())
        given = {k: v for k, v in called.items() if k not in ("self", "more") and v is not None}
        return cast("MailEvent", self._make((), {**given, **more}))


class AlbEventFactory(EventFactory):
    """The `alb_event` fixture: `fnkit.alb.build_event` (GET / when nothing is given)."""

    def __init__(self) -> None:
        super().__init__("alb")

    def __call__(  # the same call as build_event's, spelt out for type checkers
        self,
        method: str = "GET",
        path: str = "/",
        *,
        query: Any = None,
        headers: Any = None,
        body: Any = b"",
        target_group_arn: str | None = None,
        dialect: Dialect | None = None,
        seed: int | None = None,
        client_ip: str | None = None,
        port: int = 80,
        proto: str = "http",
        host: str | None = None,
        config: AlbConfig | None = None,
        **settings: Unpack[AlbMultiValueSetting],
    ) -> AlbEvent:
        """A valid load balancer event (`fnkit.alb.build_event`'s arguments)."""
        called = dict(locals())
        given = {k: v for k, v in called.items() if k not in ("self", "method", "path", "settings") and v is not None}
        return cast("AlbEvent", self._make((method, path), {**given, **settings}))


@overload
def event_factory(source: Literal["queue"]) -> QueueEventFactory: ...
@overload
def event_factory(source: Literal["mail"]) -> MailEventFactory: ...
@overload
def event_factory(source: Literal["alb"]) -> AlbEventFactory: ...
@overload
def event_factory(source: str) -> EventFactory: ...
def event_factory(source: str) -> EventFactory:
    """A fresh factory of valid `source` events ('queue', 'mail' or 'alb'); ValueError for another name."""
    factories: dict[str, Callable[[], EventFactory]] = {
        "queue": QueueEventFactory,
        "mail": MailEventFactory,
        "alb": AlbEventFactory,
    }
    made = factories.get(source)
    if made is None:
        return EventFactory(source)  # source_module names the sources in its ValueError
    return made()
