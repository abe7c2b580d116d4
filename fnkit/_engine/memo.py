"""Memos of values already met (readings of ARNs), bounded by bytes.

A function's events repeat a few values (its queue's ARN, its target group): each is read
once, then found in a memo. What a memo keeps
alive is counted in bytes, the strings as Python holds them, so that distinct long values (4,096
paths of 100 KB) cannot pin hundreds of megabytes: a string longer than `LONGEST` characters is
never remembered (testing it again costs about what reading it costs), and a memo whose next
entry would pass `MEMO_BYTES` stops growing (what it holds stays useful; nothing is evicted).
"""

from __future__ import annotations

import sys
from typing import Any, TypeVar

#: the most bytes one memo keeps alive (its entries, and its own table)
MEMO_BYTES = 1 << 20
#: a longer string is tested or read every time, never remembered
LONGEST = 1024
#: what one entry adds to the memo's own hash table, at most: a slot (16 bytes in a set, 24 and an index in a
#: dict) and the free space kept beside it (a table just grown is a quarter full)
_SLOT = 80

K = TypeVar("K")
V = TypeVar("V")


def footprint(value: Any) -> int:
    """The bytes `value` keeps alive, strings and the tuples holding them counted whole (an upper bound:
    an object shared with another entry counts twice)."""
    if type(value) is tuple:
        return sys.getsizeof(value) + sum(map(footprint, value))
    return sys.getsizeof(value)


def _admits(size: int, cost: int) -> bool:
    """True when an entry of `cost` bytes fits a memo that holds `size` bytes."""
    return size + cost <= MEMO_BYTES


class Readings(dict[K, V]):
    """What was read from values already met (key: the value, item: its reading), bounded by bytes."""

    __slots__ = ("size",)

    def __init__(self) -> None:
        super().__init__()
        self.size = 0  # the bytes the keys and readings keep alive, with their table slots

    def remember(self, key: K, reading: V) -> None:
        """Keep `key -> reading` when the key is short enough and both fit the budget."""
        if (isinstance(key, str) and len(key) > LONGEST) or key in self:
            return
        cost = footprint(key) + footprint(reading) + _SLOT
        if _admits(self.size, cost):
            self[key] = reading
            self.size += cost
