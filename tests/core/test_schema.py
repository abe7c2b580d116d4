"""The exported JSON Schemas (`fnkit.<source>.json_schema`) say what fnkit's structural check says.

For every source and kind, values are generated from the declarations (valid ones, and ones with
junk, wrong types, missing keys, broken patterns here and there), then the `jsonschema` package
and fnkit judge each: the schema accepts a value exactly when fnkit finds no structural error.
Unknown keys are warnings in fnkit, so the schemas allow them.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fnkit
from fnkit import alb, mail, queue
from fnkit._engine.shape import ListOf, MapOf, Nullable, Scalar, Shape, Text

# JSON values; floats are never whole numbers: JSON Schema counts 200.0 as an integer, fnkit does
# not (the schema's description says so), and that is the one difference a schema cannot state.
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: not x.is_integer()),
    st.text(max_size=8),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)


def text_values(t: Text) -> st.SearchStrategy:
    """Strings that meet the Text, strings near it, and any string."""
    options = [st.text(max_size=12), st.text(alphabet="0123456789", max_size=4), st.just(""), st.just("\n")]
    if t.pattern is not None:
        good = st.from_regex(t.pattern, fullmatch=True)
        if t.max_len is not None:
            limit = t.max_len
            good = good.filter(lambda s: len(s) <= limit)
        options += [good, good, good.map(lambda s: s + "\n"), good.map(lambda s: " " + s)]
    if t.max_len is not None:
        options += [st.text(min_size=t.max_len - 1, max_size=t.max_len + 2)]
    return st.one_of(options)


def near(t, depth: int = 0) -> st.SearchStrategy:
    """Values of type `t`, with a junk value now and then at every level."""
    if isinstance(t, Nullable):
        good = st.one_of(st.none(), near(t.inner, depth))
    elif isinstance(t, Text):
        good = text_values(t)
    elif isinstance(t, Scalar):
        good = {
            "str": st.text(max_size=8),
            "int": st.integers(),
            "bool": st.booleans(),
            "number": st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False)),
            "any": json_values,
        }[t.kind]
    elif isinstance(t, ListOf):
        lo = max(0, (t.min_len or 0) - 1)
        good = st.lists(near(t.item, depth + 1), min_size=lo, max_size=3)
    elif isinstance(t, MapOf):
        keys = text_values(t.keys) if t.keys is not None else st.text(max_size=5)
        good = st.dictionaries(keys, near(t.value, depth + 1), max_size=3)
    else:
        good = near_object(t, depth)
    return st.one_of(good, good, good, good, json_scalars if depth > 2 else json_values)


@st.composite
def near_object(draw, shape: Shape, depth: int = 0):
    out: dict[str, Any] = {}
    for f in shape.fields:
        keys = shape.keys_of(f)
        if not draw(st.integers(0, 9)) if f.required is True else draw(st.booleans()):
            continue
        key = draw(st.sampled_from(keys))
        if f.enum is not None and draw(st.integers(0, 3)) > 0:
            out[key] = draw(st.sampled_from(f.enum))
        else:
            out[key] = draw(near(f.type, depth + 1))
        if len(keys) > 1 and draw(st.integers(0, 5)) == 0:
            out[draw(st.sampled_from(keys))] = draw(near(f.type, depth + 1))  # both spellings, now and then
    if draw(st.integers(0, 9)) == 0:
        out[draw(st.text(max_size=5))] = draw(json_scalars)  # an unknown key
    return out


def _structural_ok(shape: Shape):
    return lambda value: not any(i.severity == "error" for i in shape.walk(value))


CASES = [
    pytest.param(queue.EVENT_SHAPE, queue.json_schema("event"), _structural_ok(queue.EVENT_SHAPE), id="queue-event"),
    pytest.param(
        queue.RESPONSE_SHAPE,
        queue.json_schema("response"),
        lambda v: queue.validate_response(v).ok,
        id="queue-response",
    ),
    pytest.param(mail.EVENT_SHAPE, mail.json_schema("event"), _structural_ok(mail.EVENT_SHAPE), id="mail-event"),
    pytest.param(
        mail.RESPONSE_SHAPE, mail.json_schema("response"), _structural_ok(mail.RESPONSE_SHAPE), id="mail-response"
    ),
    pytest.param(alb.EVENT_SHAPE, alb.json_schema("event"), _structural_ok(alb.EVENT_SHAPE), id="alb-event"),
    pytest.param(
        alb._response._SHAPES[False],
        alb.json_schema("response"),
        _structural_ok(alb._response._SHAPES[False]),
        id="alb-response",
    ),
    pytest.param(
        alb._response._SHAPES[True],
        alb.json_schema("response", multi_value=True),
        _structural_ok(alb._response._SHAPES[True]),
        id="alb-response-multi-value",
    ),
]


@pytest.mark.parametrize(("shape", "schema", "fnkit_ok"), CASES)
def test_each_schema_is_draft_2020_12(shape, schema, fnkit_ok):
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "Checks this schema cannot express" in schema["description"]


@pytest.mark.parametrize(("shape", "schema", "fnkit_ok"), CASES)
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(data=st.data())
def test_jsonschema_agrees_with_fnkit_on_every_structural_verdict(shape, schema, fnkit_ok, data):
    value = data.draw(st.one_of(json_values, near(shape)))
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid(value) is fnkit_ok(value), (value, [e.message for e in validator.iter_errors(value)])


def _built():
    yield (
        "queue",
        "event",
        queue.build_event(
            ["a", "b"],
            fifo=True,
            group_ids=["g", "h"],
            dialect="aws",
            message_attributes={"k": "v", "n": 3},
            trace_header="Root=1-b",
        ),
    )
    yield "queue", "event", queue.build_event(["x"], trace_header="Root=1-a")
    yield "queue", "response", {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    yield "queue", "response", None
    yield "mail", "event", mail.build_event(mail_from="a@example.com", recipients=["b@example.com"], subject="hi")
    yield (
        "mail",
        "response",
        {"actions": [{"action": {"type": "BOUNCE", "parameters": {"bounceMessage": "no"}}, "allRecipients": True}]},
    )
    yield "alb", "event", alb.build_event("POST", "/x", query="a=1", headers={"content-type": "text/plain"}, body=b"hi")
    yield "alb", "event", alb.build_event("GET", "/", multi_value=True, dialect="aws")
    yield "alb", "response", {"statusCode": 200, "headers": {"content-type": "text/plain"}, "body": "ok"}


@pytest.mark.parametrize(("source", "kind", "value"), list(_built()))
def test_built_values_are_valid_under_their_schema(source, kind, value):
    jsonschema.validate(value, getattr(fnkit, source).json_schema(kind))


# One mutation per structural rule the compiled layer checks: the schema must reject each.
MUTATIONS: list[tuple[str, str, list[str | int], Any]] = [
    ("queue", "event", ["Records", 0, "eventSource"], "aws:sns"),  # enum (QS4)
    ("queue", "event", ["Records", 0, "attributes", "ApproximateReceiveCount"], "0"),  # pattern (Q4)
    ("queue", "event", ["Records", 0, "attributes", "SentTimestamp"], "12a"),  # pattern (QS3)
    ("queue", "event", ["Records", 0, "eventSourceARN"], "not-an-arn"),  # pattern (QS2)
    ("queue", "event", ["Records", 0, "messageAttributes"], {"bad..name": {"dataType": "String", "stringValue": "v"}}),
    ("queue", "event", ["Records", 0, "messageAttributes"], {"k": {"dataType": "Text", "stringValue": "v"}}),
    ("queue", "event", ["Records", 0, "attributes", "ProviderTraceHeader"], "t"),  # two spellings (G2)
    ("mail", "event", ["flowDirection"], "SIDEWAYS"),  # enum (MS2)
    ("mail", "event", ["subject"], "s" * 257),  # length (M1)
    ("mail", "event", ["sender", "address"], "not an address"),  # pattern (MS3)
    ("mail", "event", ["envelope", "recipients"], []),  # minItems (MS5)
    ("mail", "response", ["actions"], []),  # minItems (M4)
    ("mail", "response", ["actions", 0, "action", "type"], "QUARANTINE"),  # enum (M4)
    ("alb", "event", ["httpMethod"], "BREW"),  # enum (AS1)
    ("alb", "event", ["path"], "items"),  # pattern (AS1)
    ("alb", "event", ["headers"], {"Host": "x"}),  # propertyNames (A2)
    ("alb", "event", ["requestContext", "elb", "targetGroupArn"], "arn:x"),  # pattern (AS1)
    ("alb", "response", ["statusCode"], "200"),  # type (A6)
]


def _base(source: str, kind: str):
    for s, k, value in _built():
        if (s, k) == (source, kind) and value is not None:
            return copy.deepcopy(value)
    raise LookupError((source, kind))


@pytest.mark.parametrize(
    ("source", "kind", "path", "value"), MUTATIONS, ids=[f"{s}-{k}-{'.'.join(map(str, p))}" for s, k, p, _ in MUTATIONS]
)
def test_each_structural_check_is_in_the_schema(source, kind, path, value):
    doc = _base(source, kind)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    module = getattr(fnkit, source)
    report = module.validate_event(doc) if kind == "event" else module.validate_response(doc)
    assert not report.ok, report
    assert not jsonschema.Draft202012Validator(module.json_schema(kind)).is_valid(doc)


def test_the_schema_lists_the_semantic_rules():
    description = queue.json_schema("event")["description"]
    for rule_id in ("Q13", "QS7", "Q12", "QS5"):
        assert f"{rule_id}:" in description
    assert "G1" in description  # unknown keys: allowed by the schema, warned about by fnkit


def test_the_command_line_prints_the_schema(capsys):
    from fnkit.cli import main

    assert main(["schema", "alb", "response"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == alb.json_schema("response")
    assert main(["schema", "queue"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "QueueEvent"
