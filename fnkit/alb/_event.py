"""The load balancer request event: its shape, rule checks, typed parse and validation (built in `_build`).

Rules: AS1-AS3 (the spec's event), A2-A4 (how a request becomes an event), A11 (health
checks), A15 (unusual ARNs); A1 (what is never forwarded) is asked of `_http.never_forwarded`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Unpack, cast

from .._engine.findings import VALUE, Finding, caution, problem
from .._engine.report import ContractError, Report
from .._engine.validate import Check, Contract, Seen, reads
from .._settings.config import with_settings
from ..rules import rule
from ._arn import ARN_READINGS, arn_dialect, target_group_reading
from ._config import FORMS, HEALTH_CHECK, AlbConfig, AlbMultiValueSetting
from ._event_shape import EVENT_SHAPE, RAW_REQUEST, REQUEST_EVENT, ElbContext, LoadBalancerEvent, RequestContext
from ._http import (
    MAX_REQUEST_BODY,
    TEXT_BODIES,
    TRACE_HEADERS,
    Refusal,
    is_health_check,
    is_strict_base64,
    is_text_body,
    never_forwarded,
    split_query,
)

SOURCE = "alb"

if TYPE_CHECKING:
    from ..types import ParsedAlbEvent

_HEADER_FIELDS = ("headers", "multiValueHeaders")
_QUERY_FIELDS = ("queryStringParameters", "multiValueQueryStringParameters")
_PROVIDER_TRACE = TRACE_HEADERS["provider"]
_AWS_TRACE = TRACE_HEADERS["aws"]


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


# --- semantic rules, over the typed event ---------------------------------------------
# Each returns early when a value is not its business; on the lenient path (the event broke
# its shape, and the walk said where) a field may hold anything, so each tests types first.


def _header_maps(event: Any) -> tuple[tuple[str, dict[str, Any]], ...]:
    """(field name, mapping) of the header fields the typed event has."""
    if type(event) is not LoadBalancerEvent:
        return ()
    single, multi = event.headers, event.multi_value_headers
    if multi is None:
        return (("headers", single),) if type(single) is dict else ()
    return tuple(
        (key, value) for key, value in (("headers", single), ("multiValueHeaders", multi)) if type(value) is dict
    )


def _header_value(event: Any, name: str) -> Any:
    """The (last) value of a lower-case header name in whichever header field the event has."""
    for key, mapping in _header_maps(event):
        value = mapping.get(name)
        if key == "multiValueHeaders" and isinstance(value, tuple):
            value = value[-1] if value else None
        if isinstance(value, str):
            return value
    return None


def _forms(event: Any) -> tuple[list[str], list[str]]:
    """The single-value and the multi-value fields the event carries."""
    singles = [
        k
        for k, v in (("headers", event.headers), ("queryStringParameters", event.query_string_parameters))
        if v is not None
    ]
    multis = [
        k
        for k, v in (
            ("multiValueHeaders", event.multi_value_headers),
            ("multiValueQueryStringParameters", event.multi_value_query_string_parameters),
        )
        if v is not None
    ]
    return singles, multis


@FORMS
@reads(VALUE)
def check_forms(event: Any, seen: Seen) -> list[Finding]:
    """A3: the single-value forms or the multi-value forms, never both."""
    out: list[Finding] = []
    expected = seen.options.get("multi_value")
    if event.multi_value_headers is None and event.multi_value_query_string_parameters is None and expected is not True:
        return out  # single-value forms only, and nothing says they should not be
    singles, multis = _forms(event)
    for single, multi in (_HEADER_FIELDS, _QUERY_FIELDS):
        if single in singles and multi in multis:
            out.append(
                problem(
                    "conflict",
                    f"The event carries both '{single}' and '{multi}'; the load balancer sends one form only "
                    "(the multi-value one exactly when multi-value headers are on).",
                    multi,
                )
            )
    if len(multis) == 1 and not singles:
        missing = "multiValueQueryStringParameters" if multis[0] == "multiValueHeaders" else "multiValueHeaders"
        out.append(
            caution(
                "missing",
                f"The event carries {multis[0]} but no {missing}: with multi-value headers on, the load balancer "
                "sends both multi-value forms (an empty query as {}), never one alone.",
                missing,
            )
        )
    if singles and multis and not (len(singles) == 2 and len(multis) == 2):
        out.append(
            caution(
                "conflict",
                f"The event mixes forms ({', '.join(singles)} with {', '.join(multis)}); with multi-value "
                "headers on both headers and query are multi-value, with them off both are single-value.",
            )
        )
    if expected is True and singles and not multis:
        out.append(
            caution(
                "mode",
                f"Multi-value headers are on, so the event should carry multiValueHeaders and "
                f"multiValueQueryStringParameters, not {' and '.join(singles)}.",
            )
        )
    elif expected is False and multis and not singles:
        out.append(
            caution(
                "mode",
                f"Multi-value headers are off, so the event should carry headers and "
                f"queryStringParameters, not {' and '.join(multis)}.",
            )
        )
    return out


def _has_trace_header(maps: tuple[tuple[str, dict[str, Any]], ...]) -> bool:
    for _, mapping in maps:  # noqa: SIM110 - a plain loop: no generator made per event on the hot path
        if _PROVIDER_TRACE in mapping or _AWS_TRACE in mapping:
            return True
    return False


def _shaped_like_health_check(event: Any, maps: tuple[tuple[str, dict[str, Any]], ...]) -> bool:
    """A GET with no query, no body and no header but a user-agent: what only a health check looks like (A11),
    whatever its user-agent says (every client request also carries the x-forwarded-* headers, A2)."""
    return (
        event.http_method == "GET"
        and event.body in (None, "")
        and all(name == "user-agent" for _, mapping in maps for name in mapping)
        and not any(
            type(q) is dict and q for q in (event.query_string_parameters, event.multi_value_query_string_parameters)
        )
    )


@rule(
    "AS3",
    "alb",
    "contract",
    "The trace header (x-provider-trace-id) holds the correlation id.",
    origin="spec",
    severity="warning",
)
def check_trace_header(event: Any, seen: Seen) -> list[Finding]:
    """AS3: the trace header (x-provider-trace-id, x-amzn-trace-id) is present; it tells the dialect."""
    out: list[Finding] = []
    maps = _header_maps(event)
    found = False
    for _, mapping in maps:
        if _PROVIDER_TRACE in mapping:
            seen.saw("provider")
            found = True
        if _AWS_TRACE in mapping:
            seen.saw("aws")
            found = True
    if found or not maps:
        return out
    if any(is_health_check(mapping) for _, mapping in maps) or _shaped_like_health_check(event, maps):
        return out  # A11: health checks carry no trace header (check_health_check says what else it takes)
    out.append(
        caution(
            "missing",
            "The trace header is missing (x-provider-trace-id; x-amzn-trace-id on the real platform); "
            "the load balancer adds it to every request and it is the request's correlation id.",
            maps[0][0],
            _PROVIDER_TRACE,
        )
    )
    return out


@rule(
    "A15",
    "alb",
    "inferred",
    "The spec defines the target group ARN only as arn:<partition>:elasticloadbalancing:"
    "<region>:<account>:targetgroup/<name>/<id>; one whose parts are unusual (an unknown partition, a region that is "
    "no region name, an account that is not 12 digits, a name outside 1-32 letters, digits and hyphens, an id that "
    "is not 16 hex digits) comes from a sample or a placeholder: a warning, never an error.",
    origin="kit",
    severity="warning",
)
@reads(VALUE)
def check_target_group(event: Any, seen: Seen) -> list[Finding]:
    """AS1: the target group ARN's partition tells the dialect; the top-level copy names the same group (the ARN's
    form is declared). A15: the parts of an ARN of that form, as the platform writes them."""
    out: list[Finding] = []
    context = event.request_context
    elb: Any = context.elb if type(context) is RequestContext else None  # the generated struct's field
    inner = elb.target_group_arn if type(elb) is ElbContext else None
    top = event.target_group_arn
    if type(inner) is str:
        _read_target_group_arn(inner, _INNER_ARN, seen, out)
    if type(top) is str and top != inner:  # (the same ARN twice: read and said once)
        _read_target_group_arn(top, _TOP_ARN, seen, out)
    if type(inner) is str and type(top) is str and inner != top:
        out += one_target_group(inner, top)
    return out


@REQUEST_EVENT
def one_target_group(inner: str, top: str) -> list[Finding]:
    """AS1 beyond the structure its shape declares (`EVENT_SHAPE`, whose walk names AS1 too): the top-level
    targetGroupArn (`top`), when there is one, names the group requestContext.elb.targetGroupArn (`inner`) names.
    `check_target_group` asks it; its findings name it."""
    if inner == top:
        return []
    return [
        caution(
            "mismatch",
            "The top-level targetGroupArn differs from requestContext.elb.targetGroupArn; both name the "
            "one target group of the function.",
            *_TOP_ARN,
            of=one_target_group,
        )
    ]


# where the two ARNs sit, below the event
_INNER_ARN, _TOP_ARN = ("requestContext", "elb", "targetGroupArn"), ("targetGroupArn",)


def _read_target_group_arn(arn: str, at: tuple[str, ...], seen: Seen, out: list[Finding]) -> None:
    """AS1 and A15 for one target group ARN at the keys `at`: the dialect its partition tells, its unusual parts."""
    reading = ARN_READINGS.get(arn)
    if reading is None:
        reading = target_group_reading(arn)
        if reading is None:
            return
        ARN_READINGS.remember(arn, reading)
    dialect, unusual = reading
    if dialect is not None:
        seen.saw(dialect)
    if unusual:
        out.append(
            caution(
                "unusual",
                f"The target group ARN '{arn}' has the spec's form, but the platform writes none like it: "
                f"{'; '.join(unusual)}. It looks like a sample or a placeholder, and is accepted: the spec "
                "defines only the form.",
                *at,
            )
        )


@RAW_REQUEST
def get_without_body(method: Any) -> list[Finding]:
    """A2 beyond the patterns its declarations hold (the header names', query keys' and values' in
    `_event_shape`, whose walks name A2 too): the load balancer hands a function a GET request (`method`) with
    body "", so a GET event with a body is not one it sends. `check_body` asks it of a body that is not empty; its
    findings name it."""
    if method != "GET":
        return []
    return [
        caution(
            "format",
            'A GET request reaches the function with body ""; this one has a body.',
            "body",
            of=get_without_body,
        )
    ]


@rule(
    "A4",
    "alb",
    "doc",
    "Request body: with content-encoding, base64; text/*, application/json, "
    'application/javascript, application/xml as text; anything else base64; empty body "".',
    severity="error or warning",
)
@reads(VALUE, "body")
def check_body(event: Any, seen: Seen) -> list[Finding]:
    """A4 and A2: base64 exactly when the platform would use it; a GET has an empty body."""
    out: list[Finding] = []
    body = event.body
    encoded = event.is_base64_encoded
    if not body:  # (none, or empty)
        return out
    if encoded is True and not is_strict_base64(body):
        out.append(
            problem(
                "format",
                "isBase64Encoded is true but the body is not strict base64 (standard "
                "alphabet, '=' padding, no spaces or line breaks).",
                "body",
            )
        )
    if event.http_method == "GET":
        out += get_without_body(event.http_method)
    if encoded is False:
        if _header_value(event, "content-encoding") is not None:
            out.append(
                caution(
                    "format",
                    "The request has a content-encoding header, so the load balancer sends the body "
                    "base64-encoded with isBase64Encoded true.",
                    "isBase64Encoded",
                )
            )
        elif not is_text_body(_header_value(event, "content-type")):
            kind = _header_value(event, "content-type")
            what = f"the content type '{kind}'" if kind else "no content type"
            out.append(
                caution(
                    "format",
                    f"With {what} the load balancer sends the body base64-encoded: {_lower_first(TEXT_BODIES)}",
                    "isBase64Encoded",
                )
            )
    return out


@HEALTH_CHECK
def check_health_check(event: Any, seen: Seen) -> list[Finding]:
    """A11: an event from the health checker (its user-agent, no trace header) is GET / with no query or body.

    A request with a trace header came from a client, whatever user-agent it claims.
    """
    out: list[Finding] = []
    maps = _header_maps(event)
    if not maps or _has_trace_header(maps):
        return out
    if not any(is_health_check(mapping) for _, mapping in maps):
        if _shaped_like_health_check(event, maps):
            agent = _header_value(event, "user-agent")
            said = f"its user-agent is '{agent}'" if agent is not None else "it has no user-agent header"
            out.append(
                caution(
                    "missing",
                    "The trace header is missing (x-provider-trace-id; x-amzn-trace-id on the real platform), "
                    "and only the load balancer's health checks come without one. This GET with no query, no "
                    f"body and no header but a user-agent looks like a health check, but {said}, not "
                    "ELB-HealthChecker/2.0.",
                    maps[0][0],
                    _PROVIDER_TRACE,
                )
            )
        return out
    odd = []
    if event.http_method != "GET":
        odd.append("the method is not GET")
    if event.path != "/":
        odd.append("the path is not /")
    if event.body not in (None, ""):
        odd.append("the body is not empty")
    if any(type(q) is dict and q for q in (event.query_string_parameters, event.multi_value_query_string_parameters)):
        odd.append("there is a query")
    if odd:
        out.append(
            caution(
                "format",
                "The user-agent says ELB-HealthChecker and there is no trace header, but a "
                f'health check event is GET / with no query and body "": {", ".join(odd)}.',
            )
        )
    return out


def refusals(event: Any) -> tuple[tuple[tuple[str, ...], Refusal], ...]:
    """(where: the keys below the event, refusal) for each reason the load balancer never forwards this request
    (A1, `never_forwarded`): read from the event (typed, lenient or a plain dict): its `upgrade` header and its
    body's size."""
    if type(event) is LoadBalancerEvent:
        single, multi, body = event.headers, event.multi_value_headers, event.body
    elif isinstance(event, dict):
        single, multi, body = event.get("headers"), event.get("multiValueHeaders"), event.get("body")
    else:
        return ()
    upgrade = field = None
    for field, mapping in (("headers", single), ("multiValueHeaders", multi)):  # noqa: B007 - field: where it is
        if type(mapping) is dict:
            upgrade = mapping.get("upgrade")
            if upgrade is not None:
                break
    # a text of at most a quarter of the limit is under 1 MB in UTF-8 (and smaller still decoded from base64)
    size = None
    if type(body) is str and len(body) > _QUARTER_OF_LIMIT:
        size = _body_size(
            body, event.is_base64_encoded if type(event) is LoadBalancerEvent else event.get("isBase64Encoded")
        )
    if upgrade is None and size is None:
        return ()  # no upgrade header and a short body: nothing to ask
    found = never_forwarded(upgrade, size)
    if not found:
        return ()
    return tuple(((str(field), "upgrade") if r.status == 400 else ("body",), r) for r in found)


_QUARTER_OF_LIMIT = MAX_REQUEST_BODY // 4


def check_never_forwarded(event: Any, seen: Seen) -> Sequence[Finding]:
    """A1 (`never_forwarded`) as findings: a WebSocket upgrade or a body over 1 MB never reaches the function."""
    found = refusals(event)  # (where each refusal's value sits, the refusal: its finding is never_forwarded's)
    return [r.finding._replace(at=at) for at, r in found if r.finding is not None] if found else ()


EVENT_CHECKS: list[Check] = [
    check_never_forwarded,
    check_forms,
    check_trace_header,
    check_target_group,
    check_body,
    check_health_check,
]
EVENT_CONTRACT = Contract(EVENT_SHAPE, EVENT_CHECKS, source=SOURCE)


def _body_size(body: str, encoded: Any) -> int | None:
    if encoded is True:
        if not is_strict_base64(body):
            return None
        return len(body) // 4 * 3 - len(body[-2:]) + len(body[-2:].rstrip("="))
    return len(body.encode("utf-8", "surrogatepass"))


def body_size(event: Any) -> int | None:
    """The request body's size in bytes (decoded when base64), or None when the event has no string body."""
    if type(event) is LoadBalancerEvent:
        body, encoded = event.body, event.is_base64_encoded
    elif isinstance(event, dict):
        body, encoded = event.get("body"), event.get("isBase64Encoded")
    else:
        return None
    return _body_size(body, encoded) if isinstance(body, str) else None


# --- the verbs --------------------------------------------------------------------------


@with_settings(AlbConfig, "multi_value")
def validate_event(event: Any, *, config: AlbConfig | None = None, **settings: Unpack[AlbMultiValueSetting]) -> Report:
    """Every problem of a load balancer event, located; never raises, whatever it is given.

    `multi_value` (or `config`, an `AlbConfig`): when given, also say whether the event's
    form matches the target group's setting (A3).
    """
    if config is not None and not settings and type(config) is AlbConfig:  # (a source's run: read already)
        multi_value = config.multi_value
    else:
        multi_value = (
            None if config is None and not settings else AlbConfig.of(config, settings, validate_event).multi_value
        )
    return EVENT_CONTRACT.check(event, None if multi_value is None else {"multi_value": multi_value})[0]


def parse_event(event: Any) -> ParsedAlbEvent:
    """The event as frozen typed values (`e.request_context.elb.target_group_arn`); ContractError when invalid."""
    report, typed = EVENT_CONTRACT.check(event)
    if not report.ok:
        raise ContractError(report)
    return cast("ParsedAlbEvent", typed)


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
    if type(event) is LoadBalancerEvent:
        maps = [m for _, m in _header_maps(event)]
    elif isinstance(event, dict):
        maps = [m for m in (event.get("headers"), event.get("multiValueHeaders")) if isinstance(m, dict)]
    else:
        maps = []
    for name in (_PROVIDER_TRACE, _AWS_TRACE):
        for mapping in maps:
            value = mapping.get(name)
            if isinstance(value, (list, tuple)):
                value = value[-1] if value else None
            if isinstance(value, str):
                return [value]
    return []


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
    "EVENT_CHECKS",
    "EVENT_CONTRACT",
    "EVENT_SHAPE",
    "arn_dialect",
    "body_size",
    "correlation_ids",
    "looks_like",
    "parse_event",
    "query_pairs",
    "split_query",
    "validate_event",
]
