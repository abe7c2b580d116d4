"""The access-log importer reads every line as the field-by-field reader does, however the line is read.

Most lines are taken by one pattern and typed at once (their events made when first read); any
line that pattern does not take goes to `parse_line`. These tests hold the importer to the
documented reading on lines drawn to reach every corner: escaped quotes, a stray quote, IPv6
hosts, missing and extra fields, `-` everywhere, redirects, WebSocket entries, carriage returns.
"""

from __future__ import annotations

import gzip
import pickle
import random
import zlib
from pathlib import Path
from typing import Any

import pytest

from fnkit import alb
from fnkit.alb._access_log import LoggedRequest, _dialect, forwarded, parse_line, parse_request
from fnkit.alb._http import DEFAULT_CLIENT_IP, request_to_event, seeded_trace_id
from tests.night import write_night

TG = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/shop-fn/73e2d6bc24d8a067"

CHOICES: dict[str, tuple[str, ...]] = {
    "kind": ("https", "h2", "http", "ws", "wss", "grpcs", "HTTP"),
    "time": (
        "2026-01-05T10:00:01.123456Z",
        "2026-01-05T10:00:01Z",
        "\uff12\uff10\uff12\uff16-01-05T10:00:01Z",
        "yesterday",
    ),
    "elb": ("app/shop-lb/50dc6c495c0c9188", "-", 'app/x"y'),
    "client": ("203.0.113.24:52311", "-", "[2001:db8::2]:443", "203.0.113.24", "a:1:x", "h:" + "9" * 20),
    "target": ("-", "10.0.0.5:80"),
    "times": ("0.001 0.045 0.000", "-1 -1 -1", "1e3 0 0", "-1.0 0 0", "0.5 -2 0", "007.50 0 0"),
    "status": ("200 200", "502 -", "- -", "2OO 200", "460 -", "200 \u0662\u0660\u0660"),
    "bytes": ("312 1290", "0 0", "-1 5", "1" * 20 + " 1"),
    "request": (
        '"GET https://shop.example.com:443/api/items?page=2&sort=price%20asc HTTP/1.1"',
        '"GET http://shop.example.com:8080/x HTTP/1.1"',
        '"GET https://[2001:db8::1]:8443/p?a=1&a=2&b HTTP/2.0"',
        '"GET https://shop.example.com?x=1 HTTP/1.1"',
        '"GET wss://shop.example.com:443/live HTTP/1.1"',
        '"POST https://shop.example.com:443/api/orders HTTP/1.1"',
        '"GET https://shop.example.com/a??b=c HTTP/1.1"',
        '"GET https://shop.example.com/a#frag HTTP/1.1"',
        '"GET https://shop.example.com/a b HTTP/1.1"',
        '"- https://shop.example.com:443- -"',
        '"GET https://shop.example.com/a"b HTTP/1.1"',
        '"GET https://shop.example.com:80x/p HTTP/1.1"',
        '"GET https://shop.example.com/\\"q\\" HTTP/1.1"',
        '"get https://shop.example.com/ HTTP/1.1"',
        '"GET shop.example.com/x HTTP/1.1"',
        '"GET https://shop.example.com/x "',
        "GET",
    ),
    "agent": ('"curl/8.11.1"', '"-"', '""', '"say \\"hi\\""', '"Mozilla/5.0 (X11; Linux x86_64)"', "curl"),
    "tls": ("ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2", "- -"),
    "group": (TG, "-", "arn:provider:elasticloadbalancing:eu-west-1:1:targetgroup/fn/1"),
    "trace": ('"Root=1-6960f8a1-0123456789abcdef01234567"', '"-"', '""'),
    "tail": (
        '"shop.example.com" "-" 1 2026-01-05T10:00:01.077000Z "forward" "-" "-" "-" "-" "-" "-" TID_1a2b3c',
        '"shop.example.com" "-" 0 2026-01-05T10:00:01.077000Z "redirect" "https://x/" "-" "-" "-" "-" "-" -',
        '"-" "-" - - "waf,forward" "-" "LambdaUnhandled" "10.0.0.5:80" "502" "Ambiguous" "x" TID_9',
        '"-" "-" - - "fixed-response" "-" "-" "-" "-" "-" "-" -',
        '"-" "-" - - "-" "-" "-" "-" "-" "-" "-" -',
        '"-" "-" 1 2026-01-05T10:00:01Z "forward" "-" "-" "-" "-" "-" "-" TID_1 "new-field" 7',
        '"-" "-" 1 2026-01-05T10:00:01Z "forward" "-" "-" "-" "-" "-" "-"',
        '"shop.example.com" "-" 5',
        "",
    ),
    "end": ("", "", "", "\r", " ", "  "),
}


def drawn_lines(n: int, seed: int) -> list[str]:
    """n entries, each field drawn from CHOICES (mostly the first, well-formed value)."""
    rng = random.Random(seed)

    def pick(name: str) -> str:
        values = CHOICES[name]
        return values[0] if rng.random() < 0.6 else rng.choice(values)

    lines = []
    for _ in range(n):
        if rng.random() < 0.01:
            lines.append(rng.choice(["", "  ", "\t"]))
            continue
        fields = [pick(k) for k in ("kind", "time", "elb", "client", "target", "times", "status", "bytes")]
        fields += [pick(k) for k in ("request", "agent", "tls", "group", "trace")]
        tail = pick("tail")
        lines.append(" ".join(fields) + (" " + tail if tail else "") + pick("end"))
    return lines


def reference_event(log: dict[str, Any], multi_value: bool, seed: int) -> Any:
    """The event as request_to_event makes it for the logged request (the field-by-field reading's event)."""
    request = parse_request(log["request"], log["type"])
    if request is None:
        return None
    default = {"http": 80, "ws": 80, "https": 443, "wss": 443, "h2": 443, "grpcs": 443}.get(request.scheme)
    headers = [("host", request.host if request.port == default else f"{request.host}:{request.port}")]
    if log["user_agent"] is not None:
        headers.append(("user-agent", log["user_agent"]))
    if log["type"] in ("ws", "wss") or request.scheme in ("ws", "wss"):
        headers += [("connection", "Upgrade"), ("upgrade", "websocket")]
    client = log["client:port"]
    proto = {"http": "http", "ws": "http", "https": "https", "wss": "https"}
    return request_to_event(
        request.method,
        request.path,
        request.query,
        headers,
        b"",
        multi_value,
        target_group_arn=log["target_group_arn"],
        dialect=_dialect(log["target_group_arn"]),
        trace=log["trace_id"] or seeded_trace_id(seed),
        client_ip=client[0] if client else DEFAULT_CLIENT_IP,
        port=request.port,
        proto=proto.get(request.scheme, "https" if request.port == 443 else "http"),
        host=request.host,
    )


def reference(line: str, multi_value: bool) -> tuple[Any, ...]:
    """What the field-by-field reading makes of one line: (log, event), or the code of its issue (and sentence)."""
    line = line.rstrip("\r")
    if not line.strip():
        return ("blank",)
    try:
        log = parse_line(line)
        event = reference_event(log, multi_value, zlib.crc32(line.encode("utf-8")))
    except ValueError as exc:
        return ("format", str(exc))
    if event is None:
        return ("incomplete",)
    if not forwarded(log):
        return ("not-forwarded",)
    return (log, event)


def imported(source: Any, multi_value: bool) -> list[tuple[Any, ...]]:
    """What the importer makes of each line of `source`, in line order, in the shape `reference` gives."""
    stream = alb.events_from_access_log(source, multi_value=multi_value)
    got: dict[int, tuple[Any, ...]] = {}
    for entry in stream.entries():
        if isinstance(entry, LoggedRequest):
            got[int(entry.where.rpartition(":")[2])] = (entry.log, entry.event)
    for issue in stream.issues:
        if "cannot be read past line" in issue.message:
            continue  # the cut of a gzip file: no line of its own
        number = int(issue.path.rpartition(":")[2])
        got[number] = (issue.code, issue.message) if issue.code == "format" else (issue.code,)
    assert stream.read == len(got)
    return [got[n] for n in sorted(got)]


@pytest.mark.parametrize("multi_value", [False, True])
def test_drawn_entries_read_as_the_field_by_field_reader_reads_them(multi_value):
    lines = drawn_lines(3_000, seed=37)
    expected = [reference(line, multi_value) for line in lines]
    assert imported(lines, multi_value) == expected
    kinds = {e[0] if isinstance(e[0], str) else "request" for e in expected}
    assert kinds == {"request", "format", "blank", "incomplete", "not-forwarded"}  # every way a line can go


def test_a_night_of_gzip_files_reads_line_for_line_as_the_field_by_field_reader(tmp_path):
    night = write_night(tmp_path, requests=1_500, files=3, messages=10, cut=False)
    for path in sorted(night.logs.iterdir()):
        lines = gzip.decompress(path.read_bytes()).decode("utf-8").split("\n")
        if lines[-1] == "":
            lines.pop()
        assert imported(path, False) == [reference(line, False) for line in lines]


def test_lines_cut_across_reads_carriage_returns_and_a_bad_byte_keep_their_numbers(tmp_path, monkeypatch):
    import fnkit._import

    monkeypatch.setattr(fnkit._import, "_BLOCK_BYTES", 257)  # lines split between reads, many blocks
    lines = drawn_lines(400, seed=5)
    raw = [line.encode("utf-8") for line in lines]
    raw[17] = raw[17].replace(b"curl", b"caf\xe9")  # not UTF-8: reported at its line, the others kept
    path = tmp_path / "access.log.gz"
    path.write_bytes(gzip.compress(b"\r\n".join(raw)))  # CRLF, and no newline after the last line
    got = imported(path, False)
    assert len(got) == 400
    assert got[17] == ("format",) or got[17][0] == "format"
    stream = alb.events_from_access_log(path)
    list(stream)
    assert any(i.path == f"{path}:18" and "not UTF-8" in i.message for i in stream.issues)
    others = [n for n in range(400) if n != 17]
    assert [got[n] for n in others] == [reference(lines[n], False) for n in others]


def test_a_request_read_at_once_pickles_and_compares_as_one_read_field_by_field():
    line = " ".join(values[0] for name, values in CHOICES.items() if name != "end")  # every field well-formed
    (fast,) = list(alb.events_from_access_log([line]))
    assert fast._event is None  # taken at once: the event is made when first read
    log, event = reference(line, False)
    slow = LoggedRequest(event, log, "<lines>:1")
    copy = pickle.loads(pickle.dumps(fast))
    assert copy == fast == slow and copy.event == event and copy.log == log
    assert repr(fast) == repr(slow)


def test_a_cut_gzip_is_read_up_to_the_cut_and_the_cut_located(tmp_path):
    lines = drawn_lines(2_000, seed=9)
    data = gzip.compress(("\n".join(lines) + "\n").encode("utf-8"))
    path = Path(tmp_path) / "cut.log.gz"
    path.write_bytes(data[: len(data) * 2 // 3])
    stream = alb.events_from_access_log(path)
    list(stream.entries())
    (cut,) = [i for i in stream.issues if "cannot be read past line" in i.message]
    last = int(cut.message.split("past line ")[1].split(":")[0])
    assert cut.path == f"{path}:{last + 1}" and 0 < last < 2_000
    assert stream.read == last  # every line before the cut read, the cut line reported
    assert imported(path, False)[:last] == [reference(line, False) for line in lines[:last]]
