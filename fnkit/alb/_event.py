"""The load balancer request event: its shape, rule checks, builder, typed parse and validation.

Rules: AS1-AS3 (the spec's event), A1 (what is never forwarded), A2-A4 (how a request
becomes an event), A11 (health checks).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .._report import DIALECTS, ContractError, Issue, Report, child_path, decode_json, error, warning
from .._shape import BOOL, STR, F, ListOf, MapOf, Shape
from .._validate import Seen, validate_value
from ._http import (
    DEFAULT_CLIENT_IP,
    DEFAULT_HOST,
    MAX_REQUEST_BODY,
    METHODS,
    TEXT_TYPES,
    TRACE_HEADERS,
    encode_query,
    health_check_event as _health_check_event,
    is_health_check,
    is_strict_base64,
    media_type,
    request_to_event,
    seeded_trace_id,
    split_query,
)

SOURCE = "alb"

# --- the shape, declared once -------------------------------------------------------

_ELB = Shape("ElbContext", [
    F("targetGroupArn", STR, doc="Resource name (ARN) of the target group of the function."),
], "AS1", doc="requestContext.elb of a load balancer event.")

_REQUEST_CONTEXT = Shape("RequestContext", [
    F("elb", _ELB, doc="The load balancer that forwarded the request."),
], "AS1", doc="requestContext of a load balancer event.")

EVENT_SHAPE = Shape("LoadBalancerEvent", [
    F("requestContext", _REQUEST_CONTEXT, doc="Holds elb.targetGroupArn."),
    F("targetGroupArn", STR, required=False, doc="Also listed by the spec as a top-level field (the same ARN)."),
    F("httpMethod", STR, enum=METHODS, doc="The request method."),
    F("path", STR, doc="The request path, exactly as in the URL (starts with '/')."),
    F("queryStringParameters", MapOf(STR), required="single-value mode", rule="AS2",
      doc="Query keys and values as in the raw URL (not percent-decoded); last value of a repeated key; "
          "{} without a query."),
    F("multiValueQueryStringParameters", MapOf(ListOf(STR)), required="multi-value mode", rule="AS2",
      doc="Used instead of queryStringParameters when multi-value headers are on: every value, in order."),
    F("headers", MapOf(STR), required="single-value mode", rule="AS2",
      doc="Request headers, lower-case names; the load balancer adds the trace and x-forwarded-* headers."),
    F("multiValueHeaders", MapOf(ListOf(STR)), required="multi-value mode", rule="AS2",
      doc="Used instead of headers when multi-value headers are on: every value of each header, in order."),
    F("isBase64Encoded", BOOL, doc="True when body is base64 (binary content types, or a content-encoding)."),
    F("body", STR, required=False,
      doc="The request body: text, or base64 when isBase64Encoded is true; \"\" when empty."),
], "AS1", doc="An HTTP request as the load balancer hands it to a function.")

_HEADER_FIELDS = ("headers", "multiValueHeaders")
_QUERY_FIELDS = ("queryStringParameters", "multiValueQueryStringParameters")
_TRACE_BY_NAME = {name: dialect for dialect, name in TRACE_HEADERS.items()}

# arn:<partition>:elasticloadbalancing:<region>:<account>:targetgroup/<name>/<16 hex>
TARGET_GROUP_ARN = re.compile(
    r"arn:(provider|aws|aws-cn|aws-us-gov):elasticloadbalancing:[a-z0-9-]+:\d{12}:"
    r"targetgroup/[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?/[0-9a-f]{16}"
)
# characters a raw URL cannot carry: spaces and controls, '#', anything beyond ASCII
_NOT_IN_RAW_URL = re.compile(r"[\x00-\x20\x7f#]|[^\x00-\x7f]")
_CHAR_NAMES = {" ": "a space", "#": "'#'", "\t": "a tab", "\n": "a line break", "\r": "a carriage return"}


_ARN_DIALECTS: dict[str, str] = {}  # well-formed ARNs seen, and their dialect


def arn_dialect(arn: Any) -> str | None:
    """'provider' or 'aws' for a well-formed target group ARN, None otherwise."""
    if type(arn) is not str:
        return None
    found = _ARN_DIALECTS.get(arn)
    if found is None:
        match = TARGET_GROUP_ARN.fullmatch(arn)
        if match is None:
            return None
        found = "provider" if match.group(1) == "provider" else "aws"
        if len(_ARN_DIALECTS) < 4096:  # events of one target group repeat its ARN: remember it
            _ARN_DIALECTS[arn] = found
    return found


def is_text_body(content_type: Any) -> bool:
    """True when A4 sends a body of this content type as text (`text/*`, JSON, JavaScript, XML)."""
    kind = media_type(content_type) if isinstance(content_type, str) else ""
    return kind.startswith("text/") or kind in TEXT_TYPES


# --- rule checks (small generators; each returns early when a value is not its business) ---


def _header_maps(event: Any) -> Iterator[tuple[str, dict]]:
    if isinstance(event, dict):
        for key in _HEADER_FIELDS:
            value = event.get(key)
            if isinstance(value, dict):
                yield key, value


def _header_value(event: Any, name: str) -> Any:
    """The (last) value of a lower-case header name in whichever header field the event has."""
    for key, mapping in _header_maps(event):
        value = mapping.get(name)
        if key == "multiValueHeaders" and isinstance(value, list):
            value = value[-1] if value else None
        if isinstance(value, str):
            return value
    return None


def check_header_names(event: Any, seen: Seen) -> Iterator[Issue]:
    """A2: the load balancer lower-cases every header name."""
    for key, mapping in _header_maps(event):
        for name in mapping:
            if isinstance(name, str) and name != name.lower():
                yield error(child_path(child_path("$", key), name), "format",
                            f"The header name '{name}' is not lower-case; the load balancer lower-cases every "
                            f"header name, so a handler reads '{name.lower()}'.", "A2")


def check_forms(event: Any, seen: Seen) -> Iterator[Issue]:
    """A3: the single-value forms or the multi-value forms, never both."""
    if not isinstance(event, dict):
        return
    for single, multi in (_HEADER_FIELDS, _QUERY_FIELDS):
        if single in event and multi in event:
            yield error(child_path("$", multi), "conflict",
                        f"The event carries both '{single}' and '{multi}'; the load balancer sends one form only "
                        "(the multi-value one exactly when multi-value headers are on).", "A3")
    singles = [k for k in ("headers", "queryStringParameters") if k in event]
    multis = [k for k in ("multiValueHeaders", "multiValueQueryStringParameters") if k in event]
    if singles and multis and not (len(singles) == 2 and len(multis) == 2):
        yield warning("$", "conflict",
                      f"The event mixes forms ({', '.join(singles)} with {', '.join(multis)}); with multi-value "
                      "headers on both headers and query are multi-value, with them off both are single-value.", "A3")
    expected = seen.options.get("multi_value")
    if expected is True and singles and not multis:
        yield warning("$", "mode", f"Multi-value headers are on, so the event should carry multiValueHeaders and "
                                   f"multiValueQueryStringParameters, not {' and '.join(singles)}.", "A3")
    elif expected is False and multis and not singles:
        yield warning("$", "mode", f"Multi-value headers are off, so the event should carry headers and "
                                   f"queryStringParameters, not {' and '.join(multis)}.", "A3")


def check_trace_header(event: Any, seen: Seen) -> Iterator[Issue]:
    """AS3: the trace header (x-provider-trace-id, x-amzn-trace-id) is present; it tells the dialect."""
    found = False
    maps = list(_header_maps(event))
    for _, mapping in maps:
        for name in mapping:
            if isinstance(name, str) and name.lower() in _TRACE_BY_NAME:
                seen.saw(_TRACE_BY_NAME[name.lower()])
                found = True
    if found or not maps:
        return
    if any(is_health_check(mapping) for _, mapping in maps):
        return  # A11: health checks carry no trace header
    key = maps[0][0]
    yield warning(child_path(child_path("$", key), TRACE_HEADERS["provider"]), "missing",
                  "The trace header is missing (x-provider-trace-id; x-amzn-trace-id on the real platform); "
                  "the load balancer adds it to every request and it is the request's correlation id.", "AS3")


def check_target_group(event: Any, seen: Seen) -> Iterator[Issue]:
    """AS1: the target group ARN is well formed (its partition tells the dialect)."""
    if not isinstance(event, dict):
        return
    context = event.get("requestContext")
    elb = context.get("elb") if isinstance(context, dict) else None
    inner = elb.get("targetGroupArn") if isinstance(elb, dict) else None
    top = event.get("targetGroupArn")
    for path, arn in (("$.requestContext.elb.targetGroupArn", inner), ("$.targetGroupArn", top)):
        if not isinstance(arn, str):
            continue
        dialect = arn_dialect(arn)
        if dialect is None:
            yield error(path, "format",
                        f"'{arn}' is not a target group ARN; expected "
                        "arn:provider:elasticloadbalancing:<region>:<12-digit account>:targetgroup/<name>/<16 hex> "
                        "(arn:aws:… on the real platform).", "AS1")
        else:
            seen.saw(dialect)
    if isinstance(inner, str) and isinstance(top, str) and inner != top:
        yield warning("$.targetGroupArn", "mismatch",
                      "The top-level targetGroupArn differs from requestContext.elb.targetGroupArn; both name the "
                      "one target group of the function.", "AS1")


def check_path(event: Any, seen: Seen) -> Iterator[Issue]:
    """AS1: the path is the request path, so it starts with '/'."""
    path = event.get("path") if isinstance(event, dict) else None
    if isinstance(path, str) and not path.startswith("/"):
        yield error("$.path", "format", f"The path {json.dumps(path)} does not start with '/'; the load balancer "
                                        "passes the client's request path, which always does.", "AS1")


def check_body(event: Any, seen: Seen) -> Iterator[Issue]:
    """A4 and A2: base64 exactly when the platform would use it; a GET has an empty body."""
    if not isinstance(event, dict):
        return
    body = event.get("body")
    encoded = event.get("isBase64Encoded")
    if not isinstance(body, str):
        return
    if encoded is True and not is_strict_base64(body):
        yield error("$.body", "format", "isBase64Encoded is true but the body is not strict base64 (standard "
                                        "alphabet, '=' padding, no spaces or line breaks).", "A4")
    if body and event.get("httpMethod") == "GET":
        yield warning("$.body", "format", "A GET request reaches the function with body \"\"; this one has a body.",
                      "A2")
    if encoded is False and body:
        if _header_value(event, "content-encoding") is not None:
            yield warning("$.isBase64Encoded", "format",
                          "The request has a content-encoding header, so the load balancer sends the body "
                          "base64-encoded with isBase64Encoded true.", "A4")
        elif not is_text_body(_header_value(event, "content-type")):
            kind = _header_value(event, "content-type")
            what = f"the content type '{kind}'" if kind else "no content type"
            yield warning("$.isBase64Encoded", "format",
                          f"With {what} the load balancer sends the body base64-encoded (isBase64Encoded true); "
                          "only text/*, application/json, application/javascript and application/xml go as text.",
                          "A4")


def _char_name(ch: str) -> str:
    return _CHAR_NAMES.get(ch, f"the character {ch!r}")


def check_query(event: Any, seen: Seen) -> Iterator[Issue]:
    """A2: query keys and values are exactly as in the raw URL, so they never hold what a URL cannot carry."""
    if not isinstance(event, dict):
        return
    for field in _QUERY_FIELDS:
        mapping = event.get(field)
        if not isinstance(mapping, dict):
            continue
        base = child_path("$", field)
        for key, value in dict.items(mapping):  # a subclass's own items() may raise
            if not isinstance(key, str):
                continue
            where = child_path(base, key)
            found = _NOT_IN_RAW_URL.search(key)
            if found:
                yield warning(where, "decoded",
                              f"The query key '{key}' holds {_char_name(found.group())}, which a raw URL cannot "
                              "carry: the load balancer passes keys exactly as written in the URL, percent-encoded "
                              "(not decoded).", "A2")
            values = value if isinstance(value, list) else [value]
            for i, item in enumerate(values):
                found = _NOT_IN_RAW_URL.search(item) if isinstance(item, str) else None
                if found:
                    yield warning(f"{where}[{i}]" if isinstance(value, list) else where, "decoded",
                                  f"The query value {json.dumps(item)} holds {_char_name(found.group())}, which a raw "
                                  "URL cannot carry: the load balancer passes values exactly as written in the URL, "
                                  "percent-encoded (not decoded).", "A2")


def _has_trace_header(event: Any) -> bool:
    return any(isinstance(name, str) and name.lower() in _TRACE_BY_NAME
               for _, mapping in _header_maps(event) for name in mapping)


def check_health_check(event: Any, seen: Seen) -> Iterator[Issue]:
    """A11: an event from the health checker (its user-agent, no trace header) is GET / with no query or body.

    A request with a trace header came from a client, whatever user-agent it claims.
    """
    if not any(is_health_check(mapping) for _, mapping in _header_maps(event)) or _has_trace_header(event):
        return
    odd = []
    if event.get("httpMethod") != "GET":
        odd.append("the method is not GET")
    if event.get("path") != "/":
        odd.append("the path is not /")
    if event.get("body") not in (None, ""):
        odd.append("the body is not empty")
    if any(isinstance(event.get(k), dict) and event.get(k) for k in _QUERY_FIELDS):
        odd.append("there is a query")
    if odd:
        yield warning("$", "format", "The user-agent says ELB-HealthChecker and there is no trace header, but a "
                                     f"health check event is GET / with no query and body \"\": {', '.join(odd)}.",
                      "A11")


def check_never_forwarded(event: Any, seen: Seen) -> Iterator[Issue]:
    """A1: a WebSocket upgrade or a body over 1 MB never reaches the function."""
    for key, mapping in _header_maps(event):
        upgrade = mapping.get("upgrade")
        values = upgrade if isinstance(upgrade, list) else [upgrade]
        if any(isinstance(v, str) and "websocket" in v.lower() for v in values):
            yield error(child_path(child_path("$", key), "upgrade"), "refused",
                        "A WebSocket upgrade request is answered 400 by the load balancer itself; "
                        "no function ever receives this event.", "A1")
            break
    size = body_size(event)
    if size is not None and size > MAX_REQUEST_BODY:
        yield error("$.body", "limit", f"The body is {size:,} bytes, over the 1 MB limit ({MAX_REQUEST_BODY:,}); the "
                                       "load balancer answers 413 and no function receives this event.", "A1")


EVENT_CHECKS = [
    check_never_forwarded,
    check_forms,
    check_header_names,
    check_trace_header,
    check_target_group,
    check_path,
    check_body,
    check_query,
    check_health_check,
]


def body_size(event: Any) -> int | None:
    """The request body's size in bytes (decoded when base64), or None when the event has no string body."""
    if not isinstance(event, dict):
        return None
    body = event.get("body")
    if not isinstance(body, str):
        return None
    if event.get("isBase64Encoded") is True:
        if not is_strict_base64(body):
            return None
        return len(body) // 4 * 3 - len(body[-2:]) + len(body[-2:].rstrip("="))
    return len(body.encode("utf-8", "surrogatepass"))


# --- the happy path -------------------------------------------------------------------

_SINGLE_KEYS = frozenset({"requestContext", "httpMethod", "path", "queryStringParameters", "headers", "body",
                          "isBase64Encoded"})
_METHOD_SET = frozenset(METHODS)
_PROVIDER_TRACE = TRACE_HEADERS["provider"]
_AWS_TRACE = TRACE_HEADERS["aws"]
_SMALL_BODY = MAX_REQUEST_BODY // 4  # a text of this many characters is at most 1 MB in UTF-8
_MEMO_LIMIT = 4096
# Strings already seen to be fine: testing a set costs far less than checking each one again.
_PLAIN_NAMES: set[str] = set()  # header names that are lower-case strings, never "upgrade" (A1)
_RAW_QUERY_KEYS: set[str] = set()  # query keys holding only what a raw URL carries
_RAW_QUERY_VALUES: set[str] = set()  # query values holding only what a raw URL carries


def _remember(known: set[str], names: Any) -> None:
    if len(known) < _MEMO_LIMIT:
        known.update(name for name in names if type(name) is str)


def _plain_names(headers: dict) -> bool:
    """True when every header name is a lower-case string and none is `upgrade` (and remember them)."""
    names = "".join(headers)  # TypeError unless every name is a string
    if names != names.lower() or "upgrade" in headers:
        return False
    _remember(_PLAIN_NAMES, headers)
    return True


def _raw_query(query: dict) -> bool:
    """True when every query key and value is a string a raw URL can carry (and remember them)."""
    keys = "".join(query)  # TypeError unless every key is a string
    values = "".join(query.values())  # and every value
    if _NOT_IN_RAW_URL.search(keys) or _NOT_IN_RAW_URL.search(values):
        return False
    _remember(_RAW_QUERY_KEYS, query)
    _remember(_RAW_QUERY_VALUES, query.values())
    return True


def full_check(event: Any, multi_value: bool | None = None) -> Report:
    """The complete check: the shape's walk and every rule check (what `validate_event` falls back to)."""
    options = None if multi_value is None else {"multi_value": multi_value}
    return validate_value(event, EVENT_SHAPE, EVENT_CHECKS, source=SOURCE, options=options)


# --- the verbs --------------------------------------------------------------------------


def _make_validate_event():  # noqa: C901 - one straight happy path, on purpose
    # Names used on the happy path are closure cells: faster to reach than globals.
    dict_, str_, bool_, methods, keys, arns = dict, str, bool, _METHOD_SET, _SINGLE_KEYS, _ARN_DIALECTS
    provider, aws, small, names = _PROVIDER_TRACE, _AWS_TRACE, _SMALL_BODY, _PLAIN_NAMES
    query_keys, query_values = _RAW_QUERY_KEYS, _RAW_QUERY_VALUES
    clean = {dialect: Report((), SOURCE, dialect, "event") for dialect in DIALECTS}  # shared, never changed
    no_query: dict = {}
    full, arn_of, plain_names, raw_query, text_body, strict_b64 = (
        full_check, arn_dialect, _plain_names, _raw_query, is_text_body, is_strict_base64)

    def validate_event(event: Any, *, multi_value: bool | None = None) -> Report:
        """Every problem of a load balancer event, located; never raises, whatever it is given.

        `multi_value`: when given, also say whether the event's form matches that setting (A3).
        """
        # The happy path: a single-value event with no issue at all is recognised in a few
        # look-ups and C-level passes. It only accepts what the full check accepts without
        # a word (the tests hold it to that); anything else, or any doubt, goes to `full`.
        if multi_value is True or type(event) is not dict_:
            return full(event, multi_value)
        e = event
        try:
            if len(e) == 7:  # every field of a single-value event, so no unknown one
                body = e["body"]
                q = e["queryStringParameters"]
            elif keys.issuperset(e):
                body = e.get("body", "")
                q = e.get("queryStringParameters", no_query)
            else:
                return full(event, multi_value)
            rc = e["requestContext"]
            elb = rc["elb"]
            h = e["headers"]
            path = e["path"]
            method = e["httpMethod"]
            encoded = e["isBase64Encoded"]
            "".join(h.values())  # TypeError unless every header value is a string (and h has values)
            # a str subclass may pass these tests: the full check's walk accepts it too
            if (type(rc) is not dict_ or type(elb) is not dict_ or len(rc) + len(elb) != 2  # each has one at least
                    or type(h) is not dict_ or type(q) is not dict_ or path[:1] != "/" or method not in methods
                    or not (names.issuperset(h) or plain_names(h))):
                return full(event, multi_value)
            dialect = arns.get(elb["targetGroupArn"]) or arn_of(elb["targetGroupArn"])
            if q and not (query_keys.issuperset(q) and query_values.issuperset(q.values()) or raw_query(q)):
                return full(event, multi_value)  # a character a raw URL cannot carry (A2)
            if body == "":
                if type(encoded) is not bool_:
                    return full(event, multi_value)
            elif (type(body) is not str_ or method == "GET" or len(body) > small  # A2, A1
                  or (encoded is not True and (encoded is not False or "content-encoding" in h
                                               or not text_body(h.get("content-type"))))  # A4
                  or (encoded is True and not strict_b64(body))):  # A4
                return full(event, multi_value)
            if provider in h:
                if dialect != "provider" or aws in h:
                    return full(event, multi_value)
            elif aws in h:
                if dialect != "aws":
                    return full(event, multi_value)
            elif (method != "GET" or path != "/" or body or q
                  or not h.get("user-agent", "").startswith("ELB-HealthChecker")):
                return full(event, multi_value)  # without a trace header, only a proper health check (AS3, A11)
            return clean[dialect]  # (no dialect: KeyError, the full check says why)
        except (KeyError, TypeError, AttributeError, ValueError):
            pass
        return full(event, multi_value)

    return validate_event


validate_event = _make_validate_event()


def parse_event(event: Any) -> Any:
    """The event as frozen dataclasses (`e.request_context.elb.target_group_arn`); ContractError when invalid."""
    report = validate_event(event)
    if not report.ok:
        raise ContractError(report)
    value, _ = decode_json(event, "G0")
    return EVENT_SHAPE.parse(value)


def looks_like(event: Any) -> bool:
    """True when the value is shaped like a load balancer event (for source detection)."""
    if not isinstance(event, dict) or "httpMethod" not in event:
        return False
    context = event.get("requestContext")
    if isinstance(context, dict) and "elb" in context:
        return True
    return "path" in event and "isBase64Encoded" in event


def correlation_ids(event: Any) -> list[str]:
    """[the trace header's value] (either spelling), or [] when there is none (AS3)."""
    for name in (_PROVIDER_TRACE, _AWS_TRACE):
        value = _header_value(event, name)
        if value is not None:
            return [value]
    return []


# --- building ----------------------------------------------------------------------------


def _query_text(query: Any) -> str:
    if query is None:
        return ""
    if isinstance(query, (bytes, bytearray)):
        query = bytes(query).decode("latin-1")
    if isinstance(query, str):
        return query[1:] if query.startswith("?") else query
    return encode_query(_pairs(query, "query"))


def _pairs(items: Any, what: str) -> list[tuple[str, str]]:
    """A mapping (values may be lists: repeats) or an iterable of pairs, as (str, str) pairs in order."""
    out: list[tuple[str, str]] = []
    source: Iterable = items.items() if isinstance(items, Mapping) else items
    for entry in source:
        try:
            name, value = entry
        except (TypeError, ValueError):
            raise TypeError(f"{what} must be a mapping or (name, value) pairs, got {entry!r}") from None
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            out.append((str(name), v.decode("latin-1") if isinstance(v, (bytes, bytearray)) else str(v)))
    return out


def _body_bytes(body: Any, headers: list[tuple[str, str]]) -> bytes:
    if body is None:
        return b""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (dict, list)):
        if not any(name.lower() == "content-type" for name, _ in headers):
            headers.append(("content-type", "application/json"))
        return json.dumps(body, separators=(",", ":")).encode("utf-8")
    raise TypeError(f"body must be bytes, text, or a dict/list (sent as JSON), got {type(body).__name__}")


def build_event(
    method: str = "GET",
    path: str = "/",
    *,
    query: Any = None,
    headers: Any = None,
    body: Any = b"",
    multi_value: bool = False,
    target_group_arn: str | None = None,
    dialect: str = "provider",
    seed: int = 0,
    client_ip: str = DEFAULT_CLIENT_IP,
    port: int = 80,
    proto: str = "http",
    host: str = DEFAULT_HOST,
) -> dict:
    """A valid load balancer event for one request, deterministic for a seed (A2, A3, A4).

    `query`: the raw query string (kept exactly, never decoded), or plain pairs / a mapping
    (percent-encoded as a client would); a `path` holding '?' also brings its query.
    `headers`: a mapping or (name, value) pairs, repeats allowed (last wins, or all with
    `multi_value`). `body`: bytes, text (UTF-8), or a dict/list sent as JSON.
    """
    method = str(method).upper()
    if method not in METHODS:
        raise ValueError(f"the load balancer forwards only {', '.join(METHODS)} to a function, not {method}")
    if dialect not in DIALECTS:
        raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, not {dialect!r}")
    if not isinstance(path, str) or not path.startswith("/"):
        raise ValueError(f"path must start with '/', got {path!r}")
    path, mark, path_query = path.partition("?")
    raw_query = _query_text(query)
    if mark and query is None:
        raw_query = path_query
    header_pairs = _pairs(headers or (), "headers")
    data = _body_bytes(body, header_pairs)
    if len(data) > MAX_REQUEST_BODY:
        raise ValueError(f"a body of {len(data):,} bytes is over the 1 MB limit: the load balancer answers 413 and "
                         "never invokes the function (A1); see fnkit.alb.refusal")
    if any(n.lower() == "upgrade" and "websocket" in v.lower() for n, v in header_pairs):
        raise ValueError("a WebSocket upgrade is answered 400 by the load balancer and never reaches the function "
                         "(A1); see fnkit.alb.refusal")
    return request_to_event(
        method, path, raw_query, header_pairs, data, multi_value,
        target_group_arn=target_group_arn, dialect=dialect, trace=seeded_trace_id(seed),
        client_ip=client_ip, port=port, proto=proto, host=host,
    )


def health_check_event(*, multi_value: bool = False, target_group_arn: str | None = None,
                       dialect: str = "provider") -> dict:
    """The event a load balancer health check sends (A11): GET /, `{}` query, only a user-agent, empty body."""
    if dialect not in DIALECTS:
        raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, not {dialect!r}")
    return _health_check_event(multi_value=multi_value, target_group_arn=target_group_arn, dialect=dialect)


def query_pairs(event: Any) -> list[tuple[str, str]]:
    """Every (key, value) of the event's query, in order, exactly as the raw URL had them."""
    if not isinstance(event, dict):
        return []
    multi = event.get("multiValueQueryStringParameters")
    if isinstance(multi, dict):
        return [(k, v) for k, vs in dict.items(multi) if isinstance(vs, list) for v in vs]
    single = event.get("queryStringParameters")
    if isinstance(single, dict):
        return list(dict.items(single))
    return []


__all__ = [
    "EVENT_SHAPE", "EVENT_CHECKS", "build_event", "health_check_event", "validate_event", "parse_event",
    "looks_like", "correlation_ids", "body_size", "query_pairs", "split_query", "arn_dialect",
]
