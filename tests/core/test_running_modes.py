"""One decision whatever the isolation mode (issue 31): what the caller makes of a returned value is the
same in the caller, on a handler thread and in a worker process."""

from __future__ import annotations

import sys
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fnkit
from fnkit import Raw

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


def big_text(event: Any, context: Any) -> str:
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
