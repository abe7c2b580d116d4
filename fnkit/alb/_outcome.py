"""What the load balancer sends the client: `HttpOutcome`, `outcome`, `refusal` and `run`.

Rules: A1 and A14 (answered without invoking), A5 and A6 (502), AS4 with A7-A10 and A13
(a valid response on the wire).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Unpack

from .. import rules as _rules
from .._engine.codec import Invocation, encode_response
from .._engine.findings import cannot_encode, place
from .._engine.outcome import PROCESS_ENDED, Display, Grid, outcome_frame, outcome_html, outcome_row, what_it_did
from .._engine.report import MISSING, ContractError, Issue, Raw, Report, decode_json
from .._running.handler_rules import raised, timed_out
from .._running.inprocess import Context
from .._running.plan import PlannedCall
from .._settings.config import with_settings
from ..rules import id_of
from ..types import AlbKind, Isolation
from ._config import BAD_GATEWAY, AlbConfig, AlbMultiValueSetting, AlbRunSettings
from ._event import refusals, validate_event
from ._http import (
    DELIVERED,
    MAX_RESPONSE_JSON,
    HttpParts,
    Refusal,
    error_page,
    method_refused,
    reason_phrase,
    refusal_for,
    response_to_http,
)
from ._response import RESPONSE_SHAPE, checked_response, deciding_rule, judge_too_large, too_large_report

SOURCE = "alb"
_EMPTY = Report((), SOURCE, None, "response")


@dataclass(frozen=True)
class HttpRequest:
    """An HTTP request as the client sends it (for `refusal` and the server): raw path, raw query, header pairs."""

    method: str = "GET"
    path: str = "/"
    query: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | str = b""  # text is sent as UTF-8


@dataclass(frozen=True)
class HttpOutcome:
    """What the client receives for one request, and which rule decided it.

    `status`, `reason` (phrase), `headers` (name/value pairs, repeats kept), `body` (bytes),
    `invoked` (False when the load balancer answered by itself), `rule`, `explanation`,
    `issues` (a Report on the response), `invocation` (from `run` or the server).
    """

    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    invoked: bool
    rule: str
    explanation: str
    issues: Report = field(default_factory=lambda: _EMPTY)
    invocation: Invocation | None = None
    method: str = "GET"
    path: str = "/"
    multi_value: bool = False
    rules: tuple[str, ...] = ()
    description: str | None = None
    event_issues: Report | None = field(default=None, compare=False)
    cause: str | None = None

    source: ClassVar[str] = SOURCE
    result_column: ClassVar[str] = "status"  # what the client receives

    @property
    def inferred(self) -> bool:
        """True when the deciding rule is fnkit's inference, not a documented fact."""
        return _rules.is_inferred(self.rule)

    @property
    def ok(self) -> bool:
        """True when the function was invoked and its response was delivered (not a 502 or a refusal)."""
        return self.invoked and self.rule in (DELIVERED.id, id_of(response_to_http))

    @property
    def kind(self) -> AlbKind:
        """What happened, in a word: "delivered" (the function's answer, `ok`), "refused" (the load balancer
        answered without invoking it) or "error" (the function was invoked and the client got an error from
        the load balancer: 502 Bad Gateway, 504)."""
        if self.ok:
            return "delivered"
        return "error" if self.invoked else "refused"

    @property
    def text(self) -> str:
        """The body as text (UTF-8, undecodable bytes replaced)."""
        return self.body.decode("utf-8", "replace")

    def header(self, name: str, default: str | None = None) -> str | None:
        """The first value of a header, by case-insensitive name."""
        values = self.header_values(name)
        return values[0] if values else default

    def header_values(self, name: str) -> list[str]:
        """Every value of a header, by case-insensitive name, in order."""
        lower = name.lower()
        return [v for n, v in self.headers if n.lower() == lower]

    def rows(self) -> list[dict[str, Any]]:
        """One row for the request: method, path, status, reason, rule, invoked, and why."""
        inv = self.invocation
        return [
            {
                "source": "alb",
                "item": f"{self.method} {self.path}",
                "method": self.method,
                "path": self.path,
                "status": self.status,
                "reason": self.reason,
                "rule": self.rule,
                "cause": self.cause,
                "inferred": self.inferred,
                "invoked": self.invoked,
                "body_bytes": len(self.body),
                "duration_ms": None if inv is None else round(inv.duration_ms, 3),
                "explanation": self.explanation,
                "warnings": "; ".join(w.message for w in self.issues.warnings),
            }
        ]

    def __repr__(self) -> str:
        return (
            f"HttpOutcome(status={self.status}, reason={self.reason!r}, rule={self.rule!r}, "
            f"invoked={self.invoked}, headers={len(self.headers)}, body={len(self.body)} bytes)"
        )

    # -- the Outcome protocol ---------------------------------------------------------------

    @property
    def headline(self) -> str:
        """The status line the client receives: "200 OK", "502 Bad Gateway"."""
        return f"{self.status} {self.reason}".strip()

    @property
    def tone(self) -> str:
        """bad (5xx, or answered without the function), mixed (4xx), good."""
        if self.status >= 500 or not self.invoked:
            return "bad"
        return "mixed" if self.status >= 400 else "good"

    def _display(self) -> Display:
        preview = self.text if len(self.body) <= 500 else self.text[:500] + "…"
        invoked = "invoked" if self.invoked else "not invoked"
        return Display(
            [Grid([{"header": n, "value": v} for n, v in self.headers], ["header", "value"])],
            preview,
            f"{self.method} {self.path} → {self.headline} ({invoked})",
        )

    to_row = outcome_row
    to_frame = outcome_frame
    _repr_html_ = outcome_html


# --- helpers -------------------------------------------------------------------------------


def _method_path(event: Any) -> tuple[str, str]:
    if isinstance(event, dict):
        method, path = event.get("httpMethod"), event.get("path")
        return (method if isinstance(method, str) else "GET"), (path if isinstance(path, str) else "/")
    return "GET", "/"


def event_multi_value(event: Any) -> bool:
    """True when the event shows multi-value headers on (it carries multiValueHeaders)."""
    return isinstance(event, dict) and isinstance(event.get("multiValueHeaders"), dict)


def answered_by_balancer(
    found: Refusal, method: str, path: str, multi_value: bool = False, note: str = ""
) -> HttpOutcome:
    """The outcome of a request the load balancer answers by itself (A1, A14): its own page, not invoked."""
    headers, body = error_page(found.status)
    if method == "HEAD":
        body = b""
    return HttpOutcome(
        found.status,
        reason_phrase(found.status),
        headers,
        body,
        False,
        found.rule,
        found.why + note,
        _EMPTY,
        None,
        method,
        path,
        multi_value,
        (found.rule,),
    )


def bad_gateway(
    rule: str,
    why: str,
    issues: Report = _EMPTY,
    *,
    method: str = "GET",
    path: str = "/",
    multi_value: bool = False,
    invocation: Invocation | None = None,
    cause: str | None = None,
) -> HttpOutcome:
    """The load balancer's 502 for a function that failed or answered something invalid; `cause`: what made
    the rule apply, in a few words (see `cause_of`)."""
    headers, body = error_page(502)
    if method == "HEAD":
        body = b""
    inferred = " (inferred)" if _rules.get(rule).inferred else ""
    return HttpOutcome(
        502,
        reason_phrase(502),
        headers,
        body,
        True,
        rule,
        f"502 Bad Gateway by rule {rule}{inferred}: {why}",
        issues,
        invocation,
        method,
        path,
        multi_value,
        (rule,),
        cause=cause,
    )


#: exception types the invoke API raises when it throttles a function (a handler double may raise them)
THROTTLED = frozenset({"TooManyRequestsException", "ThrottlingException", "Throttling"})
_EXPECTED = re.compile(r"^Expected (?P<what>.+?)(?: \((?:[^()]|\([^()]*\))*\))?, got")


def failure_cause(invocation: Invocation) -> str:
    """How the invocation failed, in a word or two: "timed out", "throttled", "exited" or "raised"."""
    if invocation.timed_out:
        return "timed out"
    error_type = getattr(invocation.error, "type", None)
    if error_type in THROTTLED:
        return "throttled"
    return "exited" if error_type == PROCESS_ENDED else "raised"


def field_of(issue: Issue) -> str:
    """The response field an issue is about, as a person names it: "statusCode", "headers.x-a", "the response"."""
    return issue.path.removeprefix("$.") if issue.path.startswith("$.") else "the response"


def cause_of(issue: Issue) -> str:
    """What a validation issue found wrong, with the field: "statusCode: not an integer", "body: missing";
    the response as a whole over the size limit: "too large"."""
    if issue.code == "limit" and issue.path == "$":
        return "too large"
    if issue.code == "type":
        expected = _EXPECTED.match(issue.message)
        what = f"not {expected.group('what')}" if expected else "of the wrong type"
    elif issue.code == "missing":
        what = "missing"
    elif issue.code == "limit":
        what = "out of range"
    else:
        what = f"bad {issue.code}"
    return f"{field_of(issue)}: {what}"


def refusal(event_or_request: Any) -> HttpOutcome | None:
    """What the load balancer answers without invoking the function (A1: WebSocket 400, body over 1 MB 413;
    A14: an unsupported method 405), or None when it invokes the function.

    Takes an event (a dict) or an `HttpRequest` (the request as the client sends it).
    """
    if isinstance(event_or_request, HttpRequest):
        req = event_or_request
        body = req.body if isinstance(req.body, (bytes, bytearray)) else str(req.body).encode("utf-8")
        found = refusal_for(req.method, list(req.headers), len(body))
        given: object = req.method  # a caller may pass anything
        method, path = (given.upper() if isinstance(given, str) else "GET"), req.path
        multi = False
    else:
        method, path = _method_path(event_or_request)
        refused = refusals(event_or_request)  # A1, read from the event as its check reads it
        found = refused[0][1] if refused else method_refused(method)
        multi = event_multi_value(event_or_request)
    if found is None:
        return None
    return answered_by_balancer(found, method, path, multi)


def _from_invocation(
    invocation: Invocation, method: str, path: str, multi_value: bool
) -> tuple[HttpOutcome | None, Any, int | None]:
    """A 502 for a failed invocation, or (None, the response as the platform reads it, its JSON size)."""
    if invocation.timed_out or invocation.error is not None:
        if invocation.timed_out:
            issues = place(
                timed_out(invocation, "timeout", f"The function did not answer within {invocation.timeout_s} s."),
                timed_out,
            )
            why = f"the function timed out after {invocation.timeout_s} s (a 502, not a 504)."
        else:
            issues = place(raised(invocation, "raised", f"The function {what_it_did(invocation.error)}."), raised)
            why = f"the function {what_it_did(invocation.error)}."
        report = Report(issues, SOURCE, None, "response")
        failed = bad_gateway(
            BAD_GATEWAY.id,
            why,
            report,
            method=method,
            path=path,
            multi_value=multi_value,
            invocation=invocation,
            cause=failure_cause(invocation),
        )
        return failed, None, None
    if invocation.response_text is None and invocation.encode_error:
        why = invocation.encode_error
        issues = place(
            cannot_encode(why, "format", f"JSON cannot encode what the function returned ({why})."), cannot_encode
        )
        return (
            bad_gateway(
                RESPONSE_SHAPE.rule,
                "what the function returned is not valid JSON.",
                Report(issues, SOURCE, None, "response"),
                method=method,
                path=path,
                multi_value=multi_value,
                invocation=invocation,
                cause="the response: not JSON",
            ),
            None,
            None,
        )
    text = invocation.response_text
    size = None if text is None else len(text.encode("utf-8", "surrogatepass"))
    return None, Raw(text) if text is not None else None, size


@DELIVERED
@with_settings(AlbConfig, "multi_value")
def outcome(
    event: Any, response: Any, *, config: AlbConfig | None = None, **settings: Unpack[AlbMultiValueSetting]
) -> HttpOutcome:
    """What the client receives when the function answered `event` with `response`, and which rule decided.

    `response`: the returned value, `fnkit.Raw` (exact text or bytes), or an `fnkit.Invocation`
    (a raised error or a timeout is a 502, A5). The target group's settings: `config` (an
    `AlbConfig`) or `multi_value=` (None: as the event shows).
    """
    multi_value = AlbConfig.of(config, settings, outcome).multi_value
    decoded, _ = decode_json(event)
    if decoded is not MISSING:
        event = decoded  # an event given as JSON text or bytes
    multi = event_multi_value(event) if multi_value is None else bool(multi_value)
    method, path = _method_path(event)
    found = refusal(event)
    if found is not None:
        return dataclasses.replace(
            found, multi_value=multi, explanation=found.explanation + " The function's response is never asked for."
        )
    return answered_by_function(response, method, path, multi)


def bound_of(multi_value: bool) -> tuple[int, Callable[[str, int], list[Any]]]:
    """What a worker measures a response against, `check_size`'s limit, and what judges it there past that (so
    only the verdict travels back: the server never holds a response it answers 502 for)."""
    return MAX_RESPONSE_JSON, functools.partial(judge_too_large, multi_value)


def answered_by_function(response: Any, method: str, path: str, multi_value: bool) -> HttpOutcome:
    """What the client receives for a request the load balancer forwarded (no refusal, A1 and A14 already
    checked), answered with `response` (a value, `Raw` or an `Invocation`): the server's one step after invoking."""
    invocation = response if isinstance(response, Invocation) else None
    size = oversized = judged = None
    if isinstance(response, (str, bytes, bytearray, memoryview)):
        # a returned string or bytes is that value (a JSON string, or not JSON), never JSON text: read it as
        # the platform would read what the function returned
        text, why = encode_response(response)
        response = Invocation(returned=response, response_text=text, encode_error=why)
    if isinstance(response, Invocation):
        oversized, judged = response.response_size, response.response_report  # past the limit: not the response
        failed, response, size = _from_invocation(response, method, path, multi_value)
        if failed is not None:
            return failed if failed.invocation is invocation else dataclasses.replace(failed, invocation=invocation)
    value: Any = MISSING
    if oversized is None and size is not None and isinstance(response, Raw):
        # the text is read once: its value checked (as the check would read the text) and then answered
        value, decoding = decode_json(response)
        if decoding or isinstance(value, str):  # a byte-order mark, or a JSON string (which the check would take
            value = MISSING  # for text to read again): the check reads the text itself and says what it holds
    report = (
        too_large_report(oversized, judged)
        if oversized is not None
        else checked_response(response if value is MISSING else value, multi_value, size)
    )
    rule = deciding_rule(report)  # the rule results validation reported decide the answer
    if rule is not None:
        first = report.errors[0]
        field_name = field_of(first)  # the sentence names the field, unless it does already
        named = first.message if first.path == "$" or field_name in first.message else f"{field_name}: {first.message}"
        return bad_gateway(
            rule,
            named,
            report,
            method=method,
            path=path,
            multi_value=multi_value,
            invocation=invocation,
            cause=cause_of(first),
        )
    if value is MISSING:
        value, _ = decode_json(response)
    parts: HttpParts = response_to_http(value, method=method, multi_value=multi_value)
    rule = id_of(response_to_http) if method == "HEAD" else DELIVERED.id  # A10 decides a HEAD's answer
    said = f"The function answered {parts.status} {parts.reason}".rstrip()
    notes = "; ".join(parts.notes)
    explanation = f"{said} and the load balancer passed it on" + (f": {notes}." if notes else ".")
    description = value.get("statusDescription") if isinstance(value.get("statusDescription"), str) else None
    return HttpOutcome(
        parts.status,
        parts.reason,
        parts.headers,
        parts.body,
        True,
        rule,
        explanation,
        report,
        invocation,
        method,
        path,
        multi_value,
        parts.rules,
        description,
    )


@with_settings(AlbConfig, "multi_value", "timeout_s")
def run(
    handler: Callable[[Any, Any], Any] | str,
    event: Any,
    *,
    context: Context | None = None,
    isolation: Isolation | None = None,
    config: AlbConfig | None = None,
    **settings: Unpack[AlbRunSettings],
) -> HttpOutcome:
    """Validate the event, refuse it as the load balancer would (A1) or invoke the handler, decide the outcome.

    The target group's settings: `config` (an `AlbConfig`) or `multi_value=` (None: as the
    event shows) and `timeout_s=` (the function timeout). `isolation`: where the handler
    runs (see `fnkit.invoke`); it gets its own copy of the event. A request the load balancer
    answers by itself (A1) is refused without invoking; any other invalid event raises
    `ContractError`, as `fnkit.queue.run` and `fnkit.mail.run` do.
    """
    return plan_call(event, config=AlbConfig.of(config, settings, run), context=context).run(handler, isolation)


def plan_call(event: Any, *, config: AlbConfig, context: Context | None = None) -> PlannedCall[HttpOutcome]:
    """The call `run` makes for `event` (checked, never refused for being invalid: the event report goes along),
    or the load balancer's own answer when it refuses the request (A1, A14); the outcome follows from `outcome`."""
    multi_value = config.multi_value
    event_report = validate_event(event, config=config)
    value = event if type(event) is dict else decode_json(event)[0]  # a dict passes through decode_json untouched
    if value is MISSING:
        raise ContractError(event_report)
    # read once here: what the refusal and, after the handler, the outcome read of the event
    method, path = _method_path(value)
    multi = event_multi_value(value) if multi_value is None else bool(multi_value)
    if event_report.ok:  # A1 is an error of the event (its check ran above): only A14 is left to ask
        why = method_refused(method)
        found = None if why is None else answered_by_balancer(why, method, path, multi)
    else:
        found = refusal(value)
    if found is not None:
        refused = dataclasses.replace(found, event_issues=event_report, multi_value=multi)
        return PlannedCall(value, config.timeout_s, None, context, decided=refused)
    if not event_report.ok:  # an invalid event is refused as queue.run and mail.run refuse theirs
        raise ContractError(event_report)

    def finish(invocation: Invocation) -> HttpOutcome:
        result = answered_by_function(invocation, method, path, multi)  # made for this call: its invocation's
        # the outcome was made just now, for this call alone, and no one holds it yet: the event's report is set
        # on it in place (dataclasses.replace would copy it, field by field, once per request replayed)
        object.__setattr__(result, "event_issues", event_report)
        return result

    return PlannedCall(value, config.timeout_s, finish, context)


__all__ = [
    "HttpOutcome",
    "HttpRequest",
    "answered_by_balancer",
    "answered_by_function",
    "bad_gateway",
    "cause_of",
    "event_multi_value",
    "failure_cause",
    "field_of",
    "outcome",
    "plan_call",
    "refusal",
    "run",
]
