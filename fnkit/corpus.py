"""A deterministic corpus of events across the three sources, awkward cases included.

`generate(seed)` makes it; the package bundles the committed copy (`path()`, which is
`fnkit/data/corpus.jsonl.gz` inside the installed package) that notebooks and users replay
(`python -m fnkit.corpus` rewrites it, byte for byte the same for the same seed).
"""

from __future__ import annotations

import gzip
import io
import json
import random
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from ._settings.project import Dialect
from .types import AlbEvent, Event, MailEvent, QueueEvent


def path() -> Path:
    """The bundled corpus: `fnkit/data/corpus.jsonl.gz` inside the installed package (a wheel carries it)."""
    return Path(str(resources.files("fnkit") / "data" / "corpus.jsonl.gz"))


DEFAULT_PATH = path()
DEFAULT_SIZE = 3000

_WORDS = ["order", "refund", "invoice", "parcel", "ticket", "alert", "report", "backup", "signup", "payment"]
_DOMAINS = ["example.com", "example.org", "corp.example.net"]
_NAMES = ["ana", "ben", "chen", "dara", "eli", "fatima", "goran", "hana", "ivan", "jules", "kofi", "lena"]


def _queue_event(rng: random.Random, n: int) -> QueueEvent:
    from . import queue

    kind = rng.random()
    size = rng.choice([1, 2, 3, 5, 10, 10, 10])
    bodies = []
    for i in range(size):
        r = rng.random()
        if r < 0.08:
            bodies.append("{not json")  # a poison message
        elif r < 0.12:
            bodies.append("")  # empty body
        elif r < 0.18:
            bodies.append(json.dumps({"note": "ünïcødé ✓ " + rng.choice(_WORDS)}, ensure_ascii=False))
        else:
            bodies.append(
                json.dumps({"type": rng.choice(_WORDS), "id": n * 100 + i, "amount": round(rng.uniform(-5, 500), 2)})
            )
    dialect: Dialect = "aws" if rng.random() < 0.3 else "provider"
    if kind < 0.25:
        groups = [rng.choice(["g1", "g2", "g3"]) for _ in bodies]
        event = queue.build_event(bodies, fifo=True, group_ids=groups, dialect=dialect, seed=n)
    elif kind < 0.35:
        attrs = {
            "Priority": {"dataType": "Number", "stringValue": str(rng.randint(1, 5))},
            "Origin": {"dataType": "String", "stringValue": rng.choice(_WORDS)},
        }
        event = queue.build_event(bodies, message_attributes=attrs, dialect=dialect, seed=n)
    else:
        counts = [rng.choice([1, 1, 1, 2, 3]) for _ in bodies]
        event = queue.build_event(bodies, receive_counts=counts, dialect=dialect, seed=n)
    if rng.random() < 0.02:
        event["Records"][0]["md5OfBody"] = "0" * 32  # a corrupted record: the event is invalid
    return event


def _address(rng: random.Random, domain: str | None = None) -> str:
    return f"{rng.choice(_NAMES)}{rng.randint(1, 99)}@{domain or rng.choice(_DOMAINS)}"


def _mail_event(rng: random.Random, n: int) -> MailEvent:
    from . import mail

    outbound = rng.random() < 0.3
    count = rng.choice([1, 1, 2, 3, 5, 8, 20, 60])
    recipients = sorted({_address(rng, "example.com" if not outbound else None) for _ in range(count)})
    subject = rng.choice(
        [
            "Quarterly report",
            "Invoice attached",
            "URGENT: password reset",
            "Re: lunch?",
            "holiday photos",
            "payload.exe for you",
            "Weekly digest " + "#" * rng.randint(1, 5),
            "ünïcødé subject ✓",
            "long subject " + "x" * 300,
        ]
    )
    sender = _address(rng, "example.com" if outbound else None)
    return mail.build_event(
        mail_from=sender,
        recipients=recipients,
        subject=subject,
        flow_direction="OUTBOUND" if outbound else "INBOUND",
        seed=n,
        store=_NullStore(),
    )


class _NullStore:
    """The corpus keeps events only; raw messages are not registered anywhere."""

    def add(self, *args: Any, **kwargs: Any) -> None:
        return None


def _alb_event(rng: random.Random, n: int) -> AlbEvent:
    from . import alb

    r = rng.random()
    multi = rng.random() < 0.3
    dialect: Dialect = "aws" if rng.random() < 0.3 else "provider"
    if r < 0.08:
        return alb.health_check_event(multi_value=multi, dialect=dialect)
    headers: list[tuple[str, str]] = [
        ("user-agent", rng.choice(["curl/8.5.0", "Mozilla/5.0", "python-httpx/0.28"])),
        ("accept", "*/*"),
    ]
    if rng.random() < 0.3:
        headers += [("cookie", "session=abc"), ("cookie", "theme=dark")]
    if rng.random() < 0.2:
        headers += [("x-tag", "one"), ("x-tag", "two")]
    if r < 0.55:
        query = rng.choice(["", "q=hello%20world", "a=1&a=2&b=x%2By", "name=J%C3%BCrgen", "page=2&sort=desc", "flag"])
        path = rng.choice(["/", "/items", "/items/42", "/search", "/static/logo.png", "/admin"])
        method = rng.choice(["GET", "GET", "GET", "HEAD", "OPTIONS", "DELETE"])
        return alb.build_event(method, path, query=query, headers=headers, multi_value=multi, dialect=dialect, seed=n)
    if r < 0.85:
        body = json.dumps({"id": n, "item": rng.choice(_WORDS), "qty": rng.randint(1, 9)}).encode()
        headers.append(("content-type", "application/json"))
        return alb.build_event(
            rng.choice(["POST", "PUT", "PATCH"]),
            "/items",
            headers=headers,
            body=body,
            multi_value=multi,
            dialect=dialect,
            seed=n,
        )
    body = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 64)))
    headers.append(("content-type", rng.choice(["application/octet-stream", "image/png"])))
    return alb.build_event("POST", "/upload", headers=headers, body=body, multi_value=multi, dialect=dialect, seed=n)


def generate(seed: int = 0, n: int = DEFAULT_SIZE) -> Iterator[Event]:
    """`n` events across the three sources (about 40% queue, 30% mail, 30% load balancer), deterministic per seed."""
    rng = random.Random(seed)
    makers = [_queue_event] * 4 + [_mail_event] * 3 + [_alb_event] * 3
    for i in range(n):
        yield rng.choice(makers)(rng, seed * 1_000_000 + i)


def write(path: str | Path = DEFAULT_PATH, seed: int = 0, n: int = DEFAULT_SIZE) -> Path:
    """Write the corpus as gzip-compressed JSON Lines (no timestamp in the gzip header: reproducible bytes)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(
        json.dumps(e, separators=(",", ":"), ensure_ascii=False, sort_keys=False) + "\n" for e in generate(seed, n)
    )
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(text.encode("utf-8"))
    path.write_bytes(buffer.getvalue())
    return path


def load(path: str | Path = DEFAULT_PATH) -> list[Any]:
    """Events from a JSON Lines file (plain or .gz) or a JSON file holding a list."""
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    text = raw.decode("utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        events: list[Any] = json.loads(text)
        return events
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    """`python -m fnkit.corpus [--out PATH] [--seed N] [-n N]`: write the corpus."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m fnkit.corpus", description="Write the deterministic replay corpus."
    )
    parser.add_argument("--out", default=str(DEFAULT_PATH))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-n", type=int, default=DEFAULT_SIZE)
    args = parser.parse_args(argv)
    path = write(args.out, args.seed, args.n)
    print(f"wrote {args.n} events to {path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
