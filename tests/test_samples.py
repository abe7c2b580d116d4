"""The importers' sample files (data/alb, data/queue): reproducible, and read with every line accounted for."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
from pathlib import Path

from fnkit import alb, corpus, queue
from fnkit._import import kind_of

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"


def _tool():
    spec = importlib.util.spec_from_file_location("fnkit_samples_tool", ROOT / "tools" / "samples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_samples_are_what_the_generator_makes(tmp_path):
    written = _tool().write(tmp_path)
    assert len(written) == 9  # 2 access logs, 2 queue dumps, the night: 4 access logs and 1 dump
    for path in written:
        name = path.relative_to(tmp_path)
        assert path.read_bytes() == (DATA / name).read_bytes(), f"data/{name} is stale: run tools/samples.py"


def test_the_access_log_sample_is_read_with_every_line_accounted_for():
    stream = alb.events_from_access_log(DATA / "alb" / "access-logs", progress=False)
    requests = list(stream)
    assert (stream.read, stream.yielded, stream.reported) == (75, 73, 2)
    assert [(i.code, i.path.rsplit("_", 1)[-1]) for i in stream.issues] == [
        ("incomplete", "f6e9b2b2.log.gz:25"),
        ("format", "362fb7ee.log.gz:18"),
    ]
    assert all(alb.validate_event(r.event).ok for r in requests)
    assert {r.status for r in requests} == {200, 201, 404, 502}


def test_the_queue_samples_give_valid_events_and_report_the_edited_body():
    stream = queue.events_from_messages(DATA / "queue" / "receive-message.json", progress=False)
    events = list(stream)
    assert (stream.read, stream.yielded, stream.reported) == (10, 1, 0)
    assert all(queue.validate_event(e).ok for e in events)
    dead = queue.events_from_messages(DATA / "queue" / "dead-letter.jsonl", progress=False)
    events = list(dead)
    assert (dead.read, dead.yielded, dead.reported) == (9, 2, 1)
    assert [len(e["Records"]) for e in events] == [3, 6]  # the message received twice starts the second batch
    assert "MD5OfBody is" in dead.issues[0].message and dead.issues[0].path.endswith("dead-letter.jsonl:3")
    assert [queue.validate_event(e).ok for e in events] == [True, False]


def test_inputs_are_recognised_by_their_content():
    assert kind_of(DATA / "alb" / "access-logs") == "access-log"
    assert kind_of(DATA / "queue" / "receive-message.json") == "messages"
    assert kind_of(DATA / "queue" / "dead-letter.jsonl") == "messages"
    assert kind_of(corpus.path()) == "events"


HANDLER = """
def handler(event, context):
    if "Records" in event:
        return {"batchItemFailures": []}
    if event["path"].startswith("/api/report"):
        return {"statusCode": 200, "body": "report"}
    return {"statusCode": 404 if event["path"] == "/favicon.ico" else 200, "body": "ok"}
"""


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "shop.py").write_text(HANDLER)
    return subprocess.run(
        [sys.executable, "-m", "fnkit", "replay", "shop:handler", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_fnkit_replay_on_the_command_line_reads_logs_and_dumps_and_writes_every_row(tmp_path):
    out = tmp_path / "rows.csv"
    done = _cli(
        tmp_path, str(DATA / "alb" / "access-logs"), str(DATA / "queue" / "dead-letter.jsonl"), "--out", str(out)
    )
    assert done.returncode == 1, done.stderr  # an unreadable log line and an invalid event are findings
    # the invalid batch is a row for each of its 6 messages
    assert "2 unreadable and 6 invalid row(s); --allow-invalid accepts them" in done.stderr
    text = done.stdout
    assert "access log: read 75 lines, yielded 73 requests, reported 2 lines" in text
    assert "queue messages: read 9 messages, yielded 2 events, reported 1 message" in text
    assert "84 row(s) from 77 event(s) on the local engine" in text
    assert "agrees with the log:" in text
    import pandas as pd

    rows = pd.read_csv(out)
    assert len(rows) == 84 and {"logged_status", "agrees", "receive_count", "line"} <= set(rows.columns)


def test_fnkit_replay_on_a_dask_local_cluster_says_the_same(tmp_path):
    local = _cli(tmp_path, str(DATA / "alb" / "access-logs"), "--allow-invalid")
    # another cluster's dashboard holds the usual port (a notebook's, a benchmark's): ours takes a free one, quietly
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            taken.bind(("127.0.0.1", 8787))
            taken.listen()
        except OSError:  # already held by a running cluster: the same situation
            pass
        dask = _cli(
            tmp_path,
            str(DATA / "alb" / "access-logs"),
            "--allow-invalid",
            *("--engine", "dask", "--workers", "1", "--partition-size", "20"),
        )
    assert dask.returncode == 0, dask.stderr
    assert "already in use" not in dask.stderr
    assert local.stdout.replace("local engine", "dask engine") == dask.stdout


def test_fnkit_replay_says_when_an_input_is_missing(tmp_path):
    done = _cli(tmp_path, "no-such-file.log")
    assert done.returncode == 2 and "no such file or folder: no-such-file.log" in done.stderr
