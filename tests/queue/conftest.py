"""Queue test fixtures: built events, the documented real event."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fnkit import queue
from fnkit.types import QueueEvent

REAL_DIR = Path(__file__).resolve().parent.parent / "data" / "real"


@pytest.fixture
def event() -> QueueEvent:
    """A valid three-record standard-queue event (provider spelling)."""
    return queue.build_event(["first", "second", "third"], seed=1)


@pytest.fixture
def ids(event) -> list[str]:
    return [r["messageId"] for r in event["Records"]]


@pytest.fixture
def fifo_event() -> QueueEvent:
    """A valid FIFO event: groups g, g, h, g."""
    return queue.build_event(["a1", "a2", "b1", "a3"], fifo=True, group_ids=["g", "g", "h", "g"], seed=2)


@pytest.fixture
def real_event() -> dict[str, Any]:
    """The standard-queue event exactly as the platform's documentation shows it."""
    event: dict[str, Any] = json.loads((REAL_DIR / "sqs_event.json").read_text())
    return event


@pytest.fixture
def real_fifo_event() -> dict[str, Any]:
    event: dict[str, Any] = json.loads((REAL_DIR / "sqs_fifo_event.json").read_text())
    return event
