"""Handlers are untrusted code: the worker-process isolation of fnkit.invoke (fnkit/_running).

The hostile handlers of issue 10 (one that swallows every exception in a loop, one that
blocks in C, a busy loop, os._exit, a memory hog, a segfault) must never keep the caller
longer than the timeout plus 2 s: in a plain process, under a trace function, and in a
real Jupyter kernel. The caller survives and the next call gets a fresh worker.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import fnkit
from fnkit import isolation


@pytest.fixture(autouse=True)
def _in_a_worker_process(monkeypatch):
    """These tests are about the worker process: it is their default (FNKIT_ISOLATION), not the caller's thread."""
    monkeypatch.setenv("FNKIT_ISOLATION", "process")


REPO_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 1.0
# the caller's own promise: the timeout, the grace and the backstop past which it stops waiting for a worker whose
# alarm did not end it (fnkit._running.wire.BACKSTOP_S), and a second for a loaded machine to reap the worker
BOUND_S = TIMEOUT_S + 0.1 + 2.0 + 1.0


def swallow_everything(event, context):
    while True:
        try:
            time.sleep(0.05)
        except BaseException:  # noqa: BLE001 - the learner's mistake under test
            pass


def block_in_c(event, context):
    read_end, _ = os.pipe()
    os.read(read_end, 1)  # nobody ever writes: blocked inside the read system call


def busy_loop(event, context):
    n = 0
    while True:
        n += 1


def exit_abruptly(event, context):
    os._exit(3)


def eat_memory(event, context):
    hoard = []
    while True:
        hoard.append(bytearray(16 * 1024 * 1024))


def segfault(event, context):
    import ctypes

    ctypes.string_at(0)


HOSTILE = {
    "swallows every exception": (swallow_everything, "timeout", None),
    "blocks in C": (block_in_c, "timeout", None),
    "busy loop": (busy_loop, "timeout", None),
    "os._exit(3)": (exit_abruptly, "error", "the handler's process exited with code 3"),
    "memory hog": (eat_memory, "error", "more memory than the worker's limit (256 MB)"),
    "segfault": (segfault, "error", "killed by signal 11 (SIGSEGV)"),
}


def _check_hostile(name, handler, status, words):
    # a worker ready first: what is timed is the hostile call, not the start of fnkit's worker processes
    # (the first call of a run starts them; on a busy machine that alone took over 2 s)
    assert fnkit.invoke(lambda e, c: "ready", {}, timeout_s=60).returned == "ready"
    started = time.monotonic()
    inv = fnkit.invoke(handler, {}, timeout_s=TIMEOUT_S, memory_limit_mb=256)
    took = time.monotonic() - started
    assert took < BOUND_S, f"{name}: the caller waited {took:.1f} s"
    assert inv.status == status, (name, inv)
    if words:
        assert inv.error is not None
        assert words in inv.error.message, (name, inv.error)
    after = fnkit.invoke(lambda e, c: "fresh", {}, timeout_s=5)
    assert after.returned == "fresh", (name, after)


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_handler_never_keeps_the_caller(name):
    handler, status, words = HOSTILE[name]
    _check_hostile(name, handler, status, words)


def test_hostile_handlers_under_a_trace_function():
    # bug 4 of issue 10: with a trace function active (coverage, a debugger), a timed-out handler froze its caller
    events = []

    def tracer(frame, event, arg):
        events.append(event)
        return None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        for name, (handler, status, words) in HOSTILE.items():
            _check_hostile(name, handler, status, words)
    finally:
        sys.settrace(previous)
    assert events  # the trace function really ran in the caller


def spin_briefly(event, context):
    end = time.monotonic() + 2.0
    while time.monotonic() < end:
        try:
            pass
        except BaseException:  # noqa: BLE001
            pass


def test_thread_mode_under_a_trace_function_does_not_freeze_the_caller():
    previous = sys.gettrace()
    sys.settrace(lambda frame, event, arg: None)
    threading.settrace(lambda frame, event, arg: None)
    try:
        started = time.monotonic()
        inv = fnkit.invoke(spin_briefly, {}, timeout_s=0.2, isolation="thread")
        took = time.monotonic() - started
        follow = fnkit.invoke(lambda e, c: 1, {}, timeout_s=1, isolation="thread")
    finally:
        sys.settrace(previous)
        threading.settrace(None)
    assert inv.timed_out and took < 1.5 and follow.returned == 1


def test_a_crash_is_a_function_error_for_the_platform_rules():
    from fnkit import alb, mail, queue

    event = queue.build_event(["a", "b"], seed=1)
    result = queue.run(exit_abruptly, event, timeout_s=2)
    assert result.kind == "failure" and result.rule == "Q6"
    # the handler raised nothing: its process ended, and the sentence says so
    assert result.reason.startswith("The function exited (the handler's process exited with code 3)")
    assert "raised" not in result.reason and "Runtime.ExitError" not in result.reason
    http = alb.run(exit_abruptly, alb.build_event(seed=1), timeout_s=2)
    assert http.status == 502 and http.rule == "A5"
    mail_event = mail.build_event(mail_from="a@example.org", recipients=["b@example.com"], seed=1)
    rule_run = mail.MailRule(rule_timeout_minutes=2, response_timeout_s=2).run(exit_abruptly, mail_event)
    assert [a.result for a in rule_run.attempts] == ["error", "error"] and rule_run.outcome.status == "fallback"
    assert rule_run.outcome.rule == "M3"


def test_stats_count_workers_started_killed_and_crashed():
    before = isolation.stats()
    fnkit.invoke(busy_loop, {}, timeout_s=0.2)
    fnkit.invoke(exit_abruptly, {}, timeout_s=2)
    after = isolation.stats()
    assert after["workers_killed"] >= before["workers_killed"] + 1
    assert after["worker_crashes"] >= before["worker_crashes"] + 1
    assert after["workers_started"] >= before["workers_started"] + 2


def test_a_memory_limit_can_be_set_per_call_or_by_environment(monkeypatch):
    grab = lambda e, c: len(bytearray(300 * 1024 * 1024))  # noqa: E731
    assert fnkit.invoke(grab, {}, timeout_s=10, memory_limit_mb=2048).returned == 300 * 1024 * 1024
    capped = fnkit.invoke(grab, {}, timeout_s=10, memory_limit_mb=200)
    assert capped.error is not None and capped.error.type == "MemoryError"
    monkeypatch.setenv("FNKIT_MEMORY_LIMIT_MB", "200")
    by_environment = fnkit.invoke(grab, {}, timeout_s=10)
    assert by_environment.error is not None and by_environment.error.type == "MemoryError"


def test_the_handler_sees_the_callers_environment_as_it_is_now(monkeypatch):
    read = lambda e, c: os.environ.get("ORDERS_TABLE")  # noqa: E731
    monkeypatch.setenv("ORDERS_TABLE", "orders-v1")
    assert fnkit.invoke(read, {}, timeout_s=5).returned == "orders-v1"
    monkeypatch.setenv("ORDERS_TABLE", "orders-v2")
    assert fnkit.invoke(read, {}, timeout_s=5).returned == "orders-v2"
    monkeypatch.delenv("ORDERS_TABLE")
    assert fnkit.invoke(read, {}, timeout_s=5).returned is None


# --- what can and cannot travel ------------------------------------------------------------------


def test_a_handler_that_cannot_be_moved_says_why_and_how_to_fix_it():
    lock = threading.Lock()

    def handler(event, context):
        with lock:
            return 1

    inv = fnkit.invoke(handler, {})
    assert inv.error is not None
    assert inv.status == "error" and inv.error.type == "fnkit.IsolationError"
    assert "cannot be sent to a worker process" in inv.error.message and "lock" in inv.error.message
    assert 'isolation="none"' in inv.error.message
    assert fnkit.invoke(handler, {}, isolation="thread").returned == 1


def test_an_event_that_cannot_be_moved_says_so():
    inv = fnkit.invoke(lambda e, c: 1, {"lock": threading.Lock()})
    assert inv.error is not None
    assert inv.error.type == "fnkit.IsolationError" and "event" in inv.error.message


def _run_script(code: str, env: dict[str, Any] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO_ROOT,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_a_handler_defined_in_main_runs_in_a_worker():
    # a notebook cell's function lives in __main__, which a worker cannot import: cloudpickle moves it
    done = _run_script("""
        import json, fnkit
        RATE = 3
        def helper(x):
            return x * RATE
        def handler(event, context):
            print("in the worker")
            return {"n": helper(event["n"]), "pid": __import__("os").getpid()}
        inv = fnkit.invoke(handler, {"n": 2}, timeout_s=5)
        print(json.dumps([inv.status, inv.returned["n"], inv.returned["pid"] != __import__("os").getpid(), inv.logs]))
    """)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["returned", 6, True, "in the worker\n"]


def test_a_notebook_handler_sees_what_its_globals_hold_now_at_every_call():
    # the copy of a handler made for one call is sent again only while nothing it reads can have changed
    done = _run_script("""
        import json, fnkit
        RATE = 3
        SEEN = []
        def handler(event, context):
            return [RATE, type(RATE).__name__, list(SEEN)]
        calls = [fnkit.invoke(handler, {}, timeout_s=5).returned]
        calls.append(fnkit.invoke(handler, {}, timeout_s=5).returned)
        RATE = 4
        calls.append(fnkit.invoke(handler, {}, timeout_s=5).returned)
        RATE = 4.0  # equal to 4, and not the same value
        SEEN.append("a")
        calls.append(fnkit.invoke(handler, {}, timeout_s=5).returned)
        print(json.dumps(calls))
    """)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [
        [3, "int", []],
        [3, "int", []],
        [4, "int", []],
        [4.0, "float", ["a"]],
    ]


class TaggedContext(fnkit.Context):
    """A context with attributes that JSON-like data would change on the way (a tuple, a set, a lone surrogate)."""

    tags: tuple[str, ...]
    kinds: set[str]
    label: str


def attributes(event, context):
    return [type(context.tags).__name__, sorted(context.kinds), context.label == "\ud800", context.tags[1]]


def test_a_contexts_attributes_reach_the_worker_as_they_are():
    context = TaggedContext(timeout_s=5)
    context.tags, context.kinds = ("a", "b"), {"x", "y"}
    context.label = "\ud800"
    inv = fnkit.invoke(attributes, {}, context=context, isolation="process")
    assert inv.returned == ["tuple", ["x", "y"], True, "b"], inv.error


def test_the_spawn_start_method_works_too():
    done = _run_script(
        """
        import json, os, fnkit
        def handler(event, context):
            return os.getpid()
        def leave(event, context):
            os._exit(4)
        a = fnkit.invoke(handler, {}, timeout_s=20)
        b = fnkit.invoke(leave, {}, timeout_s=20)
        print(json.dumps([a.status, a.returned != os.getpid(), str(b.error)]))
    """,
        env={"FNKIT_ISOLATION_START": "spawn"},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [
        "returned",
        True,
        "Runtime.ExitError: the handler's process exited with code 4",
    ]


def test_a_module_the_worker_cannot_import_is_sent_by_value(tmp_path):
    import importlib.util

    path = tmp_path / "hidden_handlers_module.py"
    path.write_text("def handler(event, context):\n    return 'from a module off sys.path'\n")
    spec = importlib.util.spec_from_file_location("hidden_handlers_module", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["hidden_handlers_module"] = module
    try:
        spec.loader.exec_module(module)
        inv = fnkit.invoke(module.handler, {}, timeout_s=10)
    finally:
        del sys.modules["hidden_handlers_module"]
    assert inv.returned == "from a module off sys.path", inv


def test_workers_end_when_the_caller_is_killed():
    # a handler left behind must not burn a core forever (bug 5 of issue 10)
    script = textwrap.dedent("""
        import fnkit, sys, threading, time
        def spin(event, context):
            while True:
                pass
        threading.Thread(target=lambda: fnkit.invoke(spin, {}), daemon=True).start()
        import fnkit._running.zygote as iso
        while iso._zygote is None:
            time.sleep(0.01)
        print(iso._zygote.process.pid, flush=True)
        time.sleep(60)
    """)
    caller = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT)
    try:
        assert caller.stdout is not None
        zygote_pid = int(caller.stdout.readline())
        deadline = time.monotonic() + 20
        while not (children := _children(zygote_pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert children, "the spinning worker should be running"
    finally:
        caller.send_signal(signal.SIGKILL)
        caller.wait(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in [zygote_pid, *children]):
        time.sleep(0.1)
    assert not any(_alive(p) for p in [zygote_pid, *children])


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


# --- the simulators' context travels and comes back -------------------------------------------------


def sleepy(event, context):
    context.sleep(2.5)
    return {"batchItemFailures": []}


@pytest.mark.parametrize("mode", ["process", "thread", "none"])
def test_virtual_sleep_in_a_queue_simulation_comes_back_from_the_worker(mode):
    from fnkit import queue

    sim = queue.QueueSim(function_timeout_s=2, visibility_timeout_s=30, max_receive_count=1, seed=0)
    sim.send("slow")
    run = sim.run(sleepy, isolation=mode)
    first = run.invocations[0]
    assert first.outcome is not None
    assert first.outcome.rule == "Q6" and first.outcome.kind == "failure"  # 2.5 virtual s > the 2 s timeout
    assert run.summary()["dead-lettered"] == 1


def rewrite_ids(event, context):
    # bug 6 of issue 10: a handler that edits its event and reports the new id
    for record in event["Records"]:
        record["messageId"] = "rewritten-" + record["messageId"]
    return {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}


@pytest.mark.parametrize("mode", ["process", "thread", "none"])
def test_a_handler_rewriting_message_ids_cannot_make_the_simulator_delete_them(mode):
    from fnkit import queue

    sim = queue.QueueSim(max_receive_count=1, seed=0)
    ids = sim.send_many(["a", "b"])
    run = sim.run(rewrite_ids, isolation=mode, max_invocations=1)
    outcome = run.invocations[0].outcome
    assert outcome is not None
    assert outcome.kind == "failure"  # an unknown itemIdentifier fails the whole batch, as queue.run says
    assert set(outcome.failed_ids) == set(ids)
    assert run.invocations[0].event["Records"][0]["messageId"] == ids[0]
    direct = queue.run(rewrite_ids, queue.build_event(["a", "b"], seed=0), isolation=mode)
    assert direct is not None
    assert direct.kind == outcome.kind == "failure"


# --- the mail content API is called back from the worker --------------------------------------------


def replace_with_disclaimer(event, context):
    raw = context.message_content.get_raw_message_content(event["messageId"])
    context.message_content.put_raw_message_content(event["messageId"], raw + b"-- checked\r\n")
    return {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}]}


def replace_with_garbage(event, context):
    from fnkit import mail

    try:
        context.message_content.put_raw_message_content(event["messageId"], b"not a message")
    except mail.InvalidContentError as exc:
        return {"actions": [{"action": {"type": "BOUNCE"}, "allRecipients": True}], "problems": exc.problems}
    return {}


KEPT: list[Any] = []


def keep_the_api(event, context):
    KEPT.append(context.message_content)
    if len(KEPT) > 1:  # the second call in this worker tries the first call's API
        try:
            KEPT[0].get_raw_message_content(event["messageId"])
        except Exception as exc:  # noqa: BLE001
            return {"actions": [{"action": {"type": "DROP"}, "allRecipients": True}], "closed": str(exc)}
    return {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}]}


def test_the_content_api_works_from_a_worker_process():
    from fnkit import mail

    event = mail.build_event(mail_from="a@example.org", recipients=["b@example.com"], seed=3)
    result = mail.run(replace_with_disclaimer, event, response_timeout_s=5)
    assert result.delivered_content is not None
    assert result.status == "applied" and result.delivered_content.endswith(b"-- checked\r\n")

    refused = mail.run(replace_with_garbage, event, response_timeout_s=5)
    assert refused.invocation is not None
    problems = refused.invocation.returned["problems"]
    assert isinstance(problems, list) and any("From" in p for p in problems)


def test_a_content_api_kept_past_its_invocation_refuses_in_the_worker():
    from fnkit import mail

    event = mail.build_event(mail_from="a@example.org", recipients=["b@example.com"], seed=4)
    KEPT.clear()
    mail.run(keep_the_api, event, response_timeout_s=5)
    second = mail.run(keep_the_api, event, response_timeout_s=5)
    assert second.invocation is not None
    if second.invocation.returned.get("closed"):  # the same worker served both calls
        assert second.invocation is not None
        assert "over" in second.invocation.returned["closed"]


# --- a real Jupyter kernel -------------------------------------------------------------------------


def test_hostile_handlers_never_freeze_a_jupyter_kernel():
    jupyter_client = pytest.importorskip("jupyter_client")
    manager = jupyter_client.KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(REPO_ROOT))
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        code = textwrap.dedent("""
            import os, time, json, fnkit
            def swallow(event, context):
                while True:
                    try:
                        time.sleep(0.05)
                    except BaseException:
                        pass
            def block_in_c(event, context):
                r, _ = os.pipe()
                os.read(r, 1)
            def busy(event, context):
                while True:
                    pass
            def leave(event, context):
                os._exit(3)
            def hog(event, context):
                hoard = []
                while True:
                    hoard.append(bytearray(16 * 1024 * 1024))
            took = {}
            assert fnkit.invoke(lambda e, c: "ready", {}, timeout_s=60).returned == "ready"  # workers started, untimed
            for f in (swallow, block_in_c, busy, leave, hog):
                t = time.monotonic()
                inv = fnkit.invoke(f, {}, timeout_s=1.0, memory_limit_mb=256)
                took[f.__name__] = [round(time.monotonic() - t, 2), inv.status]
            print(json.dumps(took))
        """)
        reply, output = _execute(client, code, timeout=60)
        assert reply["content"]["status"] == "ok", reply["content"]
        took = json.loads(output.strip().splitlines()[-1])
        assert set(took) == {"swallow", "block_in_c", "busy", "leave", "hog"}
        for name, (seconds, status) in took.items():
            assert seconds < BOUND_S, (name, seconds)
            assert status == ("error" if name in ("leave", "hog") else "timeout"), (name, status)
        reply, output = _execute(client, "print(6 * 7)", timeout=10)  # the kernel still answers
        assert output.strip() == "42"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _execute(client, code: str, timeout: float):
    msg_id = client.execute(code)
    output = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        except Exception:  # noqa: BLE001 - queue.Empty: keep waiting until the deadline
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            output.append(msg["content"]["text"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    reply = client.get_shell_msg(timeout=max(1.0, deadline - time.monotonic()))
    return reply, "".join(output)
