#!/usr/bin/env python3
"""Write the sample inputs of the importers (data/alb/, data/queue/), byte for byte the same every time.

    .venv/bin/python tools/samples.py            rewrite them in data/
    .venv/bin/python tools/samples.py --out DIR  write them under DIR instead

They are made up (seeded), in the formats the platforms document:
- data/alb/access-logs/*.log.gz: two five-minute access-log files of a shop whose API is a
  function behind the load balancer; GET /api/report crashed in the version that was
  running (502, LambdaUnhandled); one client sent an incomplete request (400 from the load
  balancer itself); one line was cut short on purpose, to show how a damaged line is reported.
- data/queue/receive-message.json: one ReceiveMessage answer (10 messages, AttributeNames=All,
  message attributes of each type), consistent: every event made from it validates.
- data/queue/dead-letter.jsonl: three answers from a dead-letter queue, one per line; one
  message comes twice (received again), and one body was edited after it was sent, so its
  MD5OfBody no longer matches (the importer reports it).
- data/alb/night/*.log.gz and data/queue/receive-dump.json: a night of access logs (2,000
  requests, 00:00-06:00, four files, the last one cut short; redirects, fixed responses and
  logins the load balancer answered itself) and a dump written by a loop of
  `aws sqs receive-message` (answers one after the other), made by tests/night.py.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import random
import sys
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fnkit.queue import md5_of_body, md5_of_message_attributes  # noqa: E402
from fnkit.queue._messages import message_attributes_to_event  # noqa: E402

ACCOUNT = "123456789012"
REGION = "eu-west-1"
ELB = "app/shop-lb/50dc6c495c0c9188"
TARGET_GROUP = f"arn:aws:elasticloadbalancing:{REGION}:{ACCOUNT}:targetgroup/shop-fn/73e2d6bc24d8a067"
CERT = f"arn:aws:acm:{REGION}:{ACCOUNT}:certificate/3f1c2a9e-7b4d-4c1e-9a55-0d6e2b8f4a17"
HOST = "shop.example.com"
START = 1_767_607_200  # 2026-01-05T10:00:00Z
AGENTS = [
    "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
    (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) "
        "Version/18.1 Safari/605.1.15"
    ),
    "curl/8.11.1",
    "python-httpx/0.28.1",
    "ShopApp/3.2 (iPhone; iOS 18.2)",
]


def _iso(seconds: float) -> str:
    whole = int(seconds)
    micros = round((seconds - whole) * 1_000_000)
    import datetime as dt

    stamp = dt.datetime.fromtimestamp(whole, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{micros:06d}Z"


def _request(rng: random.Random) -> tuple[str, str, int, str | None, float]:
    """(method, path?query, status, error reason, target seconds) of one request to the shop's API."""
    r = rng.random()
    if r < 0.40:
        page = rng.randint(1, 5)
        sort = rng.choice(["price", "price%20desc", "name", "new"])
        return "GET", f"/api/items?page={page}&sort={sort}", 200, None, rng.lognormvariate(-3.4, 0.35)
    if r < 0.60:
        item = rng.randint(1, 130)
        status = 200 if item <= 100 else 404
        return "GET", f"/api/items/{item}", status, None, rng.lognormvariate(-3.7, 0.3)
    if r < 0.72:
        return "POST", "/api/orders", 201, None, rng.lognormvariate(-2.6, 0.3)
    if r < 0.82:
        month = rng.choice(["2025-11", "2025-12", "2026-01"])
        return "GET", f"/api/report?month={month}", 502, "LambdaUnhandled", rng.lognormvariate(-1.3, 0.2)
    if r < 0.90:
        return (
            "GET",
            "/api/search?q=" + rng.choice(["blue%20mug", "tea", "caf%C3%A9", "gift+card"]),
            200,
            None,
            rng.lognormvariate(-3.0, 0.4),
        )
    if r < 0.95:
        return "HEAD", "/api/items", 200, None, rng.lognormvariate(-4.0, 0.3)
    return "GET", "/favicon.ico", 404, None, rng.lognormvariate(-4.2, 0.2)


def access_log_lines(rng: random.Random, first: int, count: int, start: float) -> list[str]:
    """`count` access-log entries from `start` (epoch seconds); entry `first` + i."""
    lines = []
    t = start
    for i in range(count):
        t += rng.uniform(1.5, 8.0)
        method, target, status, error, target_s = _request(rng)
        request_s, response_s = rng.uniform(0.0004, 0.0021), rng.uniform(0.0, 0.0004)
        client = (
            f"{rng.choice(['203.0.113', '198.51.100', '192.0.2'])}.{rng.randint(2, 254)}:{rng.randint(1024, 65535)}"
        )
        created = t - request_s - target_s - response_s
        trace = f"Root=1-{int(created):08x}-{rng.getrandbits(96):024x}"
        agent = rng.choice(AGENTS)
        received = 180 + len(target) + len(agent) + (rng.randint(60, 400) if method == "POST" else 0)
        sent = {200: rng.randint(400, 9000), 201: rng.randint(200, 600), 404: 230, 502: 272}[status]
        if method == "HEAD":
            sent = 180
        target_status = "-" if status == 502 else str(status)
        fields = [
            "https",
            _iso(t),
            ELB,
            client,
            "-",
            f"{request_s:.3f}",
            f"{target_s:.3f}",
            f"{response_s:.3f}",
            str(status),
            target_status,
            str(received),
            str(sent),
            f'"{method} https://{HOST}:443{target} HTTP/1.1"',
            f'"{agent}"',
            "ECDHE-RSA-AES128-GCM-SHA256",
            "TLSv1.2",
            TARGET_GROUP,
            f'"{trace}"',
            f'"{HOST}"',
            f'"{CERT}"',
            "1",
            _iso(created),
            '"forward"',
            '"-"',
            f'"{error or "-"}"',
            '"-"',
            '"-"',
            '"-"',
            '"-"',
            f"TID_{rng.getrandbits(128):032x}",
        ]
        lines.append(" ".join(fields))
        if first + i == 23:  # a client that opened a connection and sent half a request line
            t += 0.8
            lines.append(
                " ".join(
                    [
                        "https",
                        _iso(t),
                        ELB,
                        f"198.51.100.{rng.randint(2, 254)}:{rng.randint(1024, 65535)}",
                        "-",
                        "-1",
                        "-1",
                        "-1",
                        "400",
                        "-",
                        "38",
                        "272",
                        f'"- https://{HOST}:443- -"',
                        '"-"',
                        "ECDHE-RSA-AES128-GCM-SHA256",
                        "TLSv1.2",
                        "-",
                        '"-"',
                        f'"{HOST}"',
                        f'"{CERT}"',
                        "-",
                        _iso(t - 0.001),
                        '"-"',
                        '"-"',
                        '"-"',
                        '"-"',
                        '"-"',
                        '"-"',
                        '"-"',
                        f"TID_{rng.getrandbits(128):032x}",
                    ]
                )
            )
    return lines


def _gzip(text: str) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(text.encode("utf-8"))
    return buffer.getvalue()


def access_logs() -> dict[str, bytes]:
    """The two five-minute files, by name (the documented naming: account, region, load balancer, end time, node)."""
    rng = random.Random(2026_01_05)
    files = {}
    first = 0
    for end, count in (("20260105T1005Z", 38), ("20260105T1010Z", 36)):
        start = START if end.endswith("1005Z") else START + 300
        lines = access_log_lines(rng, first, count, start)
        if end.endswith("1010Z"):
            # damaged on purpose: the entry stops after its status codes
            lines[17] = " ".join(lines[17].split(" ")[:10])
        balancer = "app.shop-lb.50dc6c495c0c9188"
        name = f"{ACCOUNT}_elasticloadbalancing_{REGION}_{balancer}_{end}_203.0.113.10_{rng.getrandbits(32):08x}.log.gz"
        files[name] = _gzip("\n".join(lines) + "\n")
        first += count
    return files


# --- queue messages ----------------------------------------------------------------------


def _message(
    rng: random.Random,
    body: str,
    *,
    sent_ms: int,
    receive_count: int = 1,
    attributes: dict[str, Any] | None = None,
    trace: str | None = None,
    dead_letter_from: str | None = None,
) -> dict[str, Any]:
    attrs = {}
    if trace:
        attrs["AWSTraceHeader"] = trace
    attrs.update(
        {
            "SenderId": "AROAX5EXAMPLE7SENDER:orders-api",
            "ApproximateFirstReceiveTimestamp": str(sent_ms + rng.randint(5, 900)),
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": str(sent_ms),
        }
    )
    if dead_letter_from:
        attrs["DeadLetterQueueSourceArn"] = dead_letter_from
    message: dict[str, Any] = {
        "MessageId": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "ReceiptHandle": "AQEB" + base64.b64encode(rng.getrandbits(8 * 120).to_bytes(120, "big")).decode("ascii"),
        "MD5OfBody": md5_of_body(body),
        "Body": body,
        "Attributes": attrs,
    }
    if attributes:
        message["MD5OfMessageAttributes"] = md5_of_message_attributes(message_attributes_to_event(attributes))
        message["MessageAttributes"] = attributes
    return message


def _order(rng: random.Random, n: int) -> str:
    return json.dumps(
        {
            "order": 5100 + n,
            "customer": f"c-{rng.randint(1000, 9999)}",
            "items": [
                {"sku": f"SKU-{rng.randint(100, 999)}", "qty": rng.randint(1, 4)} for _ in range(rng.randint(1, 3))
            ],
            "total": round(rng.uniform(4, 240), 2),
        }
    )


def receive_message() -> bytes:
    """One ReceiveMessage answer of the orders queue, pretty-printed as the command-line client prints it."""
    rng = random.Random(51)
    sent = START * 1000
    messages = []
    for n in range(10):
        sent += rng.randint(200, 5000)
        body = _order(rng, n)
        attributes = None
        trace = None
        if n == 2:
            attributes = {
                "Priority": {"StringValue": "2", "DataType": "Number"},
                "Channel": {"StringValue": "web", "DataType": "String"},
            }
        if n == 5:
            attributes = {
                "Signature": {
                    "BinaryValue": base64.b64encode(hashlib.sha256(body.encode()).digest()[:16]).decode(),
                    "DataType": "Binary",
                },
                "Channel": {"StringValue": "app", "DataType": "String.mobile"},
            }
        if n == 6:
            body = "{not json"  # a poison message
        if n == 8:
            body = "refund request for order 5104: parcel arrived damaged ✉"
        if n in (3, 7):
            trace = f"Root=1-{START:08x}-{rng.getrandbits(96):024x};Parent={rng.getrandbits(64):016x};Sampled=1"
        messages.append(
            _message(rng, body, sent_ms=sent, attributes=attributes, trace=trace, receive_count=1 if n != 4 else 2)
        )
    return (json.dumps({"Messages": messages}, indent=4, ensure_ascii=False) + "\n").encode("utf-8")


def dead_letter() -> bytes:
    """Three ReceiveMessage answers from the dead-letter queue, one JSON document per line."""
    rng = random.Random(52)
    source = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders"
    sent = START * 1000 - 3_600_000
    answers = []
    again = None
    for size in (3, 2, 3):
        messages = []
        for _ in range(size):
            sent += rng.randint(1000, 60000)
            body = rng.choice(["{not json", _order(rng, rng.randint(20, 90)), '{"order": null}'])
            messages.append(_message(rng, body, sent_ms=sent, receive_count=rng.randint(4, 6), dead_letter_from=source))
        answers.append({"Messages": messages})
    again = json.loads(json.dumps(answers[0]["Messages"][1]))  # visible again: received a second time
    again["ReceiptHandle"] = "AQEB" + base64.b64encode(rng.getrandbits(8 * 120).to_bytes(120, "big")).decode("ascii")
    again["Attributes"]["ApproximateReceiveCount"] = str(int(again["Attributes"]["ApproximateReceiveCount"]) + 1)
    answers[1]["Messages"].insert(0, again)
    edited = answers[2]["Messages"][2]
    edited["Body"] = (
        edited["Body"].replace("}", ', "note": "edited by hand"}', 1)
        if "}" in edited["Body"]
        else edited["Body"] + " (edited)"
    )
    return "".join(json.dumps(a, separators=(",", ":"), ensure_ascii=False) + "\n" for a in answers).encode("utf-8")


def night() -> dict[str, bytes]:
    """The on-call night of notebook 05, small (tests/night.py makes it, at any size): access logs and a dump."""
    import importlib.util
    import tempfile

    spec = importlib.util.spec_from_file_location("fnkit_night", ROOT / "tests" / "night.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    with tempfile.TemporaryDirectory() as folder:
        made = module.write_night(Path(folder), requests=2_000, files=4, messages=60)
        out = {f"alb/night/{p.name}": p.read_bytes() for p in sorted(made.logs.iterdir())}
        out["queue/receive-dump.json"] = made.dump.read_bytes()
    return out


def samples() -> dict[str, bytes]:
    """Every sample file, by its path under data/."""
    out = {f"alb/access-logs/{name}": data for name, data in access_logs().items()}
    out["queue/receive-message.json"] = receive_message()
    out["queue/dead-letter.jsonl"] = dead_letter()
    out.update(night())
    return out


def write(root: Path) -> list[Path]:
    """Write every sample under `root` (data/ by default)."""
    written = []
    for name, data in samples().items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    """`python tools/samples.py [--out FOLDER]`: write the samples (default: data/)."""
    root = Path(argv[argv.index("--out") + 1]) if "--out" in argv else ROOT / "data"
    for path in write(root):
        print(f"wrote {path.relative_to(root)} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
