"""The load balancer exercises: two cookies in both header modes, a greeting by query, an upper-cased body."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._cells import shorten
from ..types import AlbEvent
from ._registry import (
    CASE_TIMEOUT_S,
    Case,
    Exercise,
    Finding,
    invocation_problem,
    kind_of,
    raised_sentence,
    register,
    returned,
)


def _alb_event(seed: int, **kwargs: Any) -> AlbEvent:
    from .. import alb

    return alb.build_event(seed=seed, **kwargs)


def _run(handler: Callable[..., Any], case: Case) -> Any:
    from .. import alb

    return alb.run(handler, case.event, timeout_s=CASE_TIMEOUT_S, isolation="process")


def _multi(event: Mapping[str, Any]) -> bool:
    return "multiValueHeaders" in event


def _mode(event: Mapping[str, Any]) -> str:
    return "multi-value headers on" if _multi(event) else "multi-value headers off"


def _bad_gateway(case: Case, result: Any) -> str | None:
    """One sentence for a response the client gets as 502 Bad Gateway: what is wrong, where, and what to write."""
    problem = invocation_problem(result.invocation, consequence="so the client gets 502 Bad Gateway")
    if problem:
        return problem
    if result.status != 502:
        return None
    value = returned(result.invocation)
    gateway = "so the client gets 502 Bad Gateway"
    if value is None:
        return (
            f'your handler returns None (is a return missing?), {gateway}: return {{"statusCode": 200, "body": ...}}.'
        )
    if not isinstance(value, dict):
        return (
            f"your handler returns {kind_of(value)}, not an object, {gateway}: "
            'return {"statusCode": ..., "body": ...}.'
        )
    status = value.get("statusCode")
    if isinstance(status, str):
        return (
            f"statusCode is text ('{shorten(status, 12)}'), {gateway}: "
            f"write a number, {status.strip() or 200} without quotes."
        )
    if "statusCode" not in value:
        return f'your response has no statusCode, {gateway}: add "statusCode": 200.'
    multi = value.get("multiValueHeaders") if _multi(case.event) else None
    if isinstance(multi, dict) and any(isinstance(v, str) for v in multi.values()):
        name = next(k for k, v in multi.items() if isinstance(v, str))
        return (
            f"with multi-value headers on, each header holds a list of values, but '{name}' holds a string, "
            f'{gateway}: write "{name}": ["..."].'
        )
    if "body" in value and not isinstance(value["body"], (str, type(None))):
        return (
            f"the body is {kind_of(value['body'])}, not text, {gateway}: return a str "
            '(or base64 text with "isBase64Encoded": true).'
        )
    errors = [i for i in result.issues if i.severity == "error"]
    if errors:
        where = f" at {errors[0].path}" if errors[0].path not in ("", "$") else ""
        return f"the load balancer cannot read your response{where} ({errors[0].message.rstrip('.')}), {gateway}."
    return f"the client gets 502 Bad Gateway: {result.explanation}"


def _ignored_headers(case: Case, result: Any) -> str | None:
    if not any(i.code == "ignored" for i in result.issues):
        return None
    wanted = "multiValueHeaders" if _multi(case.event) else "headers"
    other = "headers" if _multi(case.event) else "multiValueHeaders"
    return (
        f"the event has '{wanted}' ({_mode(case.event)}), so the load balancer reads only '{wanted}' and ignores "
        f"your '{other}': answer with '{wanted}' when the event has '{wanted}'."
    )


# --- 1. two cookies ------------------------------------------------------------------------------

COOKIES = ["session=abc123", "theme=dark"]


def _cases_cookies() -> list[Case]:
    return [
        Case("multi-value headers off", _alb_event(61, method="GET", path="/login")),
        Case("multi-value headers on", _alb_event(62, method="GET", path="/login", multi_value=True)),
        Case(
            "POST, multi-value headers on",
            _alb_event(
                63,
                method="POST",
                path="/login",
                body=b"user=ada",
                headers={"content-type": "application/x-www-form-urlencoded"},
                multi_value=True,
            ),
        ),
    ]


def _judge_cookies(handler: Callable[..., Any], case: Case) -> str | None:
    result = _run(handler, case)
    problem = _bad_gateway(case, result) or _ignored_headers(case, result)
    if problem:
        return problem
    mode = _mode(case.event)
    if result.status != 200:
        return f"the client gets status {result.status}; answer 200."
    sent = result.header_values("set-cookie")
    cookies = [c.split(";")[0].strip() for c in sent]
    if all(c in cookies for c in COOKIES):
        pass
    elif any("," in c and all(w in c for w in COOKIES) for c in sent):
        joined = next(c for c in sent if "," in c)
        return Finding(
            f"with {mode}, both cookies arrive in one Set-Cookie header ('{shorten(joined, 50)}'), which "
            "the browser reads as one cookie: a comma does not separate cookies, so send one Set-Cookie "
            "header per cookie.",
            "comma",
        )
    else:
        got = " and ".join(f"'{shorten(c, 40)}'" for c in sent) if sent else "no cookie at all"
        if not _multi(case.event) and len(sent) == 1:
            hint = (
                "a dict cannot hold the key 'Set-Cookie' twice, so use two keys that differ only in case, such as "
                "'Set-Cookie' and 'set-cookie' (the load balancer keeps them apart)"
            )
        elif _multi(case.event):
            hint = 'put both cookies in one list, "multiValueHeaders": {"Set-Cookie": [..., ...]}'
        else:
            hint = "send one Set-Cookie header per cookie"
        return Finding(
            f"with {mode}, the browser receives {got}, not both session=abc123 and theme=dark: {hint}.",
            f"cookies {mode}",
        )
    if result.text != "welcome":
        return Finding(
            f"with {mode}, the body the client reads is {shorten(repr(result.text), 40)}, not 'welcome'.", "body"
        )
    return None


register(Exercise("alb-cookies", "alb", "Set two cookies in both header modes", _cases_cookies, _judge_cookies))


# --- 2. a greeting by query --------------------------------------------------------------------


def _cases_greeting() -> list[Case]:
    return [
        Case("a plain name", _alb_event(71, path="/hello", query="name=Ada"), "Hello, Ada!"),
        Case(
            "a name with a space (%20)",
            _alb_event(72, path="/hello", query="name=Ada%20Lovelace"),
            "Hello, Ada Lovelace!",
        ),
        Case(
            "an accented name, multi-value on",
            _alb_event(73, path="/hello", query="name=Ren%C3%A9", multi_value=True),
            "Hello, René!",
        ),
        Case(
            "the name twice, multi-value on",
            _alb_event(74, path="/hello", query="name=Ada&name=Grace", multi_value=True),
            "Hello, Grace!",
        ),
        Case(
            "the name twice, multi-value off",
            _alb_event(75, path="/hello", query="name=Ada&name=Grace"),
            "Hello, Grace!",
        ),
        Case("no name", _alb_event(76, path="/hello"), None),
        Case("no name, multi-value on", _alb_event(77, path="/hello", query="lang=en", multi_value=True), None),
    ]


def _greeting_raised(case: Case, result: Any) -> str | None:
    error = getattr(result.invocation, "error", None)
    if error is None or error.type != "KeyError":
        return None
    key = error.message.strip("'\"")
    if key == "queryStringParameters" and _multi(case.event):
        hint = (
            "with multi-value headers on, the event has multiValueQueryStringParameters instead of "
            "queryStringParameters (and each value is a list)"
        )
    elif key == "multiValueQueryStringParameters" and not _multi(case.event):
        hint = "with multi-value headers off, the event has queryStringParameters instead"
    elif key == "name":
        hint = 'a request may come without a name: read it with .get("name") and answer 400 when it is missing'
    else:
        return None
    return raised_sentence(error, hint, "so the client gets 502 Bad Gateway")


def _judge_greeting(handler: Callable[..., Any], case: Case) -> str | None:
    result = _run(handler, case)
    problem = _greeting_raised(case, result) or _bad_gateway(case, result) or _ignored_headers(case, result)
    if problem:
        return problem
    mode = _mode(case.event)
    if case.expect is None:
        if result.status != 400:
            return f"without a name, answer 400 (the client made a mistake), not {result.status}."
        return None
    if result.status != 200:
        return f"the client gets {result.status} {result.reason}, not 200 OK."
    if result.text != case.expect:
        hint = ""
        if "[" in result.text and _multi(case.event):
            hint = ": with multi-value headers on, each query value is a list, so take its last item"
        elif "%" in result.text:
            hint = ": query values arrive exactly as in the URL, so decode them with urllib.parse.unquote"
        elif "Ada" in result.text and "Grace" in case.expect:
            hint = ": with a repeated key, use the last value, in both modes"
        return Finding(
            f"with {mode}, the body is {shorten(repr(result.text), 40)}, not {case.expect!r}{hint}.", f"body {hint}"
        )
    kind = (result.header("content-type") or "").split(";")[0].strip().lower()
    if kind != "text/plain":
        return f"the content-type is {kind or 'missing'}; say text/plain."
    return None


register(Exercise("alb-greeting", "alb", "Greet by a query parameter in both modes", _cases_greeting, _judge_greeting))


# --- 3. an upper-cased body ---------------------------------------------------------------------


def _cases_upper() -> list[Case]:
    return [
        Case(
            "text body",
            _alb_event(81, method="POST", path="/upper", body=b"hello", headers={"content-type": "text/plain"}),
            "HELLO",
        ),
        Case(
            "binary content type (base64)",
            _alb_event(
                82, method="POST", path="/upper", body=b"abc", headers={"content-type": "application/octet-stream"}
            ),
            "ABC",
        ),
        Case(
            "UTF-8 text",
            _alb_event(
                83,
                method="POST",
                path="/upper",
                body="grüße".encode(),
                headers={"content-type": "text/plain; charset=utf-8"},
            ),
            "GRÜSSE",
        ),
        Case(
            "a content-encoding header (base64)",
            _alb_event(
                84,
                method="POST",
                path="/upper",
                body=b"zip",
                headers={"content-type": "text/plain", "content-encoding": "identity"},
            ),
            "ZIP",
        ),
        Case("empty body", _alb_event(85, method="POST", path="/upper", headers={"content-type": "text/plain"}), ""),
    ]


def _judge_upper(handler: Callable[..., Any], case: Case) -> str | None:
    result = _run(handler, case)
    error = getattr(result.invocation, "error", None)
    if (
        error is not None
        and not case.event.get("isBase64Encoded")
        and error.type in ("Error", "binascii.Error", "UnicodeDecodeError", "ValueError")
    ):
        return raised_sentence(
            error,
            "this body arrived as plain text (isBase64Encoded is false): decode base64 "
            "only when isBase64Encoded is true",
            "so the client gets 502 Bad Gateway",
        )
    problem = _bad_gateway(case, result)
    if problem:
        return problem
    if result.status != 200:
        return f"the client gets {result.status} {result.reason}, not 200 OK."
    if result.text != case.expect:
        hint = ""
        if case.event.get("isBase64Encoded"):
            hint = (
                ": this request arrived with isBase64Encoded true, so decode the body with base64.b64decode "
                "before upper-casing it"
            )
        return Finding(f"the client reads {shorten(repr(result.text), 40)}, not {case.expect!r}{hint}.", f"body {hint}")
    return None


register(Exercise("alb-upper", "alb", "Upper-case a body that may arrive in base64", _cases_upper, _judge_upper))
