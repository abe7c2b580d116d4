"""Mixed load for the front ends (issue 10), shared by tests/test_load.py (short) and
tests/benchmarks/bench_load.py (10,000 HTTP requests at 50 at a time, twice; the SMTP cases).

Everything goes to loopback only; every loop is bounded in count and time.

HTTP kinds, each with the status the contract gives it: valid requests (200), a handler that
raises (502, A5), one that ends its process (502), one that hangs past the timeout (502), an
invalid response (502), a response over 1 MB (502), a body over 1 MB (413, A1), a WebSocket
upgrade (400, A1), an unsupported method (405, A14), a malformed request line (400, from the
HTTP server itself), and a slow client that dribbles its request (200).
"""

from __future__ import annotations

import base64
import hashlib
import os
import random
import smtplib
import socket
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from email import policy
from email.message import EmailMessage
from typing import Any

# past it "hang" is a 502; "ok" must fit in it on a machine busy with other work (0.5 s did not: a
# fresh worker after "exit", with the load average at 11 on 2 cores)
HANDLER_TIMEOUT_S = 2.0


def handler(event: dict[str, Any], context: Any) -> Any:
    """The function behind the load balancer under load: what it does depends on the path."""
    path = event.get("path", "/")
    if path == "/raise":
        raise RuntimeError("the handler failed")
    if path == "/exit":
        os._exit(3)
    if path == "/hang":
        while True:
            try:
                time.sleep(0.05)
            except BaseException:  # noqa: BLE001 - a handler that swallows everything, as learners write
                pass
    if path == "/invalid":
        return {"statusCode": "two hundred"}
    if path == "/huge":
        return {"statusCode": 200, "body": "x" * (1024 * 1024 + 10)}
    if path == "/digest":  # what the function received, in 80 characters: the client checks it (body_load)
        body = event.get("body") or ""
        data = base64.b64decode(body) if event.get("isBase64Encoded") else body.encode("utf-8")
        return {"statusCode": 200, "body": f"{len(data)} {hashlib.sha256(data).hexdigest()}"}
    print("served", path)
    return {"statusCode": 200, "headers": {"content-type": "text/plain"}, "body": "ok " + path}


def chatty(event: dict[str, Any], context: Any) -> Any:
    """A handler that prints, beside a server that prints its log (tests/test_load.py)."""
    print("handling", event["path"])
    return {"statusCode": 200, "body": "ok"}


KINDS = {  # kind: (weight, expected status)
    "ok": (60, 200),
    "raise": (6, 502),
    "exit": (3, 502),
    "hang": (1, 502),
    "invalid": (6, 502),
    "huge-response": (3, 502),
    "big-body": (4, 413),
    "websocket": (5, 400),
    "bad-method": (4, 405),
    "malformed": (5, 400),
    "slow-client": (3, 200),
}


def _request_bytes(kind: str, n: int) -> bytes:
    if kind == "ok":
        return f"GET /ok/{n}?q={n} HTTP/1.1\r\nHost: loopback\r\nConnection: close\r\n\r\n".encode()
    if kind in ("raise", "exit", "hang", "invalid"):
        return f"POST /{kind} HTTP/1.1\r\nHost: loopback\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}".encode()
    if kind == "huge-response":
        return b"GET /huge HTTP/1.1\r\nHost: loopback\r\nConnection: close\r\n\r\n"
    if kind == "big-body":
        body = b"b" * (1024 * 1024 + 1)
        return (
            f"POST /upload HTTP/1.1\r\nHost: loopback\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode() + body
    if kind == "websocket":
        return (
            b"GET /chat HTTP/1.1\r\nHost: loopback\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
    if kind == "bad-method":
        return b"BREW /pot HTTP/1.1\r\nHost: loopback\r\nConnection: close\r\n\r\n"
    if kind == "malformed":
        return b"THIS IS NOT HTTP\x00\xff\r\n\r\n"
    return f"GET /slow/{n} HTTP/1.1\r\nHost: loopback\r\nConnection: close\r\n\r\n".encode()


def _status_of(reply: bytes) -> int | None:
    try:
        return int(reply.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return None


def http_request(host: str, port: int, kind: str, n: int, timeout: float = 20.0) -> int | None:
    """Send one request of `kind` over a fresh connection; the status (None: no answer)."""
    data = _request_bytes(kind, n)
    with socket.create_connection((host, port), timeout=timeout) as sock:
        if kind == "slow-client":
            for i in range(0, len(data), 8):  # a client that dribbles its request over ~0.2 s
                sock.sendall(data[i : i + 8])
                time.sleep(0.2 * 8 / len(data))
        else:
            try:
                sock.sendall(data)
            except OSError:  # the server may answer 413 and close before the whole body is sent
                pass
        reply = b""
        try:
            while b"\r\n" not in reply:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                reply += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return _status_of(reply)


def alb_load(
    host: str, port: int, requests: int, concurrency: int, seed: int = 0, deadline_s: float = 600.0
) -> dict[str, Any]:
    """`requests` mixed requests, `concurrency` at a time; counts of (kind, status) and the mismatches."""
    rng = random.Random(seed)
    names = list(KINDS)
    weights = [KINDS[k][0] for k in names]
    plan = rng.choices(names, weights, k=requests)
    lock = threading.Lock()
    counts: Counter[Any] = Counter()
    wrong: list[Any] = []
    next_index = [0]
    stop_at = time.monotonic() + deadline_s

    def worker() -> None:
        while time.monotonic() < stop_at:
            with lock:
                i = next_index[0]
                next_index[0] += 1
            if i >= len(plan):
                return
            kind = plan[i]
            status: int | str | None
            try:
                status = http_request(host, port, kind, i)
            except OSError as exc:
                status = f"{type(exc).__name__}"
            with lock:
                counts[(kind, status)] += 1
                if status != KINDS[kind][1]:
                    wrong.append((i, kind, status))

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, stop_at - time.monotonic()) + 30)
    return {"counts": counts, "wrong": wrong, "sent": sum(counts.values()), "seconds": time.monotonic() - started}


# --- bodies up to 1 MB, each answer checked ------------------------------------------------------------

MAX_BODY = 1024 * 1024  # the largest request body the load balancer forwards (A1)


def body_case(n: int, seed: int = 0) -> tuple[bytes, bytes]:
    """Request `n` of a body load: (the bytes to send, the answer the function must give).

    Sizes are mixed up to 1 MB (a third near the limit), the content binary or text, framed by
    Content-Length or chunked.
    """
    rng = random.Random(f"{seed}:{n}")
    size = rng.choice(
        [0, rng.randrange(1, 1024), rng.randrange(1024, 256 * 1024), rng.randrange(MAX_BODY - 4096, MAX_BODY + 1)]
    )
    text = rng.random() < 0.5
    body = (bytes(rng.choices(b"abcdefghij ", k=size))) if text else rng.randbytes(size)
    kind = "text/plain" if text else "application/octet-stream"
    head = f"POST /digest HTTP/1.1\r\nHost: loopback\r\nContent-Type: {kind}\r\nConnection: close\r\n"
    if rng.random() < 0.5:
        framed = f"Content-Length: {size}\r\n\r\n".encode() + body
    else:
        pieces = [body[i : i + 65536] for i in range(0, size, 65536)]
        framed = b"Transfer-Encoding: chunked\r\n\r\n"
        framed += b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    return head.encode() + framed, f"{size} {hashlib.sha256(body).hexdigest()}".encode()


def body_request(host: str, port: int, n: int, seed: int = 0, timeout: float = 60.0) -> bool:
    """Send body case `n` over a fresh connection; True when the function's answer is the right one."""
    data, expected = body_case(n, seed)
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(data)
        reply = b""
        try:
            while chunk := sock.recv(65536):
                reply += chunk
        except (TimeoutError, ConnectionResetError):
            return False
    return reply.startswith(b"HTTP/1.1 200 ") and reply.endswith(b"\r\n\r\n" + expected)


def body_load(host: str, port: int, requests: int, concurrency: int, seed: int = 0) -> dict[str, Any]:
    """`requests` body cases, `concurrency` at a time: how many got a wrong answer (or none), and how long it took."""
    started = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        right = list(pool.map(lambda n: body_request(host, port, n, seed), range(requests)))
    wrong = [n for n, ok in enumerate(right) if not ok]
    return {"sent": requests, "wrong": wrong, "seconds": time.monotonic() - started}


def rss_kb(pid: int) -> int:
    """Resident memory of a process in KiB (Linux /proc)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


# --- SMTP ---------------------------------------------------------------------------------------------


def mail_handler(event: dict[str, Any], context: Any) -> Any:
    """A mail-flow function under load: bounces what says "bounce", drops "drop", crashes on "crash"."""
    subject = event.get("subject", "")
    if "crash" in subject:
        os._exit(5)
    if "raise" in subject:
        raise ValueError("the rule's function failed")
    if "bounce" in subject:
        return {
            "actions": [{"action": {"type": "BOUNCE", "parameters": {"bounceMessage": "no"}}, "allRecipients": True}]
        }
    if "drop" in subject:
        return {"actions": [{"action": {"type": "DROP"}, "allRecipients": True}]}
    return {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}]}


def message(subject: str, body: str = "Hello.\n", to: str = "a@example.com", sender: str = "s@example.org") -> bytes:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Date"] = "Thu, 01 Jan 2026 00:00:00 +0000"
    msg.set_content(body)
    return msg.as_bytes(policy=policy.SMTP)


SMTP_KINDS = [
    "plain",
    "bounce",
    "drop",
    "raise",
    "crash",
    "malformed",
    "8bit",
    "huge",
    "too-big",
    "many-rcpt",
    "relay",
    "drop-mid-data",
]


def smtp_case(host: str, port: int, kind: str, n: int) -> dict[str, Any]:
    """Send one case; what the client saw: accepted recipients (250) and refusals."""
    local = [f"user{n % 7}@example.com"]
    raw = message(f"{kind} {n}")
    sender = "s@example.org"
    if kind == "malformed":
        raw = b"This is not a header\r\nSubject missing colon\r\n\r\nbody\r\n"
    elif kind == "8bit":
        raw = b"From: s@example.org\r\nSubject: \xff\xfe garbage \x80\r\n\r\n\xc3\x28\xa0\xa1 body \xff\r\n"
    elif kind == "huge":
        raw = message(f"huge {n}", body=("y" * 76 + "\n") * 60_000)  # ~4.6 MB, under the 10 MB limit
    elif kind == "too-big":
        raw = message(f"too big {n}", body=("z" * 76 + "\n") * 150_000)  # ~11.6 MB, over the limit
    elif kind == "many-rcpt":
        local = [f"r{i}@example.com" for i in range(1000)]
    elif kind == "relay":
        local = ["victim@elsewhere.example"]
    result: dict[str, Any] = {"kind": kind, "accepted": [], "refused": {}, "error": None}
    with smtplib.SMTP(host, port, timeout=60) as client:
        if kind == "drop-mid-data":
            client.ehlo()
            client.mail(sender)
            client.rcpt(local[0])
            client.putcmd("data")
            client.getreply()
            client.send(b"Subject: cut off\r\n\r\nhalf a messa")
            client.close()  # gone mid-DATA, without a QUIT
            result["error"] = "dropped"
            return result
        try:
            refused = client.sendmail(sender, local, raw)
            result["accepted"] = [r for r in local if r not in refused]
            result["refused"] = {r: code for r, (code, _) in refused.items()}
        except smtplib.SMTPRecipientsRefused as exc:
            result["refused"] = {r: code for r, (code, _) in exc.recipients.items()}
        except smtplib.SMTPDataError as exc:
            result["error"] = exc.smtp_code
        except smtplib.SMTPSenderRefused as exc:
            result["error"] = exc.smtp_code
    return result


def check_smtp_results(server: Any, results: list[dict[str, Any]]) -> dict[str, Any]:
    """Every 250 is delivered or bounced (a row with that status), none lost; relays refused."""
    rows = list(server.log.to_dict("records"))
    by_recipient: Counter[Any] = Counter()
    for row in rows:
        if row["status"] in ("delivered", "junk", "bounced", "dropped"):
            by_recipient[row["recipient"]] += 1
    accepted: Counter[Any] = Counter()
    for r in results:
        for address in r["accepted"]:
            accepted[address] += 1
        if r["kind"] == "relay":
            assert r["refused"] and all(code == 550 for code in r["refused"].values()), r
        if r["kind"] == "too-big":
            assert r["error"] == 552, r
        if r["kind"] == "many-rcpt":
            assert len(r["accepted"]) == 1000 and not r["refused"], (len(r["accepted"]), r["refused"])
    lost = {a: n - by_recipient[a] for a, n in accepted.items() if by_recipient[a] < n}
    assert not lost, f"accepted with 250 but without a disposition: {list(lost.items())[:5]}"
    return {"accepted": sum(accepted.values()), "rows": len(rows)}
