"""The worker call awaited on an event loop (`fnkit._running.loop.invoke_async`, what `fnkit serve-alb` uses).

The loop watches the worker's socket and its process instead of a thread blocking on them;
every guarantee of the synchronous call must hold all the same: the hard stop past the
timeout, an exit seen at once (even when a child holds the socket), the memory limit,
nothing from the worker unpickled, the handler's children ended with its call, and a worker
that died while idle never handed a call. And the loop goes on running meanwhile.
"""

from __future__ import annotations

import asyncio
import os
import socket
import textwrap
import threading
import time
from pathlib import Path

import pytest

import fnkit
from fnkit import alb, isolation
from fnkit._running import pool, wire
from fnkit._running.loop import invoke_async
from tests.core.processes import alive, kill_idle_workers

PROBE = textwrap.dedent(
    """
    import os, subprocess, sys, threading, time

    def echo(event, context):
        print("seen", len(event["body"]))
        return {"body": event["body"], "pid": os.getpid()}

    def pid(event, context):
        return os.getpid()

    def sleeps(event, context):
        started = time.time()
        time.sleep(event["seconds"])
        return [started, time.time()]

    def busy(event, context):
        while True:
            pass

    def hangs_after_saying_its_pid(event, context):
        with open(event["path"], "w") as f:
            f.write(str(os.getpid()))
        time.sleep(300)

    def exits(event, context):
        os._exit(3)

    def forks_and_exits(event, context):
        if os.fork() == 0:
            time.sleep(300)  # holds the worker's socket open
            os._exit(0)
        os._exit(3)

    def eats_memory(event, context):
        hoard = []
        while True:
            hoard.append(bytearray(16 * 1024 * 1024))

    class ExitsOnUnpickle:
        def __reduce__(self):
            return (os._exit, (7,))

    def returns_exit_bomb(event, context):
        return ExitsOnUnpickle()

    def hangs_serving(event, context):
        with open(event["queryStringParameters"]["pidfile"], "w") as f:
            f.write(str(os.getpid()))
        time.sleep(300)

    def starts_children(event, context):
        procs = [subprocess.Popen(["sleep", "300"]) for _ in range(2)]
        return [p.pid for p in procs]
    """
)


@pytest.fixture(autouse=True)
def probe(tmp_path, monkeypatch):
    (tmp_path / "fnkit_async_probe.py").write_text(PROBE)
    monkeypatch.syspath_prepend(str(tmp_path))


def run(coroutine):
    return asyncio.run(coroutine)


async def ticking(coroutine, every_s: float = 0.01):
    """The coroutine's value, and how many times a ticker ran on the same loop meanwhile."""
    ticks = 0
    done = False

    async def ticker():
        nonlocal ticks
        while not done:
            ticks += 1
            await asyncio.sleep(every_s)

    task = asyncio.create_task(ticker())
    try:
        return await coroutine, ticks
    finally:
        done = True
        await task


def test_the_loop_runs_on_while_a_handler_runs():
    inv, ticks = run(ticking(invoke_async("fnkit_async_probe:sleeps", {"seconds": 1.0}, timeout_s=30)))
    assert inv.status == "returned", inv
    assert ticks >= 10  # a call that blocked the loop would leave the ticker one tick


def test_calls_awaited_together_run_in_workers_at_the_same_time():
    async def together():
        calls = [invoke_async("fnkit_async_probe:sleeps", {"seconds": 1.5}, timeout_s=60) for _ in range(3)]
        return await asyncio.gather(*calls)

    invs = run(together())
    spans = [inv.returned for inv in invs]
    assert all(inv.status == "returned" for inv in invs), invs
    assert max(start for start, _ in spans) < min(end for _, end in spans)  # each began before any ended


def test_a_large_event_and_result_travel_whole_with_the_output():
    body = "x" * (3 * 1024 * 1024 + 17)  # more than a socket buffer holds: written and read in pieces
    inv = run(invoke_async("fnkit_async_probe:echo", {"body": body}, timeout_s=60))
    assert inv.status == "returned", inv
    assert inv.returned["body"] == body and inv.returned["pid"] != os.getpid()
    assert inv.logs == f"seen {len(body)}\n"


def test_past_the_timeout_the_worker_is_killed_and_the_loop_was_free():
    started = time.monotonic()
    inv, ticks = run(ticking(invoke_async("fnkit_async_probe:busy", {}, timeout_s=1.0)))
    took = time.monotonic() - started
    assert inv.status == "timeout"
    assert took < 3.0, f"the caller waited {took:.1f} s"
    assert ticks >= 10
    after = run(invoke_async("fnkit_async_probe:pid", {}, timeout_s=10))
    assert after.status == "returned"


@pytest.mark.parametrize(
    ("handler", "words"),
    [
        ("exits", "the handler's process exited with code 3"),
        ("forks_and_exits", "the handler's process exited with code 3"),
        ("eats_memory", "more memory than the worker's limit (256 MB)"),
    ],
)
def test_an_exit_or_a_memory_blow_up_is_the_invocations_error_at_once(handler, words):
    started = time.monotonic()
    inv = run(invoke_async(f"fnkit_async_probe:{handler}", {}, timeout_s=20, memory_limit_mb=256))
    assert time.monotonic() - started < 10
    assert inv.error is not None and words in inv.error.message, inv
    assert run(invoke_async("fnkit_async_probe:pid", {}, timeout_s=10)).status == "returned"


def test_a_result_built_to_exit_the_caller_arrives_as_its_description():
    inv = run(invoke_async("fnkit_async_probe:returns_exit_bomb", {}, timeout_s=10))
    assert inv.status == "returned"
    assert "ExitsOnUnpickle" in repr(inv.returned)


def test_processes_a_handler_starts_end_with_its_call():
    children = run(invoke_async("fnkit_async_probe:starts_children", {}, timeout_s=10)).returned
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in children if alive(pid)]


def test_a_worker_that_died_while_idle_is_never_handed_a_call():
    assert run(invoke_async("fnkit_async_probe:pid", {}, timeout_s=10)).status == "returned"
    kill_idle_workers()

    async def four():
        return [await invoke_async("fnkit_async_probe:pid", {}, timeout_s=10) for _ in range(4)]

    results = run(four())
    assert [r.status for r in results] == ["returned"] * 4, [r.error for r in results]


def test_a_cancelled_call_kills_its_worker(tmp_path: Path):
    said = tmp_path / "pid"

    async def cancel_midway():
        task = asyncio.create_task(
            invoke_async("fnkit_async_probe:hangs_after_saying_its_pid", {"path": str(said)}, timeout_s=300)
        )
        deadline = time.monotonic() + 30
        while not said.exists() or not said.read_text():
            assert time.monotonic() < deadline, "the handler never started"
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    killed = isolation.stats()["workers_killed"]
    run(cancel_midway())
    pid = int(said.read_text())
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)
    assert isolation.stats()["workers_killed"] == killed + 1


def test_a_worker_used_on_a_loop_serves_a_blocking_call_once_the_loop_is_closed():
    isolation.shutdown()  # no idle worker but the one the loop used
    first = run(invoke_async("fnkit_async_probe:pid", {}, timeout_s=10)).returned
    after = fnkit.invoke("fnkit_async_probe:pid", {}, isolation="process", timeout_s=10)
    assert after.returned == first
    (worker,) = pool._pool.idle
    assert worker.channel is None and os.get_blocking(worker.conn.fileno())  # as the blocking path knows it


def test_while_a_loop_runs_its_idle_workers_are_its_own_and_blocking_calls_go_on_beside_it():
    isolation.shutdown()

    def blocking_call():
        return fnkit.invoke("fnkit_async_probe:pid", {}, isolation="process", timeout_s=10).returned

    async def both():
        first = (await invoke_async("fnkit_async_probe:pid", {}, timeout_s=10)).returned
        beside = await asyncio.get_running_loop().run_in_executor(None, blocking_call)
        again = (await invoke_async("fnkit_async_probe:pid", {}, timeout_s=10)).returned
        return first, beside, again

    first, beside, again = run(both())
    assert again == first  # the loop's idle worker, still watched, served its next call
    assert beside not in (first, os.getpid())  # the blocking call took another worker, not the watched one


def test_stopping_a_server_kills_the_worker_of_a_request_in_flight(tmp_path: Path):
    said = tmp_path / "pid"
    running = alb.serve("fnkit_async_probe:hangs_serving", timeout_s=300)
    replies = []

    def request():
        with socket.create_connection((running.host, running.port), timeout=30) as sock:
            sock.sendall(f"GET /hang?pidfile={said} HTTP/1.1\r\nHost: a\r\n\r\n".encode())
            replies.append(sock.recv(1000))

    thread = threading.Thread(target=request)
    thread.start()
    deadline = time.monotonic() + 30
    while not said.exists() or not said.read_text():
        assert time.monotonic() < deadline, "the handler never started"
        time.sleep(0.02)
    running.stop()
    thread.join(10)
    assert replies == [b""]  # no answer: the connection was closed
    pid = int(said.read_text())
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)  # not left running to its 300 s timeout


def test_more_calls_at_once_than_the_idle_limit_keep_their_workers():
    many = wire.MAX_IDLE_WORKERS + 4

    async def wave():
        calls = [invoke_async("fnkit_async_probe:sleeps", {"seconds": 0.3}, timeout_s=60) for _ in range(many)]
        return await asyncio.gather(*calls)

    async def two_waves():
        first = await wave()
        started = isolation.stats()["workers_started"]
        second = await wave()
        return first + second, isolation.stats()["workers_started"] - started

    invs, started_again = run(two_waves())
    assert all(inv.status == "returned" for inv in invs), invs
    assert started_again == 0  # the second wave found the first wave's workers idle: no fork per call
