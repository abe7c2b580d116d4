"""fnkit.isolation.Stopper: a call stopped from another thread, at once, by killing its worker process."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest

import fnkit
from fnkit.isolation import STOPPED_ERROR, Stopper, current_stopper, stats


@pytest.fixture(autouse=True)
def _in_a_worker_process(monkeypatch):
    """These tests are about the worker process: it is their default (FNKIT_ISOLATION), not the caller's thread."""
    monkeypatch.setenv("FNKIT_ISOLATION", "process")


def swallows_everything(event, context):
    while True:
        try:
            time.sleep(1)
        except BaseException:  # noqa: BLE001 - a stop request sent as an exception would be swallowed here
            pass


def prints_then_hangs(event, context):
    print("started", flush=True)
    if "FNKIT_TEST_PRINTED" in os.environ:
        open(os.environ["FNKIT_TEST_PRINTED"], "w").close()
    while True:
        time.sleep(0.05)


def in_background(call):
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(call()), daemon=True)
    thread.start()
    return thread, box


def wait_until(predicate, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.01)


def test_a_handler_that_swallows_every_exception_is_stopped_from_another_thread():
    stopper = Stopper()
    calls = stats()["calls"]

    def call():
        with stopper:
            return fnkit.invoke(swallows_everything, {}, timeout_s=120)

    thread, box = in_background(call)
    wait_until(lambda: stats()["calls"] > calls)  # the call reached its worker
    time.sleep(0.2)
    killed = stats()["workers_killed"]
    assert stopper.stop() is True and stopper.stopped
    thread.join(60)  # a kill ends it at once; the timeout (120 s) never comes into it
    assert not thread.is_alive()
    invocation = box[0]
    assert invocation.error.type == STOPPED_ERROR and not invocation.timed_out
    assert "stopped before it returned: its worker process was killed" in invocation.error.message
    assert stats()["workers_killed"] == killed + 1
    assert fnkit.invoke(lambda e, c: "fine", {}, timeout_s=5).returned == "fine"  # the next call: a fresh worker


def test_what_was_printed_before_the_stop_is_kept(tmp_path, monkeypatch):
    marker = tmp_path / "printed"
    monkeypatch.setenv("FNKIT_TEST_PRINTED", str(marker))  # the handler's environment, wherever it runs
    stopper = Stopper()

    def call():
        with stopper:
            return fnkit.queue.run(prints_then_hangs, fnkit.queue.build_event(["a"], seed=1), timeout_s=120)

    thread, box = in_background(call)
    wait_until(marker.exists)  # stopped once it printed (under load the call may take a while to start)
    stopper.stop()
    thread.join(60)
    outcome = box[0]
    assert outcome.invocation.error.type == STOPPED_ERROR and outcome.invocation.logs == "started\n"
    assert outcome.kind == "failure"  # a function error for the platform's rules (Q6)


def test_calls_under_a_stopped_stopper_do_not_start():
    stopper = Stopper()
    assert stopper.stop() is False  # nothing was running
    with stopper:
        assert current_stopper() is stopper
        invocations = fnkit.invoke_many(lambda e, c: e, [1, 2, 3], timeout_s=5)
    assert current_stopper() is None
    assert [i.error.type if i.error else None for i in invocations] == [STOPPED_ERROR] * 3
    assert "before the handler started" in str(invocations[0].error)


def test_a_stop_in_the_middle_of_many_events_stops_the_rest(tmp_path):
    stopper = Stopper()
    # written by the worker once it runs the second event, however loaded the machine: by then the first
    # event's result has had 0.3 s to reach the caller (a worker sends a result it holds back within 5 ms)
    reached = tmp_path / "second"

    def slow_second(event, context):
        if event == 2:
            time.sleep(0.3)
            open(str(reached), "w").close()
            swallows_everything(event, context)
        return event

    def call():
        with stopper:
            return fnkit.invoke_many(slow_second, [1, 2, 3, 4], timeout_s=120)

    thread, box = in_background(call)
    wait_until(reached.exists)
    stopper.stop()
    thread.join(60)
    first, second, *rest = box[0]
    assert first.returned == 1
    assert second.error.type == STOPPED_ERROR
    assert [i.error.type for i in rest] == [STOPPED_ERROR, STOPPED_ERROR]


def test_a_worker_stopped_as_its_call_ended_is_never_handed_out_again():
    from fnkit._running import pool as _isolate

    assert fnkit.invoke(lambda e, c: 1, {}, timeout_s=5).returned == 1
    worker = _isolate._pool.take(_isolate.memory_limit_mb())
    assert worker is not None  # the warm worker of the call above
    worker.stop_from_outside()
    _isolate._pool.give_back(worker)
    assert worker.dead and worker not in _isolate._pool.idle
    assert fnkit.invoke(lambda e, c: 2, {}, timeout_s=5).returned == 2


def test_one_stopper_per_thread_leaves_the_others_running():
    mine, theirs = Stopper(), Stopper()

    def call(stopper, handler):
        with stopper:
            return fnkit.invoke(handler, {}, timeout_s=120)

    stopped, stopped_box = in_background(lambda: call(mine, swallows_everything))

    def slow_handler(e, c):
        time.sleep(1.5)
        return "done"

    slow, slow_box = in_background(lambda: call(theirs, slow_handler))
    time.sleep(0.5)
    mine.stop()
    stopped.join(60)
    slow.join(60)
    assert stopped_box[0].error.type == STOPPED_ERROR
    assert slow_box[0].returned == "done" and not theirs.stopped
