"""The HTTP front end, over loopback with real clients (httpx and curl): no mocks."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import httpx
import pytest

from fnkit import Raw, alb

ONE_MB = alb.MAX_REQUEST_BODY
JUNK = {  # every response the load balancer turns into a 502, and the rule that decides it
    "/junk/set": ({1, 2}, "A6"),
    "/junk/raw": (Raw("{oops"), "A6"),
    "/junk/not-object": ([1], "A6"),
    "/junk/status-string": ({"statusCode": "200"}, "A6"),
    "/junk/status-bool": ({"statusCode": True}, "A6"),
    "/junk/body-null": ({"statusCode": 200, "body": None}, "A6"),
    "/junk/description": ({"statusCode": 200, "statusDescription": 200}, "A6"),
    "/junk/b64-flag": ({"statusCode": 200, "isBase64Encoded": "yes"}, "A6"),
    "/junk/base64": ({"statusCode": 200, "isBase64Encoded": True, "body": "%%%"}, "A6"),
    "/junk/header-null": ({"statusCode": 200, "headers": None}, "A6"),
    "/junk/header-value": ({"statusCode": 200, "headers": {"x-n": 5}}, "A6"),
    "/junk/big": ({"statusCode": 200, "body": "x" * ONE_MB}, "A5"),
    "/junk/status-range": ({"statusCode": 700}, "A12"),
    "/junk/injection": ({"statusCode": 200, "headers": {"x-a": "1\r\nx-b: 2"}}, "A13"),
}

REASONS = {  # statusDescription on the wire (A9), its absence, and what a status line cannot carry (A13)
    "/reason/totally": {"statusCode": 200, "statusDescription": "200 Totally OK", "body": "fine"},
    "/reason/absent": {"statusCode": 200, "body": "fine"},
    "/reason/absent-teapot": {"statusCode": 418},
    "/reason/absent-unknown": {"statusCode": 299},
    "/reason/no-code": {"statusCode": 201, "statusDescription": "Made It"},
    "/reason/other-code": {"statusCode": 200, "statusDescription": "404 Not Found"},
    "/reason/latin": {"statusCode": 200, "statusDescription": "200 Très bien"},
    "/reason/wide": {"statusCode": 200, "statusDescription": "200 良い"},
    "/reason/empty": {"statusCode": 204, "statusDescription": ""},
    "/reason/injection": {"statusCode": 200, "statusDescription": "200 OK\r\nx-injected: 1"},
}


def handler(event, context):
    """One handler for every test: what it does depends on the path."""
    path = event["path"]
    multi = "multiValueHeaders" in event
    if path == "/echo":
        return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": json.dumps(event)}
    if path == "/crash":
        raise RuntimeError("boom")
    if path == "/hang":
        time.sleep(3)
    if path == "/pause":
        time.sleep(0.3)
    if path == "/size":
        body = event["body"]
        size = len(base64.b64decode(body)) if event["isBase64Encoded"] else len(body.encode())
        return {"statusCode": 200, "body": str(size)}
    if path == "/binary":  # the request body back, as base64
        body = event["body"] if event["isBase64Encoded"] else base64.b64encode(event["body"].encode()).decode()
        return {
            "statusCode": 200,
            "isBase64Encoded": True,
            "body": body,
            "headers": {"content-type": "application/octet-stream"},
            "multiValueHeaders": {"content-type": ["application/octet-stream"]},
        }
    if path == "/cookies":
        if multi:
            return {"statusCode": 200, "multiValueHeaders": {"Set-Cookie": ["a=1", "b=2"], "X-Many": ["x", "y"]}}
        return {"statusCode": 200, "headers": {"Set-Cookie": "a=1", "set-cookie": "b=2"}}
    if path == "/hop":
        return {
            "statusCode": 200,
            "body": "abc",
            "headers": {"Connection": "close", "Content-Length": "99", "Keep-Alive": "timeout=1", "X-Kept": "yes"},
        }
    if path == "/described":
        return {"statusCode": 418, "statusDescription": "418 Short And Stout", "body": "tea"}
    if path in REASONS:
        return REASONS[path]
    if path in JUNK:
        return JUNK[path][0]
    return {"statusCode": 200, "headers": {"content-type": "text/plain"}, "body": "twelve bytes"}


@pytest.fixture(scope="module")
def server():
    with alb.serve(handler, timeout_s=1.0) as running:
        yield running


@pytest.fixture(scope="module")
def multi_server():
    with alb.serve(handler, multi_value=True) as running:
        yield running


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.url, timeout=10) as c:
        yield c


def last_row(server, path):
    return [r for r in server.records if r["path"] == path][-1]


# --- requests become events --------------------------------------------------------------------------------


def test_binds_loopback_and_says_where(server):
    assert server.host == "127.0.0.1" and server.url == f"http://127.0.0.1:{server.port}" and server.port > 0


def test_repeated_query_keys_and_headers_single_value(client):
    r = client.get("/echo?a=1&a=2&b=c%20d&e=f+g", headers=[("X-Tag", "one"), ("x-tag", "two")])
    event = r.json()
    assert event["queryStringParameters"] == {"a": "2", "b": "c%20d", "e": "f+g"}  # raw, last value wins
    assert event["headers"]["x-tag"] == "two" and "multiValueHeaders" not in event
    assert all(name == name.lower() for name in event["headers"])
    assert event["headers"]["x-forwarded-for"] == "127.0.0.1" and event["headers"]["x-forwarded-proto"] == "http"
    assert event["headers"]["x-forwarded-port"] == str(client.base_url.port)
    assert alb.correlation_ids(event) and event["body"] == "" and event["isBase64Encoded"] is False
    assert alb.validate_event(event).ok


def test_repeated_query_keys_and_headers_multi_value(multi_server):
    r = httpx.get(multi_server.url + "/echo?a=1&a=2&b", headers=[("X-Tag", "one"), ("x-tag", "two")])
    event = r.json()
    assert event["multiValueQueryStringParameters"] == {"a": ["1", "2"], "b": [""]}
    assert event["multiValueHeaders"]["x-tag"] == ["one", "two"]
    assert "headers" not in event and "queryStringParameters" not in event
    assert alb.validate_event(event, multi_value=True).ok


def test_no_query_is_an_empty_map(client):
    assert client.get("/echo").json()["queryStringParameters"] == {}


def test_text_body_by_content_type(client):
    event = client.post("/echo", content='{"a": "é"}'.encode(), headers={"content-type": "application/json"}).json()
    assert event["body"] == '{"a": "é"}' and event["isBase64Encoded"] is False
    event = client.post(
        "/echo", content=b"abc", headers={"content-type": "text/plain", "content-encoding": "gzip"}
    ).json()
    assert event["isBase64Encoded"] is True and base64.b64decode(event["body"]) == b"abc"


@pytest.mark.parametrize("server_name", ["server", "multi_server"])
def test_binary_bodies_both_ways(request, server_name):
    running = request.getfixturevalue(server_name)
    data = bytes(range(256)) * 40
    r = httpx.post(running.url + "/binary", content=data, headers={"content-type": "application/octet-stream"})
    assert r.status_code == 200 and r.content == data
    assert r.headers["content-type"] == "application/octet-stream" and r.headers["content-length"] == str(len(data))


# --- responses become HTTP ---------------------------------------------------------------------------------


def test_cookies_single_value_keys_differing_in_case(client):
    r = client.get("/cookies")
    assert r.headers.get_list("set-cookie") == ["a=1", "b=2"]


def test_cookies_multi_value_one_key_with_a_list(multi_server):
    r = httpx.get(multi_server.url + "/cookies")
    assert r.headers.get_list("set-cookie") == ["a=1", "b=2"] and r.headers.get_list("x-many") == ["x", "y"]


def test_inactive_header_field_is_ignored(multi_server):
    r = httpx.get(multi_server.url + "/other")  # the handler answers with `headers`: ignored with multi-value on
    assert "content-type" not in r.headers and r.text == "twelve bytes"


def test_hop_by_hop_dropped_and_length_recomputed(client):
    r = client.get("/hop")
    assert r.text == "abc" and r.headers["content-length"] == "3" and r.headers["x-kept"] == "yes"
    assert "keep-alive" not in r.headers


def test_status_description_and_standard_reason(client):
    r = client.get("/described")
    assert r.status_code == 418 and r.text == "tea"
    assert client.get("/plain").reason_phrase == "OK"


def raw_exchange(server, request: bytes, *, responses: int = 1, timeout: float = 10) -> bytes:
    """Send raw bytes over one connection; what came back once `responses` status lines arrived and the rest."""
    with socket.create_connection((server.host, server.port), timeout=timeout) as sock:
        sock.sendall(request)
        reply = b""
        while reply.count(b"HTTP/1.1 ") < responses or not _complete(reply):
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    return reply


def _complete(reply: bytes) -> bool:
    head, sep, body = reply.rpartition(b"HTTP/1.1 ")[2].partition(b"\r\n\r\n")
    if not sep:
        return False
    lengths = [line.split(b":", 1)[1] for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")]
    return len(body) >= int(lengths[0]) if lengths else True


def status_line(server, path: str, method: str = "GET") -> bytes:
    reply = raw_exchange(server, f"{method} {path} HTTP/1.1\r\nHost: loopback\r\n\r\n".encode())
    return reply.split(b"\r\n", 1)[0]


def test_the_status_line_carries_the_functions_reason_phrase(server):
    # A9: what a client reads off the socket, byte for byte
    reply = raw_exchange(server, b"GET /reason/totally HTTP/1.1\r\nHost: loopback\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 200 Totally OK\r\n") and reply.endswith(b"\r\n\r\nfine")
    assert b"\r\ndate: " in reply  # the front end dates its answers, as the load balancer does
    assert status_line(server, "/reason/totally") == b"HTTP/1.1 200 Totally OK"
    assert status_line(server, "/reason/no-code") == b"HTTP/1.1 201 Made It"
    assert status_line(server, "/reason/latin") == "HTTP/1.1 200 Très bien".encode("latin-1")
    assert status_line(server, "/reason/wide") == "HTTP/1.1 200 良い".encode()
    assert last_row(server, "/reason/totally")["reason"] == "Totally OK"


def test_without_a_status_description_the_standard_phrase(server):
    assert status_line(server, "/reason/absent") == b"HTTP/1.1 200 OK"
    assert status_line(server, "/reason/absent-teapot") == b"HTTP/1.1 418 I'm a Teapot"
    assert status_line(server, "/reason/absent-unknown") == b"HTTP/1.1 299 "  # a code with no standard phrase
    assert status_line(server, "/nothing-special") == b"HTTP/1.1 200 OK"


def test_the_status_line_is_the_kits_own_outcome(server):
    # the front end and alb.outcome agree on every response: status and reason alike
    for path, response in REASONS.items():
        expected = alb.outcome(alb.build_event("GET", path), response)
        line = status_line(server, path)
        try:  # Latin-1 on the wire when the phrase fits it, else UTF-8
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            text = line.decode("latin-1")
        assert text == f"HTTP/1.1 {expected.status} {expected.reason}", path
        assert last_row(server, path)["reason"] == expected.reason, path


def test_a_reason_phrase_with_a_line_break_is_a_502_not_a_second_header(server):
    reply = raw_exchange(server, b"GET /reason/injection HTTP/1.1\r\nHost: loopback\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 502 Bad Gateway\r\n") and b"x-injected" not in reply
    assert last_row(server, "/reason/injection")["rule"] == "A13"


def test_pipelined_requests_are_answered_in_order(server):
    request = b"GET /reason/totally HTTP/1.1\r\nHost: a\r\n\r\nGET /described HTTP/1.1\r\nHost: a\r\n\r\n"
    reply = raw_exchange(server, request, responses=2)
    assert reply.startswith(b"HTTP/1.1 200 Totally OK\r\n") and b"HTTP/1.1 418 Short And Stout\r\n" in reply
    assert reply.endswith(b"tea")


def test_a_client_waiting_for_100_continue_gets_it_or_its_refusal(server):
    head = b"POST /size HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n"
    with socket.create_connection((server.host, server.port), timeout=10) as sock:
        sock.sendall(head)
        assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue\r\n")
        sock.sendall(b"abc")
        reply = sock.recv(1000)
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n") and reply.endswith(b"\r\n\r\n3")
    too_big = f"POST /size HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: {ONE_MB + 1}\r\n\r\n"
    reply = raw_exchange(server, too_big.encode())  # no body sent: answered, then the connection closes
    assert reply.startswith(b"HTTP/1.1 413 Request Entity Too Large\r\n") and b"connection: close" in reply.lower()


def test_a_malformed_request_gets_400_and_the_server_goes_on(server, client):
    reply = raw_exchange(server, b"THIS IS NOT HTTP\x00\xff\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n") and b"<h1>400 Bad Request</h1>" in reply

    def head(size):
        return b"GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + b"b" * size + b"\r\n\r\n"

    assert raw_exchange(server, head(20_000)).startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
    assert raw_exchange(server, head(12_000)).startswith(b"HTTP/1.1 200 OK\r\n")
    assert client.get("/fine").status_code == 200


def test_a_refused_body_is_read_and_dropped_and_the_connection_goes_on(server):
    body = b"z" * (ONE_MB + 1)
    request = f"POST /size HTTP/1.1\r\nHost: a\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
    reply = raw_exchange(server, request + b"GET /reason/totally HTTP/1.1\r\nHost: a\r\n\r\n", responses=2)
    assert reply.startswith(b"HTTP/1.1 413 Request Entity Too Large\r\n")
    assert b"HTTP/1.1 200 Totally OK\r\n" in reply and reply.endswith(b"fine")


def test_an_idle_keep_alive_connection_is_closed(monkeypatch):
    from fnkit.alb import _connection

    monkeypatch.setattr(_connection, "KEEP_ALIVE_S", 0.2)
    with (
        alb.serve(handler, isolation="none") as running,
        socket.create_connection((running.host, running.port), timeout=10) as sock,
    ):
        sock.sendall(b"GET /reason/totally HTTP/1.1\r\nHost: a\r\n\r\n")
        assert sock.recv(1000).startswith(b"HTTP/1.1 200 Totally OK")
        started = time.perf_counter()
        assert sock.recv(1000) == b""  # closed by the server, not by the 10 s timeout
        assert time.perf_counter() - started < 5


def test_stopping_lets_an_answer_in_flight_finish_then_refuses_connections():
    def slow(event, context):
        time.sleep(0.4)
        return {"statusCode": 200, "statusDescription": "200 Just In Time"}

    running = alb.serve(slow, isolation="thread")
    replies = []
    thread = threading.Thread(target=lambda: replies.append(status_line(running, "/slow")))
    thread.start()
    time.sleep(0.15)
    started = time.perf_counter()
    running.stop()
    thread.join(5)
    assert replies == [b"HTTP/1.1 200 Just In Time"] and time.perf_counter() - started < 2
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((running.host, running.port), timeout=2)


def test_a_hung_answer_does_not_hold_up_stopping():
    def hang(event, context):
        time.sleep(3)

    running = alb.serve(hang, isolation="thread")
    replies = []
    thread = threading.Thread(
        target=lambda: replies.append(raw_exchange(running, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"))
    )
    thread.start()
    time.sleep(0.15)
    started = time.perf_counter()
    running.stop()
    assert time.perf_counter() - started < 2.5  # the grace period (1 s), not the handler's 3 s
    thread.join(5)
    assert replies == [b""]  # no answer: the connection was closed


def test_a_failure_of_fnkit_itself_is_a_logged_502(monkeypatch, caplog):
    from fnkit.alb import _connection

    def broken(*args):
        raise KeyError("a bug of fnkit's")

    monkeypatch.setattr(_connection, "answered_by_function", broken)
    with alb.serve(handler, isolation="none") as running:
        assert status_line(running, "/fine") == b"HTTP/1.1 502 Bad Gateway"
        assert status_line(running, "/x", method="BREW") == b"HTTP/1.1 405 Method Not Allowed"  # serving goes on
        row = last_row(running, "/fine")
    assert "KeyError" in row["explanation"] and "a bug of fnkit's" in row["explanation"]
    logged = [r for r in caplog.records if r.name == "fnkit.alb.serve"]
    assert logged and "GET /fine" in logged[0].getMessage() and logged[0].exc_info is not None


def test_a_handler_given_as_an_import_path(tmp_path):
    (tmp_path / "reason_app.py").write_text(
        "def handler(event, context):\n    return {'statusCode': 200, 'statusDescription': '200 From A File'}\n"
    )
    with alb.serve(f"{tmp_path / 'reason_app.py'}:handler") as running:
        assert running.handler_spec == "reason_app:handler" and callable(running.handler)
        assert status_line(running, "/") == b"HTTP/1.1 200 From A File"
    with alb.serve("tests.alb.test_serve:handler", isolation="thread") as running:
        assert running.handler_spec == "tests.alb.test_serve:handler"
        assert status_line(running, "/reason/totally") == b"HTTP/1.1 200 Totally OK"


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("no_such_module_anywhere:handler", "cannot import 'no_such_module_anywhere'"),
        ("tests.alb.test_serve:no_such_function", "has no function 'no_such_function'"),
        ("just-a-name", "give the handler as MODULE:FUNCTION"),
    ],
)
def test_a_wrong_import_path_is_said_plainly(spec, said, capsys):
    with pytest.raises(ValueError, match=said):
        alb.serve(spec)
    with pytest.raises(SystemExit, match=said) as stopped:  # the command line: a message, no traceback
        alb.cli_serve([spec, "--port", "0"])
    assert str(stopped.value).startswith("fnkit: ")


def test_head_gets_headers_without_body(client, server):
    r = client.head("/anything")
    assert r.status_code == 200 and r.content == b"" and r.headers["content-length"] == "12"
    row = last_row(server, "/anything")
    assert (row["method"], row["rule"], row["invoked"]) == ("HEAD", "A10", True)


@pytest.mark.parametrize("path", sorted(JUNK))
def test_every_invalid_response_is_a_502(client, server, path):
    r = client.get(path)
    assert r.status_code == 502 and b"502 Bad Gateway" in r.content
    assert last_row(server, path)["rule"] == JUNK[path][1]


def test_crash_then_a_good_request(client, server):
    assert client.get("/crash").status_code == 502
    assert last_row(server, "/crash")["rule"] == "A5"
    r = client.get("/fine")
    assert r.status_code == 200 and r.text == "twelve bytes"


def test_timeout_is_a_502_and_the_server_stays_responsive(client, server):
    results = {}
    ended: dict[str, float] = {}

    def slow():
        started = time.perf_counter()
        results["hang"] = (httpx.get(server.url + "/hang", timeout=10).status_code, time.perf_counter() - started)
        ended["hang"] = time.perf_counter()

    # two calls at once first, so that two workers are ready: the quick request below must not wait for a worker
    # to start (over a second on a loaded machine), only show that it does not wait for the hung one
    pausing = [threading.Thread(target=lambda: httpx.get(server.url + "/pause", timeout=30)) for _ in range(2)]
    for t in pausing:
        t.start()
    for t in pausing:
        t.join(30)
    thread = threading.Thread(target=slow)
    thread.start()
    time.sleep(0.1)
    assert client.get("/quick").status_code == 200
    quick_ended = time.perf_counter()
    thread.join(5)
    assert quick_ended < ended["hang"]  # answered while the other handler still hung, whatever the load
    status, took = results["hang"]
    assert status == 502 and 0.9 <= took < 2.5  # the 1 s function timeout, not the 3 s sleep
    assert last_row(server, "/hang")["rule"] == "A5"


# --- answered before invoking (A1, A14) ----------------------------------------------------------------------------


def test_body_of_exactly_1_mb_is_forwarded(client):
    r = client.post("/size", content=b"z" * ONE_MB, headers={"content-type": "application/octet-stream"})
    assert r.status_code == 200 and r.text == str(ONE_MB)


def test_one_byte_more_is_413_without_invoking(client, server):
    before = len(server.records)
    r = client.post("/size", content=b"z" * (ONE_MB + 1))
    assert r.status_code == 413
    row = server.records[before]
    assert (row["status"], row["rule"], row["invoked"]) == (413, "A1", False)


def test_chunked_body_past_the_limit_is_413(client, server):
    def chunks():
        for _ in range(40):  # 2.5 MB, no Content-Length
            yield b"y" * 65536

    r = client.post("/size", content=chunks())
    assert r.status_code == 413 and last_row(server, "/size")["invoked"] is False


def test_websocket_upgrade_is_400(client, server):
    r = client.get(
        "/chat",
        headers={
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        },
    )
    assert r.status_code == 400
    assert (last_row(server, "/chat")["rule"], last_row(server, "/chat")["invoked"]) == ("A1", False)
    # an ordinary request still works afterwards
    assert client.get("/after").status_code == 200


def test_unsupported_method_is_405(client, server):
    assert client.request("PROPFIND", "/dav").status_code == 405
    assert last_row(server, "/dav")["rule"] == "A14"


# --- curl, the log, health checks, binding, the command line --------------------------------------------------------


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_sees_what_the_load_balancer_sends(server, tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"q" * (ONE_MB + 1))

    def curl(*args):
        out = subprocess.run(["curl", "-s", "-i", *args], capture_output=True, timeout=10, check=True)
        return out.stdout

    head, _, _ = curl(f"{server.url}/cookies").partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and head.lower().count(b"set-cookie:") == 2
    assert curl("-X", "POST", "--data-binary", f"@{big}", f"{server.url}/size").startswith(b"HTTP/1.1 413")
    assert curl("-H", "Upgrade: websocket", "-H", "Connection: Upgrade", f"{server.url}/ws").startswith(b"HTTP/1.1 400")
    head = curl("-I", f"{server.url}/page")
    assert head.startswith(b"HTTP/1.1 200") and b"content-length: 12" in head.lower() and head.endswith(b"\r\n\r\n")


def test_log_is_a_frame_with_one_row_per_request(server, client):
    client.get("/logged?x=1")
    frame = server.log
    assert {"method", "path", "status", "rule", "duration_ms"} <= set(frame.columns)
    row = frame[frame["path"] == "/logged"].iloc[-1]
    assert (row["method"], row["status"], row["rule"], row["query"]) == ("GET", 200, "AS4", "x=1")
    assert row["duration_ms"] > 0 and len(frame) == len(server.records)


def test_health_checks_send_the_a11_event():
    seen = []

    def recorder(event, context):
        seen.append(event)
        return {"statusCode": 200}

    with alb.serve(recorder, health_check_interval_s=0.05, isolation="thread") as running:  # reads what it saw
        deadline = time.time() + 3
        while len([r for r in running.records if r["kind"] == "health-check"]) < 2 and time.time() < deadline:
            time.sleep(0.02)
        rows = [r for r in running.records if r["kind"] == "health-check"]
    assert len(rows) >= 2 and rows[0]["status"] == 200 and rows[0]["path"] == "/"
    assert seen[0] == alb.health_check_event()


def test_other_host_needs_asking_and_warns(capfd):
    with alb.serve(handler, host="127.0.0.2") as running:
        assert httpx.get(running.url + "/x").status_code == 200
    assert "warning" in capfd.readouterr().err


def test_stopped_server_refuses_connections():
    running = alb.serve(handler)
    url = running.url
    running.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/x", timeout=2)


def test_command_line_serves_in_the_foreground(tmp_path):
    (tmp_path / "app.py").write_text(
        textwrap.dedent("""
        def handler(event, context):
            return {"statusCode": 200, "body": "from the command line " + event["httpMethod"]}
    """)
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "fnkit.alb._serve", "app:handler", "--port", "0", "--timeout", "2"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        url = first.split(" at ")[1].split()[0]
        assert httpx.get(url + "/cli").text == "from the command line GET"
        assert proc.stdout is not None
        assert "GET /cli -> 200 OK" in proc.stdout.readline()
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0 and "stopped" in out, err
