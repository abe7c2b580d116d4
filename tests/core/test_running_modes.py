"""One decision whatever the isolation mode (issue 31): what the caller makes of a returned value is the
same in the caller, on a handler thread and in a worker process."""

from __future__ import annotations

import sys
import time
import warnings
from decimal import Decimal
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fnkit
from fnkit import Raw
from fnkit._running import exchange

QUEUE_EVENT = fnkit.queue.build_event(["a", "b"], seed=1)
MAIL_EVENT = fnkit.mail.build_event(mail_from="a@example.com", recipients=["b@example.com"], seed=1)
ALB_EVENT = fnkit.alb.build_event("GET", "/", seed=1)


def give_back(event: Any, context: Any) -> Any:
    """Returns what the event holds, as it is (the handler's own copy)."""
    return event["value"]


_surrogates = st.sampled_from(["\ud800", "\udfff", "\ud83d\ude00", "\\", '"', "é", "a"])
_text = st.lists(st.one_of(_surrogates, st.text(max_size=3)), max_size=4).map("".join)
_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(),
    _text,
    st.binary(max_size=4),
    st.sampled_from([complex(1, 2), Decimal("1.5")]),
)
_values = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(_text, st.integers(0, 3)), inner, max_size=3),
        st.frozensets(st.integers(0, 9), max_size=2),
    ),
    max_leaves=6,
)
returned_values = st.one_of(
    _values,
    st.dictionaries(st.sampled_from(["batchItemFailures", "actions", "statusCode", "body"]), _values, max_size=2),
    st.builds(Raw, st.one_of(_text, st.binary(max_size=6))),
)


def decision(value: Any, isolation: str) -> tuple[Any, ...]:
    """What the caller makes of `value` returned by a handler run with `isolation`: the call, each source's outcome."""
    inv = fnkit.invoke(give_back, {"value": value}, timeout_s=30, isolation=isolation)
    queue = fnkit.queue.outcome(QUEUE_EVENT, inv)
    mail = fnkit.mail.outcome(MAIL_EVENT, inv)
    alb = fnkit.alb.outcome(ALB_EVENT, inv)
    error = None if inv.error is None else inv.error.type
    return (
        inv.status,
        error,
        inv.response_text,
        inv.encode_error,
        [(o.rule, o.headline, o.explanation) for o in (queue, mail, alb)],
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(returned_values)
def test_the_caller_decides_the_same_on_a_handler_thread(value):
    assert decision(value, "thread") == decision(value, "none")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(returned_values)
def test_the_caller_decides_the_same_when_a_worker_process_ran_the_handler(value):
    assert decision(value, "process") == decision(value, "none")


def test_a_lone_surrogate_is_used_in_every_mode():
    # before: 200 / "applied" in the caller, a 502 / fallback M3 from a worker
    value = {
        "statusCode": 200,
        "body": "caf\ud800",
        "actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}],
    }
    decisions = {mode: decision(value, mode) for mode in ("none", "thread", "process")}
    assert decisions["process"] == decisions["none"] == decisions["thread"]
    status, error, text, _, _ = decisions["process"]
    assert (status, error) == ("returned", None)
    assert text is not None and "\\ud800" in text  # escaped, as the platform's runtime writes it


# --- a worker says what happened ---------------------------------------------------------------------


def big_text(event: dict[str, int], context: Any) -> str:
    """Returns a string of `event["mb"]` megabytes."""
    return "x" * (event["mb"] * 1_000_000)


def test_a_result_too_big_for_the_workers_memory_limit_reads_as_one():
    # before: "killed by signal 11 (SIGSEGV): a crash in C code" (300 MB under the default 1,024 MB)
    inv = fnkit.invoke(big_text, {"mb": 90}, timeout_s=60, isolation="process", memory_limit_mb=300)
    assert inv.error is not None and inv.error.type == "MemoryError"
    assert "300 MB" in inv.error.message and "memory_limit_mb" in inv.error.message
    assert "FNKIT_MEMORY_LIMIT_MB" in inv.error.message
    again = fnkit.invoke(big_text, {"mb": 1}, timeout_s=60, isolation="process", memory_limit_mb=300)
    assert again.returned == "x" * 1_000_000  # and the next call has a worker that works


def test_a_big_result_under_the_limit_comes_back_whole():
    inv = fnkit.invoke(big_text, {"mb": 20}, timeout_s=60, isolation="process")
    assert inv.status == "returned" and inv.returned == "x" * 20_000_000
    assert inv.response_text == '"' + "x" * 20_000_000 + '"'


def writes_to_descriptors(event: Any, context: Any) -> int:
    import os
    import subprocess

    os.write(1, b"to fd 1\n")
    os.write(2, b"to fd 2\n")
    subprocess.run([sys.executable, "-c", "print('from a child')"], check=True)
    return 1


def test_what_a_worker_writes_to_file_descriptors_1_and_2_is_in_its_logs(capfd):
    # before: it went to the caller's stdout and stderr, not into Invocation.logs
    inv = fnkit.invoke(writes_to_descriptors, {}, timeout_s=30, isolation="process")
    assert inv.status == "returned"
    assert "to fd 1\n" in inv.logs and "to fd 2\n" in inv.logs and "from a child\n" in inv.logs
    out, err = capfd.readouterr()
    assert "to fd" not in out + err


@pytest.mark.parametrize("mode", ["thread", "none"])
def test_a_memory_limit_in_this_process_says_it_is_not_applied(mode):
    # before: memory_limit_mb was ignored without a word
    with pytest.warns(RuntimeWarning, match=r'memory_limit_mb is not applied .*isolation="process"'):
        inv = fnkit.invoke(give_back, {"value": 1}, timeout_s=5, isolation=mode, memory_limit_mb=64)
    assert inv.returned == 1
    with pytest.warns(RuntimeWarning, match="memory_limit_mb is not applied"):
        fnkit.invoke_many(give_back, [{"value": 1}], timeout_s=5, isolation=mode, memory_limit_mb=64)


class SlowToArrive:
    """An event part that takes a second to unpickle: time the worker spends before the handler starts."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (arrive_slowly, (1.0,))


def arrive_slowly(seconds: float) -> str:
    time.sleep(seconds)
    return "arrived"


def returns_at_once(event: Any, context: fnkit.Context) -> int:
    return context.get_remaining_time_in_millis()


def test_the_timeout_is_the_handlers_own_time_in_the_worker_not_the_transfer():
    # before: timed out, though the handler returned at once (the caller's clock ran while the event travelled)
    assert fnkit.invoke(returns_at_once, {}, timeout_s=0.4, isolation="process").status == "returned"  # loaded
    inv = fnkit.invoke(returns_at_once, {"part": SlowToArrive()}, timeout_s=0.4, isolation="process")
    assert inv.status == "returned"
    assert inv.returned > 300  # its context's clock started with it, in the worker
    many = fnkit.invoke_many(returns_at_once, [{"part": SlowToArrive()}, {}], timeout_s=0.4, isolation="process")
    assert [i.status for i in many] == ["returned", "returned"]


def sleeps(event: Any, context: Any) -> None:
    time.sleep(event["s"])


def test_a_handler_past_its_timeout_in_a_worker_is_still_stopped_on_time():
    started = time.perf_counter()
    inv = fnkit.invoke(sleeps, {"s": 30}, timeout_s=0.3, isolation="process")
    assert inv.status == "timeout" and inv.duration_ms >= 300
    assert time.perf_counter() - started < 10  # (the worker's own alarm, well before the caller's backstop)


# --- a worker does not see the caller's doubles ------------------------------------------------------


@pytest.fixture
def warned_afresh(monkeypatch):
    monkeypatch.setattr(exchange, "_doubles_warned", set())


def lists_buckets(event: Any, context: Any) -> int:
    return 1


def test_moto_active_in_the_caller_and_a_worker_used_warns_once(warned_afresh):
    # before: the worker's boto3 calls went to the real endpoints without a word
    import moto

    with moto.mock_aws():
        with pytest.warns(UserWarning, match=r"mock_aws is active .*worker process.*real AWS endpoints"):
            assert fnkit.invoke(lists_buckets, {}, timeout_s=30, isolation="process").returned == 1
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert fnkit.invoke(lists_buckets, {}, timeout_s=30, isolation="process").returned == 1  # once
            assert fnkit.invoke(lists_buckets, {}, timeout_s=30, isolation="none").returned == 1  # (it sees it)


def test_a_started_mock_patch_and_a_worker_used_warns(warned_afresh):
    patcher = mock.patch("os.getcwd", return_value="/patched")
    patcher.start()
    try:
        with pytest.warns(UserWarning, match="unittest.mock patch is active"):
            fnkit.invoke_many(lists_buckets, [{}], timeout_s=30, isolation="process")
    finally:
        patcher.stop()


def test_no_double_no_warning(warned_afresh):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fnkit.invoke(lists_buckets, {}, timeout_s=30, isolation="process").returned == 1
