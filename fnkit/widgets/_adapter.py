"""What a widget needs to know about one source, in one object per source."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._running.inprocess import SAFE_ISOLATION
from ._fields import COMMON_FIELDS, Field


@dataclass
class Form:
    """One of the spec's response forms, one click away in the response explorer.

    `label` says what the platform does with the response, then which response it is
    ("whole batch retried · id under 'id'"); `key` is the form's short name (the CSS class
    `fnkit-form-<key>`, and another name `press` accepts).
    """

    group: str
    label: str
    text: Callable[[dict[str, Any]], str]  # the response text for this event
    note: str = ""
    key: str = ""

    def __post_init__(self) -> None:
        if not self.key:
            self.key = self.label


@dataclass
class SourceAdapter:
    """A source as the widgets see it: form fields, examples, outcome keywords and how to show outcomes."""

    source: str
    title: str
    fields: list[Field]
    examples: dict[str, Callable[[Any, Any], Any]]
    default_example: str
    config: list[Field]
    forms: list[Form]
    default_response: Callable[[dict[str, Any]], str]
    to_kwargs: Callable[[dict[str, Any]], dict[str, Any]]
    columns: list[str] = field(default_factory=list)
    describe_event: Callable[[dict[str, Any]], str] = lambda event: ""
    rows: Callable[[Any], list[dict[str, Any]]] | None = None
    id_columns: tuple[str, ...] = ()  # table columns holding long ids, cut in the middle with an ellipsis

    @property
    def module(self) -> Any:
        return importlib.import_module(f"fnkit.{self.source}")

    @property
    def config_class(self) -> Any:
        """The source's configuration (`fnkit.<source>.Config`), whose settings the `config` fields are."""
        return self.module.Config

    def check_settings(self, settings: dict[str, Any]) -> dict[str, Any]:
        """The settings a widget was given, checked by the source's configuration (ValueError naming the rule);
        TypeError for a setting this widget has no field for."""
        names = [f.name for f in self.config]
        unknown = sorted(set(settings) - set(names))
        if unknown:
            raise TypeError(f"no setting {', '.join(unknown)}; settings: {', '.join(names)}")
        checked = self.config_class(**settings)
        return {name: getattr(checked, name) for name in settings}

    @property
    def all_fields(self) -> list[Field]:
        return [*self.fields, *COMMON_FIELDS]

    def build(self, values: dict[str, Any]) -> dict[str, Any]:
        """The event the form's values describe (FieldError / ValueError when they cannot)."""
        event: dict[str, Any] = self.module.build_event(**self.to_kwargs(values))
        return event

    def outcome(self, event: Any, response: Any, config: dict[str, Any]) -> Any:
        return self.module.outcome(event, response, **config)

    def run(self, handler: Callable[..., Any], event: Any, config: dict[str, Any], timeout_s: float) -> Any:
        # a learner's handler may do anything: it runs in a worker process the Stop button can kill
        return self.module.run(handler, event, timeout_s=timeout_s, isolation=SAFE_ISOLATION, **config)

    def outcome_rows(self, outcome: Any) -> list[dict[str, Any]]:
        if self.rows is not None:
            return self.rows(outcome)
        return list(outcome.rows()) if hasattr(outcome, "rows") else []


_ADAPTERS: dict[str, str] = {"queue": "._queue", "mail": "._mail", "alb": "._alb"}
_NAMES = {"sqs": "queue", "load balancer": "alb", "loadbalancer": "alb", "email": "mail"}


def adapter_for(source: str) -> SourceAdapter:
    """The adapter of 'queue', 'mail' or 'alb' (ValueError naming the choices otherwise)."""
    name = _NAMES.get(str(source).lower(), str(source).lower())
    if name not in _ADAPTERS:
        raise ValueError(f"unknown source {source!r}: use 'queue', 'mail' or 'alb'")
    try:
        module = importlib.import_module(_ADAPTERS[name], __package__)
    except ImportError as exc:  # a source module still missing: say which
        raise ValueError(f"the {name} source is not available in this fnkit ({exc})") from exc
    adapter: SourceAdapter = module.ADAPTER
    return adapter
