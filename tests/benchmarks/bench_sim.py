"""Benchmark: the queue simulator and replay (run by hand: `python3 kit.py bench`).

Targets (issue "Contract engine"), measured inline (isolation="none"); the cost of a worker
process per invocation is printed beside them:
- 1,000,000 messages through a standard queue, trivial handler, 10% of records reported
  failed, max_receive_count=3: <= 8 s and <= 800 MB peak RSS; printed beside the
  serialization floor (json.dumps + json.loads of the same events) as a ratio.
- replay of 100,000 queue records to a DataFrame: <= 3 s.
Pass --quick for a 10x smaller run; --sim-only skips replay; --json prints the simulation's
figures as one JSON line (bench_validate.py reads it).
"""

from __future__ import annotations

import json
import resource
import sys
import time

import fnkit
from fnkit import queue

QUICK = "--quick" in sys.argv
SIM_ONLY = "--sim-only" in sys.argv
AS_JSON = "--json" in sys.argv
N = 100_000 if QUICK else 1_000_000
REPLAY_RECORDS = 10_000 if QUICK else 100_000


def handler(event, context):
    records = event["Records"]
    return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in records[::10]]}


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    print(f"== queue simulator: {N:,} messages, 10% failed per batch, max_receive_count=3")
    before = rss_mb()
    started = time.perf_counter()
    sim = queue.QueueSim(max_receive_count=3, seed=0)
    for i in range(N):
        sim.send(f"payload {i}")
    sent = time.perf_counter()
    run = sim.run(handler, isolation="none")  # the simulator's own speed; the isolation cost is measured below
    finished = time.perf_counter()
    summary = run.summary()
    total = finished - started
    peak = rss_mb()
    print(
        f"   send {sent - started:.2f} s, run {finished - sent:.2f} s, total {total:.2f} s; "
        f"peak RSS {peak:,.0f} MB (start {before:,.0f} MB)"
    )
    print(
        f"   {summary['invocations']:,} invocations, {summary['receives']:,} receives, {summary['deleted']:,} deleted, "
        f"{summary['dead-lettered']:,} dead-lettered, {summary['queued']:,} queued"
    )
    rate = summary["receives"] / total

    # the serialization floor: what a real platform pays just to hand the same events over
    sample = run.invocations[: min(2000, len(run.invocations))]
    events = [inv.event for inv in sample]
    records = sum(len(e["Records"]) for e in events)
    t0 = time.perf_counter()
    for event in events:
        json.loads(json.dumps(event))
    floor_per_record = (time.perf_counter() - t0) / records
    sim_per_record = total / summary["receives"]
    print(
        f"   {rate:,.0f} records/s; serialization floor {1 / floor_per_record:,.0f} records/s; "
        f"simulator cost / floor = {sim_per_record / floor_per_record:.2f}x"
    )
    limit_s = 8 if not QUICK else 0.8
    print(
        f"   target <= {limit_s} s: {'PASS' if total <= limit_s else 'MISS'};  "
        f"target <= 800 MB: {'PASS' if peak <= 800 else 'MISS'}"
    )
    if AS_JSON:
        print(
            json.dumps(
                {
                    "messages": N,
                    "seconds": total,
                    "peak_mb": peak,
                    "start_mb": before,
                    "invocations": summary["invocations"],
                    "receives": summary["receives"],
                }
            )
        )
    if SIM_ONLY:
        return
    del run, sim, events

    small = N // 10
    for mode in ("thread", "process"):
        sim = queue.QueueSim(max_receive_count=3, seed=0)
        sim.send_many(f"payload {i}" for i in range(small))
        t0 = time.perf_counter()
        summary = sim.run(handler, isolation=mode).summary()
        took = time.perf_counter() - t0
        print(
            f"   {small:,} messages with isolation={mode!r}: {took:.2f} s, {summary['invocations']:,} invocations "
            f"({took / summary['invocations'] * 1e6:,.0f} us per invocation)"
        )

    print(f"== replay: {REPLAY_RECORDS:,} queue records (10-record batches) to a DataFrame")
    batches = [queue.build_event([f"body {i}-{j}" for j in range(10)], seed=i) for i in range(REPLAY_RECORDS // 10)]
    t0 = time.perf_counter()
    import pandas as pd  # noqa: F401  - loading the DataFrame library is not replay's work

    print(f"   (pandas import {time.perf_counter() - t0:.2f} s, not counted)")
    t0 = time.perf_counter()
    frame = fnkit.replay(handler, batches, isolation="none")  # replay's own speed; per isolation: bench_invoke.py
    took = time.perf_counter() - t0
    limit = 3 if not QUICK else 0.3
    print(
        f"   {len(frame):,} rows in {took:.2f} s ({len(frame) / took:,.0f} rows/s); "
        f"target <= {limit} s: {'PASS' if took <= limit else 'MISS'}"
    )


if __name__ == "__main__":
    main()
