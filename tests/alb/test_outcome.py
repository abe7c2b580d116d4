"""What the client gets: outcome, refusal and run (A1, A5-A10, A12-A14, AS4)."""

from __future__ import annotations

import base64
import time

import pytest

from fnkit import Invocation, Raw, alb, invoke
from fnkit.alb import HttpRequest


def test_valid_response_is_passed_on(event):
    out = alb.outcome(event, {"statusCode": 201, "headers": {"Content-Type": "text/plain", "X-A": "1"}, "body": "made"})
    assert (out.status, out.reason, out.body, out.invoked, out.rule) == (201, "Created", b"made", True, "AS4")
    assert out.headers == [("Content-Type", "text/plain"), ("X-A", "1"), ("content-length", "4")]
    assert out.ok and not out.inferred and out.invocation is None
    assert "A9" in out.explanation and "inferred" in out.explanation  # the reason phrase is fnkit's reading


def test_status_description_becomes_the_reason(event):
    out = alb.outcome(event, {"statusCode": 200, "statusDescription": "200 All Good"})
    assert out.reason == "All Good" and out.description == "200 All Good" and "A9" not in out.rules


def test_multi_value_is_read_from_the_event(multi_event):
    response = {"statusCode": 200, "multiValueHeaders": {"Set-Cookie": ["a=1", "b=2"]}, "headers": {"X-Lost": "1"}}
    out = alb.outcome(multi_event, response)
    assert out.multi_value and out.header_values("set-cookie") == ["a=1", "b=2"]
    assert out.header("x-lost") is None  # A7: headers is ignored with multi-value on
    assert [(i.code, i.rule) for i in out.issues] == [("ignored", "A7")]


def test_multi_value_off_reads_only_headers(event):
    out = alb.outcome(event, {"statusCode": 200, "multiValueHeaders": {"X-Lost": ["1"]}, "headers": {"X-Kept": "1"}})
    assert out.header("x-kept") == "1" and out.header("x-lost") is None and not out.multi_value
    forced = alb.outcome(event, {"statusCode": 200, "multiValueHeaders": {"X-Kept": ["1", "2"]}}, multi_value=True)
    assert forced.header_values("X-Kept") == ["1", "2"]


def test_cookie_keys_differing_in_case_are_kept_apart(event):
    out = alb.outcome(event, {"statusCode": 200, "headers": {"Set-Cookie": "a=1", "set-cookie": "b=2"}})
    assert out.header_values("Set-Cookie") == ["a=1", "b=2"] and "A7" in {i.rule for i in out.issues}


def test_hop_by_hop_dropped_and_length_recomputed(event):
    out = alb.outcome(
        event,
        {
            "statusCode": 200,
            "body": "abc",
            "headers": {
                "Connection": "close",
                "Keep-Alive": "timeout=5",
                "Transfer-Encoding": "chunked",
                "Content-Length": "1",
            },
        },
    )
    assert out.headers == [("content-length", "3")] and out.body == b"abc"


def test_a8_base64_body_is_decoded(event):
    data = bytes(range(256))
    out = alb.outcome(event, {"statusCode": 200, "isBase64Encoded": True, "body": base64.b64encode(data).decode()})
    assert out.body == data and out.header("content-length") == "256" and "A8" in out.rules


def test_a10_head_gets_headers_without_body(event):
    event["httpMethod"] = "HEAD"
    out = alb.outcome(event, {"statusCode": 200, "body": "hello"})
    assert out.body == b"" and out.header("content-length") == "5"
    assert out.rule == "A10" and out.inferred


def test_a12_status_out_of_range_is_a_502_shown_as_inferred(event):
    out = alb.outcome(event, {"statusCode": 700})
    assert (out.status, out.rule, out.invoked) == (502, "A12", True) and out.inferred
    assert "inferred" in out.explanation


def test_a13_header_injection_is_a_502(event):
    out = alb.outcome(event, {"statusCode": 200, "headers": {"X-A": "1\r\nSet-Cookie: evil=1"}})
    assert (out.status, out.rule) == (502, "A13")


@pytest.mark.parametrize(
    "response",
    [
        [],
        {"statusCode": "200"},
        {"statusCode": True},
        {},
        {"statusCode": 200, "body": None},
        {"statusCode": 200, "isBase64Encoded": 1},
        {"statusCode": 200, "statusDescription": ["OK"]},
        {"statusCode": 200, "headers": None},
        {"statusCode": 200, "headers": {"a": 1}},
        {"statusCode": 200, "isBase64Encoded": True, "body": "a b"},
        Raw("{not json"),
        Raw(b"\xff\xfe"),
        {"statusCode": 200, "body": {1, 2}},
    ],
)
def test_every_invalid_response_is_a_502(event, response):
    out = alb.outcome(event, response)
    assert (out.status, out.reason, out.rule, out.invoked) == (502, "Bad Gateway", "A6", True)
    assert b"502 Bad Gateway" in out.body and out.issues.errors


def test_null_active_multi_value_field_is_a_502(multi_event):
    assert alb.outcome(multi_event, {"statusCode": 200, "multiValueHeaders": None}).status == 502


def test_a5_raised_timed_out_or_oversized_is_a_502(event):
    def boom(e, c):
        raise RuntimeError("kaput")

    out = alb.outcome(event, invoke(boom, event))
    assert (out.status, out.rule) == (502, "A5") and "kaput" in out.explanation
    out = alb.outcome(event, Invocation(timed_out=True, timeout_s=3.0))
    assert (out.status, out.rule) == (502, "A5") and "not a 504" in out.explanation
    out = alb.outcome(event, {"statusCode": 200, "body": "x" * alb.MAX_RESPONSE_JSON})
    assert (out.status, out.rule) == (502, "A5")


def test_a1_websocket_upgrade_refused_without_invoking():
    out = alb.refusal(HttpRequest("GET", "/chat", headers=(("Upgrade", "websocket"), ("Connection", "Upgrade"))))
    assert out is not None
    assert (out.status, out.rule, out.invoked) == (400, "A1", False)


def test_a1_body_limit_edges():
    assert alb.refusal(HttpRequest("POST", "/", body=b"x" * alb.MAX_REQUEST_BODY)) is None
    out = alb.refusal(HttpRequest("POST", "/", body=b"x" * (alb.MAX_REQUEST_BODY + 1)))
    assert out is not None
    assert (out.status, out.rule, out.invoked) == (413, "A1", False) and "1,048,577" in out.explanation


def test_a14_unsupported_method_refused():
    out = alb.refusal(HttpRequest("TRACE", "/"))
    assert out is not None
    assert (out.status, out.rule, out.invoked) == (405, "A14", False) and out.inferred


def test_outcome_on_a_refused_event_ignores_the_response(event):
    event["headers"]["upgrade"] = "websocket"
    out = alb.outcome(event, {"statusCode": 200})
    assert (out.status, out.invoked, out.rule) == (400, False, "A1")


def test_run_refuses_before_invoking(event):
    calls = []

    def handler(e, c):
        calls.append(e)
        return {"statusCode": 200}

    event["headers"]["upgrade"] = "websocket"
    out = alb.run(handler, event)
    assert out.status == 400 and not out.invoked and calls == [] and out.invocation is None
    assert out.event_issues is not None and "A1" in {i.rule for i in out.event_issues}


def test_run_invokes_and_keeps_the_invocation(event):
    def handler(e, context):
        print("hello from the handler")
        return {"statusCode": 200, "body": e["queryStringParameters"]["page"]}

    out = alb.run(handler, event)
    assert out.invocation is not None
    assert out.body == b"2" and out.invocation.status == "returned" and "hello" in out.invocation.logs
    assert out.rows()[0]["duration_ms"] is not None


def test_run_handler_gets_its_own_copy(event):
    def vandal(e, c):
        e["httpMethod"] = "HEAD"
        return {"statusCode": 200, "body": "x"}

    assert alb.run(vandal, event).body == b"x" and event["httpMethod"] == "GET"


def test_run_timeout_is_a_502_and_does_not_wait(event):
    started = time.perf_counter()
    out = alb.run(lambda e, c: time.sleep(30), event, timeout_s=0.1, isolation="process")  # a real cut needs a worker
    assert out.invocation is not None
    assert (out.status, out.rule) == (502, "A5") and out.invocation.timed_out
    assert time.perf_counter() - started < 5  # far below the handler's 30 s, with room for a loaded machine


def test_run_junk_return_is_a_502(event):
    out = alb.run(lambda e, c: {"statusCode": 200, "body": b"bytes"}, event)
    assert (out.status, out.rule) == (502, "A6") and "H2" in {i.rule for i in out.issues}


def test_rows_and_html(event):
    out = alb.outcome(event, {"statusCode": 404, "body": "<nope>"})
    (row,) = out.rows()
    assert {k: row[k] for k in ("method", "path", "status", "reason", "rule", "invoked")} == {
        "method": "GET",
        "path": "/items",
        "status": 404,
        "reason": "Not Found",
        "rule": "AS4",
        "invoked": True,
    }
    html = out._repr_html_()
    assert "404" in html and "&lt;nope&gt;" in html


def test_outcome_frame_through_tabulate(event):
    import fnkit

    frame = fnkit.tabulate([alb.outcome(event, {"statusCode": 200}), alb.outcome(event, {"statusCode": "x"})])
    assert list(frame["status"]) == [200, 502]


A1_REQUESTS = [  # (headers, body bytes): what a client sends
    ({}, b""),
    ({"upgrade": "websocket"}, b""),
    ({"upgrade": "WebSocket, h2c"}, b""),
    ({"upgrade": "h2c"}, b""),
    ({}, b"x" * alb.MAX_REQUEST_BODY),
    ({}, b"x" * (alb.MAX_REQUEST_BODY + 1)),
    ({"upgrade": "websocket"}, b"\x00" * (alb.MAX_REQUEST_BODY + 1)),  # binary: the event carries base64
]


@pytest.mark.parametrize(("headers", "body"), A1_REQUESTS)
@pytest.mark.parametrize("multi_value", [False, True])
def test_a1_is_asked_of_one_function_by_the_check_the_builder_refusal_and_outcome(headers, body, multi_value):
    """The event check, build_event, refusal (of an event and of a request) and outcome all answer A1 alike."""
    from fnkit import rules
    from fnkit.alb._http import never_forwarded

    assert rules.get("A1").implementation is never_forwarded
    expected = [r.status for r in never_forwarded(headers.get("upgrade"), len(body))]
    request = alb.refusal(HttpRequest("POST", "/", headers=tuple(headers.items()), body=body))
    assert (request.status if request else None) == (expected[0] if expected else None)
    if expected:
        with pytest.raises(ValueError, match="A1"):
            alb.build_event("POST", "/", headers=headers, body=body, multi_value=multi_value)
    # the event the load balancer would have made, had it forwarded the request
    event = alb.request_to_event("POST", "/", "", list(headers.items()), body, multi_value)
    errors = [i for i in alb.validate_event(event).errors if i.rule == "A1"]
    assert [{"refused": 400, "limit": 413}[i.code] for i in errors] == expected
    refused = alb.refusal(event)
    assert (refused.status if refused else None) == (expected[0] if expected else None)
    out = alb.outcome(event, {"statusCode": 200})
    assert (out.status, out.invoked) == ((expected[0], False) if expected else (200, True))
