"""One night of an on-call engineer's data, rebuilt: a load balancer's access logs and a queue dump.

    night = write_night(folder)                      # small: a few thousand lines (tests)
    night = write_night(folder, requests=200_000, files=192, messages=50_000)   # the scenario at scale (bench)

The access logs are gzip files in the load balancer's documented format, one per five
minutes of a night (00:00-06:00 UTC), named as the load balancer names them. They hold
requests forwarded to the function (200, 201, 404, 502 with `LambdaUnhandled`,
`LambdaInvalidResponse` or `LambdaTimeout`, 504, 460 when the client left), and requests
the load balancer answered itself (301 `redirect`, 503 `fixed-response`, 401
`authenticate`), a few lines that are no entry at all, blank lines, and the last file is
cut short (its gzip stream ends mid-way, as a copy interrupted by a full disk leaves it).

The queue dump is what `aws sqs receive-message --max-number-of-messages 10
--attribute-names All` appends to a file in a loop: answers of up to ten messages,
pretty-printed, one after the other (no list around them); some messages come back a
second time (receive count 2), some bodies are not JSON. `write_night` also writes the
same dump as JSON Lines (one answer per line, what `jq -c` makes).

The counts come from the generation, not from reading the files: `Night` holds them, for
tests to compare with what fnkit reads.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

PREFIX = "123456789012_elasticloadbalancing_eu-west-1_app.shop-lb.50dc6c495c0c9188_"
GROUP = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/shop-fn/73e2d6bc24d8a067"
CERT = "arn:aws:acm:eu-west-1:123456789012:certificate/3f1c2a9e-7b4d-4c1e-9a55-0d6e2b8f4a17"
START = datetime(2026, 1, 5, 0, 0, tzinfo=UTC)
NIGHT = timedelta(hours=6)
AGENTS = ("curl/8.11.1", "python-httpx/0.28.1", "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0")

# (weight, kind): what each logged request is
KINDS = (
    (52, "item"),  # GET /api/items/{id}: 200 or 404
    (14, "items"),  # GET /api/items?page=N: 200
    (8, "order"),  # POST /api/orders: 201 (a body the log does not keep)
    (5, "report-crash"),  # GET /api/report: 502 LambdaUnhandled
    (3, "report-invalid"),  # GET /api/report?format=csv: 502 LambdaInvalidResponse
    (2, "timeout"),  # GET /api/search: 502 LambdaTimeout
    (2, "gateway-timeout"),  # GET /api/export: 504
    (2, "client-left"),  # GET /api/items: 460
    (6, "redirect"),  # GET http://...: 301, actions_executed redirect
    (3, "maintenance"),  # GET /admin: 503, fixed-response
    (3, "login"),  # GET /account: 401, authenticate only
)
NOT_FORWARDED = frozenset({"redirect", "maintenance", "login"})


@dataclass
class Night:
    """The files written, and what they hold, counted as they were made."""

    logs: Path
    dump: Path  # concatenated pretty-printed answers
    dump_jsonl: Path  # the same answers, one per line
    requests: int = 0  # entries written (every kind), the cut file's included
    kinds: dict[str, int] = field(default_factory=dict)
    garbage_lines: int = 0
    blank_lines: int = 0
    cut_file: Path | None = None
    logged_502_per_minute: dict[str, int] = field(default_factory=dict)
    messages: int = 0  # messages in the dump, redeliveries included
    answers: int = 0  # receive-message answers in the dump
    redelivered: int = 0  # messages with ApproximateReceiveCount 2
    bad_bodies: int = 0  # bodies that are not JSON

    @property
    def forwarded(self) -> int:
        return sum(n for k, n in self.kinds.items() if k not in NOT_FORWARDED)

    @property
    def not_forwarded(self) -> int:
        return sum(n for k, n in self.kinds.items() if k in NOT_FORWARDED)


def _entry(rng: random.Random, when: datetime, kind: str) -> tuple[str, int]:
    """One access-log line for a request of `kind` at `when`, and the status the client got."""
    client = f"198.51.100.{rng.randrange(1, 255)}:{rng.randrange(1024, 65535)}"
    scheme, port, method, path, query = "https", 443, "GET", "/api/items", ""
    target_ms: float = rng.uniform(0.01, 0.09)
    status, target_status, actions, redirect, reason = 200, "200", "forward", "-", "-"
    if kind == "item":
        item = rng.randrange(1, 130)
        path = f"/api/items/{item}"
        status = 200 if item <= 100 else 404
        target_status = str(status)
    elif kind == "items":
        query = f"page={rng.randrange(1, 9)}"
    elif kind == "order":
        method, path, status, target_status = "POST", "/api/orders", 201, "201"
    elif kind in ("report-crash", "report-invalid"):
        path, status, target_status = "/api/report", 502, "-"
        query = "month=2026-01" if kind == "report-crash" else "format=csv"
        reason = "LambdaUnhandled" if kind == "report-crash" else "LambdaInvalidResponse"
        target_ms = rng.uniform(0.2, 0.4)
    elif kind == "timeout":
        path, status, target_status, reason, target_ms = "/api/search", 502, "-", "LambdaTimeout", 30.0
    elif kind == "gateway-timeout":
        path, status, target_status, target_ms = "/api/export", 504, "-", -1
    elif kind == "client-left":
        status, target_status, target_ms = 460, "-", -1
    elif kind == "redirect":
        scheme, port, status, target_status, actions, target_ms = "http", 80, 301, "-", "redirect", -1
        redirect = "https://shop.example.com:443/api/items"
    elif kind == "maintenance":
        path, status, target_status, actions, target_ms = "/admin", 503, "-", "fixed-response", -1
    elif kind == "login":
        path, status, target_status, actions, target_ms = "/account", 401, "-", "authenticate", -1
    url = f"{scheme}://shop.example.com:{port}{path}" + (f"?{query}" if query else "")
    created = when - timedelta(milliseconds=rng.randrange(5, 400))
    trace = f"Root=1-{int(when.timestamp()):08x}-{rng.getrandbits(96):024x}"
    target = "-1" if target_ms == -1 else f"{target_ms:.3f}"
    line = (
        f"{'h2' if scheme == 'https' else 'http'} {when:%Y-%m-%dT%H:%M:%S.%fZ} app/shop-lb/50dc6c495c0c9188 {client} - "
        f"0.001 {target} {'0.000' if target_ms != -1 else '-1'} {status} {target_status} {rng.randrange(150, 900)} "
        f'{rng.randrange(150, 3000)} "{method} {url} HTTP/2.0" "{rng.choice(AGENTS)}" '
        f"ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 {GROUP} "
        f'"{trace}" "shop.example.com" "{CERT}" 1 {created:%Y-%m-%dT%H:%M:%S.%fZ} '
        f'"{actions}" "{redirect}" "{reason}" "-" "-" "-" "-" TID_{rng.getrandbits(128):032x}'
    )
    return line, status


def _write_logs(night: Night, rng: random.Random, requests: int, files: int, cut: bool) -> None:
    night.logs.mkdir(parents=True, exist_ok=True)
    weights = [w for w, _ in KINDS]
    names = [k for _, k in KINDS]
    per_file = -(-requests // files)
    step = NIGHT / requests
    written = 0
    for number in range(files):
        begins = START + NIGHT * number / files
        lines: list[str] = []
        for _ in range(min(per_file, requests - written)):
            when = START + step * written + timedelta(microseconds=rng.randrange(0, 999))
            kind = rng.choices(names, weights)[0]
            line, status = _entry(rng, when, kind)
            lines.append(line)
            night.kinds[kind] = night.kinds.get(kind, 0) + 1
            written += 1
            if status == 502:
                minute = f"{when:%Y-%m-%dT%H:%M}"
                night.logged_502_per_minute[minute] = night.logged_502_per_minute.get(minute, 0) + 1
            if rng.random() < 0.004:
                lines.append(rng.choice(["-", 'https 2026-01-05T01:00:00Z app/shop-lb "GET', "\x00\x01 binary"]))
                night.garbage_lines += 1
            if rng.random() < 0.002:
                lines.append("")
                night.blank_lines += 1
        name = f"{PREFIX}{begins:%Y%m%dT%H%MZ}_203.0.113.10_{number:08x}.log.gz"
        data = gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), mtime=0)
        path = night.logs / name
        if cut and number == files - 1 and files > 1:  # the last file, cut: its end never arrived
            data = data[: len(data) * 2 // 3]
            night.cut_file = path
        path.write_bytes(data)
    night.requests = written


def _message(rng: random.Random, number: int, sent_ms: int, receives: int) -> dict[str, object]:
    if rng.random() < 0.01:
        body = f"order {number} (written by the old exporter)"
    else:
        body = json.dumps({"order": 5000 + number, "customer": f"c-{rng.randrange(1000, 9999)}", "total": number % 300})
    handle = "AQEB" + hashlib.sha256(f"{number}-{receives}".encode()).hexdigest()
    return {
        "MessageId": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "ReceiptHandle": handle,
        "MD5OfBody": hashlib.md5(body.encode()).hexdigest(),  # the queue's own checksum
        "Body": body,
        "Attributes": {
            "SenderId": "AROAX5EXAMPLE7SENDER:orders-api",
            "ApproximateFirstReceiveTimestamp": str(sent_ms + 400),
            "ApproximateReceiveCount": str(receives),
            "SentTimestamp": str(sent_ms),
        },
    }


def _write_dump(night: Night, rng: random.Random, messages: int) -> None:
    sent = int(START.timestamp() * 1000)
    pending: list[dict[str, object]] = []
    answers: list[dict[str, object]] = []
    made = 0
    while made < messages:
        size = rng.randrange(1, 11)
        batch: list[dict[str, object]] = []
        while len(batch) < size and made < messages:
            if pending and rng.random() < 0.3:  # a message not deleted in time: received again
                again = pending.pop(0)
                again = {**again, "Attributes": {**again["Attributes"], "ApproximateReceiveCount": "2"}}  # type: ignore[dict-item]
                again["ReceiptHandle"] = str(again["ReceiptHandle"]) + "2"
                batch.append(again)
                night.redelivered += 1
            else:
                message = _message(rng, made, sent + made * 431, 1)
                if not str(message["Body"]).startswith("{"):
                    night.bad_bodies += 1
                if rng.random() < 0.02:
                    pending.append(message)
                batch.append(message)
            made += 1
        answers.append({"Messages": batch})
    night.messages, night.answers = made, len(answers)
    with night.dump.open("w") as fh:
        for answer in answers:  # the CLI's output: four spaces of indent, a newline after each answer
            fh.write(json.dumps(answer, indent=4) + "\n")
    with night.dump_jsonl.open("w") as fh:
        for answer in answers:
            fh.write(json.dumps(answer, separators=(",", ":")) + "\n")


def write_night(
    folder: Path, *, requests: int = 3_000, files: int = 4, messages: int = 600, seed: int = 37, cut: bool = True
) -> Night:
    """Write the night's access logs and queue dumps under `folder` (the same files for the same arguments);
    `cut=False` leaves the last log file whole."""
    folder = Path(folder)
    night = Night(folder / "access-logs", folder / "receive-dump.json", folder / "receive-dump.jsonl")
    rng = random.Random(seed)
    _write_logs(night, rng, requests, files, cut)
    _write_dump(night, rng, messages)
    return night


__all__ = ["NOT_FORWARDED", "Night", "write_night"]
