"""The front ends under mixed load (issue 10), short versions; tests/benchmarks/bench_load.py runs the long ones.

HTTP: `fnkit serve-alb` as a real process, 50 clients at a time sending every kind of request
in tests/loadgen.py; each gets the contract's status, the server keeps answering, memory stays
flat. SMTP: malformed and 8-bit messages, huge ones, 1,000 recipients, relay attempts and a
client that drops mid-DATA; every message accepted with 250 is delivered or bounced.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from . import loadgen

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def serve_alb(tmp_path):
    """`fnkit serve-alb tests.loadgen:handler` on a free loopback port; (host, port, process)."""
    log = (tmp_path / "serve.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fnkit",
            "serve-alb",
            "tests.loadgen:handler",
            "--port",
            "0",
            "--timeout",
            str(loadgen.HANDLER_TIMEOUT_S),
        ],
        cwd=REPO_ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        found = None
        while found is None and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.1)
            found = re.search(r"at http://127\.0\.0\.1:(\d+)", (tmp_path / "serve.log").read_text())
        assert found, (tmp_path / "serve.log").read_text()[-2000:]
        yield "127.0.0.1", int(found.group(1)), process
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def test_serve_alb_answers_every_kind_of_request_under_load_and_stays_small(serve_alb):
    host, port, process = serve_alb
    first = loadgen.alb_load(host, port, requests=400, concurrency=50, seed=1, deadline_s=240)
    after_first = loadgen.rss_kb(process.pid)
    second = loadgen.alb_load(host, port, requests=400, concurrency=50, seed=2, deadline_s=240)
    after_second = loadgen.rss_kb(process.pid)
    for result in (first, second):
        assert result["sent"] == 400 and not result["wrong"], result["wrong"][:10]
    kinds = {kind for kind, _ in first["counts"] + second["counts"]}
    assert kinds == set(loadgen.KINDS)
    assert process.poll() is None, "the server died"
    assert loadgen.http_request(host, port, "ok", 0) == 200
    assert after_second - after_first < 30_000, (after_first, after_second)  # KiB: flat, not growing per request


def test_smtp_cases_lose_no_accepted_message(tmp_path):
    from fnkit import mail

    kinds = ["plain", "bounce", "drop", "raise", "crash", "malformed", "8bit", "relay", "drop-mid-data"] * 4
    kinds += ["huge", "too-big", "many-rcpt"]
    with mail.serve(loadgen.mail_handler, domains=["example.com"], maildir=tmp_path / "maildir") as server:
        with ThreadPoolExecutor(8) as pool:
            results = list(
                pool.map(
                    lambda a: loadgen.smtp_case(server.host, server.port, *a),
                    [(kind, n) for n, kind in enumerate(kinds)],
                )
            )
        assert server.drain(60)
        summary = loadgen.check_smtp_results(server, results)
        assert summary["accepted"] >= 1000
        with_250 = [r for r in results if r["accepted"]]
        assert {r["kind"] for r in with_250} >= {
            "plain",
            "bounce",
            "drop",
            "raise",
            "crash",
            "malformed",
            "8bit",
            "huge",
            "many-rcpt",
        }
        statuses = {row["status"] for row in server.log.to_dict("records")}
        assert {"delivered", "bounced", "dropped"} <= statuses
        assert server.running and loadgen.smtp_case(server.host, server.port, "plain", 999)["accepted"]


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_printing_handlers_and_a_printing_log_under_concurrency(isolation, capsys):
    # bug 1 of issue 10: the server crashed while invoke swapped sys.stdout under uvicorn's own prints
    import sys

    from fnkit import alb

    streams = set()

    def on_record(row):
        streams.add(id(sys.stdout))
        print("logged", row["status"])

    server = alb.AlbServer(loadgen.chatty, isolation=isolation, timeout_s=5, on_record=on_record)
    try:
        with ThreadPoolExecutor(50) as pool:
            # each worker process imports the handler's module as it starts (tests/loadgen.py: the standard
            # library only; this module brought pytest into each of 50 workers, and 80 of the first answers
            # took over 20 s at a load average of 25). A busy machine still delays the first: a minute each
            statuses = list(
                pool.map(lambda n: loadgen.http_request(server.host, server.port, "ok", n, timeout=60), range(500))
            )
    finally:
        server.stop()
    assert statuses == [200] * 500
    assert len(streams) == 1  # sys.stdout was never swapped while the server printed
    assert len(server.records) == 500 and all(r["status"] == 200 for r in server.records)
    out = capsys.readouterr().out
    assert out.count("logged 200") == 500 and "handling" not in out


def test_server_logs_are_a_bounded_ring(tmp_path):
    from fnkit import alb

    with alb.serve(loadgen.chatty, isolation="none", max_records=50) as server:
        for n in range(120):
            assert loadgen.http_request(server.host, server.port, "ok", n) == 200
        assert len(server.records) == 50 and len(server.log) == 50
        assert server.records[-1]["path"] == "/ok/119"
