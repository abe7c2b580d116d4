"""Load balancer test fixtures: built events in both header modes."""

from __future__ import annotations

import pytest

from fnkit import alb
from fnkit.types import AlbEvent


@pytest.fixture
def event() -> AlbEvent:
    """A valid GET event, multi-value headers off (provider spelling)."""
    return alb.build_event("GET", "/items", query="page=2&sort=price", headers={"accept": "text/html"}, seed=1)


@pytest.fixture
def multi_event() -> AlbEvent:
    """A valid GET event with multi-value headers on."""
    return alb.build_event(
        "GET",
        "/items",
        query="tag=a&tag=b",
        headers=[("accept", "text/html"), ("accept", "*/*")],
        multi_value=True,
        seed=2,
    )
