"""The chunked replay engine gives the rows each source's `run` gives event by event, in every isolation mode."""

from __future__ import annotations

import json
import os
import time
from typing import Any
from unittest import mock

import pandas as pd
import pytest

import fnkit
from fnkit import alb, corpus, mail, queue
from fnkit._engine.report import MISSING, ContractError, decode_json
from fnkit._replay.columns import replay_row
from fnkit._replay.partition import CHUNK_SIZE, YOUNG_THRESHOLD
from fnkit._replay.run import _finish, _partition_frame

TIMING = ["duration_ms"]  # wall-clock time of each invocation: the one column that differs between two runs
REPLACED = (
    b"From: a@example.com\r\nDate: Thu, 01 Jan 2026 00:00:00 +0000\r\nTo: b@example.com\r\n"
    b"Subject: replaced\r\n\r\nnew body\r\n"
)


def varied(event: dict[str, Any], context: Any) -> Any:
    """A handler with a branch per kind of answer, which also scribbles over the event it is given."""
    if "Records" in event:
        records = event["Records"]
        bodies = [r.get("body") for r in records]
        if "sleep" in bodies:
            time.sleep(0.7)
        if "" in bodies:
            raise ValueError("empty body")
        answer: Any = {
            "batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in records if r["body"] == "{not json"]
        }
        if any("ünïcødé" in (b or "") for b in bodies):
            answer = {"unencodable"}
        records.reverse()  # the outcome is read from the event as it arrived, not as the handler left it
        records[0]["messageId"] = "scribbled"
        return answer
    if "envelope" in event:
        subject = event.get("subject", "")
        event["envelope"]["recipients"].clear()
        if "lunch" in subject:
            raise RuntimeError("out to lunch")
        if "URGENT" in subject:
            context.message_content.put_raw_message_content(messageId=event["messageId"], content=REPLACED)
        kind = "BOUNCE" if "exe" in subject else "DEFAULT"
        return {"actions": [{"action": {"type": kind}, "allRecipients": True}]}
    path = event.get("path")
    event["path"] = "/scribbled"
    if event.get("httpMethod") == "POST":
        raise ValueError("no body")
    if path == "/admin":
        return {"statusCode": 403, "body": "no"}
    if path == "/search":
        return "not a response object"
    print("serving", path)
    return {"statusCode": 200, "body": str(path)}


def per_event(handler: Any, items: list[Any], isolation: str, **keywords: Any) -> pd.DataFrame:
    """The replay frame as `run` gives it, one call per event: what replay did before it called in chunks."""
    rows: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        value, issues = decode_json(item, "G0")
        source = fnkit.detect_source(value) if value is not MISSING else None
        if source is None:
            reason = issues[0].message if issues else "not an event of a known source"
            rule = "G3" if not issues else "G0"
            rows.append(
                {
                    "event": index,
                    "source": None,
                    "item": None,
                    "result": "invalid event",
                    "rule": rule,
                    "inferred": True,
                    "reason": reason,
                }
            )
            continue
        try:
            result = getattr(fnkit, source).run(handler, value, isolation=isolation, **keywords)
        except ContractError as exc:
            first = exc.report.errors[0]
            rows.append(
                {
                    "event": index,
                    "source": source,
                    "item": None,
                    "result": "invalid event",
                    "rule": first.rule,
                    "inferred": False,
                    "reason": f"{first.path}: {first.message}",
                }
            )
            continue
        for row in result.rows():
            row["event"] = index
            said = row.get(result.result_column)  # a word: a status as text ("502"), an action
            row.setdefault("result", str(said) if isinstance(said, int) else said)
            rows.append(replay_row(row))  # the frame's columns: one meaning each
    return _finish([_partition_frame(rows)])


def generated() -> list[Any]:
    """Events the corpus lacks: a mail message twice in a row, refusals, a timeout, text, bytes, junk, lookalikes."""
    urgent = mail.build_event(mail_from="x@example.org", recipients=["a@example.com"], subject="URGENT: now", seed=1)
    fifo = queue.build_event(["a", "{not json", "c", "{not json"], fifo=True, group_ids=["g", "g", "h", "g"], seed=2)
    upgrade = alb.build_event("GET", "/ws", seed=3)
    upgrade["headers"].update({"upgrade": "websocket", "connection": "upgrade"})
    return [
        urgent,
        urgent,  # the same message again: its own content, as a second delivery would see it
        json.dumps(fifo),
        fifo,
        upgrade,  # the load balancer answers by itself (A1)
        alb.build_event("GET", "/admin", seed=4),
        json.dumps(alb.build_event("GET", "/search", seed=5)).encode(),
        queue.build_event(["sleep"], seed=6),  # past the timeout
        queue.build_event(["x"] * 3, seed=7),
        "{not json",
        {"hello": 1},
        {"Records": [{"EventSource": "aws:sns", "Sns": {"Message": "hi"}}]},
        mail.build_event(mail_from="y@example.org", recipients=["b@example.com"], subject="Re: lunch?", seed=8),
        *[queue.build_event([f"m{i}"], seed=100 + i) for i in range(5)],
    ]


@pytest.mark.parametrize("isolation", ["none", "process"])
def test_chunks_give_the_rows_of_run_called_per_event_over_the_corpus(isolation):
    events = corpus.load()
    before = json.dumps(events)
    chunked = fnkit.replay(varied, events, isolation=isolation)
    assert json.dumps(events) == before  # the handler scribbled over its own copies, never the caller's events
    expected = per_event(varied, events, isolation)
    pd.testing.assert_frame_equal(chunked.drop(columns=TIMING), expected.drop(columns=TIMING))
    assert {"retry", "delete", "200", "403", "502", "invalid event"} <= set(chunked["result"])
    assert len(events) > CHUNK_SIZE  # the corpus spans several chunks


@pytest.mark.parametrize("isolation", ["none", "process"])
def test_chunks_give_the_rows_of_run_on_awkward_events(isolation):
    events = generated()
    chunked = fnkit.replay(varied, events, isolation=isolation, timeout_s=0.5)
    expected = per_event(varied, events, isolation, timeout_s=0.5)
    pd.testing.assert_frame_equal(chunked.drop(columns=TIMING), expected.drop(columns=TIMING))
    rules = chunked.groupby("event")["rule"].first()
    assert rules[7] == "Q6" and rules[4] == "A1" and rules[10] == "G3" and rules[11] == "G3"
    # the replaced message is delivered on both deliveries of the URGENT message (M9)
    assert list(chunked.loc[chunked["event"] < 2, "rule"]) == ["M5", "M5"]


def test_calls_keep_the_order_of_the_events_whatever_their_source():
    calls: list[str] = []

    def counting(event, context):
        calls.append(fnkit.detect_source(event) or "?")
        if "Records" in event:
            return None
        if "envelope" in event:
            return {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}]}
        return {"statusCode": 200, "body": str(len(calls))}  # the call's rank shows in the row

    events = corpus.load()[:300]
    chunked = fnkit.replay(counting, events)
    order = list(calls)
    calls.clear()
    expected = per_event(counting, events, "none")
    assert calls == order
    pd.testing.assert_frame_equal(chunked.drop(columns=TIMING), expected.drop(columns=TIMING))


def test_the_default_runs_the_handler_in_this_process_so_doubles_and_closures_work():
    double = mock.MagicMock(return_value={"statusCode": 200, "body": "ok"})
    frame = fnkit.replay(double, [alb.build_event("GET", "/a", seed=1), alb.build_event("GET", "/b", seed=2)])
    assert double.call_count == 2 and list(frame["status"]) == [200, 200]
    pids: list[int] = []
    fnkit.replay(lambda event, context: pids.append(os.getpid()), [queue.build_event(["a"], seed=3)])
    assert pids == [os.getpid()]


def test_an_unknown_isolation_is_refused_before_any_event_is_read():
    def never(event, context):
        raise AssertionError("called")

    with pytest.raises(
        ValueError, match=r"isolation is 'proces': expected 'none' \(in this process\), 'process' or 'thread'"
    ):
        fnkit.replay(never, iter([queue.build_event(["a"], seed=1)]), isolation="proces")


def test_a_forced_source_reads_every_event_as_that_source():
    sns = {"Records": [{"EventSource": "aws:sns", "Sns": {"Message": "hi"}}]}
    detected = fnkit.replay(varied, [sns])
    forced = fnkit.replay(varied, [sns], source="queue")
    assert list(detected["rule"]) == ["G3"] and detected["source"].isna().all()
    assert list(forced["source"]) == ["queue"] and forced["rule"][0] != "G3"


def test_each_call_gets_its_own_copy_of_its_event_and_values_json_cannot_hold_keep_their_type():
    plain = [queue.build_event([f"m{i}"], seed=i) for i in range(3)]
    odd = queue.build_event(["odd"], seed=9)
    odd["note"] = ("a", 2**70, float("nan"))  # type: ignore[typeddict-unknown-key]  # a tuple, a number past 64 bits, NaN: JSON does not hold them
    events = [*plain, odd]
    before = json.dumps(events, default=repr)
    got: list[Any] = []

    def scribble(event: dict[str, Any], context: Any) -> None:
        got.append(event)
        event["Records"][0]["body"] = "scribbled"

    frame = fnkit.replay(scribble, events, source="queue")
    assert json.dumps(events, default=repr) == before  # the caller's events are as they were
    assert [e["Records"][0]["body"] for e in got] == ["scribbled"] * 4
    assert all(g is not e and g["Records"] is not e["Records"] for g, e in zip(got, events, strict=True))
    assert type(got[3]["note"]) is tuple and got[3]["note"][1] == 2**70
    assert list(frame["action"]) == ["delete"] * 4


@pytest.mark.parametrize(
    "note",
    [
        ({"inner": ["x"]}, [1, 2]),  # a tuple holding a dict and a list: the chunk is copied in one pass
        {b"raw", __import__("datetime").date(2026, 1, 1)},  # no JSON value: each event is copied by itself
    ],
    ids=["tuple", "set"],
)
def test_a_handler_that_scribbles_over_its_events_changes_no_row_no_later_call_and_not_the_callers_values(note):
    events = [queue.build_event([f"m{i}"], seed=i) for i in range(4)]
    events[1]["note"] = note  # type: ignore[typeddict-unknown-key]
    before = [repr(e) for e in events]
    kept: list[Any] = []
    seen: list[str] = []

    def scribble(event: dict[str, Any], context: Any) -> Any:
        for old in kept:  # the events of earlier calls, scribbled over again: nothing reaches this call or a row
            old.clear()
        kept.append(event)
        seen.append(event["Records"][0]["messageId"])
        if "note" in event:
            assert event["note"] == note and type(event["note"]) is type(note)  # its own copy, of the same types
            if isinstance(event["note"], tuple):
                event["note"][0]["inner"].append("scribbled")
            else:
                event["note"].clear()
        record = event["Records"][0]
        failed = record["messageId"]
        record["messageId"] = "scribbled"
        return {"batchItemFailures": [{"itemIdentifier": failed}]} if record["body"] == "m1" else None

    frame = fnkit.replay(scribble, events, source="queue")
    assert [repr(e) for e in events] == before  # the caller's events, deep down, are as they were
    assert seen == [e["Records"][0]["messageId"] for e in events]  # each call saw its own event, untouched
    assert list(frame["item"]) == [e["Records"][0]["messageId"] for e in events]
    assert list(frame["action"]) == ["delete", "retry", "delete", "delete"]
    assert list(frame["kind"]) == ["success", "partial", "success", "success"]


def test_a_replay_leaves_the_garbage_collector_as_it_found_it():
    import gc

    events = [queue.build_event([f"m{i}"], seed=i) for i in range(5)]
    frozen_during: list[int] = []
    thresholds_during: list[tuple[int, ...]] = []

    def note(event: dict[str, Any], context: Any) -> None:
        frozen_during.append(gc.get_freeze_count())
        thresholds_during.append(gc.get_threshold())

    assert gc.get_freeze_count() == 0
    thresholds = gc.get_threshold()
    fnkit.replay(note, events)
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    assert min(frozen_during) > 0  # the objects alive before the replay sat out its collections
    # the youngest generation was collected less often while the chunks' objects were alive, then as before
    assert gc.get_threshold() == thresholds
    assert {t[0] for t in thresholds_during} == {max(thresholds[0], YOUNG_THRESHOLD)}
    assert {t[1:] for t in thresholds_during} == {thresholds[1:]}
    gc.set_threshold(50_000, *thresholds[1:])  # a caller that asked for fewer collections still has fewer
    try:
        thresholds_during.clear()
        fnkit.replay(note, events)
        assert {t[0] for t in thresholds_during} == {50_000} and gc.get_threshold()[0] == 50_000
    finally:
        gc.set_threshold(*thresholds)
    gc.freeze()  # a caller that froze objects itself (a server before it forks, say) keeps them frozen
    try:
        mine = gc.get_freeze_count()
        frozen_during.clear()
        fnkit.replay(note, events)
        # (the count falls a little as frozen objects die; the replay froze nothing more and thawed nothing)
        assert 0.9 * mine < gc.get_freeze_count() <= mine and max(frozen_during) <= mine
    finally:
        gc.unfreeze()
    gc.disable()  # and one that turned the collector off finds it off
    try:
        fnkit.replay(note, events)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_ctrl_c_during_a_process_replay_kills_the_worker_running_ahead_and_is_one_sentence(tmp_path):
    import signal
    import threading

    from tests.core.processes import alive

    marker = tmp_path / "pid"

    def hang(event: dict[str, Any], context: Any) -> None:
        marker.write_text(str(os.getpid()))
        time.sleep(60)

    def interrupt_once_it_hangs() -> None:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C sends

    events = [queue.build_event([f"m{i}"], seed=i) for i in range(3)]
    threading.Thread(target=interrupt_once_it_hangs, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(fnkit.Interrupted, match=r"^Interrupted: the replay was stopped"):
        fnkit.replay(hang, events, isolation="process", timeout_s=120)
    pid = int(marker.read_text())
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(pid) and time.monotonic() - started < 50  # the worker was killed, not left to sleep on
