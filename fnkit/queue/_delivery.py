"""One record of one simulated invocation: `Delivery` (message, receive count at that receive)."""

from __future__ import annotations

from typing import TypeVar

M = TypeVar("M")


class Delivery(tuple[M, int]):
    """One record of one invocation: (message, receive count at that receive)."""

    __slots__ = ()

    @property
    def message(self) -> M:
        return self[0]

    @property
    def receive_count(self) -> int:
        return self[1]


__all__ = ["Delivery"]
