"""One record of one simulated invocation: `Delivery` (message, receive count at that receive)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._sim import Message


class Delivery(tuple["Message", int]):
    """One record of one invocation: (message, receive count at that receive)."""

    __slots__ = ()

    @property
    def message(self) -> Message:
        return self[0]

    @property
    def receive_count(self) -> int:
        return self[1]


__all__ = ["Delivery"]
