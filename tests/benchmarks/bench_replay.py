"""Replay at scale: events per second, local and on a Dask LocalCluster (1 and 2 workers), and bounded memory.

    python3 kit.py bench                       (every benchmark)
    .venv/bin/python tests/benchmarks/bench_replay.py [--sizes 100000,1000000] [--big 10000000] [--quick]

Events are load balancer requests drawn from a generator (never a list). For each size it
prints events/s for the local engine and for Dask with 1 and 2 worker processes; it checks
that the Dask and local replays agree row for row on the first size. Then it streams `--big`
events through `fnkit.replay_partitions` on 2 workers, counting results as partitions
arrive, and prints the peak memory (RSS) of this process and of the workers against the
same run on a tenth of the events: flat, because partitions stream and no full list is held.
The machine is shared: read ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd

import fnkit
from fnkit import alb

if TYPE_CHECKING:
    from distributed import Client, LocalCluster

T = TypeVar("T")

TEMPLATES = [
    alb.build_event(m, p, query=q, headers={"user-agent": "bench/1"}, seed=i)
    for i, (m, p, q) in enumerate(
        [
            ("GET", "/api/items", "page=2"),
            ("GET", "/api/items/7", ""),
            ("POST", "/api/orders", ""),
            ("GET", "/api/report", "month=2026-01"),
            ("HEAD", "/api/items", ""),
            ("GET", "/favicon.ico", ""),
        ]
    )
]


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    path = event["path"]
    if path == "/api/report":
        return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": "[]"}
    if path == "/favicon.ico":
        return {"statusCode": 404, "body": "not found"}
    if event["httpMethod"] == "POST":
        return {"statusCode": 201, "body": event["body"] or "{}"}
    return {"statusCode": 200, "body": "ok"}


def generate(n: int) -> Iterator[dict[str, Any]]:
    """n events, made one at a time (a fresh dict each: nothing shared, nothing listed)."""
    for i in range(n):
        template = TEMPLATES[i % len(TEMPLATES)]
        event = dict(template)
        event["headers"] = dict(template["headers"], **{"x-request": str(i)})
        yield event


def cluster(workers: int) -> tuple[LocalCluster, Client]:
    from distributed import Client, LocalCluster

    c = LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address="127.0.0.1:0",
        silence_logs=logging.ERROR,
    )
    return c, Client(c)


def rss_mb() -> float:
    """This process's resident memory now (sampled while partitions stream: the peak of the samples is shown)."""
    import psutil

    return float(psutil.Process().memory_info().rss / 2**20)


def worker_rss_mb(client: Client) -> float:
    return float(max(client.run(rss_mb).values()))


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def stream(n: int, client: Client, partition_size: int, counts: Counter[str], peaks: list[float]) -> int:
    """Replay n events partition by partition, counting results and sampling memory; the rows seen."""
    rows = 0
    for i, part in enumerate(
        fnkit.replay_partitions(handler, generate(n), engine="dask", client=client, partition_size=partition_size)
    ):
        counts.update(part["result"].tolist())
        rows += len(part)
        if i % 5 == 0:
            peaks[0], peaks[1] = max(peaks[0], rss_mb()), max(peaks[1], worker_rss_mb(client))
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--big", type=int, default=10_000_000)
    parser.add_argument("--partition-size", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true", help="small sizes, to check the script runs")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.quick:
        sizes, args.big, args.partition_size = [2_000, 10_000], 40_000, 1_000
    print(f"{'events':>10} {'engine':<16} {'seconds':>8} {'events/s':>10} {'vs local':>8}")
    agreed = None
    for n in sizes:
        local_s, local = timed(partial(fnkit.replay, handler, generate(n)))
        print(f"{n:>10,} {'local':<16} {local_s:>8.1f} {n / local_s:>10,.0f} {1.0:>8.2f}")
        for workers in (1, 2):
            cl, client = cluster(workers)
            try:
                dask_s, frame = timed(
                    partial(
                        fnkit.replay,
                        handler,
                        generate(n),
                        engine="dask",
                        client=client,
                        partition_size=args.partition_size,
                        compute=True,
                    )
                )
            finally:
                client.close()
                cl.close()
            print(
                f"{n:>10,} {f'dask, {workers} worker(s)':<16} {dask_s:>8.1f} {n / dask_s:>10,.0f} "
                f"{local_s / dask_s:>8.2f}",
                flush=True,
            )
            if agreed is None:
                pd.testing.assert_frame_equal(local.drop(columns=["duration_ms"]), frame.drop(columns=["duration_ms"]))
                agreed = n
            del frame
        del local
    print(f"local and Dask replays agree row for row on {agreed:,} events")

    print(f"\nstreaming {args.big:,} events from a generator (replay_partitions, Dask, 2 workers):")
    print(f"{'events':>12} {'seconds':>8} {'events/s':>10} {'client RSS, max':>16} {'worker RSS, max':>16}")
    counts: Counter[str] = Counter()
    for n in (args.big // 10, args.big):
        cl, client = cluster(2)
        try:
            counts = Counter()
            peaks = [rss_mb(), worker_rss_mb(client)]
            run = partial(stream, n, client, args.partition_size, counts, peaks)
            seconds, rows = timed(run)
            assert rows == n and sum(counts.values()) == n
            print(
                f"{n:>12,} {seconds:>8.1f} {n / seconds:>10,.0f} {peaks[0]:>13.0f} MB {peaks[1]:>13.0f} MB", flush=True
            )
        finally:
            client.close()
            cl.close()
    print("results:", dict(sorted(counts.items(), key=str)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
