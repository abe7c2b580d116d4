"""Replay engines: the local engine and the Dask engine call one partition function and agree, row for row."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import distributed  # the dev extra installs it (fnkit[dask] for users)
import pandas as pd
import pytest
from dask.base import compute

import fnkit
from fnkit import alb, corpus, queue
from fnkit._replay.run import partitions

TIMING = ["duration_ms"]  # wall-clock time of each invocation: the one column that differs between two runs


def handler(event, context):
    if "Records" in event:
        return {
            "batchItemFailures": [
                {"itemIdentifier": r["messageId"]} for r in event["Records"] if r["body"] == "{not json"
            ]
        }
    if "envelope" in event:
        if "exe" in event["subject"]:
            return {"actions": [{"action": {"type": "BOUNCE"}, "allRecipients": True}]}
        return {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}]}
    if event["httpMethod"] == "POST":
        raise ValueError("no body")
    return {"statusCode": 200, "body": "ok"}


@pytest.fixture(scope="module")
def client():
    # threads, not processes: starting worker processes costs seconds the tests do not need to spend
    # a free loopback port for the dashboard: None would still take 8787, and warn when it is taken
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0"
        ) as cluster,
        distributed.Client(cluster) as c,
    ):  # the default client, as a user's Client() is
        yield c


def events(n: int) -> list[Any]:
    base = corpus.load()
    return [base[i % len(base)] for i in range(n)]


def test_dask_and_local_replays_are_identical_on_the_same_events(client):
    sample = events(2_000)
    local = fnkit.replay(handler, sample, label="v1")
    gathered = fnkit.replay(handler, sample, engine="dask", client=client, partition_size=150, compute=True, label="v1")
    pd.testing.assert_frame_equal(local.drop(columns=TIMING), gathered.drop(columns=TIMING))
    lazy = fnkit.replay(handler, sample, engine="dask", client=client, partition_size=150, label="v1")
    assert type(lazy).__module__.startswith("dask") and lazy.npartitions == 14
    assert list(lazy.columns) == list(local.columns)
    # the frame and a groupby over it, computed together: the partitions run once for both
    computed, sizes = compute(lazy, lazy.groupby("rule").size())
    pd.testing.assert_frame_equal(local.drop(columns=TIMING), computed.drop(columns=TIMING), check_index_type="equiv")
    assert sizes.sort_index().equals(local.groupby("rule").size().sort_index())


def test_a_generator_streams_through_partitions_and_is_never_listed(client):
    taken = []

    def generate(n):
        for i in range(n):
            taken.append(i)
            yield queue.build_event([f"m{i}"], seed=i)

    stream = fnkit.replay_partitions(
        handler, generate(1_000), engine="dask", client=client, partition_size=50, window=2
    )
    first = next(stream)
    # a window of two partitions: the generator is ahead by at most two partitions, not at its end
    assert len(first) == 50 and len(taken) <= 150
    rest = list(stream)
    assert sum(len(f) for f in [first, *rest]) == 1_000
    assert list(pd.concat([first, *rest])["event"]) == list(range(1_000))


def test_local_partitions_stream_too_and_partitions_never_list_the_input():
    seen = []

    def generate():
        for i in range(10):
            seen.append(i)
            yield i

    chunks = partitions(generate(), 4)
    assert next(chunks) == (0, [0, 1, 2, 3]) and seen == [0, 1, 2, 3]
    assert list(chunks) == [(4, [4, 5, 6, 7]), (8, [8, 9])]
    frames = list(
        fnkit.replay_partitions(handler, (queue.build_event(["a", "b"], seed=i) for i in range(5)), partition_size=2)
    )
    assert [len(f) for f in frames] == [4, 4, 2] and list(frames[2]["event"]) == [4, 4]


def test_an_access_log_replays_on_dask_with_its_logged_columns_and_unreadable_lines(client):
    lines = [
        f"https 2026-01-05T10:00:0{i}.000000Z app/lb/1 203.0.113.9:4000 - 0.001 0.020 0.000 {s} {s} 10 20 "
        f'"GET https://shop.example.com:443/p{i} HTTP/1.1" "curl/8" - - - "-"'
        for i, s in enumerate([200, 502])
    ]
    lines.insert(1, "garbage")
    local = fnkit.replay(handler, alb.events_from_access_log(lines))
    dask = fnkit.replay(handler, alb.events_from_access_log(lines), engine="dask", client=client, compute=True)
    pd.testing.assert_frame_equal(local.drop(columns=TIMING), dask.drop(columns=TIMING))
    assert list(local["result"]) == ["200", "unreadable", "200"]
    assert list(local["logged_status"].astype("Int64")) == [200, pd.NA, 502]
    agrees = local["agrees"]
    assert str(agrees.dtype) == "boolean" and agrees[0] and pd.isna(agrees[1]) and not agrees[2]
    assert (local["file"][1], local["line"][1]) == ("<lines>", 2) and pd.isna(local["item"][1])


def test_a_handler_that_cannot_be_serialised_is_refused_with_a_clear_sentence(client):
    lock = threading.Lock()

    def locked(event, context):
        with lock:
            return {"statusCode": 200}

    with pytest.raises(TypeError, match="cannot be sent to the Dask workers: cloudpickle cannot serialise it"):
        fnkit.replay(locked, [alb.build_event()], engine="dask", client=client)


def test_an_event_that_cannot_be_serialised_becomes_a_row_saying_so(client):
    good = queue.build_event(["a"], seed=1)
    odd = {"Records": [], "handle": threading.Lock()}
    frame = fnkit.replay(handler, [good, odd, good], engine="dask", client=client, compute=True)
    assert list(frame["result"]) == ["delete", "not sent", "delete"]
    assert frame["reason"][1].startswith("The event cannot be sent to the Dask workers: pickle cannot serialise it")


def test_options_reach_the_sources_and_unknown_ones_are_refused(client):
    event = queue.build_event(["{not json", "ok"], seed=3)
    frame = fnkit.replay(handler, [event], engine="dask", client=client, compute=True, report_batch_item_failures=False)
    assert list(frame["rule"]) == ["Q7", "Q7"]
    with pytest.raises(TypeError, match="no source's run takes: timout_s"):
        fnkit.replay(handler, [event], timout_s=3)
    with pytest.raises(ValueError, match="engine is one of local, dask"):
        fnkit.replay(handler, [event], engine="spark")


def test_an_empty_input_gives_the_empty_frame_on_both_engines(client):
    assert list(fnkit.replay(handler, []).columns) == [
        "event",
        "source",
        "item",
        "result",
        "rule",
        "inferred",
        "reason",
    ]
    assert len(fnkit.replay(handler, iter([]), engine="dask", client=client).compute()) == 0


def test_a_path_is_read_by_content_an_access_log_a_message_dump_or_events(tmp_path):
    root = Path(__file__).resolve().parent.parent / "data"  # the importers' sample inputs
    logs = fnkit.replay(handler, root / "alb" / "access-logs")
    assert {"logged_status", "agrees", "line"} <= set(logs.columns) and (logs["result"] == "unreadable").sum() == 2
    dump = fnkit.replay(handler, root / "queue" / "receive-message.json")
    assert set(dump["source"]) == {"queue"} and len(dump) == 10
    jsonl = tmp_path / "events.jsonl"
    jsonl.write_text(fnkit._replay.run.dumps_events([queue.build_event(["x"], seed=1)]) + "{oops\n")
    frame = fnkit.replay(handler, jsonl)
    assert list(frame["result"]) == ["delete", "unreadable"]
    assert frame["file"][1].endswith("events.jsonl") and frame["line"][1] == 2


def test_dask_workers_run_handlers_in_their_own_process_unless_told_to_isolate(client, tmp_path):
    import os

    def pid_handler(event, context):
        with open(event["path"], "a") as out:  # the pid of the process that ran the handler
            out.write(f"{os.getpid()}\n")
        return {"statusCode": 200}

    def ran_in(isolation, name):
        log = tmp_path / name
        events = [alb.build_event("GET", str(log), seed=i) for i in range(4)]
        given = {} if isolation is None else {"isolation": isolation}
        fnkit.replay(pid_handler, events, engine="dask", client=client, compute=True, **given)
        return {int(line) for line in log.read_text().split()}

    workers = set(client.run(os.getpid).values())  # the workers' process (this one: the fixture's are threads)
    assert ran_in(None, "inline") <= workers  # the default
    assert not ran_in("process", "isolated") & workers  # a worker process of fnkit's own, as asked


def test_the_default_partition_size_gives_every_worker_thread_a_share(client):
    sample = events(3_000)
    lazy = fnkit.replay(handler, sample, engine="dask", client=client)
    assert lazy.npartitions == 2  # 2 threads: 1,500 events each, not one partition of 3,000
    streamed = list(fnkit.replay_partitions(handler, iter(sample), engine="dask", client=client))
    assert [f["event"].iloc[0] for f in streamed] == [0, 1_500]
    big = fnkit.replay(handler, iter(events(12_000)), engine="dask", client=client)
    assert big.npartitions == 3  # past one default partition (5,000) per thread: partitions of 5,000


_SESSION_REPLAY = """
import fnkit
from fnkit import queue

def handler(event, context):
    return {"batchItemFailures": []}

if __name__ == "__main__":
    events = [queue.build_event(["a"], seed=i) for i in range(8)]
    lazy = fnkit.replay(handler, events, engine="dask", partition_size=2, isolation="none")
    print(len(lazy.compute()))  # the lazy frame still holds its partitions' futures at exit
"""


def test_the_session_cluster_shuts_down_quietly_at_exit(tmp_path):
    # the cluster fnkit makes when no client is given, in a process of its own: what its exit prints
    script = tmp_path / "session_replay.py"
    script.write_text(_SESSION_REPLAY)
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0 and proc.stdout.split() == ["8"], proc.stderr
    # before: "Removing worker ... caused the cluster to lose already computed task(s)", once per worker
    assert "lose already computed" not in proc.stderr and "Removing worker" not in proc.stderr, proc.stderr
    assert "still alive" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


CALLS: list[int] = []


def counting(event, context):
    CALLS.append(1)
    return handler(event, context)


def test_a_lazy_replay_runs_no_handler_until_computed_and_has_the_local_dtypes(client):
    sample = events(600)
    CALLS.clear()
    local = fnkit.replay(counting, sample)
    calls = len(CALLS)
    CALLS.clear()
    lazy = fnkit.replay(counting, sample, engine="dask", client=client, partition_size=100)
    assert CALLS == []  # a dask DataFrame: nothing has run yet (before, every partition ran at once)
    assert list(lazy.columns) == list(local.columns)
    kinds = {c: "category" if isinstance(t, pd.CategoricalDtype) else str(t) for c, t in local.dtypes.items()}
    assert {c: "category" if isinstance(t, pd.CategoricalDtype) else str(t) for c, t in lazy.dtypes.items()} == kinds
    computed = lazy.compute()
    assert len(CALLS) == calls
    pd.testing.assert_frame_equal(local.drop(columns=TIMING), computed.drop(columns=TIMING), check_index_type="equiv")


def test_no_large_graph_is_sent_the_partitions_and_handler_go_by_reference(client):
    import pickle
    import warnings

    import dask

    sample = [queue.build_event([f"{i}.{j}" + "x" * 2_000 for j in range(10)], seed=i) for i in range(200)]
    assert len(pickle.dumps(sample[:50])) > 1_000_000  # a partition of 50 events: over the threshold below
    with (
        dask.config.set({"distributed.admin.large-graph-warning-threshold": "1MB"}),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        lazy = fnkit.replay(handler, sample, engine="dask", client=client, partition_size=50)
        assert len(lazy.compute()) == 2_000
        assert (
            len(fnkit.replay(handler, sample, engine="dask", client=client, partition_size=50, compute=True)) == 2_000
        )
        streamed = fnkit.replay_partitions(handler, sample, engine="dask", client=client, partition_size=50)
        assert sum(len(f) for f in streamed) == 2_000
    assert not [w for w in caught if "large graph" in str(w.message)]  # before: "Sending large graph of size ..."


_NO_GUARD = """
import fnkit
from fnkit import queue

def handler(event, context):
    return {"batchItemFailures": []}

events = [queue.build_event(["a"], seed=i) for i in range(4)]
print(len(fnkit.replay(handler, events, engine="dask", compute=True)))
"""


def test_a_script_without_a_main_guard_is_told_to_add_one_before_any_worker_starts(tmp_path):
    script = tmp_path / "no_guard.py"
    script.write_text(_NO_GUARD)
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr
    said = proc.stderr.strip().splitlines()[-1]
    assert 'if __name__ == "__main__":' in said and "main guard" in said and "no_guard.py" in said, said
    assert "Nanny failed to start" not in proc.stderr  # before: the workers ran the script again and failed


def test_a_lazy_replay_computes_when_a_category_is_empty_in_some_partitions(client):
    sample = [alb.build_event("GET", f"/items/{i}", seed=i) for i in range(4)] + [alb.build_event("POST", "/o", seed=9)]
    lazy = fnkit.replay(handler, sample, engine="dask", client=client, partition_size=2)  # only the last has a cause
    computed = lazy.compute()  # before: "dtype of categories must be the same"
    assert list(computed["cause"].astype(object).fillna("-")) == ["-", "-", "-", "-", "raised"]
    pd.testing.assert_frame_equal(
        fnkit.replay(handler, sample).drop(columns=TIMING), computed.drop(columns=TIMING), check_index_type="equiv"
    )
