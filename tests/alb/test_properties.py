"""Properties: validators never raise, builders always valid, the fast path agrees with the full check."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fnkit import Raw, alb, rules
from fnkit.alb._event import EVENT_CONTRACT
from fnkit.alb._http import request_to_event

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12))
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=15,
)


class Odd:
    """An object no JSON holds."""


python_objects = st.one_of(
    json_values,
    st.binary(max_size=20),
    st.sets(st.integers(), max_size=3),
    st.tuples(st.integers(), st.text()),
    st.builds(Odd),
    st.floats(),
    st.dictionaries(st.integers(), st.text(max_size=3), max_size=3),
    st.just(float("nan")),
    st.just(b"\xff"),
    st.just(Raw(b"{")),
    st.just(Raw("[1]")),
)
methods = st.sampled_from(["DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"])
token = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_", min_size=1, max_size=10)
header_value = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=20)
raw_query_text = st.text(alphabet="abcdefghij0123456789%+=&-._~", max_size=30)
content_types = st.sampled_from(
    [
        None,
        "text/plain",
        "text/html; charset=utf-8",
        "application/json",
        "application/xml",
        "application/javascript",
        "application/octet-stream",
        "image/png",
    ]
)


# --- never raises ------------------------------------------------------------------------------------------------


@given(python_objects)
def test_validate_event_never_raises(value):
    report = alb.validate_event(value)
    assert report.source == "alb" and all(i.rule in rules.ids() for i in report)


@given(st.text(max_size=40))
def test_validate_event_never_raises_on_text(text):
    assert alb.validate_event(text).source == "alb"


@given(st.binary(max_size=40))
def test_validate_event_never_raises_on_bytes(data):
    assert alb.validate_event(data).source == "alb"


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "requestContext",
                "httpMethod",
                "path",
                "queryStringParameters",
                "multiValueQueryStringParameters",
                "headers",
                "multiValueHeaders",
                "isBase64Encoded",
                "body",
                "targetGroupArn",
            ]
        ),
        python_objects,
        max_size=10,
    )
)
def test_validate_event_never_raises_on_event_like_objects(value):
    report = alb.validate_event(value)
    assert isinstance(report.ok, bool)
    for multi in (True, False):
        assert alb.validate_event(value, multi_value=multi).source == "alb"


@given(python_objects, st.booleans())
def test_validate_response_and_outcome_never_raise(value, multi):
    report = alb.validate_response(value, multi_value=multi)
    assert report.subject == "response"
    out = alb.outcome(alb.build_event(), value, multi_value=multi)
    assert isinstance(out.status, int)
    assert isinstance(out.body, bytes)
    assert out.status == 502 or report.ok
    assert out.rule in rules.ids() and all(i.rule in rules.ids() for i in [*report, *out.issues])


@given(
    st.dictionaries(
        st.sampled_from(["statusCode", "statusDescription", "isBase64Encoded", "headers", "multiValueHeaders", "body"]),
        python_objects,
        max_size=6,
    ),
    st.booleans(),
)
def test_outcome_is_502_exactly_when_the_response_is_invalid(response, multi):
    out = alb.outcome(alb.build_event(multi_value=multi), response)
    report = alb.validate_response(response, multi_value=multi)
    assert (out.status == 502 and out.rule != "AS4") == (not report.ok)


# --- builders ------------------------------------------------------------------------------------------------------


@settings(max_examples=200)
@given(
    method=methods,
    path=st.lists(token, max_size=3).map(lambda parts: "/" + "/".join(parts)),
    query=st.one_of(
        st.none(), raw_query_text, st.lists(st.tuples(st.text(max_size=6), st.text(max_size=6)), max_size=4)
    ),
    headers=st.lists(st.tuples(token, header_value), max_size=6),
    content_type=content_types,
    encoding=st.sampled_from([None, "gzip"]),
    body=st.binary(max_size=40),
    multi_value=st.booleans(),
    dialect=st.sampled_from(["provider", "aws"]),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_built_events_are_valid(method, path, query, headers, content_type, encoding, body, multi_value, dialect, seed):
    headers = [(n, v) for n, v in headers if n.lower() not in ("upgrade", "content-type", "content-encoding")]
    if content_type:
        headers.append(("Content-Type", content_type))
    if encoding:
        headers.append(("Content-Encoding", encoding))
    if method == "GET":
        body = b""  # a GET body is legal HTTP but the platform shows it with a warning (A2)
    event = alb.build_event(
        method, path, query=query, headers=headers, body=body, multi_value=multi_value, dialect=dialect, seed=seed
    )
    report = alb.validate_event(event, multi_value=multi_value)
    assert report.ok and list(report) == [] and report.dialect == dialect, report
    assert json.loads(json.dumps(event)) == event
    # the body the function sees is the body the client sent
    sent = base64.b64decode(event["body"]) if event["isBase64Encoded"] else event["body"].encode()
    assert sent == body


@given(st.lists(st.tuples(token, header_value), max_size=8), raw_query_text)
def test_multi_value_event_keeps_every_value_in_order(pairs, query):
    event = request_to_event("GET", "/", query, pairs, b"", multi_value=True)
    for name in {n.lower() for n, _ in pairs}:
        assert event["multiValueHeaders"][name][: len([v for n, v in pairs if n.lower() == name])] == [
            v for n, v in pairs if n.lower() == name
        ] or name.startswith("x-forwarded")
    flat = [(k, v) for k, vs in event["multiValueQueryStringParameters"].items() for v in vs]
    assert sorted(flat) == sorted(alb._event.split_query(query))


# --- the fast path agrees with the full check -------------------------------------------------------------------------

ARNS = [alb.make_target_group_arn("aws"), alb.make_target_group_arn("provider"), "arn:aws:bad", "x"]
TEXTS = [
    "",
    "/",
    "/x",
    "x",
    "a b",
    "a#b",
    "é",
    "aGk=",
    "aGk",
    "websocket",
    "ELB-HealthChecker/2.0",
    "text/plain",
    "image/png",
    "gzip",
    "Root=1-00000000-000000000000000000000000",
]
# per field: values close to the edges the rules draw, and now and then anything at all
EDGE_VALUES: dict[str, list[Any]] = {
    "httpMethod": ["GET", "HEAD", "POST", "get", "TRACE", 1, None],
    "path": ["/", "/x", "x", "", 5, ["/"]],
    "body": ["", "x", "aGk=", "aGk", "a b", None, 1, b""],
    "isBase64Encoded": [True, False, "true", None, 0],
    "queryStringParameters": [{}, {"a": "1"}, {"a": "b c"}, {"a b": "1"}, {"a": 1}, [], None],
    "headers": [{}, {"x-a": "1"}, {"X-A": "1"}, {"x-a": 1}, [], None],
    "multiValueHeaders": [{}, {"x-a": ["1"]}, {"x-a": "1"}, None],
    "multiValueQueryStringParameters": [{}, {"a": ["1"]}, {"a": "1"}],
    "requestContext": [
        {},
        {"elb": {}},
        {"elb": {"targetGroupArn": ARNS[0]}},
        {"elb": None},
        [],
        {"elb": {"targetGroupArn": ARNS[1]}, "alb": {}},
    ],
    "targetGroupArn": [*ARNS, 5],
    "extra": ["x", 1],
}
FIELD_VALUES = {field: st.sampled_from(values) for field, values in EDGE_VALUES.items()}
HEADER_NAMES = [
    "upgrade",
    "user-agent",
    "content-type",
    "content-encoding",
    "x-provider-trace-id",
    "x-amzn-trace-id",
    "host",
    "Host",
    "X-A",
    "x-a",
]
header_values = st.one_of(st.sampled_from(TEXTS), st.sampled_from([1, None, ["x"]]), st.text(max_size=4))
mutation = st.one_of(
    st.sampled_from(sorted(FIELD_VALUES)).flatmap(lambda f: st.tuples(st.just("set"), st.just(f), FIELD_VALUES[f])),
    st.tuples(st.just("set"), st.sampled_from(sorted(FIELD_VALUES)), python_objects),
    st.tuples(st.just("del"), st.sampled_from(sorted(FIELD_VALUES)), st.none()),
    st.tuples(st.just("header"), st.one_of(st.sampled_from(HEADER_NAMES), st.text(max_size=4)), header_values),
    st.tuples(
        st.just("delheader"),
        st.sampled_from(["x-provider-trace-id", "x-amzn-trace-id", "user-agent", "host"]),
        st.none(),
    ),
    st.tuples(st.just("query"), st.one_of(st.sampled_from(["a", "a b", "é", "q"]), st.text(max_size=4)), header_values),
    st.tuples(
        st.just("elb"),
        st.sampled_from(["targetGroupArn", "targetGroupArn", "other"]),
        st.one_of(st.sampled_from(ARNS), python_objects),
    ),
)


def _mutate(event: dict[str, Any], change: tuple[Any, ...]) -> None:
    kind, key, value = change
    if kind == "set":
        event[key] = value
    elif kind == "del":
        event.pop(key, None)
    elif kind in ("header", "delheader", "query"):
        field = "headers" if kind != "query" else "queryStringParameters"
        target = event.get(field)
        if isinstance(target, dict):
            if kind == "delheader":
                target.pop(key, None)
            else:
                target[key] = value
    elif kind == "elb":
        context = event.get("requestContext")
        if isinstance(context, dict) and isinstance(context.get("elb"), dict):
            context["elb"][key] = value


BASES: list[Any] = [
    alb.build_event("GET", "/items", query="a=1&b=2", headers={"user-agent": "curl/8"}),
    alb.build_event("POST", "/up", headers={"content-type": "application/json"}, body=b'{"a":1}', dialect="aws"),
    alb.build_event("PUT", "/bin", headers={"content-type": "image/png"}, body=b"\x89PNG"),
    alb.health_check_event(),
    alb.health_check_event(dialect="aws"),
    alb.build_event("GET", "/", headers={"user-agent": "ELB-HealthChecker/2.0"}),  # with a trace header
    alb.build_event("POST", "/z", headers={"content-type": "text/plain", "content-encoding": "gzip"}, body=b"zz"),
    {
        **alb.build_event("POST", "/z", headers={"content-type": "text/plain", "content-encoding": "gzip"}, body=b"zz"),
        "body": "zz",
        "isBase64Encoded": False,
    },  # what the platform never sends (A4)
]


def test_compiled_check_agrees_with_the_located_one_on_every_single_edit():
    """Each base event with each one edit of the tables above: the compiled check never hides an issue."""
    edits = (
        [("set", f, v) for f, values in EDGE_VALUES.items() for v in values]
        + [("del", f, None) for f in FIELD_VALUES]
        + [
            (kind, name, v)
            for kind, names in (("header", HEADER_NAMES), ("query", ["a", "a b", "é"]))
            for name in names
            for v in [*TEXTS, 1, None]
        ]
        + [("delheader", n, None) for n in ["x-provider-trace-id", "x-amzn-trace-id", "user-agent", "host"]]
        + [("elb", k, v) for k in ("targetGroupArn", "other") for v in ARNS]
    )
    for base in BASES:
        for edit in edits:
            event = copy.deepcopy(base)
            _mutate(event, edit)
            fast, full = alb.validate_event(event), EVENT_CONTRACT.located(event)
            assert (list(fast), fast.dialect) == (list(full), full.dialect), (base, edit)


@settings(deadline=None)
@given(base=st.sampled_from(BASES), changes=st.lists(mutation, max_size=4))
def test_compiled_check_agrees_with_the_located_one(base, changes):
    event = copy.deepcopy(base)
    for change in changes:
        _mutate(event, change)
    fast, full = alb.validate_event(event), EVENT_CONTRACT.located(event)
    assert list(fast) == list(full) and fast.dialect == full.dialect
