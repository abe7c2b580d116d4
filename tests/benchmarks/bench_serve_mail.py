"""Benchmark: messages per second through fnkit.mail.serve vs a bare aiosmtpd Maildir server (run by hand).

Both servers run in this process on loopback, each an aiosmtpd Controller in its own
thread, and are driven the same way: C smtplib clients (1, then 4 by default), each on
one connection, sending the same small message to one recipient, N messages per round.
Rounds alternate between the two servers (bare, fnkit, fnkit, bare, ...), and the ratio
is the median, over rounds, of fnkit's rate over the bare rate measured right beside it:
on a shared machine, pairing compares the two under the same conditions, where
best-of-N would pit each one's luckiest moment against the other's. Both fsync every
message (the bare server through `mailbox.Maildir.add`; fnkit writes each file under tmp/
and moves a message's files into new/ together, the same system calls), so absolute rates
swing with the disk.
(a) fnkit.mail.serve with a trivial synchronous handler (DEFAULT for all recipients);
(b) a bare aiosmtpd handler that only stores the message in the recipient's Maildir.
Target (issue "Real front ends", SMTP): (a) / (b) >= 0.5.

    python tests/benchmarks/bench_serve_mail.py [--quick] [--messages N] [--connections 1,4] [--rounds R]
    python tests/benchmarks/bench_serve_mail.py --no-fsync   # the gateway's CPU cost alone (worst case)
"""

from __future__ import annotations

import argparse
import asyncio
import mailbox
import os
import smtplib
import statistics
import tempfile
import threading
import time
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller

from fnkit import mail

TARGET = 0.5
DOMAIN = "example.com"
RECIPIENT = f"alice@{DOMAIN}"


def handler(event, context):
    return {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}]}


class BareMaildir:
    """The least an SMTP server can do: store each message in its recipients' Maildirs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.boxes: dict[str, mailbox.Maildir] = {}
        self.count = 0

    async def handle_DATA(self, server, session, envelope):
        for rcpt in envelope.rcpt_tos:
            box = self.boxes.get(rcpt)
            if box is None:
                box = self.boxes[rcpt] = mailbox.Maildir(self.root / rcpt.lower(), create=True)
            box.add(envelope.original_content)
        self.count += 1
        return "250 OK"


class _FreePortController(Controller):
    def _trigger_server(self):
        if self.port == 0:
            assert isinstance(self.server, asyncio.Server)  # what loop.create_server made
            self.port = self.server.sockets[0].getsockname()[1]
        super()._trigger_server()


def message() -> bytes:
    msg = EmailMessage()
    msg["From"] = "bob@example.org"
    msg["To"] = RECIPIENT
    msg["Subject"] = "Benchmark"
    msg["Date"] = "Thu, 01 Jan 2026 00:00:00 +0000"
    msg["Message-ID"] = "<bench@example.org>"
    msg.set_content("Hello from the benchmark.\n" * 20)
    return msg.as_bytes(policy=policy.SMTP)  # CRLF line ends, as SMTP clients send


def load(host: str, port: int, messages: int, connections: int) -> float:
    """Messages per second for `connections` clients sending `messages` in all."""
    raw = message()
    per_client = messages // connections
    errors: list[str] = []
    gate = threading.Barrier(connections + 1)

    def client() -> None:
        with smtplib.SMTP(host, port, timeout=30) as smtp:
            smtp.ehlo()
            gate.wait()
            try:
                for _ in range(per_client):
                    refused = smtp.sendmail("bob@example.org", [RECIPIENT], raw)
                    if refused:
                        errors.append(str(refused))
            except smtplib.SMTPException as exc:
                errors.append(repr(exc))

    threads = [threading.Thread(target=client) for _ in range(connections)]
    for t in threads:
        t.start()
    gate.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise SystemExit(f"refusals: {errors[:3]}")
    return per_client * connections / elapsed


def count_files(root: Path) -> int:
    return sum(1 for _ in root.glob("*/new/*"))


def compare(
    bare: Controller, gateway: Any, messages: int, connections: int, rounds: int
) -> tuple[list[float], list[float]]:
    """Rates (msgs/s) of each server, round by round, the order alternating so drift hits both alike."""
    bare_rates: list[float] = []
    fnkit_rates: list[float] = []
    for i in range(rounds):
        runs = [("bare", bare.hostname, bare.port), ("fnkit", gateway.host, gateway.port)]
        for name, host, port in runs if i % 2 == 0 else reversed(runs):
            rate = load(host, port, messages, connections)
            (bare_rates if name == "bare" else fnkit_rates).append(rate)
    return bare_rates, fnkit_rates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=None, help="messages per round (default 300)")
    parser.add_argument("--connections", default="1,4", help="comma-separated client counts (default 1,4)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds per client count (default 7)")
    parser.add_argument("--quick", action="store_true", help="100 messages, 2 rounds")
    parser.add_argument(
        "--no-fsync",
        action="store_true",
        help="diagnostic: stub os.fsync for both servers, leaving only CPU and loopback costs",
    )
    args = parser.parse_args()
    if args.no_fsync:
        os.fsync = lambda fd: None
    messages = args.messages or (100 if args.quick else 300)
    rounds = 2 if args.quick else args.rounds
    counts = [int(c) for c in args.connections.split(",")]

    results = []
    with tempfile.TemporaryDirectory(prefix="bench-mail-") as tmp_name:
        tmp = Path(tmp_name)
        bare = _FreePortController(BareMaildir(tmp / "bare"), hostname="127.0.0.1", port=0)
        bare.start()
        gateway = mail.serve(handler, domains=[DOMAIN], maildir=tmp / "fnkit")
        sent = 0
        try:
            for host, port in ((bare.hostname, bare.port), (gateway.host, gateway.port)):
                load(host, port, 20, 1)  # warm up both
            sent += 20
            for connections in counts:
                results.append((connections, *compare(bare, gateway, messages, connections, rounds)))
                sent += rounds * (messages // connections) * connections
        finally:
            bare.stop()
            gateway.stop()
        # both really stored every message; the gateway logged one delivered row per message
        stored_bare, stored_fnkit = count_files(tmp / "bare"), count_files(tmp / "fnkit")
        log = gateway.log
        assert stored_bare == sent and stored_fnkit == sent, (stored_bare, stored_fnkit, sent)
        assert len(log) == sent and set(log["status"]) == {"delivered"}, log["status"].value_counts()

    print(
        f"{messages} messages per round, one recipient each, {rounds} round(s) per server; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPU(s)"
        + ("; os.fsync stubbed (--no-fsync)" if args.no_fsync else "")
    )
    passed = True
    for connections, bare_rates, fnkit_rates in results:
        best_bare, best_fnkit = max(bare_rates), max(fnkit_rates)
        paired = statistics.median(f / b for f, b in zip(fnkit_rates, bare_rates, strict=True))
        passed = passed and paired >= TARGET
        print(f"\n{connections} connection(s):")
        print(
            f"  bare aiosmtpd + Maildir : median {statistics.median(bare_rates):6.0f}  best {best_bare:6.0f} msgs/s"
            f"  (rounds: {_list(bare_rates)})"
        )
        print(
            f"  fnkit.mail.serve (sync) : median {statistics.median(fnkit_rates):6.0f}  best {best_fnkit:6.0f} msgs/s"
            f"  (rounds: {_list(fnkit_rates)})"
        )
        print(
            f"  ratio fnkit / bare      : {paired:.2f} (median of back-to-back rounds; best/best "
            f"{best_fnkit / best_bare:.2f})  target >= {TARGET}: {'PASS' if paired >= TARGET else 'MISS'}"
        )
    return 0 if passed else 1


def _list(rates: list[float]) -> str:
    return ", ".join(f"{r:.0f}" for r in rates)


if __name__ == "__main__":
    raise SystemExit(main())
