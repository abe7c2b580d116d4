"""The load balancer source as the widgets see it: form, example handlers, response forms."""

from __future__ import annotations

import base64
import json
import time
import urllib.parse
from typing import Any

from ..alb._config import AlbConfig
from ._adapter import Form, SourceAdapter
from ._fields import Field, FieldError, setting_field

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")

FIELDS = [
    Field("method", "Method", "choice", "GET", "The HTTP method.", METHODS),
    Field(
        "path",
        "Path",
        "text",
        "/hello",
        "The request path, starting with /. Try /hello, /json, /cookies, /boom.",
        example="/hello, /json, /boom",
    ),
    Field(
        "query",
        "Query",
        "text",
        "name=Ada%20Lovelace",
        "The raw query string, as in the URL after '?' (never decoded).",
        example="name=Ada%20Lovelace",
    ),
    Field(
        "headers",
        "Headers",
        "pairs",
        [("accept", "text/plain")],
        "One 'Name: value' per line; a name may repeat.",
        rows=3,
    ),
    Field(
        "body", "Body", "longtext", "", "The request body (text). Set a content-type header to say what it is.", rows=2
    ),
    setting_field(AlbConfig, "multi_value"),
]


def _field(name: str) -> Field:
    return next(f for f in FIELDS if f.name == name)


def to_kwargs(values: dict[str, Any]) -> dict[str, Any]:
    """Form values -> `fnkit.alb.build_event` keywords; FieldError in plain words."""
    path = str(values["path"]).strip() or "/"
    if not path.startswith("/"):
        raise FieldError(
            _field("path"),
            f"The path {path!r} does not start with '/': write it as the URL shows it after the host, e.g. /hello.",
        )
    if any(c.isspace() for c in path):
        raise FieldError(_field("path"), "The path holds a space: a URL writes it as %20.")
    query = str(values["query"]).strip()
    query = query.removeprefix("?")
    if any(c.isspace() for c in query):
        raise FieldError(_field("query"), "The query holds a space: a URL writes it as %20 (or +).")
    return {
        "method": values["method"],
        "path": path,
        "query": query,
        "headers": values["headers"],
        "body": str(values["body"]).encode("utf-8"),
        "multi_value": bool(values["multi_value"]),
        "dialect": values["dialect"],
        "seed": int(values["seed"]),
    }


# --- example handlers ----------------------------------------------------------------


def query_value(event: dict[str, Any], key: str) -> str | None:
    """The last value of a query key, percent-decoded, whichever header mode the event uses."""
    multi = event.get("multiValueQueryStringParameters")
    if isinstance(multi, dict):
        values = multi.get(key) or []
        raw = values[-1] if values else None
    else:
        raw = (event.get("queryStringParameters") or {}).get(key)
    return None if raw is None else urllib.parse.unquote_plus(raw)


def reply(
    event: dict[str, Any], status: int, body: str, headers: list[tuple[str, str]] | None = None
) -> dict[str, Any]:
    """A response in the event's header mode (headers, or multiValueHeaders when the event has them)."""
    pairs = headers or [("Content-Type", "text/plain; charset=utf-8")]
    response: dict[str, Any] = {"statusCode": status, "isBase64Encoded": False, "body": body}
    if "multiValueHeaders" in event:
        multi: dict[str, list[str]] = {}
        for name, value in pairs:
            multi.setdefault(name, []).append(value)
        response["multiValueHeaders"] = multi
    else:
        single: dict[str, str] = {}
        for name, value in pairs:
            # a repeated name is kept by changing its case: keys differing only in case stay apart (A7)
            variants = [name, name.lower(), name.upper(), name.title(), name.swapcase(), name.capitalize()]
            key = next((v for v in variants if v not in single), None)
            if key is None:
                raise ValueError(f"too many {name} headers for single-value mode: turn multi-value headers on")
            single[key] = value
        response["headers"] = single
    return response


def small_app(event, context):
    """/hello greets ?name=, /json echoes the request, /cookies sets two cookies, /boom raises, other paths 404."""
    path = event["path"]
    if path == "/hello":
        return reply(event, 200, f"Hello, {query_value(event, 'name') or 'world'}!")
    if path == "/json":
        body = event.get("body") or ""
        if event.get("isBase64Encoded"):
            body = base64.b64decode(body).decode("utf-8", "replace")
        echo = {"method": event["httpMethod"], "path": path, "name": query_value(event, "name"), "body": body}
        return reply(event, 200, json.dumps(echo), [("Content-Type", "application/json")])
    if path == "/cookies":
        return reply(
            event, 200, "two cookies set", [("Set-Cookie", "session=abc123; HttpOnly"), ("Set-Cookie", "theme=dark")]
        )
    if path == "/boom":
        raise RuntimeError("something broke while handling /boom")
    return reply(event, 404, f"nothing at {path}")


def status_as_string(event, context):
    """Answers statusCode "200" (a string): the load balancer answers 502."""
    return {"statusCode": "200", "body": "fine, really"}


def headers_in_wrong_mode(event, context):
    """Always answers with `headers`, even when multi-value headers are on (they are then ignored)."""
    return {
        "statusCode": 200,
        "headers": {"Content-Type": "text/plain", "Set-Cookie": "session=abc123"},
        "body": "hello",
    }


def binary_png(event, context):
    """A 1x1 PNG, base64 in the response, decoded by the load balancer (A8)."""
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    )
    return (
        {
            "statusCode": 200,
            "isBase64Encoded": True,
            "headers": {"Content-Type": "image/png"},
            "body": base64.b64encode(png).decode("ascii"),
        }
        if "multiValueHeaders" not in event
        else {
            "statusCode": 200,
            "isBase64Encoded": True,
            "multiValueHeaders": {"Content-Type": ["image/png"]},
            "body": base64.b64encode(png).decode("ascii"),
        }
    )


def raise_an_error(event, context):
    """Raises: the client gets 502."""
    raise KeyError("user_id")


def hang(event, context):
    """Never returns (the runner's timeout stops it): the client gets 502, not 504."""
    while True:
        time.sleep(0.05)


def return_junk(event, context):
    """Returns bytes, which JSON cannot encode."""
    return b"HTTP/1.1 200 OK\r\n\r\nhello"


EXAMPLES = {
    "small app (/hello, /json, /cookies, /boom)": small_app,
    "statusCode as a string": status_as_string,
    "headers in the wrong mode": headers_in_wrong_mode,
    "binary body (PNG)": binary_png,
    "raise an error": raise_an_error,
    "hang (never returns)": hang,
    "return junk (bytes)": return_junk,
}

# --- response forms -------------------------------------------------------------------


def _multi(event: Any) -> bool:
    return isinstance(event, dict) and "multiValueHeaders" in event


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2)


def _with_headers(event: dict[str, Any], response: dict[str, Any], pairs: list[tuple[str, str]]) -> str:
    if _multi(event):
        multi: dict[str, list[str]] = {}
        for n, v in pairs:
            multi.setdefault(n, []).append(v)
        response["multiValueHeaders"] = multi
    else:
        response["headers"] = dict(pairs)
    return _dump(response)


def _two_cookies(event: dict[str, Any]) -> str:
    if _multi(event):
        return _dump(
            {"statusCode": 200, "multiValueHeaders": {"Set-Cookie": ["session=abc123", "theme=dark"]}, "body": "ok"}
        )
    return _dump(
        {"statusCode": 200, "headers": {"Set-Cookie": "session=abc123", "set-cookie": "theme=dark"}, "body": "ok"}
    )


FORMS = [
    Form(
        "passed on",
        "200 with text",
        lambda e: _with_headers(
            e,
            {"statusCode": 200, "statusDescription": "200 OK", "isBase64Encoded": False, "body": "Hello"},
            [("Content-Type", "text/plain")],
        ),
        key="200 text",
    ),
    Form("passed on", "200, empty body · status only", lambda e: _dump({"statusCode": 200}), key="status only"),
    Form(
        "passed on",
        "200, body decoded · base64",
        lambda e: _with_headers(
            e,
            {"statusCode": 200, "isBase64Encoded": True, "body": "aGVsbG8="},
            [("Content-Type", "application/octet-stream")],
        ),
        key="base64 body",
    ),
    Form(
        "passed on",
        "two cookies set",
        _two_cookies,
        "Both header modes: keys differing in case, or one key with a list.",
        key="two cookies",
    ),
    Form(
        "passed on",
        "404 passed on",
        lambda e: _with_headers(
            e,
            {"statusCode": 404, "statusDescription": "404 Not Found", "body": "not here"},
            [("Content-Type", "text/plain")],
        ),
        key="404",
    ),
    Form(
        "502",
        "502 · status as a string",
        lambda e: _dump({"statusCode": "200", "body": "Hello"}),
        key="status as a string",
    ),
    Form("502", "502 · no statusCode", lambda e: _dump({"body": "Hello"}), key="no statusCode"),
    Form("502", "502 · body null", lambda e: _dump({"statusCode": 200, "body": None}), key="body null"),
    Form(
        "502",
        "502 · bad base64",
        lambda e: _dump({"statusCode": 200, "isBase64Encoded": True, "body": "not base64!"}),
        key="bad base64",
    ),
    Form(
        "502",
        "502 · header value a number",
        lambda e: _with_headers(e, {"statusCode": 200, "body": "Hello"}, [("Content-Length", 5)]),  # type: ignore[list-item]
        key="header value a number",
    ),
    Form("502", "502 · not an object", lambda e: "[]", key="not an object"),
    Form("502", "502 · invalid JSON", lambda e: '{"statusCode": 200,', key="invalid JSON"),
    Form(
        "trap",
        "headers ignored · the other mode's field",
        lambda e: _dump(
            {
                "statusCode": 200,
                ("headers" if _multi(e) else "multiValueHeaders"): {
                    "Content-Type": (["text/plain"] if not _multi(e) else "text/plain")
                },
                "body": "Hello",
            }
        ),
        "The field the mode does not read is ignored.",
        key="wrong header field",
    ),
]


def rows(outcome: Any) -> list[dict[str, Any]]:
    """What the client receives: one row per header, then the body."""
    out = [{"part": "status", "name": str(outcome.status), "value": outcome.reason}]
    out.extend({"part": "header", "name": n, "value": v} for n, v in outcome.headers)
    body = outcome.body
    try:
        shown = body.decode("utf-8")
    except UnicodeDecodeError:
        shown = f"<{len(body)} bytes of binary data>"
    if len(shown) > 300:
        shown = shown[:300] + "…"
    out.append({"part": "body", "name": f"{len(body)} bytes", "value": shown})
    return out


def describe_event(event: Any) -> str:
    if not isinstance(event, dict):
        return ""
    mode = "multi-value" if "multiValueHeaders" in event else "single-value"
    return f"{event.get('httpMethod')} {event.get('path')}, {mode}"


ADAPTER = SourceAdapter(
    source="alb",
    title="Load balancer request event",
    fields=FIELDS,
    examples=EXAMPLES,
    default_example="small app (/hello, /json, /cookies, /boom)",
    config=[],
    forms=FORMS,
    default_response=lambda e: _with_headers(e, {"statusCode": 200, "body": "Hello"}, [("Content-Type", "text/plain")]),
    to_kwargs=to_kwargs,
    columns=["part", "name", "value"],
    describe_event=describe_event,
    rows=rows,
)
