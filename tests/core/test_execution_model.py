"""Where handlers run (issue 20): in the caller where a user calls, in a safe and tidy worker where the caller
must survive. Each test here failed before the execution model changed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

import fnkit
from fnkit import Interrupted, isolation
from fnkit._running.inprocess import current_context
from tests.core.processes import alive, kill_idle_workers

REPO_ROOT = Path(__file__).resolve().parents[2]


# --- in the caller, like a call --------------------------------------------------------------------


def test_by_default_a_handler_runs_in_the_callers_process_and_thread():
    seen = []

    def handler(event, context):
        seen.append((os.getpid(), event["n"]))  # a closure's side effect is the caller's
        return {"ok": True}

    inv = fnkit.invoke(handler, {"n": 1})
    assert inv.returned == {"ok": True}
    assert seen == [(os.getpid(), 1)]


def test_a_magicmock_handler_is_called_once_and_says_so():
    handler = mock.MagicMock(return_value={"batchItemFailures": []})
    outcome = fnkit.queue.run(handler, fnkit.queue.build_event(["a", "b"], seed=1))
    handler.assert_called_once()
    assert outcome.kind == "success"


def test_a_patched_dependency_is_the_one_the_handler_calls():
    def handler(event, context):
        return {"text": os.path.basename("/a/b")}

    with mock.patch("os.path.basename", return_value="patched"):
        inv = fnkit.invoke(handler, {})
    assert inv.returned == {"text": "patched"}


def test_the_handler_still_gets_its_own_copy_of_the_event():
    event = {"Records": [{"n": 1}]}

    def handler(e, c):
        e["Records"].clear()

    fnkit.invoke(handler, event)
    assert event == {"Records": [{"n": 1}]}


def test_a_late_finish_in_the_caller_is_a_timeout():
    inv = fnkit.invoke(lambda e, c: time.sleep(0.05), {}, timeout_s=0.01)
    assert inv.timed_out and inv.status == "timeout"


def test_ctrl_c_during_a_call_is_one_sentence_and_no_function_error():
    def handler(event, context):
        raise KeyboardInterrupt

    with pytest.raises(Interrupted) as caught:
        fnkit.invoke(handler, {})
    assert "Interrupted: the handler was stopped" in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert isinstance(caught.value, KeyboardInterrupt)  # a loop that stops on Ctrl-C still stops


def test_an_async_handler_is_awaited():
    async def handler(event, context):
        return {"n": event["n"] + 1}

    assert fnkit.invoke(handler, {"n": 1}).returned == {"n": 2}
    assert fnkit.invoke(handler, {"n": 1}, isolation="thread", timeout_s=5).returned == {"n": 2}


def test_the_running_context_is_known_to_code_the_handler_calls():
    def helper():
        return current_context().function_name

    inv = fnkit.invoke(lambda e, c: helper(), {}, context=fnkit.Context(function_name="orders"))
    assert inv.returned == "orders"
    assert current_context() is None


def test_an_import_path_runs_the_handler_it_names(tmp_path, monkeypatch):
    (tmp_path / "named_handler_mod.py").write_text("def handler(event, context):\n    return {'pid': 0}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert fnkit.invoke("named_handler_mod:handler", {}).returned == {"pid": 0}
    missing = fnkit.invoke("no_such_module_here:handler", {})
    assert missing.error is not None and missing.error.type == "Runtime.ImportModuleError"
    assert "No module named 'no_such_module_here'" in missing.error.message
    wrong = fnkit.invoke("named_handler_mod:nothing", {})
    assert wrong.error is not None and "Handler 'nothing' missing on module 'named_handler_mod'" in wrong.error.message


@pytest.mark.parametrize("bad", [0, -1, True, "abc", 1.5])
def test_memory_limit_mb_must_be_a_positive_whole_number(bad):
    with pytest.raises(ValueError, match="memory_limit_mb is a whole number of megabytes above 0"):
        fnkit.invoke(lambda e, c: 1, {}, memory_limit_mb=bad)


# --- in a worker: safe and tidy --------------------------------------------------------------------

WORKER_MODULE = """
import os, signal, subprocess, sys, time


class ExitsOnUnpickle:
    def __reduce__(self):
        return (os._exit, (7,))


class SleepsOnUnpickle:
    def __reduce__(self):
        return (time.sleep, (30,))


def returns_exit_bomb(event, context):
    return ExitsOnUnpickle()


def reports_sleep_bomb(event, context):
    from fnkit.isolation import report
    report("bomb", SleepsOnUnpickle())
    return {"ok": 1}


def changes_the_process(event, context):
    os.chdir("/")
    os.environ["FNKIT_TEST_LEAK"] = "leaked"
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        lifted = True
    except (ValueError, OSError):
        lifted = False
    return {"lifted": lifted, "hard": hard}


def reads_the_process(event, context):
    import resource
    return {
        "cwd": os.getcwd(),
        "leak": os.environ.get("FNKIT_TEST_LEAK"),
        "soft": resource.getrlimit(resource.RLIMIT_AS)[0],
    }


def starts_children(event, context):
    procs = [subprocess.Popen(["sleep", "300"]) for _ in range(2)]
    if os.fork() == 0:  # a grandchild that outlives its parent (an orphan)
        if os.fork() == 0:
            time.sleep(300)
        os._exit(0)
    return {"children": [p.pid for p in procs]}


def forks_and_exits(event, context):
    if os.fork() == 0:
        time.sleep(300)  # holds the worker's socket open
        os._exit(0)
    os._exit(3)


def main_thread_ends_after_the_call(event, context):
    # once the call is over, a thread it leaves behind has the worker's main thread end (pthread_exit): the
    # process's main thread is a zombie while that thread lives on, holding the worker's socket open
    import ctypes, threading

    signal.signal(signal.SIGUSR1, lambda signum, frame: ctypes.CDLL(None).pthread_exit(None))

    def later():
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGUSR1)
        time.sleep(60)

    threading.Thread(target=later).start()
    return os.getpid()


def pid(event, context):
    return os.getpid()


class App:
    def __call__(self, event, context):
        return {"pid": os.getpid(), "instance": True}


handler = App()
"""


@pytest.fixture
def worker_module(tmp_path, monkeypatch):
    (tmp_path / "fnkit_worker_probe.py").write_text(WORKER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    importlib.invalidate_caches()
    return importlib.import_module("fnkit_worker_probe")


def test_a_result_whose_unpickling_would_exit_the_caller_arrives_as_its_description(worker_module):
    inv = fnkit.invoke("fnkit_worker_probe:returns_exit_bomb", {}, isolation="process", timeout_s=10)
    assert inv.status == "returned"
    assert "ExitsOnUnpickle" in repr(inv.returned)
    assert inv.encode_error  # not JSON either: the platform would refuse it


def test_a_report_whose_unpickling_would_block_the_caller_arrives_at_once(worker_module):
    started = time.monotonic()
    inv = fnkit.invoke("fnkit_worker_probe:reports_sleep_bomb", {}, isolation="process", timeout_s=10)
    assert time.monotonic() - started < 10
    assert inv.returned == {"ok": 1}
    (topic, value), *_ = inv.reports
    assert topic == "bomb" and "SleepsOnUnpickle" in repr(value)


def test_each_call_starts_from_the_callers_state_and_the_memory_limit_holds(worker_module):
    changed = fnkit.invoke(
        "fnkit_worker_probe:changes_the_process", {}, isolation="process", timeout_s=10, memory_limit_mb=512
    )
    assert changed.returned["lifted"] is False  # the limit is a hard one
    after = fnkit.invoke(
        "fnkit_worker_probe:reads_the_process", {}, isolation="process", timeout_s=10, memory_limit_mb=512
    )
    assert after.returned == {"cwd": os.getcwd(), "leak": None, "soft": 512 * 1024 * 1024}
    assert "FNKIT_TEST_LEAK" not in os.environ


def _zombies_of(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] == "Z" and int(fields[1]) == pid:
                found.append(int(name))
    return found


def test_processes_a_handler_starts_end_with_its_call(worker_module):
    invs = [fnkit.invoke("fnkit_worker_probe:starts_children", {}, isolation="process", timeout_s=10) for _ in range(5)]
    children = [pid for inv in invs for pid in inv.returned["children"]]
    assert len(children) == 10
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in children if alive(pid)]
    stats = isolation.stats()
    assert stats["workers_started"] >= 1


def test_a_handler_that_exits_is_reported_at_once_whatever_its_children_do(worker_module):
    started = time.monotonic()
    inv = fnkit.invoke("fnkit_worker_probe:forks_and_exits", {}, isolation="process", timeout_s=20)
    took = time.monotonic() - started
    assert inv.error is not None and "exited with code 3" in inv.error.message
    assert took < 5, f"reported after {took:.1f} s"


def test_a_worker_that_died_while_idle_is_never_handed_a_call():
    assert fnkit.invoke(lambda e, c: 1, {}, isolation="process", timeout_s=10).returned == 1

    kill_idle_workers()
    results = [fnkit.invoke(lambda e, c: 2, {}, isolation="process", timeout_s=10) for _ in range(4)]
    assert [r.returned for r in results] == [2, 2, 2, 2], [r.error for r in results]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a zombie main thread, read from /proc")
def test_a_worker_whose_main_thread_ended_while_idle_is_never_handed_a_call(worker_module):
    first = fnkit.invoke("fnkit_worker_probe:main_thread_ends_after_the_call", {}, isolation="process", timeout_s=10)
    worker = first.returned
    deadline = time.monotonic() + 10
    while alive(worker) and time.monotonic() < deadline:  # (a zombie main thread reads as not alive)
        time.sleep(0.02)
    started = time.monotonic()
    results = [fnkit.invoke("fnkit_worker_probe:pid", {}, isolation="process", timeout_s=5) for _ in range(2)]
    assert [r.status for r in results] == ["returned"] * 2, [r.error for r in results]
    assert worker not in {r.returned for r in results} and time.monotonic() - started < 4


def test_after_the_zygote_is_killed_the_next_calls_succeed():
    assert fnkit.invoke(lambda e, c: 1, {}, isolation="process", timeout_s=10).returned == 1
    from fnkit._running import zygote as _isolate

    zygote = _isolate._zygote
    assert zygote is not None
    zygote.process.kill()
    zygote.process.wait(5)
    time.sleep(0.2)  # its idle workers die with it
    results = [fnkit.invoke(lambda e, c: 3, {}, isolation="process", timeout_s=10) for _ in range(4)]
    assert [r.returned for r in results] == [3, 3, 3, 3], [r.error for r in results]


def test_a_callable_instance_that_is_a_module_global_is_imported_in_the_worker(worker_module):
    inv = fnkit.invoke(worker_module.handler, {}, isolation="process", timeout_s=10)
    assert inv.returned["instance"] is True and inv.returned["pid"] != os.getpid()
    from fnkit._running import outgoing as _isolate

    assert _isolate._import_path_of(worker_module.handler) == "fnkit_worker_probe:handler"


def test_the_worker_never_unpickles_in_a_serving_caller(tmp_path):
    # a serve-like caller (its own interpreter) survives a return value built to exit it on unpickling
    (tmp_path / "bomb_mod.py").write_text(WORKER_MODULE)
    code = textwrap.dedent(
        """
        import fnkit
        inv = fnkit.invoke("bomb_mod:returns_exit_bomb", {}, isolation="process", timeout_s=10)
        print("alive", inv.status)
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO_ROOT)]))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "alive returned" in done.stdout


def test_a_worker_traceback_shows_the_source_line_of_a_notebook_cell():
    import linecache

    name = "<ipython-input-fnkit-probe>"
    source = "def broken(event, context):\n    return 1 / 0\n"
    linecache.cache[name] = (len(source), None, source.splitlines(keepends=True), name)
    namespace: dict[str, Any] = {}
    exec(compile(source, name, "exec"), namespace)
    inv = fnkit.invoke(namespace["broken"], {}, isolation="process", timeout_s=10)
    assert inv.error is not None and inv.error.type == "ZeroDivisionError"
    assert f'File "{name}", line 2, in broken\n    return 1 / 0' in inv.error.traceback
    from fnkit.widgets._ui import locate_error

    assert locate_error(inv.error.traceback) == "in broken, line 2: return 1 / 0"


def test_ctrl_c_in_a_simulation_ends_it_with_one_sentence():
    sim = fnkit.queue.QueueSim(seed=0)
    sim.send(["a", "b"])

    def handler(event, context):
        raise KeyboardInterrupt

    with pytest.raises(Interrupted, match=r"^Interrupted: the handler was stopped"):
        sim.run(handler)


def test_in_a_jupyter_kernel_an_interrupted_call_is_one_sentence_without_a_traceback():
    jupyter_client = pytest.importorskip("jupyter_client")
    manager = jupyter_client.KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(REPO_ROOT), env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        code = "import fnkit\ndef handler(event, context):\n    raise KeyboardInterrupt\nfnkit.invoke(handler, {})\n"
        msg_id = client.execute(code)
        texts, tracebacks = [], []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                msg = client.get_iopub_msg(timeout=1)
            except Exception:  # noqa: BLE001 - queue.Empty: keep waiting
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "stream":
                texts.append(msg["content"]["text"])
            if msg["msg_type"] == "error":
                tracebacks.append("\n".join(msg["content"]["traceback"]))
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
        shown = "".join(texts)
        assert "Interrupted: the handler was stopped" in shown, (shown, tracebacks)
        assert not tracebacks and "Traceback" not in shown and "inprocess.py" not in shown
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_a_handler_in_a_project_folder_named_fnkit_is_located(tmp_path):
    """A learner's (or CI's) checkout may sit in a folder named fnkit: its files are the learner's, not fnkit's."""
    from fnkit.widgets._ui import locate_error

    project = tmp_path / "fnkit" / "tests"
    project.mkdir(parents=True)
    source = "def broken(event, context):\n    total = 0\n    return 1 / total\n"
    (project / "fnkit_located_probe.py").write_text(source)
    sys.path.insert(0, str(project))
    try:
        for mode in ("none", "process"):
            inv = fnkit.invoke("fnkit_located_probe:broken", {}, isolation=mode, timeout_s=10)
            assert inv.error is not None and inv.error.type == "ZeroDivisionError", mode
            assert locate_error(inv.error.traceback) == "in broken, line 3: return 1 / total", mode
    finally:
        sys.path.remove(str(project))
        sys.modules.pop("fnkit_located_probe", None)
