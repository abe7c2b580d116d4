"""Calling a handler the way the platform does (fnkit/_running/inprocess.py): result, error, output, timeout.

Every behaviour a handler can see is checked in the three isolation modes: a worker
process (the default), a thread of the caller, and inline. They must look the same.
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import fnkit
from fnkit import isolation
from fnkit._engine.codec import encode_response


@pytest.fixture(autouse=True)
def _in_a_worker_process(monkeypatch):
    """Most tests here were written for the worker process: it is their default (FNKIT_ISOLATION)."""
    monkeypatch.setenv("FNKIT_ISOLATION", "process")


MODES = ["process", "thread", "none"]


def _in_a_thread(fn):
    """Run fn() on a worker thread (where no alarm signal can be used) and return its result."""
    box: dict[str, Any] = {}
    t = threading.Thread(target=lambda: box.setdefault("r", fn()))
    t.start()
    t.join(10)
    assert not t.is_alive(), "invoke kept its caller waiting"
    return box["r"]


# --- returning -----------------------------------------------------------------------


def describe_call(event, context):
    return {
        "event": event,
        "context_is_a_Context": isinstance(context, fnkit.Context),
        "function_name": context.function_name,
        "request_id": context.aws_request_id,
    }


@pytest.mark.parametrize("mode", MODES)
def test_a_returning_handler_gets_event_and_context(mode):
    inv = fnkit.invoke(describe_call, {"a": 1}, isolation=mode)
    assert inv.succeeded and inv.status == "returned"
    assert inv.returned["event"] == {"a": 1} and inv.returned["context_is_a_Context"]
    assert inv.response() == inv.returned
    assert inv.response_text is not None
    assert inv.response_text.startswith('{"event":{"a":1},')
    assert inv.error is None and not inv.timed_out and inv.encode_error is None
    assert inv.duration_ms >= 0


@pytest.mark.parametrize("mode", MODES)
def test_returning_none_is_json_null(mode):
    inv = fnkit.invoke(lambda e, c: None, {}, isolation=mode)
    assert inv.response_text == "null"
    assert inv.response() is None


@pytest.mark.parametrize("mode", MODES)
def test_unicode_survives_the_json_text(mode):
    inv = fnkit.invoke(lambda e, c: {"msg": "héllo ✓"}, {}, isolation=mode)
    assert inv.response_text is not None and "héllo ✓" in inv.response_text
    assert inv.response() == {"msg": "héllo ✓"}


@pytest.mark.parametrize("mode", MODES)
def test_the_given_context_is_handed_over(mode):
    ctx = fnkit.Context(function_name="orders", aws_request_id="req-1")
    inv = fnkit.invoke(
        lambda e, c: [c.function_name, c.aws_request_id, c.invoked_function_arn], {}, context=ctx, isolation=mode
    )
    assert inv.returned == ["orders", "req-1", "arn:aws:lambda:us-east-1:123456789012:function:orders"]


@pytest.mark.parametrize("mode", MODES)
def test_what_the_handler_sets_on_its_context_comes_back(mode):
    ctx = fnkit.Context()

    def handler(event, context):
        context.note = "seen"
        return None

    fnkit.invoke(handler, {}, context=ctx, isolation=mode)
    assert vars(ctx)["note"] == "seen"


@pytest.mark.parametrize("mode", MODES)
def test_the_handler_gets_its_own_copy_of_the_event(mode):
    event = {"Records": [{"messageId": "a"}]}

    def handler(e, c):
        e["Records"][0]["messageId"] = "rewritten"
        return e["Records"][0]["messageId"]

    inv = fnkit.invoke(handler, event, isolation=mode)
    assert inv.returned == "rewritten"
    assert event == {"Records": [{"messageId": "a"}]}


def test_context_looks_like_the_platforms():
    ctx = fnkit.Context(function_name="orders", region="eu-west-1")
    assert ctx.invoked_function_arn == "arn:aws:lambda:eu-west-1:123456789012:function:orders"
    assert ctx.log_group_name == "/aws/lambda/orders"
    assert ctx.memory_limit_in_mb == 128
    assert ctx.function_version == "$LATEST"
    assert ctx.aws_request_id != fnkit.Context(function_name="orders").aws_request_id


def test_a_replays_context_is_the_context_a_call_makes():
    from fnkit._running.context import _fresh

    for timeout_s, start in [(3.0, True), (3.0, False), (None, True)]:
        _fresh(timeout_s)  # (the first one reads the defaults from a Context)
        made, fresh = fnkit.Context(timeout_s=timeout_s), _fresh(timeout_s, start)
        if start:
            made._start()
        mine, theirs = dict(vars(fresh)), dict(vars(made))
        assert list(mine) == list(theirs)  # the same attributes, in the same order (a worker is sent them in order)
        for name in ("aws_request_id", "_deadline"):
            assert (mine.pop(name) is None) == (theirs.pop(name) is None)
        assert mine == theirs
        assert fresh.aws_request_id != made.aws_request_id
        assert type(fresh) is fnkit.Context and fresh.get_remaining_time_in_millis() <= 900_000


def test_request_ids_are_the_call_numbers_bits_in_uuid_groups(monkeypatch):
    import itertools

    from fnkit._running import context

    for number, tail in [
        (1, "0000-4000-8000-000000000001"),
        (0x1234_5678_9ABC, "1234-4567-889a-123456789abc"),
        (2**48 + 0x0ABC_DEF0_1234, "0abc-4def-8012-0abcdef01234"),  # (past 48 bits: the low 48)
    ]:
        monkeypatch.setattr(context, "_counter", itertools.count(number))
        assert fnkit.Context(function_name="orders").aws_request_id == "e52ffdee-" + tail  # (the name's CRC-32)


def test_an_invocation_is_a_frozen_dataclass_made_by_position_or_by_name():
    import dataclasses
    import inspect

    from fnkit._engine import codec
    from fnkit._engine.codec import Invocation

    fields = dataclasses.fields(Invocation)
    parameters = inspect.signature(Invocation).parameters
    assert list(parameters) == [f.name for f in fields]  # the init takes the fields, in order, with their defaults
    assert [p.default for p in parameters.values()] == [f.default for f in fields]
    assert sorted(codec._Fields.__slots__) == sorted(f.name for f in fields)  # (where a new one's fields are set)
    by_position = Invocation(None, "null", None, False, 1.5, "out", 3.0)
    assert by_position == Invocation(returned=None, response_text="null", duration_ms=1.5, logs="out", timeout_s=3.0)
    defaults: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(Invocation)}
    assert Invocation() == Invocation(**defaults)
    assert hash(by_position) == hash(dataclasses.replace(by_position))
    with pytest.raises(dataclasses.FrozenInstanceError):
        by_position.logs = "changed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del by_position.logs
    assert dataclasses.replace(by_position, logs="x").logs == "x"
    assert repr(Invocation(logs="out")).startswith("Invocation(returned=None, response_text=None, error=None,")
    with pytest.raises(TypeError):
        Invocation(returned=None, unknown=1)  # type: ignore[call-arg]
    # the in-process calls' own maker gives the same Invocation, every field set and frozen as ever
    made = codec.returned_invocation({"a": 1}, '{"a":1}', 1.5, "out", 3.0, None, (("topic", 2),))
    expected = Invocation({"a": 1}, '{"a":1}', None, False, 1.5, "out", 3.0, None, (("topic", 2),))
    assert type(made) is Invocation and made == expected and repr(made) == repr(expected)
    assert [getattr(made, f.name) for f in fields] == [getattr(expected, f.name) for f in fields]
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.logs = "changed"  # type: ignore[misc]


def test_an_unknown_isolation_is_refused():
    with pytest.raises(ValueError, match=r"'none' \(in this process\), 'process' or 'thread'"):
        fnkit.invoke(lambda e, c: None, {}, isolation="sandbox")


# --- raising -------------------------------------------------------------------------------


def raise_key_error(event, context):
    raise KeyError("orderId")


@pytest.mark.parametrize("mode", MODES)
def test_a_raising_handler_is_an_error_with_type_message_and_traceback(mode):
    inv = fnkit.invoke(raise_key_error, {}, isolation=mode)
    assert not inv.succeeded and inv.status == "error"
    assert inv.error is not None
    assert inv.error.type == "KeyError"
    assert "orderId" in inv.error.message
    assert "Traceback" in inv.error.traceback and "raise_key_error" in inv.error.traceback
    assert str(inv.error).startswith("KeyError: ")
    assert inv.returned is None and inv.response_text is None


@pytest.mark.parametrize("mode", MODES)
def test_system_exit_in_a_handler_does_not_stop_the_caller(mode):
    inv = fnkit.invoke(lambda e, c: sys.exit(3), {}, isolation=mode)
    assert inv.error is not None
    assert inv.status == "error" and inv.error.type == "SystemExit"


@pytest.mark.parametrize("mode", MODES)
def test_a_raising_handler_with_a_timeout_is_still_an_error_not_a_timeout(mode):
    inv = fnkit.invoke(raise_key_error, {}, timeout_s=1.0, isolation=mode)
    assert inv.error is not None
    assert inv.status == "error" and inv.error.type == "KeyError" and not inv.timed_out


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no words")


@pytest.mark.parametrize("mode", MODES)
def test_an_exception_that_cannot_be_printed_is_still_an_error(mode):
    def handler(e, c):
        raise Unprintable

    inv = fnkit.invoke(handler, {}, isolation=mode)
    assert inv.error is not None
    assert inv.error.type == "Unprintable" and "cannot be printed" in inv.error.message


# --- output -----------------------------------------------------------------------------------


def print_and_log(event, context):
    print("processing", event["id"])
    print("oops", file=sys.stderr)
    logging.getLogger("orders").warning("low stock for %s", "sku-1")
    logging.getLogger().error("payment failed")
    return "done"


@pytest.mark.parametrize("mode", MODES)
def test_prints_and_logs_are_captured_in_logs_not_leaked(mode, capsys):
    inv = fnkit.invoke(print_and_log, {"id": 7}, isolation=mode)
    assert inv.logs == "processing 7\noops\n[WARNING] low stock for sku-1\n[ERROR] payment failed\n"
    out, err = capsys.readouterr()
    assert "processing" not in out and "oops" not in err
    print("after")  # the test's own output is untouched afterwards
    assert capsys.readouterr().out == "after\n"


@pytest.mark.parametrize("mode", MODES)
def test_prints_of_a_handler_with_a_timeout_are_captured(mode, capsys):
    def handler(e, c):
        print("with timeout")
        return 1

    inv = fnkit.invoke(handler, {}, timeout_s=2.0, isolation=mode)
    assert inv.logs == "with timeout\n"
    assert "with timeout" not in capsys.readouterr().out


@pytest.mark.parametrize("mode", MODES)
def test_prints_and_logs_are_captured_off_the_main_thread(mode, capsys):
    inv = _in_a_thread(lambda: fnkit.invoke(print_and_log, {"id": 1}, timeout_s=2.0, isolation=mode))
    assert "processing 1" in inv.logs and "[WARNING] low stock for sku-1" in inv.logs
    assert "processing" not in capsys.readouterr().out


@pytest.mark.parametrize("mode", MODES)
def test_the_callers_logging_level_applies(mode):
    logger = logging.getLogger("fnkit-test-orders")
    logger.setLevel(logging.INFO)
    try:
        inv = fnkit.invoke(lambda e, c: logging.getLogger("fnkit-test-orders").info("shipped"), {}, isolation=mode)
    finally:
        logger.setLevel(logging.NOTSET)
    assert inv.logs == "[INFO] shipped\n"


@pytest.mark.parametrize("mode", MODES)
def test_logs_of_two_invocations_do_not_mix(mode):
    first = fnkit.invoke(lambda e, c: print("first"), {}, isolation=mode)
    second = fnkit.invoke(lambda e, c: print("second"), {}, isolation=mode)
    assert first.logs == "first\n" and second.logs == "second\n"


@pytest.mark.parametrize("mode", MODES)
def test_logs_are_bounded(mode):
    inv = fnkit.invoke(lambda e, c: print("x" * 1000 * 1500), {}, isolation=mode)
    assert len(inv.logs) < 1_100_000 and "output cut after 1,000,000 characters" in inv.logs


def test_stdout_is_never_swapped_per_call():
    fnkit.invoke(lambda e, c: print("x"), {}, isolation="thread")
    installed = sys.stdout, sys.stderr
    for mode in MODES:
        fnkit.invoke(lambda e, c: print("x"), {}, isolation=mode)
        fnkit.invoke(lambda e, c: 1 / 0, {}, timeout_s=1, isolation=mode)
        assert (sys.stdout, sys.stderr) == installed


def test_a_worker_process_leaves_the_callers_streams_alone():
    before = sys.stdout, sys.stderr
    fnkit.invoke(lambda e, c: print("x"), {}, isolation="process")
    assert (sys.stdout, sys.stderr) == before


def test_other_threads_print_normally_while_handlers_run(capsys):
    def handler(e, c):
        print("handler line")
        return None

    stop = threading.Event()

    def chatter():
        while not stop.is_set():
            print("server line")
            time.sleep(0.001)

    t = threading.Thread(target=chatter)
    t.start()
    try:
        invocations = [fnkit.invoke(handler, {}, timeout_s=1, isolation="thread") for _ in range(50)]
    finally:
        stop.set()
        t.join()
    assert all(inv.logs == "handler line\n" for inv in invocations)
    out = capsys.readouterr().out
    assert "server line" in out and "handler line" not in out


# --- reports: what code inside a handler sends back ------------------------------------------


def order_helper(body):
    """Stands for a workshop helper such as process_order: it says what it was asked to do."""
    isolation.report("process_order", body)
    return len(body)


def calls_the_helper(event, context):
    return [order_helper(r["body"]) for r in event["Records"]]


@pytest.mark.parametrize("mode", MODES)
def test_reports_come_back_in_order_in_every_mode(mode):
    inv = fnkit.invoke(calls_the_helper, {"Records": [{"body": "a"}, {"body": "bb"}]}, isolation=mode)
    assert inv.returned == [1, 2]
    assert inv.reports == (("process_order", "a"), ("process_order", "bb"))


def test_report_outside_an_invocation_does_nothing():
    assert isolation.report("process_order", "x") is False


# --- what JSON cannot encode ------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_returned_set_cannot_be_encoded(mode):
    inv = fnkit.invoke(lambda e, c: {"batchItemFailures": {"a", "b"}}, {}, isolation=mode)
    assert inv.status == "returned"
    if mode == "process":  # what a worker sends back is data: the set arrives as its items
        assert sorted(inv.returned["batchItemFailures"]) == ["a", "b"]
    else:
        assert inv.returned == {"batchItemFailures": {"a", "b"}}
    assert inv.response_text is None
    assert inv.encode_error and "set" in inv.encode_error
    assert isinstance(inv.response(), fnkit.Raw)  # the platform reads it as invalid JSON


@pytest.mark.parametrize("value", [math.nan, math.inf, {"x": -math.inf}])
@pytest.mark.parametrize("mode", MODES)
def test_a_returned_nan_or_infinity_is_not_json(value, mode):
    inv = fnkit.invoke(lambda e, c: value, {}, isolation=mode)
    assert inv.response_text is None
    assert inv.encode_error
    assert isinstance(inv.response(), fnkit.Raw)


@pytest.mark.parametrize(
    "value",
    [b"bytes", object(), {(1, 2): "tuple key"}, 10**5000],
    ids=["bytes", "object", "tuple-key", "int-of-5001-digits"],
)
@pytest.mark.parametrize("mode", MODES)
def test_other_values_json_cannot_encode(value, mode):
    inv = fnkit.invoke(lambda e, c: value, {}, isolation=mode)
    assert inv.response_text is None and inv.encode_error


@pytest.mark.parametrize("mode", MODES)
def test_a_returned_generator_is_not_json_and_comes_back_as_a_description(mode):
    inv = fnkit.invoke(lambda e, c: (x for x in range(3)), {}, isolation=mode)
    assert inv.status == "returned" and inv.response_text is None
    assert inv.encode_error is not None and "generator" in inv.encode_error
    assert "generator" in repr(inv.returned)


class ExplodingDict(dict[str, Any]):
    def items(self):
        raise RuntimeError("items() exploded")


def test_encode_response_survives_a_dict_whose_items_raise():
    text, why = encode_response(ExplodingDict(a=1))
    assert text is None and why is not None and "exploded" in why


@pytest.mark.parametrize("mode", MODES)
def test_a_returned_raw_is_passed_through_as_the_exact_text(mode):
    inv = fnkit.invoke(lambda e, c: fnkit.Raw('{"batchItemFailures": [}'), {}, isolation=mode)
    assert inv.response_text == '{"batchItemFailures": [}'
    assert inv.response() == fnkit.Raw('{"batchItemFailures": [}')


def test_a_returned_raw_that_is_valid_json_reads_as_its_value():
    inv = fnkit.invoke(lambda e, c: fnkit.Raw(b'{"batchItemFailures": []}'), {})
    assert inv.response() == {"batchItemFailures": []}


def test_a_returned_raw_with_nan_is_not_json():
    assert isinstance(fnkit.invoke(lambda e, c: fnkit.Raw("NaN"), {}).response(), fnkit.Raw)


def test_a_returned_raw_of_bytes_that_are_not_utf8():
    inv = fnkit.invoke(lambda e, c: fnkit.Raw(b"\xff"), {})
    assert inv.response_text is None and inv.encode_error


def test_encode_response_is_compact_and_strict():
    assert encode_response({"a": [1, "é"]}) == ('{"a":[1,"é"]}', None)
    text, why = encode_response(math.nan)
    assert text is None and why


# --- timeouts --------------------------------------------------------------------------------


def print_then_sleep(event, context):
    print("started")
    time.sleep(3)
    return "late"


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_a_hanging_handler_times_out_quickly_and_keeps_what_it_printed(mode):
    fnkit.invoke(lambda e, c: None, {}, timeout_s=30, isolation=mode)  # a worker ready: its start is not timed
    started = time.monotonic()
    inv = fnkit.invoke(print_then_sleep, {}, timeout_s=0.3, isolation=mode)
    elapsed = time.monotonic() - started
    assert inv.timed_out and inv.status == "timeout" and not inv.succeeded
    assert inv.timeout_s == 0.3
    assert inv.returned is None and inv.response_text is None
    assert inv.logs == "started\n"
    assert elapsed < 2.0
    assert inv.duration_ms >= 250


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_a_hanging_handler_off_the_main_thread_does_not_block_its_caller(mode):
    fnkit.invoke(lambda e, c: None, {}, timeout_s=30, isolation=mode)  # a worker ready: its start is not timed
    started = time.monotonic()
    inv = _in_a_thread(lambda: fnkit.invoke(lambda e, c: time.sleep(3), {}, timeout_s=0.2, isolation=mode))
    assert inv.timed_out and time.monotonic() - started < 2.0


def test_inline_a_handler_that_finishes_past_its_timeout_is_timed_out():
    def late(e, c):
        time.sleep(0.3)
        return "late"

    inv = fnkit.invoke(late, {}, timeout_s=0.1, isolation="none")
    assert inv.timed_out and inv.returned is None and inv.duration_ms >= 300


@pytest.mark.parametrize("mode", MODES)
def test_a_fast_handler_with_a_timeout_returns_normally(mode):
    inv = fnkit.invoke(lambda e, c: {"v": 1}, {}, timeout_s=2.0, isolation=mode)
    assert inv.status == "returned" and inv.response() == {"v": 1}


def remaining_twice(event, context):
    first = context.get_remaining_time_in_millis()
    time.sleep(0.05)
    return [first, context.get_remaining_time_in_millis()]


@pytest.mark.parametrize("mode", MODES)
def test_remaining_time_decreases_during_the_call(mode):
    inv = fnkit.invoke(remaining_twice, {}, timeout_s=1.0, isolation=mode)
    first, second = inv.returned
    assert 800 <= first <= 1000
    assert second < first
    assert first - second >= 40


@pytest.mark.parametrize("mode", MODES)
def test_remaining_time_without_a_timeout_is_large(mode):
    inv = fnkit.invoke(lambda e, c: c.get_remaining_time_in_millis(), {}, isolation=mode)
    assert inv.returned > 60_000


def test_remaining_time_never_goes_below_zero():
    ctx = fnkit.Context(timeout_s=0.0)
    ctx._start()
    time.sleep(0.01)
    assert ctx.get_remaining_time_in_millis() == 0


def test_remaining_time_follows_the_given_clock():
    now = [100.0]
    ctx = fnkit.Context(timeout_s=3.0, clock=lambda: now[0])
    ctx._start()
    assert ctx.get_remaining_time_in_millis() == 3000
    now[0] += 1.25
    assert ctx.get_remaining_time_in_millis() == 1750


def test_tabulate_shows_an_invocation_as_one_row():
    def handler(e, c):
        print("hi")
        return {"a": 1}

    inv = fnkit.invoke(handler, {})
    frame = fnkit.tabulate(inv)
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row["status"] == "returned" and row["returned"] == '{"a":1}' and "hi" in row["logs"]


@pytest.mark.parametrize("mode", MODES)
def test_a_tiny_timeout_never_makes_invoke_raise(mode):
    # bug 3 of issue 10: the alarm escaped as _Deadline when armed before the try
    statuses = {
        fnkit.invoke(lambda e, c: sum(range(1000)), {}, timeout_s=1e-6, isolation=mode).status for _ in range(200)
    }
    assert statuses <= {"timeout", "returned"}


# --- the thread mode abandons, never injects --------------------------------------------------


def spin_for(event, context):
    end = time.monotonic() + event["seconds"]
    while time.monotonic() < end:
        try:
            pass
        except BaseException:  # noqa: BLE001 - the learner's mistake: swallowing everything
            pass
    return "finished"


def test_thread_mode_abandons_an_overrunning_handler_counts_it_and_stays_prompt():
    before = isolation.stats()
    started = time.monotonic()
    inv = fnkit.invoke(spin_for, {"seconds": 1.5}, timeout_s=0.2, isolation="thread")
    assert inv.timed_out and time.monotonic() - started < 1.0
    during = isolation.stats()
    assert during["abandoned_threads_total"] == before["abandoned_threads_total"] + 1
    assert during["abandoned_threads_running"] >= 1
    started = time.perf_counter()
    assert fnkit.invoke(lambda e, c: {"ok": True}, {}, timeout_s=2, isolation="thread").returned == {"ok": True}
    assert time.perf_counter() - started < 1.0
    deadline = time.monotonic() + 5
    while (
        isolation.stats()["abandoned_threads_running"] > before["abandoned_threads_running"]
        and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    assert isolation.stats()["abandoned_threads_running"] == before["abandoned_threads_running"]  # it ended by itself


def test_thread_mode_reuses_its_threads():
    def handler_threads() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "fnkit-handler"}

    before = handler_threads()  # earlier tests' threads (an abandoned handler's may still run)
    for _ in range(50):
        fnkit.invoke(lambda e, c: None, {}, timeout_s=2, isolation="thread")
    after = handler_threads()
    assert after and len(after - before) <= 3  # 50 calls, at most a few new threads


def test_no_exception_is_ever_injected_into_a_thread():
    import fnkit._running.inprocess as invoke_module

    source = Path(invoke_module.__file__).read_text(encoding="utf-8")
    assert "SetAsyncExc" not in source and "setitimer" not in source and "SIGALRM" not in source


# --- many events at once ----------------------------------------------------------------------


def slow_on_hang(event, context):
    print("event", event["n"])
    if event.get("hang"):
        time.sleep(30)
    return event["n"] * 2


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_invoke_many_keeps_order_and_times_out_only_the_hanging_event(mode):
    events = [{"n": 0}, {"n": 1, "hang": mode == "process"}, {"n": 2}, {"n": 3}]
    started = time.monotonic()
    invocations = fnkit.invoke_many(slow_on_hang, events, timeout_s=0.5, isolation=mode)
    assert time.monotonic() - started < 5
    assert [i.status for i in invocations] == [
        "returned",
        "timeout" if mode == "process" else "returned",
        "returned",
        "returned",
    ]
    assert [i.returned for i in invocations][2:] == [4, 6]
    assert [i.logs for i in invocations] == [f"event {n}\n" for n in range(4)]


def quiet_until_it_hangs(event, context):
    if event == "hang":
        while True:
            time.sleep(0.05)
    return event


def test_invoke_many_keeps_the_answers_a_worker_held_back_before_a_hang():
    # a quick answer is held back briefly in the worker to travel with the next ones; a handler that
    # hangs next (printing nothing, which would have flushed it) must not take that answer with it
    invocations = fnkit.invoke_many(quiet_until_it_hangs, ["a", "hang", "b"], timeout_s=0.5, isolation="process")
    assert [i.status for i in invocations] == ["returned", "timeout", "returned"]
    assert [invocations[0].returned, invocations[2].returned] == ["a", "b"]


def test_invoke_many_gives_each_event_its_own_context_and_clock():
    contexts = [fnkit.Context(function_name=f"f{n}") for n in range(3)]
    invocations = fnkit.invoke_many(
        lambda e, c: [c.function_name, c.get_remaining_time_in_millis()], [{}, {}, {}], contexts=contexts, timeout_s=2
    )
    assert [i.returned[0] for i in invocations] == ["f0", "f1", "f2"]
    assert all(1500 < i.returned[1] <= 2000 for i in invocations)


def test_invoke_many_needs_one_context_per_event():
    with pytest.raises(ValueError, match="one context per event"):
        fnkit.invoke_many(lambda e, c: None, [{}, {}], contexts=[fnkit.Context()])
