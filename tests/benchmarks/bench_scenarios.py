"""Soak: 1,000 random QueueSim scenarios and 1,000 random MailRule runs (issue 10), in worker processes.

Invariants (tests/scenarios.py): every sent message ends deleted, dead-lettered or queued and
none is lost or delivered after its deletion; FIFO groups are received in send order; every
mail recipient gets exactly one disposition. Pass --quick for 100 of each.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests import scenarios

QUICK = "--quick" in sys.argv
COUNT = 100 if QUICK else 1_000


def main() -> int:
    failures = []
    totals: Counter[Any] = Counter()
    started = time.perf_counter()
    for seed in range(COUNT):
        try:
            summary = scenarios.queue_scenario(seed, "process")
        except AssertionError as exc:
            failures.append(("queue", seed, str(exc)))
            continue
        for key in ("sent", "deleted", "dead-lettered", "queued", "invocations", "ordering warnings"):
            totals[key] += summary[key]
    queue_s = time.perf_counter() - started
    print(f"== {COUNT:,} random QueueSim scenarios (isolation='process') in {queue_s:.1f} s")
    print("   " + ", ".join(f"{k}: {v:,}" for k, v in totals.items()))
    statuses: Counter[Any] = Counter()
    started = time.perf_counter()
    for seed in range(COUNT):
        try:
            statuses[scenarios.mail_scenario(seed, "process")["status"]] += 1
        except AssertionError as exc:
            failures.append(("mail", seed, str(exc)))
    print(f"== {COUNT:,} random MailRule runs (isolation='process') in {time.perf_counter() - started:.1f} s")
    print("   outcomes: " + ", ".join(f"{k}: {v:,}" for k, v in sorted(statuses.items())))
    for failure in failures[:10]:
        print(f"   FAILED {failure}")
    print(f"   {'PASS' if not failures else 'MISS'}: {len(failures)} scenario(s) broke an invariant")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
