"""Pure conversions between HTTP and the load balancer contract, shared by `outcome` and `serve`.

request → event (A2, A3, A4), the checks made before invoking (A1, A14), and a valid
response object → status, reason, header pairs and body bytes (A7, A8, A9, A10, A13).
No I/O here: the server and the simulator call these with what they have.
"""

from __future__ import annotations

import base64
import random
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

from .._engine.findings import Finding, problem
from .._settings.project import Dialect, resolve_dialect
from ..rules import id_of, rule

if TYPE_CHECKING:
    from ..types import AlbEvent

#: The largest request body the load balancer forwards (A1); one byte more gets 413.
MAX_REQUEST_BODY = 1_048_576
#: The largest response JSON the load balancer accepts from the function (A5).
MAX_RESPONSE_JSON = 1_048_576

METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")
TRACE_HEADERS = {"provider": "x-provider-trace-id", "aws": "x-amzn-trace-id"}
ARN_PARTITIONS = {"provider": "provider", "aws": "aws"}
HEALTH_CHECK_USER_AGENT = "ELB-HealthChecker/2.0"
DEFAULT_HOST = "alb.example.com"
DEFAULT_CLIENT_IP = "198.51.100.7"  # TEST-NET-2: an address that is nobody's
DEFAULT_REGION = "us-east-1"
DEFAULT_ACCOUNT = "123456789012"

# A4: bodies of these content types reach the function as text (when they are UTF-8), and every text/*
TEXT_TYPES = frozenset({"application/json", "application/javascript", "application/xml"})
# A4 in one sentence: the code's warning, the lesson (03) and the exercise (03) all say it in these words
# (tests/alb/test_text_bodies.py holds them to it and to TEXT_TYPES)
TEXT_BODIES = (
    "A request body reaches the function as text when its content type is text/*, application/json, "
    "application/javascript or application/xml, it is UTF-8 and it has no content-encoding header; "
    "any other body arrives base64-encoded, with isBase64Encoded true."
)

# A7: connection-level headers the load balancer never passes on
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)

# A13: what HTTP/1.1 can carry in a header (RFC 9110 token; a value without CR, LF, NUL or other controls)
HEADER_NAME = re.compile(r"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")
BAD_HEADER_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")

# strict base64: the standard alphabet, padded to a multiple of 4, '=' only at the end
_B64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def is_strict_base64(text: str) -> bool:
    """True when `text` is standard, padded base64 with no whitespace or other characters."""
    return len(text) % 4 == 0 and _B64.fullmatch(text) is not None


def reason_phrase(status: int) -> str:
    """The standard reason phrase of a status code ('' when the code has none)."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def make_target_group_arn(
    dialect: Dialect | None = None,
    *,
    name: str = "fnkit-targets",
    region: str = DEFAULT_REGION,
    account: str = DEFAULT_ACCOUNT,
    suffix: str = "49e9d65c45c6791a",
) -> str:
    """A well-formed target group ARN in the dialect's spelling (`arn:provider:` or `arn:aws:`)."""
    partition = ARN_PARTITIONS[resolve_dialect(dialect)]
    return f"arn:{partition}:elasticloadbalancing:{region}:{account}:targetgroup/{name}/{suffix}"


_RNG = random.Random()


def trace_id(rng: random.Random | None = None, *, epoch_s: int | None = None) -> str:
    """A trace header value `Root=1-xxxxxxxx-yyyyyyyyyyyyyyyyyyyyyyyy` (time in hex, 96 random bits)."""
    rng = rng or _RNG
    if epoch_s is None:
        epoch_s = int(time.time())
    return f"Root=1-{epoch_s & 0xFFFFFFFF:08x}-{rng.getrandbits(96):024x}"


def seeded_trace_id(seed: int) -> str:
    """The trace header value the builder uses for `seed` (same seed, same value)."""
    rng = random.Random(f"fnkit.alb.trace:{seed}")
    # a fixed day in 2026 plus up to a year: looks real, never changes for a seed
    return trace_id(rng, epoch_s=1_767_225_600 + rng.randrange(365 * 86_400))


# --- request → event --------------------------------------------------------------


def as_text(data: str | bytes | bytearray | None) -> str:
    """Bytes off the wire as text: UTF-8 when they are, else Latin-1 (never fails, never loses a byte)."""
    if data is None:
        return ""
    if isinstance(data, str):
        return data
    data = bytes(data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def split_query(raw_query: str) -> list[tuple[str, str]]:
    """The key/value pairs of a raw query string, exactly as written (no percent-decoding, '+' kept)."""
    pairs = []
    for piece in raw_query.split("&"):
        if not piece:
            continue
        key, _, value = piece.partition("=")
        pairs.append((key, value))
    return pairs


def encode_query(pairs: Iterable[tuple[Any, Any]]) -> str:
    """Plain (decoded) key/value pairs as a raw query string, percent-encoded the way a client does."""
    return "&".join(f"{quote(str(k), safe='')}={quote(str(v), safe='')}" for k, v in pairs)


def query_parameters(raw_query: str, multi_value: bool) -> dict[str, Any]:
    """`queryStringParameters` (last value wins) or `multiValueQueryStringParameters` (all, in order) (A2, A3)."""
    out: dict[str, Any] = {}
    if multi_value:
        for key, value in split_query(raw_query):
            out.setdefault(key, []).append(value)
    else:
        out.update(split_query(raw_query))
    return out


def header_parameters(pairs: Iterable[tuple[str, str]], multi_value: bool) -> dict[str, Any]:
    """`headers` (lower-case names, last value wins) or `multiValueHeaders` (all values, in order) (A2, A3)."""
    out: dict[str, Any] = {}
    if multi_value:
        for name, value in pairs:
            out.setdefault(name.lower(), []).append(value)
    else:
        for name, value in pairs:
            out[name.lower()] = value
    return out


def media_type(content_type: str | None) -> str:
    """`text/html; charset=utf-8` → `text/html`."""
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def is_text_body(content_type: object) -> bool:
    """True when A4 sends a body of this content type as text (`text/*`, JSON, JavaScript, XML), when it is UTF-8
    and has no content-encoding."""
    kind = media_type(content_type) if isinstance(content_type, str) else ""
    return kind.startswith("text/") or kind in TEXT_TYPES


def encode_request_body(body: bytes, content_type: str | None, content_encoding: str | None) -> tuple[str, bool]:
    """The event's `body` and `isBase64Encoded` for a request body (A4)."""
    if not body:
        return "", False
    if content_encoding is None and is_text_body(content_type):
        try:
            return body.decode("utf-8"), False
        except UnicodeDecodeError:
            pass
    return base64.b64encode(body).decode("ascii"), True


def _last(pairs: list[tuple[str, str]], name: str) -> str | None:
    found = None
    for key, value in pairs:
        if key == name:
            found = value
    return found


def request_to_event(
    method: str,
    raw_path: str | bytes,
    raw_query: str | bytes | None,
    header_pairs: Iterable[tuple[str | bytes, str | bytes]],
    body_bytes: bytes,
    multi_value: bool = False,
    *,
    target_group_arn: str | None = None,
    dialect: Dialect | None = None,
    trace: str | None = None,
    client_ip: str = DEFAULT_CLIENT_IP,
    port: int = 80,
    proto: str = "http",
    host: str = DEFAULT_HOST,
) -> AlbEvent:
    """The event the load balancer sends for one HTTP request (A2, A3, A4).

    The path and query are kept exactly as in the raw URL (never percent-decoded); header
    names are lower-cased; `x-forwarded-for/-port/-proto`, the trace header (`trace`, or a
    fresh one) and `host` (when the client sent none) are added.
    """
    dialect = resolve_dialect(dialect)
    pairs = [(as_text(k).lower(), as_text(v)) for k, v in header_pairs]
    names = {k for k, _ in pairs}
    forwarded_for = [v for k, v in pairs if k == "x-forwarded-for"]
    # the load balancer owns these: x-forwarded-for gets the client appended, port and proto replaced
    pairs = [(k, v) for k, v in pairs if k not in ("x-forwarded-for", "x-forwarded-port", "x-forwarded-proto")]
    if "host" not in names:
        pairs.insert(0, ("host", host))
    if not names & {"x-provider-trace-id", "x-amzn-trace-id"}:
        pairs.append((TRACE_HEADERS.get(dialect, TRACE_HEADERS["provider"]), trace or trace_id()))
    pairs.append(("x-forwarded-for", ", ".join([*forwarded_for, client_ip])))
    pairs.append(("x-forwarded-port", str(port)))
    pairs.append(("x-forwarded-proto", proto))

    body, b64 = encode_request_body(
        bytes(body_bytes or b""), _last(pairs, "content-type"), _last(pairs, "content-encoding")
    )
    query = as_text(raw_query or b"")
    query = query.removeprefix("?")
    event: dict[str, Any] = {
        "requestContext": {"elb": {"targetGroupArn": target_group_arn or make_target_group_arn(dialect)}},
        "httpMethod": method.upper(),
        "path": as_text(raw_path) or "/",
    }
    if multi_value:
        event["multiValueQueryStringParameters"] = query_parameters(query, True)
        event["multiValueHeaders"] = header_parameters(pairs, True)
    else:
        event["queryStringParameters"] = query_parameters(query, False)
        event["headers"] = header_parameters(pairs, False)
    event["body"] = body
    event["isBase64Encoded"] = b64
    return cast("AlbEvent", event)


def health_check_event(
    *, multi_value: bool = False, target_group_arn: str | None = None, dialect: Dialect | None = None
) -> AlbEvent:
    """The event of a load balancer health check (A11): GET /, no query, only a user-agent header."""
    event: dict[str, Any] = {
        "requestContext": {"elb": {"targetGroupArn": target_group_arn or make_target_group_arn(dialect)}},
        "httpMethod": "GET",
        "path": "/",
    }
    if multi_value:
        event["multiValueQueryStringParameters"] = {}
        event["multiValueHeaders"] = {"user-agent": [HEALTH_CHECK_USER_AGENT]}
    else:
        event["queryStringParameters"] = {}
        event["headers"] = {"user-agent": HEALTH_CHECK_USER_AGENT}
    event["body"] = ""
    event["isBase64Encoded"] = False
    return cast("AlbEvent", event)


def is_health_check(headers: Any) -> bool:
    """True when a `headers`/`multiValueHeaders` mapping carries the health checker's user-agent."""
    if not isinstance(headers, dict):
        return False
    agent = headers.get("user-agent")
    if isinstance(agent, (list, tuple)):
        agent = agent[-1] if agent else None
    return isinstance(agent, str) and agent.startswith("ELB-HealthChecker")


# --- before invoking (A1, A14) ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Refusal:
    """The load balancer answers by itself: `status`, the `rule` and a sentence saying why; `finding`: the same as
    its rule's finding, where the rule's function says one (A1's: at the value it read, which the event check
    locates)."""

    status: int
    rule: str
    why: str
    finding: Finding | None = field(default=None, compare=False, repr=False)


def header_values(header_pairs: Iterable[tuple[object, object]], name: str) -> list[str]:
    """Every text value of the header `name` (lower-case) among name/value pairs, names in any case, in order."""
    return [
        value
        for key, value in header_pairs
        if isinstance(key, str) and isinstance(value, str) and len(key) == len(name) and key.lower() == name
    ]


_NONE: tuple[Refusal, ...] = ()


@rule(
    "A1",
    "alb",
    "contract",
    "Before invoking: a WebSocket upgrade gets 400; a body over 1 MB gets 413; the function is not invoked.",
)
def never_forwarded(upgrade: object, body_size: int | None, *, body_complete: bool = True) -> tuple[Refusal, ...]:
    """A1: what the load balancer answers by itself for a request it never forwards (400, then 413), or ().

    `upgrade`: the value of the request's `upgrade` header (a string, a list of its values, or
    None); `body_size`: the request body's size in bytes (None when unknown); `body_complete`:
    False while the body is still arriving (the size is then what has been read so far). Every
    caller asks this one function: the event check, `build_event`, `refusal`, the server.
    """
    found = _NONE
    if upgrade is not None:
        for value in upgrade if isinstance(upgrade, (list, tuple)) else (upgrade,):
            if isinstance(value, str) and "websocket" in value.lower():
                why = (
                    "A WebSocket upgrade request gets 400 from the load balancer itself: it never forwards "
                    "WebSockets to a function, which is not invoked."
                )
                found = (Refusal(400, id_of(never_forwarded), why, problem("refused", why, of=never_forwarded)),)
                break
    if body_size is not None and body_size > MAX_REQUEST_BODY:
        size = f"{body_size:,} bytes" if body_complete else f"over {MAX_REQUEST_BODY:,} bytes (reading stopped there)"
        why = (
            f"The request body is {size}, over the 1 MB limit ({MAX_REQUEST_BODY:,} bytes): the load "
            "balancer answers 413 and the function is not invoked."
        )
        found += (Refusal(413, id_of(never_forwarded), why, problem("limit", why, of=never_forwarded)),)
    return found


@rule(
    "A14",
    "alb",
    "inferred",
    "A request whose method is not DELETE, GET, HEAD, OPTIONS, PATCH, POST or PUT is "
    "answered 405 by the load balancer; the function is not invoked.",
    severity="outcome",
)
def method_refused(method: object) -> Refusal | None:
    """A14 (inferred): a method the load balancer does not forward to a function gets 405."""
    if isinstance(method, str) and method.upper() not in METHODS:
        return Refusal(
            405,
            id_of(method_refused),
            f"The method {method} is not one the load balancer forwards to a function "
            "(DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT): 405, not invoked (inferred).",
        )
    return None


def refusal_for(method: Any, header_pairs: Iterable[tuple[str, str]], body_length: int | None) -> Refusal | None:
    """What the load balancer answers without invoking the function (A1, then A14), or None when it invokes it."""
    found = never_forwarded(header_values(header_pairs, "upgrade"), body_length)
    return found[0] if found else method_refused(method)


def error_page(status: int) -> tuple[list[tuple[str, str]], bytes]:
    """The load balancer's own answer page for `status`: header pairs and body."""
    title = f"{status} {reason_phrase(status)}".strip()
    body = (
        f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n<center><h1>{title}</h1></center>\r\n"
        f"</body>\r\n</html>\r\n"
    ).encode("ascii")
    return [("content-type", "text/html"), ("content-length", str(len(body)))], body


# --- a valid response object → HTTP ----------------------------------------------


@dataclass(frozen=True, slots=True)
class HttpParts:
    """A response as it goes on the wire, plus the rules that shaped it."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    described: bool  # the function gave statusDescription
    rules: tuple[str, ...]
    notes: tuple[str, ...]


@rule(
    "A8", "alb", "doc", "isBase64Encoded true: the body is decoded before it reaches the client.", severity="behaviour"
)
def response_body_bytes(response: Mapping[str, Any]) -> bytes:
    """The body the client receives: base64-decoded when `isBase64Encoded` is true (A8), else UTF-8."""
    body = response.get("body")
    if not isinstance(body, str) or not body:
        return b""
    if response.get("isBase64Encoded") is True:
        return base64.b64decode(body)
    return body.encode("utf-8", "replace")


def response_header_pairs(response: Mapping[str, Any], multi_value: bool) -> list[tuple[str, str]]:
    """Name/value pairs of the active header field (A7), repeats kept, names as the function wrote them."""
    if multi_value:
        field = response.get("multiValueHeaders")
        if not isinstance(field, dict):
            return []
        return [
            (name, value)
            for name, values in dict.items(field)
            if isinstance(values, list)
            for value in values
            if isinstance(value, str)
        ]
    field = response.get("headers")
    if not isinstance(field, dict):
        return []
    return [(name, value) for name, value in dict.items(field) if isinstance(value, str)]


def description_reason(description: str, status: int) -> str:
    """`statusDescription` ("404 Not Found") as a reason phrase ("Not Found")."""
    code, _, rest = description.partition(" ")
    if code == str(status):
        return rest.strip()
    return description.strip()


STANDARD_REASON = rule(
    "A9",
    "alb",
    "inferred",
    "statusDescription is optional; when absent the standard reason phrase is used.",
    severity="warning",
)


HEADERS_KEPT = rule(
    "A7",
    "alb",
    "contract",
    "Multi-value off: only headers is read; on: only multiValueHeaders; cookies as a list "
    "under one key; hop-by-hop headers dropped, Content-Length recomputed.",
    severity="warning",
)


NO_BODY_STATUS = rule(
    "A13",
    "alb",
    "inferred",
    "What HTTP cannot carry is not sent: a header name that is not a token, a header value "
    "or statusDescription with a line break or control character, or a 1xx statusCode makes the response "
    "invalid (502); a 204 or 304 response goes without a body.",
)


DELIVERED = rule(
    "AS4",
    "alb",
    "contract",
    "A valid response object (statusCode, statusDescription, isBase64Encoded, headers or "
    "multiValueHeaders, body) becomes the HTTP response the client receives.",
    origin="spec",
    severity="outcome",
)


@rule(
    "A10",
    "alb",
    "inferred",
    "HEAD reaches the function as httpMethod HEAD; the client gets the headers and no body.",
    severity="behaviour",
)
def response_to_http(response: Mapping[str, Any], *, method: str = "GET", multi_value: bool = False) -> HttpParts:
    """A valid response object as the client receives it (A7, A8, A9, A10, A13)."""
    status = response["statusCode"]
    rules: list[str] = [DELIVERED.id]
    notes: list[str] = []
    description = response.get("statusDescription")
    if isinstance(description, str):
        reason = description_reason(description, status)
        described = True
    else:
        reason = reason_phrase(status)
        described = False
        rules.append(STANDARD_REASON.id)
        notes.append(
            f"no statusDescription: the standard reason phrase '{reason}' is used ({STANDARD_REASON.id}, inferred)"
        )
    body = response_body_bytes(response)
    if response.get("isBase64Encoded") is True and response.get("body"):
        rules.append(id_of(response_body_bytes))
        notes.append(f"the base64 body is decoded before it reaches the client ({id_of(response_body_bytes)})")
    pairs = response_header_pairs(response, multi_value)
    kept = [(n, v) for n, v in pairs if n.lower() not in HOP_BY_HOP and n.lower() != "content-length"]
    if len(kept) != len(pairs):
        dropped = sorted({n for n, _ in pairs if n.lower() in HOP_BY_HOP})
        rules.append(HEADERS_KEPT.id)
        if dropped:
            notes.append(f"hop-by-hop header(s) {', '.join(dropped)} dropped ({HEADERS_KEPT.id})")
    length = len(body)
    if status in (204, 304):
        if body:
            rules.append(NO_BODY_STATUS.id)
            notes.append(
                f"a {status} response carries no body: the {len(body)} byte(s) are not sent "
                f"({NO_BODY_STATUS.id}, inferred)"
            )
        body = b""
    else:
        kept.append(("content-length", str(length)))
    if method == "HEAD":
        if body:
            notes.append(f"HEAD: the client gets the headers and no body ({id_of(response_to_http)}, inferred)")
        rules.append(id_of(response_to_http))
        body = b""
    return HttpParts(status, reason, kept, body, described, tuple(rules), tuple(notes))
