"""The load balancer request event's shape, declared once: its fields, their patterns and sentences (AS1, AS2, A2).

`_event` holds the rule checks over it and the verbs (validate, parse); the compiled Struct
classes (`LoadBalancerEvent`, ...) come from here.
"""

from __future__ import annotations

import json
import re

from .._engine.shape import BOOL, STR, F, ListOf, MapOf, Shape, Text
from ..rules import rule
from ._arn import ARN_TEXT
from ._http import METHODS

#: AS1 and A2, declared before the shapes that cite them; implemented by `_event.one_target_group` and
#: `_event.get_without_body` (what the shapes cannot declare)
REQUEST_EVENT = rule(
    "AS1",
    "alb",
    "contract",
    "The request event has requestContext.elb.targetGroupArn, httpMethod (DELETE, GET, HEAD, "
    "OPTIONS, PATCH, POST, PUT), path, isBase64Encoded, and optionally query parameters, headers and body.",
    origin="spec",
    severity="error or warning",
)
RAW_REQUEST = rule(
    "A2",
    "alb",
    "doc",
    "Event: lower-case header names; trace and x-forwarded-* headers added; query keys and values "
    'as in the raw URL; queryStringParameters {} without a query; a GET has body "".',
    severity="error or warning",
)

# characters a raw URL can carry: printable ASCII but space and '#'
RAW_URL_TEXT = r"^[\x21\x22\x24-\x7e]*$"
_NOT_IN_RAW_URL = re.compile(r"[^\x21\x22\x24-\x7e]")
_CHAR_NAMES = {" ": "a space", "#": "'#'", "\t": "a tab", "\n": "a line break", "\r": "a carriage return"}


def _char_name(ch: str) -> str:
    return _CHAR_NAMES.get(ch, f"the character {ch!r}")


def _query_key_sentence(key: str) -> str:
    found = _NOT_IN_RAW_URL.search(key)
    return (
        f"The query key '{key}' holds {_char_name(found.group() if found else '?')}, which a raw URL cannot "
        "carry: the load balancer passes keys exactly as written in the URL, percent-encoded (not decoded)."
    )


def _query_value_sentence(value: str) -> str:
    found = _NOT_IN_RAW_URL.search(value)
    return (
        f"The query value {json.dumps(value)} holds {_char_name(found.group() if found else '?')}, which a raw "
        "URL cannot carry: the load balancer passes values exactly as written in the URL, percent-encoded "
        "(not decoded)."
    )


_QUERY_KEY = Text(
    pattern=RAW_URL_TEXT,
    rule="A2",
    code="decoded",
    severity="warning",
    message=_query_key_sentence,
    doc="as in the raw URL: no space, '#', control or non-ASCII character",
)
_QUERY_VALUE = Text(
    pattern=RAW_URL_TEXT,
    rule="A2",
    code="decoded",
    severity="warning",
    message=_query_value_sentence,
    doc="as in the raw URL: no space, '#', control or non-ASCII character",
)
_HEADER_NAME = Text(
    pattern=r"^[^A-Z]*$",
    rule="A2",
    message=lambda name: (
        f"The header name '{name}' is not lower-case; the load balancer lower-cases "
        f"every header name, so a handler reads '{name.lower()}'."
    ),
    doc="lower-case",
)

_ELB = Shape(
    "ElbContext",
    [
        F("targetGroupArn", ARN_TEXT, doc="Resource name (ARN) of the target group of the function."),
    ],
    "AS1",
    doc="requestContext.elb of a load balancer event.",
)

_REQUEST_CONTEXT = Shape(
    "RequestContext",
    [
        F("elb", _ELB, doc="The load balancer that forwarded the request."),
    ],
    "AS1",
    doc="requestContext of a load balancer event.",
)

EVENT_SHAPE = Shape(
    "LoadBalancerEvent",
    [
        F("requestContext", _REQUEST_CONTEXT, doc="Holds elb.targetGroupArn."),
        F(
            "targetGroupArn",
            ARN_TEXT,
            required=False,
            doc="Also listed by the spec as a top-level field (the same ARN).",
        ),
        F("httpMethod", STR, enum=METHODS, doc="The request method."),
        F(
            "path",
            Text(
                pattern=r"^/[\s\S]*$",
                rule="AS1",
                # a function's requests mostly go to a few routes: a path is tested once, then one look-up in the
                # bounded memo (a path never seen costs that look-up more than the pattern)
                message="The path {json} does not start with '/'; the load balancer passes the client's request "
                "path, which always does.",
            ),
            doc="The request path, exactly as in the URL (starts with '/').",
        ),
        F(
            "queryStringParameters",
            MapOf(_QUERY_VALUE, keys=_QUERY_KEY),
            required="single-value mode",
            rule="AS2",
            doc="Query keys and values as in the raw URL (not percent-decoded); last value of a repeated key; "
            "{} without a query.",
        ),
        F(
            "multiValueQueryStringParameters",
            MapOf(ListOf(_QUERY_VALUE), keys=_QUERY_KEY),
            required="multi-value mode",
            rule="AS2",
            doc="Used instead of queryStringParameters when multi-value headers are on: every value, in order.",
        ),
        F(
            "headers",
            MapOf(STR, keys=_HEADER_NAME),
            required="single-value mode",
            rule="AS2",
            doc="Request headers, lower-case names; the load balancer adds the trace and x-forwarded-* headers.",
        ),
        F(
            "multiValueHeaders",
            MapOf(ListOf(STR), keys=_HEADER_NAME),
            required="multi-value mode",
            rule="AS2",
            doc="Used instead of headers when multi-value headers are on: every value of each header, in order.",
        ),
        F("isBase64Encoded", BOOL, doc="True when body is base64 (binary content types, or a content-encoding)."),
        F(
            "body",
            STR,
            required=False,
            doc='The request body: text, or base64 when isBase64Encoded is true; "" when empty.',
        ),
    ],
    "AS1",
    doc="An HTTP request as the load balancer hands it to a function.",
)

rule(
    "AS2",
    "alb",
    "contract",
    "The event carries the single-value forms (queryStringParameters, headers) or, with "
    "multi-value headers on, the multi-value forms.",
    origin="spec",
)(EVENT_SHAPE.field("headers"))


LoadBalancerEvent = EVENT_SHAPE.struct
RequestContext = _REQUEST_CONTEXT.struct
ElbContext = _ELB.struct
