"""The load balancer response object: its shape, rule checks and `validate_response`.

Rules: A5 (size), A6 (what makes a response invalid: 502), A7 (which header field is
read, cookies, hop-by-hop), A9 (reason phrase), A12 (status range), A13 (what HTTP
cannot carry). `deciding_rule` turns a report into the 502's rule: `outcome` decides from
the very report `validate_response` gives.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Any, Unpack

from .._engine.codec import encode_response
from .._engine.findings import Finding, cannot_encode, caution, place, problem
from .._engine.report import Issue, Raw, Report, decode_json
from .._engine.shape import ANY, BOOL, INT, STR, F, ListOf, MapOf, Shape, two_spellings, unknown_key
from .._engine.validate import Check, Contract, Seen
from .._settings.config import with_settings
from ..rules import id_of, rule
from . import _event
from ._config import BAD_GATEWAY, AlbConfig, AlbMultiValueSetting
from ._http import (
    BAD_HEADER_VALUE,
    HEADER_NAME,
    HEADERS_KEPT,
    HOP_BY_HOP,
    MAX_RESPONSE_JSON,
    NO_BODY_STATUS,
    STANDARD_REASON,
    is_strict_base64,
    never_forwarded,
    response_body_bytes,
)

SOURCE = "alb"

RESPONSE_SHAPE = Shape(
    "LoadBalancerResponse",
    [
        F("statusCode", INT, doc='The HTTP status code, an integer (the string "200" is invalid).'),
        F(
            "statusDescription",
            STR,
            required=False,
            rule="A6",
            doc='Status code and reason phrase ("200 OK"); without it the standard phrase is used (A9, inferred).',
        ),
        F(
            "isBase64Encoded",
            BOOL,
            required=False,
            doc="True when body is base64; the client gets the decoded bytes (A8).",
        ),
        F(
            "headers",
            MapOf(STR),
            required="multi-value headers off",
            rule="A6",
            doc="Response headers (read only when multi-value headers are off).",
        ),
        F(
            "multiValueHeaders",
            MapOf(ListOf(STR)),
            required="multi-value headers on",
            rule="A6",
            doc="Each header's list of values (read only when multi-value headers are on); cookies: one key, a list.",
        ),
        F("body", STR, required=False, doc="The response body: text, or base64 when isBase64Encoded is true."),
    ],
    "A6",
    doc="What a function returns to the load balancer.",
)


def _mode_shape(multi_value: bool) -> Shape:
    """RESPONSE_SHAPE as one mode reads it: the header field it ignores may hold anything (A7)."""
    ignored = "headers" if multi_value else "multiValueHeaders"
    fields = [dataclasses.replace(f, type=ANY) if f.key == ignored else f for f in RESPONSE_SHAPE.fields]
    return Shape(RESPONSE_SHAPE.name, fields, RESPONSE_SHAPE.rule, RESPONSE_SHAPE.unknown, RESPONSE_SHAPE.doc)


_SHAPES = {False: _mode_shape(False), True: _mode_shape(True)}
_DESCRIPTION_CODE = re.compile(r"\s*(\d{3})\b")


def active_field(multi_value: bool) -> str:
    """The header field the load balancer reads: `multiValueHeaders` when multi-value headers are on (A7)."""
    return "multiValueHeaders" if multi_value else "headers"


def _active_pairs(response: Any, seen: Seen) -> list[tuple[str, Any]]:
    """(name, value-or-list) for each entry of the active header field, when it is a dict."""
    mapping = response.get(active_field(bool(seen.options.get("multi_value")))) if isinstance(response, dict) else None
    if not isinstance(mapping, dict):
        return []
    # dict.items: a subclass's own items() may raise
    return [(name, value) for name, value in dict.items(mapping) if isinstance(name, str)]


def _header_at(seen: Seen, name: str) -> tuple[str, str]:
    """The keys of a header of the active field, below the response."""
    return active_field(bool(seen.options.get("multi_value"))), name


def _values(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [v for v in items if isinstance(v, str)]


# --- rule checks -------------------------------------------------------------------------


@BAD_GATEWAY
def check_size(response: Any, seen: Seen) -> Iterator[Finding]:
    """A5: the response JSON is at most 1 MB."""
    size = seen.options.get("size")
    if isinstance(size, int) and size > MAX_RESPONSE_JSON:
        yield problem(
            "limit",
            f"The response JSON is {size:,} bytes, over the 1 MB limit ({MAX_RESPONSE_JSON:,}): "
            "the load balancer answers 502.",
        )


def judge_too_large(multi_value: bool, text: str, size: int) -> list[Any]:
    """`checked_response` of a response JSON text over the limit (`check_size`), as data: run in the worker that
    holds the text, so only this travels back. [dialect, [[path, code, message, severity, rule], ...]]."""
    return checked_response(Raw(text), multi_value, size).as_data()


def too_large_report(size: int, judged: Any = None) -> Report:
    """The report of a response the worker measured over the limit and did not send back: what
    `judge_too_large` made of it there, else (no judgment came) its size alone."""
    try:
        return Report.from_data(judged, SOURCE, "response")
    except (TypeError, ValueError):
        return Report(place(check_size(None, Seen({"size": size})), check_size), SOURCE, None, "response")


@rule("A12", "alb", "inferred", "statusCode outside 100-599 is an invalid response (502).")
def check_status(response: Any, seen: Seen) -> Iterator[Finding]:
    """A12 (inferred): statusCode is an HTTP status code, 100-599 (a 1xx is A13's: HTTP cannot end with one)."""
    status = response.get("statusCode") if isinstance(response, dict) else None
    if not isinstance(status, int) or isinstance(status, bool) or 100 <= status <= 599:
        return
    digits = len(str(abs(status))) if status.bit_length() < 10_000 else "thousands of"
    shown = status if abs(status) < 10**12 else f"{'-' if status < 0 else ''}of {digits} digits"
    yield problem(
        "limit",
        f"statusCode {shown} is outside 100-599, so it is no HTTP status: 502 (rule {id_of(check_status)}, inferred).",
        "statusCode",
    )


@STANDARD_REASON
def check_description(response: Any, seen: Seen) -> Iterator[Finding]:
    """A9: statusDescription starts with the status code it describes."""
    if not isinstance(response, dict):
        return
    description, status = response.get("statusDescription"), response.get("statusCode")
    if not isinstance(description, str) or not isinstance(status, int) or isinstance(status, bool):
        return
    found = _DESCRIPTION_CODE.match(description)
    if found and int(found.group(1)) != status:
        yield caution(
            "mismatch",
            f"statusDescription says {found.group(1)} but statusCode is {status}; the client gets status "
            f"{status} with this text as its reason phrase.",
            "statusDescription",
        )


@rule(
    "A6",
    "alb",
    "observed",
    "Invalid response (not an object, statusCode missing or not an integer, bad "
    "isBase64Encoded, body or statusDescription not a string, header field null, header values not strings, bad "
    "base64): 502.",
)
def check_body_encoding(response: Any, seen: Seen) -> Iterator[Finding]:
    """A6 beyond the structure its shape declares (`RESPONSE_SHAPE`, whose walk names A6 too): with
    isBase64Encoded true the body is strict base64."""
    if not isinstance(response, dict):
        return
    body = response.get("body")
    if response.get("isBase64Encoded") is True and isinstance(body, str) and not is_strict_base64(body):
        yield problem(
            "format",
            "isBase64Encoded is true but the body is not strict base64 (standard "
            "alphabet, '=' padding, no spaces or line breaks): 502.",
            "body",
        )


@HEADERS_KEPT
def check_header_fields(response: Any, seen: Seen) -> Iterator[Finding]:
    """A7: only the active header field is read (say so when the other one is there); hop-by-hop headers are
    dropped and Content-Length is recomputed; cookies go as one Set-Cookie key with a list (multi-value on), and
    keys differing in case stay apart."""
    if not isinstance(response, dict):
        return
    multi = bool(seen.options.get("multi_value"))
    active, ignored = active_field(multi), active_field(not multi)
    if ignored in response:
        state = "on" if multi else "off"
        yield caution(
            "ignored",
            f"Multi-value headers are {state}, so the load balancer reads only '{active}'; "
            f"'{ignored}' is ignored and none of its headers reach the client.",
            ignored,
        )
    length = None
    cookies = []
    for name, value in _active_pairs(response, seen):
        lower = name.lower()
        if lower in HOP_BY_HOP:
            yield caution("dropped", f"'{name}' is a hop-by-hop header: the load balancer drops it.", active, name)
        elif lower == "content-length":
            if length is None:
                try:
                    length = len(response_body_bytes(response))
                except ValueError:
                    length = -1  # bad base64: the response is invalid (A6), no length to compare
            given = _values(value)
            if length >= 0 and given != [str(length)]:
                yield caution(
                    "recomputed",
                    f"Content-Length says {', '.join(given) or 'nothing'} but the body is {length} byte(s): "
                    "the load balancer sends its own Content-Length.",
                    active,
                    name,
                )
        elif lower == "set-cookie":
            cookies.append(name)
    if len(cookies) < 2:
        return
    listed = ", ".join(f"'{n}'" for n in cookies)
    if multi:
        tip = "put every cookie in one list under a single 'Set-Cookie' key."
    else:
        tip = (
            "each is sent as its own Set-Cookie header (keys that differ only in case are kept apart), but the "
            "contract's way is multi-value headers: one 'Set-Cookie' key with a list of cookies."
        )
    yield caution("cookies", f"Several cookie keys differ only in case ({listed}): {tip}", active)


@NO_BODY_STATUS
def check_header_wire(response: Any, seen: Seen) -> Iterator[Finding]:
    """A13 (inferred): what HTTP/1.1 cannot carry: a 1xx final status, a reason phrase (it goes on the status line)
    or header value with a line break or control character, a header name that is not an HTTP token."""
    if not isinstance(response, dict):
        return
    status = response.get("statusCode")
    if isinstance(status, int) and not isinstance(status, bool) and 100 <= status < 200:
        yield problem(
            "limit",
            f"statusCode {status} is informational (1xx), which cannot be the final "
            f"answer to a request: 502 (rule {NO_BODY_STATUS.id}, inferred).",
            "statusCode",
        )
    description = response.get("statusDescription")
    if isinstance(description, str) and BAD_HEADER_VALUE.search(description):
        yield problem(
            "format",
            "statusDescription holds a line break or control character, which the status line's reason phrase "
            f"cannot carry: 502 (rule {NO_BODY_STATUS.id}, inferred).",
            "statusDescription",
        )
    for name, value in _active_pairs(response, seen):
        if not HEADER_NAME.fullmatch(name):
            yield problem(
                "format",
                f"'{name}' cannot be an HTTP header name (letters, digits and !#$%&'*+-.^_`|~ "
                f"only): 502 (rule {NO_BODY_STATUS.id}, inferred).",
                *_header_at(seen, name),
            )
            continue
        for v in _values(value):
            if BAD_HEADER_VALUE.search(v):
                yield problem(
                    "format",
                    f"The value of '{name}' holds a line break or control character, "
                    f"which an HTTP header cannot carry: 502 (rule {NO_BODY_STATUS.id}, inferred).",
                    *_header_at(seen, name),
                )
                break


RESPONSE_CHECKS: list[Check] = [
    check_size,
    check_status,
    check_header_wire,
    check_description,
    check_body_encoding,
    check_header_fields,
]


# the checks read the decoded response (what becomes the HTTP answer reads the same value)
_CONTRACTS = {
    multi: Contract(shape, RESPONSE_CHECKS, source=SOURCE, subject="response", plain=True)
    for multi, shape in _SHAPES.items()
}


def json_size(response: Any) -> int | None:
    """Bytes of the JSON text the load balancer would receive for `response` (None when JSON cannot encode it)."""
    if isinstance(response, Raw):
        response = response.data
    if isinstance(response, (bytes, bytearray, memoryview)):
        return len(bytes(response))
    if isinstance(response, str):
        return len(response.encode("utf-8", "surrogatepass"))
    text, _ = encode_response(response)
    return None if text is None else len(text.encode("utf-8", "surrogatepass"))


@with_settings(AlbConfig, "multi_value")
def validate_response(
    response: Any,
    *,
    config: AlbConfig | None = None,
    _size: int | None = None,
    **settings: Unpack[AlbMultiValueSetting],
) -> Report:
    """Every problem of what a handler returned, against the load balancer's response contract.

    `response`: the returned value, JSON text or bytes, or `fnkit.Raw`. `multi_value` (or
    `config`, an `AlbConfig`): whether multi-value headers are on (then only
    `multiValueHeaders` is read, else only `headers`; None is off). Any error means the
    client gets 502. Never raises.
    """
    return checked_response(response, AlbConfig.of(config, settings, validate_response).multi_value_on, _size)


def checked_response(response: Any, multi_value: bool, _size: int | None = None) -> Report:
    """`validate_response` with the setting read already (whether multi-value headers are on): what the
    outcome of a call calls, once per response."""
    extra: list[Issue] = []
    try:
        size = _size if _size is not None else json_size(response)
    except (RecursionError, ValueError):
        size = None
    if size is None and not isinstance(response, (Raw, str, bytes, bytearray, memoryview)):
        _, why = encode_response(response)
        said = f"JSON cannot encode the returned value ({why}): the load balancer receives no valid response, 502."
        extra = place(cannot_encode(why, "format", said), cannot_encode)
    report = _CONTRACTS[multi_value].check(response, {"multi_value": multi_value, "size": size})[0]
    if extra:
        return Report(extra + list(report), SOURCE, report.dialect, "response")
    return report


# the rule a 502 cites for an error of a general rule (JSON, unknown keys, spellings, encoding) or of the event's
# structure: the response is invalid (A6), whatever made it so
_CITED_AS_A6 = frozenset(map(id_of, (decode_json, unknown_key, two_spellings, cannot_encode, _event.one_target_group)))


def deciding_rule(report: Report) -> str | None:
    """The rule of the load balancer's 502 for a response report: its first error's rule (a general rule's error is
    an invalid response, A6); None when the report has no error (the response is delivered, AS4)."""
    for issue in report:
        if issue.severity == "error":
            found = issue.rule or RESPONSE_SHAPE.rule
            return RESPONSE_SHAPE.rule if found in _CITED_AS_A6 else found
    return None


@with_settings(AlbConfig, "multi_value")
def json_schema(
    kind: str = "event", *, config: AlbConfig | None = None, **settings: Unpack[AlbMultiValueSetting]
) -> dict[str, Any]:
    """A Draft 2020-12 JSON Schema of the load balancer event (`kind="event"`) or response (`"response"`, as
    read with multi-value headers off or on: `multi_value`, or `config`), from the declarations fnkit
    validates with; what a schema cannot express is listed in its description."""
    from ._event import EVENT_CONTRACT

    multi_value = AlbConfig.of(config, settings, json_schema).multi_value_on

    if kind == "event":
        return EVENT_CONTRACT.json_schema(also=(never_forwarded,))  # asked by its check
    if kind == "response":
        return _CONTRACTS[multi_value].json_schema()
    raise ValueError(f"kind is 'event' or 'response', not {kind!r}")


__all__ = [
    "RESPONSE_CHECKS",
    "RESPONSE_SHAPE",
    "active_field",
    "deciding_rule",
    "json_schema",
    "json_size",
    "validate_response",
]
