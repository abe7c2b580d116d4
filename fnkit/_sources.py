"""Source detection and source-independent entry points (`validate`, `correlation_ids`)."""

from __future__ import annotations

import importlib
from typing import Any

from ._report import MISSING, Report, decode_json, describe, error
from .rules import rule

SOURCES = ("queue", "mail", "alb")


def source_module(name: str) -> Any:
    """The module of one source (`fnkit.queue`, `fnkit.mail`, `fnkit.alb`)."""
    if name not in SOURCES:
        raise ValueError(f"unknown source {name!r}: use one of {', '.join(SOURCES)}")
    return importlib.import_module(f"fnkit.{name}")


@rule("G3", "any", "inferred", "The source of an event is recognised from its shape: Records (queue), envelope and "
      "summaryVersion (mail), httpMethod and requestContext.elb (load balancer).", origin="kit")
def detect_source(event: Any) -> str | None:
    """'queue', 'mail' or 'alb' from the event's shape (JSON text and bytes are decoded); None when unknown."""
    value, _ = decode_json(event, "G0")
    if value is MISSING or not isinstance(value, dict):
        return None
    for name in SOURCES:
        try:
            if source_module(name).looks_like(value):
                return name
        except Exception:  # a detector must never take validation down  # noqa: BLE001
            continue
    return None


def validate(event: Any) -> Report:
    """Detect the source, then validate the event; a Report saying what it is not when no source fits."""
    value, issues = decode_json(event, "G0")
    if value is MISSING:
        return Report(issues, None, None)
    source = detect_source(value)
    if source is None:
        what = describe(value)
        return Report([error("$", "unknown",
                             f"This is {what}, not an event of a known source: a queue event has Records, a mail event has envelope and summaryVersion, a load balancer event has httpMethod and requestContext.elb.",
                             "G3")], None, None)
    return source_module(source).validate_event(value)


def correlation_ids(event: Any) -> list[str]:
    """Queue: every messageId; mail: [invocationId]; load balancer: [trace header] or []."""
    value, _ = decode_json(event, "G0")
    source = detect_source(value) if value is not MISSING else None
    if source is None:
        return []
    return source_module(source).correlation_ids(value)
