"""Replay at scale: the contract rows side by side, then events per second at scale and bounded memory.

    python3 kit.py bench                       (every benchmark)
    .venv/bin/python tests/benchmarks/bench_replay.py [--contracts] [--logs] [--sizes 100000,1000000]
                                                      [--big 10000000] [--quick] [--in-process]

The contract rows come first, measured in this one run and printed side by side with
their targets and the load average (the machine is shared: read the ratios):
- local replay of 1-record queue events with a trivial handler, in-process (isolation
  "none", the default) and isolation="process", and their ratio; beside them, the same
  events through each source's `run` called per event, rows kept and one frame made (the
  engine before chunks, with today's detection) and the speed-up over it (the issue's
  16,700 to 50,000 events/s is 3.0), validation alone (`validate_event` per event: no
  replay that checks every event can go faster), the cost of source detection per event,
  and json.loads of one event's text as a yardstick of the machine's speed at the time;
- a CPU-bound 1 ms handler over 3,000 events: the local engine, Dask with 1 worker and
  with 2 workers at the default partition size, and the ratios.
Each speed is the best of a few interleaved rounds; the in-process rows also show events
per CPU-second of this process, which other work on the machine changes less (though
still some: a shared core runs slower). `--contracts` stops there; `--in-process` prints the
in-process replay's row alone (events/s, events per CPU-second, one event in json.loads of its
text: the issue's target), in a few seconds.

Then a night of access logs (tests/night.py: 200,000 requests in 192 gzip files, one cut;
`--quick`: 20,000 in 16): the importer's lines/s against a pandas regex parse of the same
files (str.extract, then the status and time columns typed), measured in this run (the
importer reads and checks every field of every line and locates each bad one; a request's
log is typed and its event made when first read, so the replay row pays for those), the
replay's rows/s over the imported requests with a trivial handler (in-process, after a
warm-up on the last 200), import and replay together, and the frame's memory. `--logs`
runs only these rows.

Then, at scale, events are load balancer requests drawn from a generator (never a list).
For each size it prints events/s for the local engine and for Dask with 1 and 2 worker
processes; it checks that the Dask and local replays agree row for row on the first size.
Then it streams `--big` events through `fnkit.replay_partitions` on 2 workers, counting
results as partitions arrive, and prints the peak memory (RSS) of this process and of the
workers against the same run on a tenth of the events: flat, because partitions stream
and no full list is held.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd

import fnkit
from fnkit import alb, queue

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


# --- the contract rows ---------------------------------------------------------------------------

QUEUE_TEMPLATE = queue.build_event(['{"type": "order", "id": 0}'], seed=1)


def queue_events(n: int) -> list[dict[str, Any]]:
    """n distinct 1-record queue events (each its own dicts, its own messageId and body)."""
    text = json.dumps(QUEUE_TEMPLATE)
    record = QUEUE_TEMPLATE["Records"][0]
    out = []
    for i in range(n):
        event = json.loads(text)
        first = event["Records"][0]
        first["messageId"] = f"{record['messageId'][:-8]}{i:08d}"
        out.append(event)
    return out


def trivial(event: dict[str, Any], context: object) -> None:
    return None


def busy_1ms(event: dict[str, Any], context: object) -> None:
    """1 ms of this thread's CPU time, whatever else the machine runs."""
    start = time.thread_time()
    while time.thread_time() - start < 0.001:
        pass


def best_rate(n: int, fn: Callable[[], object], rounds: list[float], cpu: list[float] | None = None) -> None:
    """Append n / wall seconds to `rounds` (and n / this process's CPU seconds to `cpu`)."""
    started = time.process_time()
    seconds, _ = timed(fn)
    rounds.append(n / seconds)
    if cpu is not None:
        cpu.append(n / (time.process_time() - started))


def per_event_runs(events: list[dict[str, Any]]) -> pd.DataFrame:
    """The engine before chunks: detection and each source's `run` per event, every row kept, one frame."""
    from fnkit._replay.run import _finish, _partition_frame

    rows = []
    for index, event in enumerate(events):
        source = fnkit.detect_source(event)
        assert source == "queue"
        result = queue.run(trivial, event, isolation="none")
        for row in result.rows():
            row["event"] = index
            row.setdefault("result", row.get(result.result_column))
            rows.append(row)
    return _finish([_partition_frame(rows)])


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def in_process_row(quick: bool) -> None:
    """The in-process replay of 1-record queue events alone: the best of a few rounds, events per CPU-second, and
    one event's replay counted in json.loads of its text (measured in this run)."""
    n = 5_000 if quick else 50_000
    events = queue_events(n)
    fnkit.replay(trivial, events[:200])  # warm: the replay's modules imported, as in a session
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(1 if quick else 3):
        best_rate(n, partial(fnkit.replay, trivial, events), wall, cpu)
    texts = [json.dumps(e) for e in events]
    loads_s = min(timed(lambda: [json.loads(t) for t in texts])[0] for _ in range(3))
    print(f"replay in-process, {n:,} 1-record queue events, trivial handler ({load()})")
    print(f"{'row':<64} {'measured':>14} {'target':>12}")
    print(f"{'  local replay in-process (default), events/s':<64} {max(wall):>14,.0f} {'>= 40,000':>12}")
    print(f"{'    the same, events per CPU-second of this process':<64} {max(cpu):>14,.0f}")
    print(f"{'  yardstick: json.loads of one event text now, us':<64} {loads_s / n * 1e6:>14.1f}")
    per_event = n / (loads_s * max(wall))
    print(f"{'  local replay in-process, one event in json.loads of its text':<64} {per_event:>14.2f}", flush=True)


def contract_rows(quick: bool) -> None:
    n = 5_000 if quick else 50_000
    events = queue_events(n)
    fnkit.replay(trivial, events[:200], isolation="process")  # a warm worker, as a session has one
    print(f"replay, contract rows ({load()})")
    rates: dict[str, list[float]] = {"run": [], "none": [], "process": [], "run cpu": [], "none cpu": []}
    for _ in range(1 if quick else 3):  # interleaved: the machine's noise hits every row alike
        best_rate(n, partial(per_event_runs, events), rates["run"], rates["run cpu"])
        best_rate(n, partial(fnkit.replay, trivial, events), rates["none"], rates["none cpu"])
        best_rate(n, partial(fnkit.replay, trivial, events, isolation="process"), rates["process"])
    best = {k: max(v) for k, v in rates.items()}
    detect_s, _ = timed(lambda: [fnkit.detect_source(e) for e in events])
    validate_s = min(timed(lambda: [queue.validate_event(e) for e in events])[0] for _ in range(1 if quick else 3))
    texts = [json.dumps(e) for e in events]
    loads_s = min(timed(lambda: [json.loads(t) for t in texts])[0] for _ in range(3))
    ratio = best["process"] / best["none"]
    print(f"{'row':<64} {'measured':>14} {'target':>12}")
    print(f"{f'{n:,} 1-record queue events, trivial handler:':<64}")
    print(f"{'  per-event run() + detection + frame (before chunks), events/s':<64} {best['run']:>14,.0f}")
    print(f"{'    the same, events per CPU-second of this process':<64} {best['run cpu']:>14,.0f}")
    print(f"{'  local replay in-process (default), events/s':<64} {best['none']:>14,.0f} {'>= 50,000':>12}")
    print(f"{'    the same, events per CPU-second of this process':<64} {best['none cpu']:>14,.0f} {'>= 50,000':>12}")
    speedup = best["none"] / best["run"]
    print(f"{'  in-process replay / per-event run() (50,000 / 16,700 = 3.0)':<64} {speedup:>14.2f} {'>= 3.0':>12}")
    print(f"{'  validation alone (validate_event per event), events/s':<64} {n / validate_s:>14,.0f}")
    print(f"{'    (the ceiling of any replay that checks every event)':<64}")
    print(f"{'  local replay isolation=process, events/s':<64} {best['process']:>14,.0f}")
    print(f"{'  ratio process / in-process':<64} {ratio:>14.2f} {'>= 0.5':>12}")
    print(f"{'  source detection, us per event':<64} {detect_s / n * 1e6:>14.1f}")
    print(f"{'  yardstick: json.loads of one event text now, us':<64} {loads_s / n * 1e6:>14.1f}")
    per_event = n / (loads_s * best["none"])  # one event's replay, counted in json.loads of its text
    print(f"{'  local replay in-process, one event in json.loads of its text':<64} {per_event:>14.2f}")

    m = 600 if quick else 3_000
    busy = queue_events(m)
    local_s, local = timed(partial(fnkit.replay, busy_1ms, busy))
    dask_s: dict[int, float] = {}
    for workers in (1, 2):
        cl, client = cluster(workers)
        try:
            fnkit.replay(busy_1ms, busy[:50], engine="dask", client=client, compute=True)  # the handler reaches them
            dask_s[workers], frame = timed(
                partial(fnkit.replay, busy_1ms, busy, engine="dask", client=client, compute=True)
            )
        finally:
            client.close()
            cl.close()
        pd.testing.assert_frame_equal(local, frame)  # queue rows hold no timing: equal as they are
    print(f"{f'{m:,} events, CPU-bound 1 ms handler, default partition size:':<64}")
    print(f"{'  local engine, seconds':<64} {local_s:>14.2f}")
    print(f"{'  Dask 1 worker, seconds':<64} {dask_s[1]:>14.2f}")
    print(f"{'  Dask 2 workers, seconds':<64} {dask_s[2]:>14.2f}")
    print(f"{'  Dask 2 workers vs 1 worker (speed-up)':<64} {dask_s[1] / dask_s[2]:>14.2f} {'>= 1.7':>12}")
    print(f"{'  Dask 2 workers vs the local engine (speed-up)':<64} {local_s / dask_s[2]:>14.2f} {'>= 1.6':>12}")
    print(f"({load()}; local and Dask frames agree row for row)\n", flush=True)


# An analyst's regex for an access-log entry (the documented fields, in order): what pandas parses with
ALB_REGEX = (
    r"^(?P<type>\S+) (?P<time>\S+) (?P<elb>\S+) (?P<client>\S+) (?P<target>\S+) (?P<request_processing_time>\S+) "
    r"(?P<target_processing_time>\S+) (?P<response_processing_time>\S+) (?P<elb_status_code>\S+) "
    r'(?P<target_status_code>\S+) (?P<received_bytes>\S+) (?P<sent_bytes>\S+) "(?P<request>[^"]*)" '
    r'"(?P<user_agent>[^"]*)" (?P<ssl_cipher>\S+) (?P<ssl_protocol>\S+) (?P<target_group_arn>\S+) '
    r'"(?P<trace_id>[^"]*)" "(?P<domain_name>[^"]*)" "(?P<chosen_cert_arn>[^"]*)" (?P<matched_rule_priority>\S+) '
    r'(?P<request_creation_time>\S+) "(?P<actions_executed>[^"]*)" "(?P<redirect_url>[^"]*)" '
    r'"(?P<error_reason>[^"]*)" "(?P<targets>[^"]*)" "(?P<target_status_codes>[^"]*)" '
    r'"(?P<classification>[^"]*)" "(?P<classification_reason>[^"]*)" ?(?P<conn_trace_id>\S*)$'
)


def pandas_regex(files: list[Any]) -> pd.DataFrame:
    """The access logs as pandas reads them with a regex: every gzip file's lines, one column per field, typed."""
    import gzip
    import zlib

    lines: list[str] = []
    for path in files:
        try:
            with gzip.open(path, "rt", encoding="utf-8", errors="replace") as fh:
                lines.extend(fh.read().splitlines())
        except (EOFError, OSError, zlib.error):
            continue  # a cut file: pandas has no way to keep what came before the cut
    frame = pd.Series(lines).str.extract(ALB_REGEX)
    frame["time"] = pd.to_datetime(frame["time"], utc=True, format="ISO8601", errors="coerce")
    for column in ("elb_status_code", "target_status_code"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("Int16")
    frame["target_processing_time"] = pd.to_numeric(frame["target_processing_time"], errors="coerce")
    return frame


def trivial_alb(event: dict[str, Any], context: object) -> dict[str, Any]:
    return {"statusCode": 200}


def access_log_rows(quick: bool) -> None:
    """The night of logs (tests/night.py): the importer against a pandas regex parse, then the replay's rows/s."""
    import tempfile
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.night import write_night

    requests, files = (20_000, 16) if quick else (200_000, 192)
    with tempfile.TemporaryDirectory() as folder:
        night = write_night(Path(folder), requests=requests, files=files, messages=1_000)
        logs = sorted(night.logs.iterdir())
        print(f"an access log of {requests:,} requests in {files} gzip files, one cut ({load()})")
        rounds = 1 if quick else 3
        logs_read = partial(alb.events_from_access_log, night.logs, progress=False)
        ours: list[float] = []
        theirs: list[float] = []
        ours_cpu: list[float] = []
        theirs_cpu: list[float] = []
        for _ in range(rounds):  # interleaved: the machine's noise hits both alike
            best_rate(1, lambda: list(logs_read()), ours, ours_cpu)
            best_rate(1, partial(pandas_regex, logs), theirs, theirs_cpu)
        ours_s, theirs_s = 1 / max(ours), 1 / max(theirs)
        stream = alb.events_from_access_log(night.logs, progress=False)
        yielded = sum(1 for _ in stream)
        print(f"{'row':<64} {'measured':>14} {'target':>12}")
        print(f"{'  importer (events_from_access_log), lines/s':<64} {stream.read / ours_s:>14,.0f}")
        print(f"{'  pandas regex (str.extract, typed), lines/s':<64} {stream.read / theirs_s:>14,.0f}")
        print(f"{'  importer / pandas regex (speed)':<64} {theirs_s / ours_s:>14.2f} {'>= 1.0':>12}")
        print(f"{'    the same, in CPU-seconds of this process':<64} {max(ours_cpu) / max(theirs_cpu):>14.2f}")
        events = list(alb.events_from_access_log(night.logs, progress=False).entries())
        fnkit.replay(trivial_alb, events[-200:])  # warm: the replay's modules imported, as in a session
        started = time.process_time()
        replay_s, frame = timed(partial(fnkit.replay, trivial_alb, events))
        replay_cpu = time.process_time() - started
        print(
            f"{f'  replay of the imported log, trivial handler ({len(frame):,} rows), rows/s':<64} "
            f"{len(frame) / replay_s:>14,.0f} {'>= 20,000':>12}"
        )
        print(f"{'    the same, rows per CPU-second of this process':<64} {len(frame) / replay_cpu:>14,.0f}")
        both_s, _ = timed(partial(fnkit.replay, trivial_alb, night.logs))
        print(f"{'  import and replay from the files, rows/s':<64} {len(frame) / both_s:>14,.0f}")
        memory = frame.memory_usage(deep=True).sum() / 2**20
        print(f"{'  the frame in memory, MB (categoricals: each string once)':<64} {memory:>14.1f}")
        print(f"({yielded:,} requests replayed, {stream.reported:,} lines reported; {load()})\n", flush=True)


class PeakRss:
    """Samples the resident memory of some processes (this one, Dask's workers) every 20 ms in a thread: the peak
    of their sum over what it was when sampling began."""

    def __init__(self, pids: list[int]) -> None:
        import threading

        import psutil

        self.processes = [psutil.Process(p) for p in pids]
        self.base = self.total()
        self.peak = self.base
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()

    def total(self) -> int:
        return sum(p.memory_info().rss for p in self.processes)

    def sample(self) -> None:
        while not self.done.wait(0.02):
            self.peak = max(self.peak, self.total())

    def stop(self) -> float:
        """The peak over the start, in MB."""
        self.done.set()
        self.thread.join()
        self.peak = max(self.peak, self.total())
        return (self.peak - self.base) / 2**20


def dask_rows(quick: bool) -> None:
    """The night's access log and message dump replayed on the local engine and lazily on Dask (2 worker
    processes, then computed): seconds and peak memory (this process and the workers, over their start)."""
    import gc
    import tempfile
    import warnings
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.night import write_night

    requests, files, messages = (20_000, 16, 10_000) if quick else (200_000, 192, 50_000)
    with tempfile.TemporaryDirectory() as folder:
        night = write_night(Path(folder), requests=requests, files=files, messages=messages)
        print(f"Dask against local: the night's access log ({requests:,} requests) and dump ({messages:,} messages)")
        print(f"{'row':<64} {'measured':>14} {'target':>12}")
        cl, client = cluster(2)
        try:
            pids = [os.getpid(), *client.run(os.getpid).values()]
            inputs = (("access log", trivial_alb, night.logs), ("message dump", trivial, night.dump))
            for name, handler_, path in inputs:
                fnkit.replay(handler_, path, engine="dask", client=client).compute()  # warm: imports in the workers
                gc.collect()
                peak = PeakRss(pids)
                local_s, local = timed(partial(fnkit.replay, handler_, path))
                local_mb = peak.stop()
                del local
                gc.collect()
                client.run(gc.collect)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    peak = PeakRss(pids)
                    began = time.perf_counter()
                    lazy = fnkit.replay(handler_, path, engine="dask", client=client)
                    on_dask = lazy.compute()
                    dask_s = time.perf_counter() - began  # the partitions sent, then computed
                    dask_mb = peak.stop()
                large = sum("large graph" in str(w.message) for w in caught)
                print(f"{f'  {name}, {len(on_dask):,} rows: local seconds':<64} {local_s:>14.2f}")
                print(f"{'    Dask (lazy, then computed), seconds':<64} {dask_s:>14.2f}")
                print(f"{'    Dask time / local time':<64} {dask_s / local_s:>14.2f}")
                print(f"{'    local peak memory over start, MB':<64} {local_mb:>14.0f}")
                print(f"{'    Dask peak memory (client + workers) over start, MB':<64} {dask_mb:>14.0f}")
                print(f"{'    Dask memory / local memory':<64} {dask_mb / local_mb:>14.2f} {'<= 1.5':>12}")
                print(f"{'    large-graph warnings':<64} {large:>14} {'0':>12}")
                del on_dask, lazy  # the lazy frame holds its partitions in the workers
        finally:
            client.close()
            cl.close()
        print(f"({load()})\n", flush=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--big", type=int, default=10_000_000)
    parser.add_argument("--partition-size", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true", help="small sizes, to check the script runs")
    parser.add_argument("--contracts", action="store_true", help="the contract rows only")
    parser.add_argument("--logs", action="store_true", help="the access-log rows only")
    parser.add_argument("--dask", action="store_true", help="the Dask against local rows only")
    parser.add_argument("--in-process", action="store_true", help="the in-process replay's row only")
    args = parser.parse_args(argv)
    if args.in_process:
        in_process_row(args.quick)
        return 0
    if args.dask:
        dask_rows(args.quick)
        return 0
    if not args.logs:
        contract_rows(args.quick)
    access_log_rows(args.quick)
    if not (args.contracts or args.logs):
        dask_rows(args.quick)
    if args.contracts or args.logs:
        return 0
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
