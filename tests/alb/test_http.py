"""Pure HTTP conversions: request → event, the checks before invoking, response → wire."""

from __future__ import annotations

import base64

import pytest

from fnkit.alb import _http
from fnkit.alb._http import (
    encode_query,
    error_page,
    is_strict_base64,
    reason_phrase,
    refusal_for,
    request_to_event,
    response_to_http,
    split_query,
)


def test_request_to_event_keeps_raw_path_and_query_from_bytes():
    e = request_to_event(
        "get",
        b"/a%2Fb/c d",
        b"x=%41&x=B&y",
        [(b"Host", b"example.com"), (b"X-Y", b"1")],
        b"",
        trace="Root=1-00000000-000000000000000000000000",
    )
    assert e["httpMethod"] == "GET" and e["path"] == "/a%2Fb/c d"
    assert e["queryStringParameters"] == {"x": "B", "y": ""}
    assert e["headers"]["host"] == "example.com" and e["headers"]["x-y"] == "1"
    assert e["headers"]["x-provider-trace-id"] == "Root=1-00000000-000000000000000000000000"


def test_request_to_event_multi_value_keeps_order():
    e = request_to_event("GET", "/", "k=1&k=2&k=1", [("A", "1"), ("a", "2")], b"", multi_value=True)
    assert e["multiValueQueryStringParameters"] == {"k": ["1", "2", "1"]}
    assert e["multiValueHeaders"]["a"] == ["1", "2"]


def test_load_balancer_headers_are_added_and_owned():
    e = request_to_event(
        "GET",
        "/",
        "",
        [
            ("X-Forwarded-For", "10.0.0.1"),
            ("X-Forwarded-Proto", "https"),
            ("X-Amzn-Trace-Id", "Root=1-11111111-222222222222222222222222"),
        ],
        b"",
        client_ip="192.0.2.9",
        port=8443,
        proto="http",
    )
    h = e["headers"]
    assert h["x-forwarded-for"] == "10.0.0.1, 192.0.2.9"  # the client is appended
    assert h["x-forwarded-proto"] == "http" and h["x-forwarded-port"] == "8443"  # replaced
    assert h["x-amzn-trace-id"] == "Root=1-11111111-222222222222222222222222"  # kept: no second trace header
    assert "x-provider-trace-id" not in h


def test_fresh_trace_ids_differ():
    a = request_to_event("GET", "/", "", [], b"")["headers"]["x-provider-trace-id"]
    b = request_to_event("GET", "/", "", [], b"")["headers"]["x-provider-trace-id"]
    assert a != b


def test_split_and_encode_query():
    assert split_query("a=1&&b&=c&d=e=f") == [("a", "1"), ("b", ""), ("", "c"), ("d", "e=f")]
    assert encode_query([("a b", "c&d"), ("é", "/")]) == "a%20b=c%26d&%C3%A9=%2F"


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("", True),
        ("aGk=", True),
        ("aGk", False),
        ("aGk==", False),
        ("a Gk=", False),
        ("aG\nk=", False),
        ("YWJj", True),
        ("YQ==", True),
        ("Y===", False),
        ("-_==", False),
        ("=YWJ", False),
    ],
)
def test_strict_base64(text, ok):
    assert is_strict_base64(text) is ok


def test_refusals_before_invoking():
    def status(*request):
        found = refusal_for(*request)
        return None if found is None else (found.status, found.rule)

    assert status("GET", [("Upgrade", "WebSocket"), ("Connection", "Upgrade")], 0) == (400, "A1")
    assert status("POST", [], _http.MAX_REQUEST_BODY) is None
    assert status("POST", [], _http.MAX_REQUEST_BODY + 1) == (413, "A1")
    assert status("PROPFIND", [], 0) == (405, "A14")
    assert refusal_for("GET", [("upgrade", "h2c")], 0) is None


def test_error_page_is_html_with_its_length():
    headers, body = error_page(502)
    assert b"502 Bad Gateway" in body and ("content-length", str(len(body))) in headers


def test_reason_phrases():
    assert reason_phrase(200) == "OK" and reason_phrase(404) == "Not Found"
    assert reason_phrase(599) == ""


def test_response_to_http_drops_hop_by_hop_and_recomputes_length():
    parts = response_to_http(
        {
            "statusCode": 200,
            "body": "hello",
            "headers": {"Connection": "keep-alive", "Transfer-Encoding": "chunked", "Content-Length": "99", "X-A": "1"},
        }
    )
    assert parts.headers == [("X-A", "1"), ("content-length", "5")]
    assert parts.body == b"hello" and parts.reason == "OK" and "A9" in parts.rules and "A7" in parts.rules


def test_response_to_http_base64_description_and_head():
    response = {
        "statusCode": 201,
        "statusDescription": "201 Created Nicely",
        "isBase64Encoded": True,
        "body": base64.b64encode(b"\x00\x01\x02").decode(),
    }
    parts = response_to_http(response)
    assert (parts.status, parts.reason, parts.body) == (201, "Created Nicely", b"\x00\x01\x02")
    head = response_to_http(response, method="HEAD")
    assert head.body == b"" and ("content-length", "3") in head.headers and "A10" in head.rules


def test_response_to_http_no_body_for_204():
    parts = response_to_http({"statusCode": 204, "body": "ignored"})
    assert parts.body == b"" and not any(n == "content-length" for n, _ in parts.headers) and "A13" in parts.rules


def test_multi_value_headers_become_repeated_pairs():
    parts = response_to_http(
        {"statusCode": 200, "multiValueHeaders": {"Set-Cookie": ["a=1", "b=2"]}, "headers": {"X-Ignored": "1"}},
        multi_value=True,
    )
    assert parts.headers == [("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ("content-length", "0")]
