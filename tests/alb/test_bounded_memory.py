"""A response over the load balancer's limit is measured in the worker: the server gets its size, never its body,
so `fnkit serve-alb` stays small whatever its handler returns, and says exactly what it said before."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from fnkit import Invocation, Raw, alb
from fnkit._engine.codec import encode_response
from fnkit.alb._outcome import answered_by_function, bound_of

REPO_ROOT = Path(__file__).resolve().parents[2]

HUGE = """
def handler(event, context):
    return {"statusCode": 200, "headers": {"content-type": "text/plain"}, "body": "x" * 100_000_000}
"""


def _peak_rss_mb(pid: int) -> float:
    """The peak resident memory of process `pid` (VmHWM), in MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    assert found, status
    return int(found.group(1)) / 1024


def test_four_100_mb_answers_at_once_leave_the_server_under_300_mb(tmp_path):
    (tmp_path / "huge.py").write_text(HUGE)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "fnkit.cli", "serve-alb", "huge:handler", "--port", "0", "--timeout", "60"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split(" at ")[1].split()[0]
        statuses: list[int] = []

        def ask(i: int) -> None:
            with httpx.Client(timeout=90) as client:
                statuses.append(client.get(f"{url}/big/{i}").status_code)

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        peak = _peak_rss_mb(proc.pid)
        assert statuses == [502] * 4
        assert peak < 300, f"serve-alb peaked at {peak:,.0f} MB"
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err


def _big(event, context):
    return {"statusCode": 200, "headers": {"x-a": "1"}, "body": "é" * 600_000}


def _big_and_wrong(event, context):
    return {"statusCode": "200", "headers": {"x-a": 1}, "isBase64Encoded": True, "body": "%" * 2_000_000}


@pytest.mark.parametrize(("answer", "multi_value"), [(_big, True), (_big_and_wrong, False)])
def test_a_response_over_the_limit_is_told_as_before(answer, multi_value):
    """The server's row, sentence and answer for a response past the limit are those of the whole response."""
    with (
        alb.serve(answer, isolation="process", timeout_s=30, multi_value=multi_value) as bounded,
        alb.serve(answer, isolation="none", multi_value=multi_value) as whole,
    ):
        with httpx.Client(timeout=60) as client:
            answers = [client.get(running.url + "/big") for running in (bounded, whole)]
        time.sleep(0.05)
        rows = [dict(running.records[-1]) for running in (bounded, whole)]
    assert [a.status_code for a in answers] == [502, 502] and answers[0].content == answers[1].content
    for row in rows:
        for key in ("time", "duration_ms", "handler_ms", "client"):
            row.pop(key)
    assert rows[0] == rows[1]


@pytest.mark.parametrize("answer", [_big, _big_and_wrong])
def test_the_outcome_of_a_measured_response_is_the_outcome_of_its_text(answer):
    text, _ = encode_response(answer(None, None))
    assert text is not None
    size = len(text.encode("utf-8"))
    for method in ("GET", "HEAD"):
        for multi in (False, True):
            limit, judge = bound_of(multi)
            assert size > limit
            measured = Invocation(response_size=size, response_report=judge(text, size))
            told = answered_by_function(measured, method, "/big", multi)
            sent = answered_by_function(Invocation(response_text=text, returned=Raw(text)), method, "/big", multi)
            assert told.status == 502 and told.issues == sent.issues and repr(told.issues) == repr(sent.issues)
            assert dataclasses.replace(told, invocation=None) == dataclasses.replace(sent, invocation=None)
