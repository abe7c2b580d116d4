"""Load: `fnkit serve-alb` under 10,000 mixed requests at 50 at a time, twice; the SMTP cases at scale.

HTTP (tests/loadgen.py): valid requests, handlers that raise, exit their process, hang past
the timeout or return junk or over 1 MB, bodies over 1 MB, WebSocket upgrades, unsupported
methods, malformed request lines and slow clients, against the real command on loopback. Each
must get the contract's status; the server must keep answering; its memory must stay flat
(resident size after round 2 within 10% or 20 MB of round 1). Then bodies to 1 MB (binary or
text, Content-Length or chunked), 50 at a time: every answer, the digest of what the function
received, must be right; the server's RSS before and after is printed. SMTP: 2,000 messages of every
case (malformed, 8-bit, huge, too big, 1,000 recipients, relay attempts, drops mid-DATA,
crashing rule functions) at 16 at a time; every message accepted with 250 is delivered or
bounced. Pass --quick for 1,000 requests and 200 messages. Exit status 1 on any miss.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import loadgen  # noqa: E402

QUICK = "--quick" in sys.argv
REQUESTS = 1_000 if QUICK else 10_000
MESSAGES = 200 if QUICK else 2_000
BODIES = 200 if QUICK else 1_000


def serve_alb(log_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    log = log_path.open("w")
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
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"at http://127\.0\.0\.1:(\d+)", log_path.read_text())
        if found:
            return process, int(found.group(1))
        time.sleep(0.1)
    process.kill()
    raise SystemExit("fnkit serve-alb did not start: " + log_path.read_text()[-2000:])


def alb_rounds() -> bool:
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        process, port = serve_alb(Path(tmp) / "serve.log")
        try:
            rss = [loadgen.rss_kb(process.pid)]
            for round_number in (1, 2):
                result = loadgen.alb_load("127.0.0.1", port, REQUESTS, 50, seed=round_number, deadline_s=1200)
                rss.append(loadgen.rss_kb(process.pid))
                by_kind: Counter[str] = Counter()
                for (kind, _), n in result["counts"].items():
                    by_kind[kind] += n
                good = result["sent"] == REQUESTS and not result["wrong"] and process.poll() is None
                ok &= good
                print(
                    f"   round {round_number}: {result['sent']:,} requests in {result['seconds']:.1f} s "
                    f"({result['sent'] / result['seconds']:,.0f}/s), {len(result['wrong'])} wrong status(es); "
                    f"server RSS {rss[-1] / 1024:,.0f} MB  {'PASS' if good else 'MISS'}"
                )
                print("      " + ", ".join(f"{k} {v}" for k, v in sorted(by_kind.items())))
                for wrong in result["wrong"][:5]:
                    print(f"      wrong: {wrong}")
            growth = rss[2] - rss[1]
            flat = growth <= max(20 * 1024, rss[1] * 0.10)
            ok &= flat
            print(
                f"   memory: start {rss[0] / 1024:,.0f} MB, after round 1 {rss[1] / 1024:,.0f} MB, after round 2 "
                f"{rss[2] / 1024:,.0f} MB: {'flat, PASS' if flat else 'GROWING, MISS'}"
            )
            before = rss[-1]
            bodies = loadgen.body_load("127.0.0.1", port, BODIES, 50, seed=3)
            after = loadgen.rss_kb(process.pid)
            right = not bodies["wrong"]
            ok &= right
            print(
                f"   bodies: {BODIES:,} requests with bodies to 1 MB (binary or text, Content-Length or chunked) at "
                f"50 concurrent in {bodies['seconds']:.1f} s: {len(bodies['wrong'])} wrong answer(s); server RSS "
                f"{before / 1024:,.0f} MB before, {after / 1024:,.0f} MB after  {'PASS' if right else 'MISS'}"
            )
            still = loadgen.http_request("127.0.0.1", port, "ok", 0) == 200
            ok &= still
            print(f"   still answering afterwards: {still}")
        finally:
            process.terminate()
            process.wait(10)
    return ok


def smtp_soak() -> bool:
    from fnkit import mail

    kinds = loadgen.SMTP_KINDS
    plan = [(kinds[i % len(kinds)], i) for i in range(MESSAGES)]
    with (
        tempfile.TemporaryDirectory() as tmp,
        mail.serve(
            loadgen.mail_handler, domains=["example.com"], maildir=Path(tmp) / "maildir", max_records=10_000_000
        ) as server,
    ):
        started = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            results = list(pool.map(lambda a: loadgen.smtp_case(server.host, server.port, *a), plan))
        server.drain(120)
        took = time.monotonic() - started
        try:
            summary = loadgen.check_smtp_results(server, results)
            ok = True
        except AssertionError as exc:
            summary, ok = {"accepted": "?", "rows": "?"}, False
            print(f"   MISS: {exc}")
    refused = sum(1 for r in results if r["kind"] == "relay" and r["refused"])
    relays = sum(1 for r in results if r["kind"] == "relay")
    print(
        f"   {len(results):,} messages in {took:.1f} s; {summary['accepted']:,} recipient deliveries accepted with "
        f"250, {summary['rows']:,} log rows; relay attempts refused {refused}/{relays}  {'PASS' if ok else 'MISS'}"
    )
    return ok and refused == relays


def main() -> int:
    print(f"== fnkit serve-alb: {REQUESTS:,} mixed requests at 50 concurrent, twice")
    ok = alb_rounds()
    print(f"== fnkit.mail.serve: {MESSAGES:,} messages of every SMTP case at 16 concurrent")
    ok &= smtp_soak()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
