"""Calling a handler the way the platform does (fnkit/_invoke.py): result, error, output, timeout."""

from __future__ import annotations

import logging
import math
import sys
import threading
import time

import pytest

import fnkit
from fnkit._invoke import encode_response


def _in_a_thread(fn):
    """Run fn() on a worker thread (where no alarm signal can be used) and return its result."""
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("r", fn()))
    t.start()
    t.join(10)
    assert not t.is_alive(), "invoke kept its caller waiting"
    return box["r"]


# --- returning -----------------------------------------------------------------------


def test_a_returning_handler_gets_event_and_context():
    seen = {}

    def handler(event, context):
        seen["event"], seen["context"] = event, context
        return {"ok": True, "n": [1, 2]}

    inv = fnkit.invoke(handler, {"a": 1})
    assert seen["event"] == {"a": 1}
    assert isinstance(seen["context"], fnkit.Context)
    assert inv.succeeded and inv.status == "returned"
    assert inv.returned == {"ok": True, "n": [1, 2]}
    assert inv.response_text == '{"ok":true,"n":[1,2]}'
    assert inv.response() == {"ok": True, "n": [1, 2]}
    assert inv.error is None and not inv.timed_out and inv.encode_error is None
    assert inv.duration_ms >= 0


def test_returning_none_is_json_null():
    inv = fnkit.invoke(lambda e, c: None, {})
    assert inv.response_text == "null"
    assert inv.response() is None


def test_unicode_survives_the_json_text():
    inv = fnkit.invoke(lambda e, c: {"msg": "héllo ✓"}, {})
    assert "héllo ✓" in inv.response_text
    assert inv.response() == {"msg": "héllo ✓"}


def test_the_given_context_is_handed_over():
    ctx = fnkit.Context(function_name="orders", aws_request_id="req-1")
    inv = fnkit.invoke(lambda e, c: [c.function_name, c.aws_request_id], {}, context=ctx)
    assert inv.returned == ["orders", "req-1"]


def test_context_looks_like_the_platforms():
    ctx = fnkit.Context(function_name="orders", region="eu-west-1")
    assert ctx.invoked_function_arn == "arn:aws:lambda:eu-west-1:123456789012:function:orders"
    assert ctx.log_group_name == "/aws/lambda/orders"
    assert ctx.memory_limit_in_mb == 128
    assert ctx.function_version == "$LATEST"
    assert ctx.aws_request_id != fnkit.Context(function_name="orders").aws_request_id


# --- raising -------------------------------------------------------------------------------


def test_a_raising_handler_is_an_error_with_type_message_and_traceback():
    def handler(event, context):
        raise KeyError("orderId")

    inv = fnkit.invoke(handler, {})
    assert not inv.succeeded and inv.status == "error"
    assert inv.error.type == "KeyError"
    assert "orderId" in inv.error.message
    assert "Traceback" in inv.error.traceback and "handler" in inv.error.traceback
    assert str(inv.error).startswith("KeyError: ")
    assert inv.returned is None and inv.response_text is None


def test_system_exit_in_a_handler_does_not_stop_the_caller():
    inv = fnkit.invoke(lambda e, c: sys.exit(3), {})
    assert inv.status == "error" and inv.error.type == "SystemExit"


def test_a_raising_handler_with_a_timeout_is_still_an_error_not_a_timeout():
    def handler(event, context):
        raise ValueError("bad body")

    inv = fnkit.invoke(handler, {}, timeout_s=1.0)
    assert inv.status == "error" and inv.error.type == "ValueError" and not inv.timed_out


# --- output -----------------------------------------------------------------------------------


def test_prints_are_captured_in_logs_not_leaked(capsys):
    def handler(event, context):
        print("processing", event["id"])
        print("oops", file=sys.stderr)
        return "done"

    inv = fnkit.invoke(handler, {"id": 7})
    assert "processing 7" in inv.logs and "oops" in inv.logs
    out, err = capsys.readouterr()
    assert "processing" not in out and "oops" not in err
    print("after")  # the test's own output is untouched afterwards
    assert capsys.readouterr().out == "after\n"


def test_prints_of_a_handler_with_a_timeout_are_captured(capsys):
    inv = fnkit.invoke(lambda e, c: print("with timeout") or 1, {}, timeout_s=2.0)
    assert "with timeout" in inv.logs
    assert "with timeout" not in capsys.readouterr().out


def test_prints_and_logs_are_captured_off_the_main_thread(capsys):
    def handler(event, context):
        print("worker print")
        logging.getLogger("w").warning("worker log")
        return 1

    inv = _in_a_thread(lambda: fnkit.invoke(handler, {}, timeout_s=2.0))
    assert "worker print" in inv.logs and "[WARNING] worker log" in inv.logs
    assert "worker print" not in capsys.readouterr().out


def test_logging_calls_are_captured_with_their_level():
    def handler(event, context):
        logging.getLogger("orders").warning("low stock for %s", "sku-1")
        logging.getLogger().error("payment failed")
        return None

    inv = fnkit.invoke(handler, {})
    assert "[WARNING] low stock for sku-1" in inv.logs
    assert "[ERROR] payment failed" in inv.logs


def test_logs_of_two_invocations_do_not_mix():
    first = fnkit.invoke(lambda e, c: print("first"), {})
    second = fnkit.invoke(lambda e, c: print("second"), {})
    assert "first" in first.logs and "second" not in first.logs
    assert "second" in second.logs and "first" not in second.logs


def test_capture_is_removed_after_the_call():
    before_out, before_err = sys.stdout, sys.stderr
    fnkit.invoke(lambda e, c: print("x"), {})
    fnkit.invoke(lambda e, c: 1 / 0, {})
    assert sys.stdout is before_out and sys.stderr is before_err


# --- what JSON cannot encode ------------------------------------------------------------------


def test_a_returned_set_cannot_be_encoded():
    inv = fnkit.invoke(lambda e, c: {"batchItemFailures": {"a", "b"}}, {})
    assert inv.status == "returned"
    assert inv.returned == {"batchItemFailures": {"a", "b"}}
    assert inv.response_text is None
    assert inv.encode_error and "set" in inv.encode_error
    assert isinstance(inv.response(), fnkit.Raw)  # the platform reads it as invalid JSON


@pytest.mark.parametrize("value", [math.nan, math.inf, {"x": -math.inf}])
def test_a_returned_nan_or_infinity_is_not_json(value):
    inv = fnkit.invoke(lambda e, c: value, {})
    assert inv.response_text is None
    assert inv.encode_error
    assert isinstance(inv.response(), fnkit.Raw)


@pytest.mark.parametrize("value", [b"bytes", object(), {(1, 2): "tuple key"}])
def test_other_values_json_cannot_encode(value):
    inv = fnkit.invoke(lambda e, c: value, {})
    assert inv.response_text is None and inv.encode_error


def test_a_returned_raw_is_passed_through_as_the_exact_text():
    inv = fnkit.invoke(lambda e, c: fnkit.Raw('{"batchItemFailures": [}'), {})
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


def test_a_hanging_handler_times_out_quickly():
    release = threading.Event()

    def handler(event, context):
        release.wait(10)
        return "late"

    started = time.monotonic()
    inv = fnkit.invoke(handler, {}, timeout_s=0.2)
    elapsed = time.monotonic() - started
    release.set()
    assert inv.timed_out and inv.status == "timeout" and not inv.succeeded
    assert inv.timeout_s == 0.2
    assert inv.returned is None and inv.response_text is None
    assert elapsed < 2.0
    assert inv.duration_ms >= 150


def test_a_hanging_handler_off_the_main_thread_does_not_block_its_caller():
    release = threading.Event()

    def handler(event, context):
        release.wait(10)

    started = time.monotonic()
    inv = _in_a_thread(lambda: fnkit.invoke(handler, {}, timeout_s=0.2))
    elapsed = time.monotonic() - started
    release.set()
    assert inv.timed_out and elapsed < 2.0


def test_a_sleeping_handler_times_out():
    started = time.monotonic()
    inv = fnkit.invoke(lambda e, c: time.sleep(5), {}, timeout_s=0.2)
    assert inv.timed_out and time.monotonic() - started < 2.0


def test_a_fast_handler_with_a_timeout_returns_normally():
    inv = fnkit.invoke(lambda e, c: {"v": 1}, {}, timeout_s=2.0)
    assert inv.status == "returned" and inv.response() == {"v": 1}


def test_remaining_time_decreases_during_the_call():
    def handler(event, context):
        first = context.get_remaining_time_in_millis()
        time.sleep(0.05)
        return [first, context.get_remaining_time_in_millis()]

    inv = fnkit.invoke(handler, {}, timeout_s=1.0)
    first, second = inv.returned
    assert 800 <= first <= 1000
    assert second < first
    assert first - second >= 40


def test_remaining_time_without_a_timeout_is_large():
    inv = fnkit.invoke(lambda e, c: c.get_remaining_time_in_millis(), {})
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
    inv = fnkit.invoke(lambda e, c: print("hi") or {"a": 1}, {})
    frame = fnkit.tabulate(inv)
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row["status"] == "returned" and row["returned"] == '{"a":1}' and "hi" in row["logs"]


def test_off_the_main_thread_a_hung_handler_is_stopped_and_the_next_call_is_prompt():
    import threading
    import time

    import fnkit

    results = []

    def spin(event, context):
        while True:
            pass

    def calls():
        results.append(fnkit.invoke(spin, {}, timeout_s=0.2).status)
        started = time.perf_counter()
        results.append(fnkit.invoke(lambda e, c: {"ok": True}, {}, timeout_s=2).returned)
        results.append(time.perf_counter() - started)
        for _ in range(50):
            fnkit.invoke(lambda e, c: None, {}, timeout_s=2)

    worker = threading.Thread(target=calls)
    worker.start()
    worker.join(10)
    assert results[:2] == ["timeout", {"ok": True}]
    assert results[2] < 1.0
    time.sleep(0.3)
    handler_threads = [t for t in threading.enumerate() if t.name == "fnkit-handler"]
    assert len(handler_threads) <= 2      # reused, not one per call; the spinning one was stopped
