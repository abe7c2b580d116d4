"""The validators' memos of values already met (fnkit/_engine/memo.py) are bounded by bytes, not by count, and so
are the memos of the values each declared pattern accepted (fnkit/_engine/patterns.py)."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fnkit import alb, queue
from fnkit._engine.memo import LONGEST, MEMO_BYTES, Readings
from fnkit._engine.patterns import PATTERN_BYTES, PatternCheck

MB = 1024 * 1024


def kept_alive(work: Callable[[], None]) -> int:
    """The bytes still allocated after `work` ran and its garbage was collected (what the memos keep)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        work()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def alb_events_with_distinct_paths(n: int, length: int) -> Iterator[dict[str, Any]]:
    base = alb.build_event("GET", "/", seed=1)
    for i in range(n):
        yield {**base, "path": f"/{i:06d}" + "x" * (length - 7)}


def test_distinct_100_kb_paths_are_not_kept_alive():
    def validate() -> None:
        for event in alb_events_with_distinct_paths(300, 100_000):
            assert alb.validate_event(event).ok

    # before: each path stayed in the path constraint's memo (4,096 of them: about 400 MB)
    assert kept_alive(validate) < 1 * MB  # 300 paths are 30 MB; the path's constraint remembers none


def test_distinct_long_queue_arns_fill_at_most_the_byte_budget():
    event = queue.build_event(["x"], seed=1)
    record = event["Records"][0]

    def validate() -> None:
        for i in range(2500):  # 2.4 MB of ARNs, made here
            arn = f"arn:aws:sqs:us-east-1:123456789012:q{i:05d}" + "n" * 900
            assert queue.validate_event({"Records": [{**record, "eventSourceARN": arn}]}).ok

    # the ARN readings' memo and the ARN pattern's memo of accepted values, each full at its budget
    assert kept_alive(validate) <= 1.1 * (MEMO_BYTES + PATTERN_BYTES)


def test_a_pattern_remembers_only_values_it_accepted_and_stops_at_its_budget():
    check = PatternCheck(r"^[0-9]+$")

    def fill() -> None:
        for i in range(PATTERN_BYTES // 50):  # more than the memo holds
            assert check.holds([f"{i:012d}", f"{i:013d}"]) and not check.holds([f"{i:012d}", f"{i}x"])

    kept = kept_alive(fill)
    assert kept <= 1.1 * PATTERN_BYTES
    assert check.holds(["000000000000"]) and not check.holds(["0x"]) and not check.holds(["000000000000", "0x"])


@pytest.mark.parametrize("length", [10, 200])
def test_a_memo_accounts_for_what_it_keeps_and_stops_at_its_budget(length):
    readings: Readings[str, tuple[str, str]] = Readings()

    def fill() -> None:
        for i in range(MEMO_BYTES // (length + 100) + 50):  # more than the memo holds
            text = f"{i:08d}" + "x" * length
            readings.remember(text, (text[:3], text[3:8]))

    kept = kept_alive(fill)
    assert readings.size <= MEMO_BYTES
    assert MEMO_BYTES - readings.size < 500  # full: no next entry fits
    assert "00000000" + "x" * length in readings  # the first are kept, nothing evicted
    assert kept <= readings.size  # the accounting does not undercount


def test_a_string_longer_than_the_longest_is_never_remembered():
    readings: Readings[str, int] = Readings()
    readings.remember("y" * (LONGEST + 1), 1)
    readings.remember("short", 2)
    assert set(readings) == {"short"}
