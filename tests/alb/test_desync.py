"""HTTP framing as the load balancer's desync mitigation reads it (A16), and absolute-form targets (A17).

The classifier's public test cases (tests/data/http_desync/cases.json, from aws/http-desync-guardian,
Apache License 2.0: see that folder's README) are sent, each with a Host header and then a second
request on the same connection, to a real `serve-alb` on loopback, and judged by the default
"defensive" mode: compliant and acceptable requests are served and the connection goes on;
an ambiguous one is served and its connection closed (the second request never runs); a severe
one gets 400 and never reaches the function.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from fnkit import alb
from fnkit.alb._desync import body_framing, decide, judge_head

CASES = json.loads((Path(__file__).parent.parent / "data" / "http_desync" / "cases.json").read_text("utf-8"))
STATUS = re.compile(rb"HTTP/1\.1 (\d{3}) [^\r\n]*\r\n")


class Seen:
    """What reached the function, in order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[dict[str, Any]] = []

    def __call__(self, event, context):
        with self.lock:
            self.events.append(event)
        return {"statusCode": 200, "body": "ok"}

    def take(self) -> list[dict[str, Any]]:
        with self.lock:
            taken, self.events = self.events, []
        return taken


@pytest.fixture(scope="module")
def seen():
    return Seen()


@pytest.fixture(scope="module")
def server(seen):
    with alb.serve(seen, isolation="thread") as running:
        yield running


def exchange(server, data: bytes, timeout: float = 5.0) -> tuple[bytes, bool]:
    """Send `data` on one connection; (everything that came back, whether the server closed it)."""
    with socket.create_connection((server.host, server.port), timeout=timeout) as sock:
        sock.sendall(data)
        reply = b""
        try:
            while chunk := sock.recv(65536):
                reply += chunk
        except TimeoutError:
            return reply, False
        except ConnectionResetError:  # the server closed with bytes of ours unread: closed all the same
            pass
    return reply, True


def case_request(case: dict[str, Any]) -> bytes:
    """The case's request as the classifier's runner builds it, with a Host header, its body, then a second one."""
    head = f"{case['method']} {case['uri']} {case['version']}\r\nHost: loopback\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in case["headers"]) + "\r\n"
    raw = head.encode("utf-8")
    framing, length = body_framing(judge_head(raw))
    body = b"0\r\n\r\n" if framing == "chunked" else b"x" * length if framing == "length" else b""
    return raw + body + b"GET /second HTTP/1.1\r\nHost: loopback\r\nConnection: close\r\n\r\n"


def observed(server, seen, case: dict[str, Any]) -> dict[str, Any]:
    reply, closed = exchange(server, case_request(case))
    events = seen.take()
    return {
        "statuses": [int(m.group(1)) for m in STATUS.finditer(reply)],
        "first_invoked": any(e["path"] != "/second" for e in events),
        "second_served": any(e["path"] == "/second" for e in events),
        "closed": closed,
    }


def matches(tier: str, seen: dict[str, Any]) -> bool:
    """Did the server treat the request as the defensive mode treats a request of `tier`?"""
    if tier in ("compliant", "acceptable"):  # forwarded (or refused by another rule, such as 413), then served on
        return bool(seen["second_served"] and seen["statuses"][:1] != [400])
    if tier == "ambiguous":
        return bool(
            seen["first_invoked"] and not seen["second_served"] and seen["closed"] and len(seen["statuses"]) == 1
        )
    return bool(seen["statuses"] == [400] and not (seen["first_invoked"] or seen["second_served"]) and seen["closed"])


def test_the_table_holds_the_classifiers_158_cases_in_four_tiers():
    assert len(CASES) == 158
    assert {c["tier"] for c in CASES} == {"compliant", "acceptable", "ambiguous", "severe"}


def test_the_classifiers_cases_match_the_defensive_mode(server, seen):
    results = [(case, observed(server, seen, case)) for case in CASES]
    missed = [(c["file"], c["name"], c["tier"], o) for c, o in results if not matches(c["tier"], o)]
    # never: an ambiguous request whose connection stays open, a severe one that reaches the function
    assert not [m for m in missed if m[2] == "ambiguous" and m[3]["second_served"]], missed
    assert not [m for m in missed if m[2] == "severe" and m[3]["first_invoked"]], missed
    assert len(CASES) - len(missed) >= 155, missed


def test_content_length_beside_chunked_is_read_chunked_answered_and_the_connection_closed(server, seen):
    smuggled = b"GET /smuggled HTTP/1.1\r\nHost: loopback\r\n\r\n"
    request = (
        b"POST /upload HTTP/1.1\r\nHost: loopback\r\nContent-Type: text/plain\r\nContent-Length: 60\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + smuggled
    )
    reply, closed = exchange(server, request)
    events = seen.take()
    assert [e["path"] for e in events] == ["/upload"]  # the bytes after the body never ran as a request
    assert events[0]["body"] == "hello" and "content-length" not in events[0]["headers"]
    assert closed and reply.count(b"HTTP/1.1 ") == 1 and b"connection: close" in reply


def test_a_severe_request_gets_400_before_the_function(server, seen):
    twice = b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"
    reply, closed = exchange(server, twice + b"hello!GET / HTTP/1.1\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n") and closed and seen.take() == []
    assert server.records[-1]["rule"] == "A16" and server.records[-1]["invoked"] is False


def test_absolute_form_is_read_as_its_path_at_its_host(server, seen):
    reply, _ = exchange(server, b"GET http://evil.test/p?q=1 HTTP/1.1\r\nHost: loopback\r\nConnection: close\r\n\r\n")
    (event,) = seen.take()
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n")
    assert event["path"] == "/p" and event["queryStringParameters"] == {"q": "1"}
    assert event["headers"]["host"] == "evil.test"


@pytest.mark.parametrize(
    "head",
    [
        b"GET /\xd1\x81\xd1\x82 HTTP/1.1\r\nHost: a\r\n\r\n",  # a non-ASCII target
        b"GET  HTTP/1.1\r\nHost: a\r\n\r\n",  # an empty target
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nx-my-header : v\r\nContent-Length: 0\r\n\r\n",  # a space in a name
    ],
)
def test_compliant_and_acceptable_requests_are_served_not_refused(server, seen, head):
    reply, _ = exchange(server, head + b"GET /second HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    assert [int(m.group(1)) for m in STATUS.finditer(reply)] == [200, 200]
    assert [e["path"] for e in seen.take()][-1] == "/second"


def test_strictest_mode_refuses_what_is_not_compliant_and_monitor_forwards_it(seen):
    acceptable = b"GET / HTTP/1.1\r\nHost: a\r\nx-my-header : v\r\nConnection: close\r\n\r\n"
    with alb.serve(seen, isolation="thread", desync_mode="strictest") as strict:
        assert exchange(strict, acceptable)[0].startswith(b"HTTP/1.1 400 ")
    with alb.serve(seen, isolation="thread", desync_mode="monitor") as monitor:
        ambiguous = b"GET / HTTP/1.1\r\nHost: a\r\nTransfer_Encoding: chunked\r\n\r\n"
        ambiguous += b"GET /second HTTP/1.1\r\nHost: a\r\n\r\n"
        reply, _ = exchange(monitor, ambiguous + b"GET /third HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        assert reply.count(b"HTTP/1.1 200 OK") == 3
    seen.take()
    with pytest.raises(ValueError, match="desync_mode"):
        alb.serve(seen, desync_mode="lenient")


@pytest.mark.parametrize(
    ("raw", "tier"),
    [
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", "ambiguous"),
        (b"POST / HTTP/1.1\r\nTransfer_Encoding: chunked\r\n\r\n", "ambiguous"),
        (b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", "ambiguous"),
        (b"GET / HTTP/1.1\r\nContent-Length: 3\r\n\r\n", "ambiguous"),
        (b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", "severe"),
        (b"POST / HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", "severe"),
        (b"POST / HTTP/1.1\r\nX: a\n b\r\nContent-Length: 3\r\n\r\n", "severe"),
        (b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "compliant"),
    ],
)
def test_the_tier_of_a_head(raw, tier):
    assert judge_head(raw).tier == tier


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        # two different lengths are severe whatever the version says: the version's own doubt (ambiguous) must
        # not hide them (found by the fuzz test: an HTTP/0.9 line with Content-Length 5 and 0 was only ambiguous)
        (b"GET /\r\nContent-Length: 5\r\nContent-Length: 0\r\n\r\n", "different values [0, 5]"),
        (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "[1, 2]"),
        (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", "chunked more than once"),
    ],
)
def test_an_old_version_does_not_hide_a_severe_framing(raw, why):
    judged = judge_head(raw)
    close, refused = decide(judged)
    assert judged.tier == "severe" and why in judged.why
    assert close and refused is not None and refused.status == 400


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"GET /\r\nContent-Length: 5\r\n\r\n", "Content-Length in an HTTP/0.9 request"),
        (
            b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
            "Transfer-Encoding in an HTTP/1.0",
        ),
    ],
)
def test_an_old_version_with_framing_headers_is_ambiguous_for_its_version(raw, why):
    judged = judge_head(raw)
    assert judged.tier == "ambiguous" and why in judged.why
