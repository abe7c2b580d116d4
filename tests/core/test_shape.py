"""Shapes declared once (fnkit/_shape.py).

The walker, the compiled check (Structs and the generated post-check), the typed parse, the tables.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fnkit import queue
from fnkit._shape import ANY, BOOL, INT, NUMBER, STR, F, ListOf, MapOf, Nullable, Scalar, Shape, snake

# --- small synthetic shapes ---------------------------------------------------------

ITEM = Shape("Item", [F("id", STR), F("n", Nullable(INT), required=False)], rule="QS6")

SYNTHETIC = Shape(
    "Synthetic",
    [
        F("name", STR),
        F("kind", STR, enum=("A", "B")),
        F("level", Nullable(STR), required=False, enum=("lo", "hi")),
        F("maybe", Nullable(STR), required=False),
        F("flag", BOOL, required=False),
        F("count", INT, required=False, aliases=(("aws", "Count"),)),
        F("trace", STR, aliases=(("aws", "Trace"),)),  # required, two spellings
        F("items", ListOf(ITEM, min_len=1, max_len=3)),
        F("tags", MapOf(STR), required=False),
        F("weights", MapOf(Nullable(NUMBER)), required=False),
        F("ordered", STR, required="FIFO only"),
        F("anything", ANY, required=False),
        F("limit", Nullable(INT), required=False, aliases=(("aws", "Limit"),)),
        F("child", Nullable(ITEM), required=False),
        F("ratio", NUMBER, required=False),
    ],
    rule="QS1",
)

OPEN = Shape("Open", [F("a", INT), F("b", Nullable(ListOf(STR)), required=False)], rule="QS6", unknown="allow")
EMPTY = Shape("Empty", [], rule="QS6")
ONE_ALIASED = Shape("OneAliased", [F("x", STR, aliases=(("aws", "X"),))], rule="QS6")


def _real_shapes() -> list[Any]:
    shapes = [
        pytest.param(queue.EVENT_SHAPE, id="queue-event"),
        pytest.param(queue.RESPONSE_SHAPE, id="queue-response"),
    ]
    for name in ("mail", "alb"):
        try:
            shape = importlib.import_module(f"fnkit.{name}").EVENT_SHAPE
        except (ImportError, AttributeError):
            shapes.append(
                pytest.param(None, id=f"{name}-event", marks=pytest.mark.skip(reason=f"fnkit.{name} not available yet"))
            )
        else:
            shapes.append(pytest.param(shape, id=f"{name}-event"))
    return shapes


REAL_SHAPES = _real_shapes()
SYNTHETIC_SHAPES = [
    pytest.param(s, id=s.name)
    for s in (SYNTHETIC, ITEM, OPEN, EMPTY, ONE_ALIASED, queue._event.MESSAGE_ATTRIBUTE, queue._event.ATTRIBUTES)
]

# --- strategies ------------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=6),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)

_SCALAR_VALUES = {
    "str": st.text(max_size=6),
    "int": st.integers(),
    "bool": st.booleans(),
    "number": st.one_of(st.integers(), st.floats(allow_nan=True)),
    "any": json_values,
}


def near(t, depth: int = 0, strict: bool = False) -> st.SearchStrategy:
    """Values of type `t`; unless `strict`, with a junk value now and then at every level."""
    if isinstance(t, Nullable):
        good = st.one_of(st.none(), near(t.inner, depth, strict))
    elif isinstance(t, Scalar):
        good = _SCALAR_VALUES[t.kind]
    elif isinstance(t, ListOf):
        lo, hi = t.min_len or 0, t.max_len if t.max_len is not None else 3
        if not strict:
            lo, hi = max(0, lo - 1), hi + 1
        good = st.lists(near(t.item, depth + 1, strict), min_size=lo, max_size=min(hi, 4))
    elif isinstance(t, MapOf):
        good = st.dictionaries(st.text(max_size=4), near(t.value, depth + 1, strict), max_size=3)
    else:
        good = near_object(t, depth, strict)
    if strict:
        return good
    return st.one_of(good, good, good, json_scalars if depth > 3 else json_values)


@st.composite
def near_object(draw, shape: Shape, depth: int = 0, strict: bool = False):
    out: dict[str, Any] = {}
    for f in shape.fields:
        keys = shape.keys_of(f)
        if f.required is True:
            present = strict or draw(st.integers(0, 9)) > 0
        else:
            present = draw(st.booleans())
        if not present:
            continue
        key = draw(st.sampled_from(keys))
        if f.enum is not None and (strict or draw(st.integers(0, 3)) > 0):
            out[key] = draw(
                st.sampled_from(f.enum)
                if f.required is True or not isinstance(f.type, Nullable)
                else st.one_of(st.none(), st.sampled_from(f.enum))
            )
        else:
            out[key] = draw(near(f.type, depth + 1, strict))
        if not strict and len(keys) > 1 and draw(st.integers(0, 9)) == 0:
            out[draw(st.sampled_from(keys))] = draw(near(f.type, depth + 1))  # maybe both spellings
    if not strict and draw(st.integers(0, 9)) == 0:
        out[draw(st.text(max_size=5))] = draw(json_scalars)  # maybe an unknown key
    return out


def values_for(shape: Shape) -> st.SearchStrategy:
    """Arbitrary JSON, values of the shape, and values of the shape with junk here and there."""
    return st.one_of(json_values, near(shape, strict=True), near(shape))


def _agree(shape: Shape, value) -> None:
    issues = shape.walk(value)
    assert shape.fast(value) is (not issues), (value, issues, getattr(shape.post_ok, "source", None))


# --- the property: the generated check and the walker agree ---------------------------


@pytest.mark.parametrize("shape", REAL_SHAPES)
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(data=st.data())
def test_fast_check_agrees_with_walker_on_real_shapes(shape, data):
    value = data.draw(values_for(shape))
    _agree(shape, value)


@pytest.mark.parametrize("shape", SYNTHETIC_SHAPES)
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(data=st.data())
def test_fast_check_agrees_with_walker_on_synthetic_shapes(shape, data):
    value = data.draw(values_for(shape))
    _agree(shape, value)


@given(
    seed=st.integers(0, 2**16), n=st.integers(1, 5), fifo=st.booleans(), dialect=st.sampled_from(["provider", "aws"])
)
def test_fast_check_accepts_every_built_queue_event(seed, n, fifo, dialect):
    event = queue.build_event(
        [f"body {i}" for i in range(n)],
        fifo=fifo,
        dialect=dialect,
        seed=seed,
        message_attributes={"k": "v"} if seed % 2 else None,
    )
    assert queue.EVENT_SHAPE.fast(event)
    assert queue.EVENT_SHAPE.walk(event) == []


# --- examples the property found worth pinning --------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        {"a": "x"},  # the only spelling of a required field is missing, count of keys looks complete
        {"x": "1"},
    ],
)
def test_missing_required_field_with_two_spellings_is_caught_by_both(value):
    shape = Shape("S", [F("a", STR), F("b", STR, aliases=(("aws", "B"),))], rule="QS1")
    if "x" in value:
        shape = Shape("S", [F("x", STR), F("y", STR, aliases=(("aws", "Y"),))], rule="QS1")
    assert shape.walk(value)[0].code == "missing"
    assert shape.fast(value) is False


@pytest.mark.parametrize(
    "value",
    [{"a": "x", "b": "y"}, {"a": "x", "B": "y"}],
)
def test_either_spelling_of_a_required_field_is_accepted(value):
    shape = Shape("S", [F("a", STR), F("b", STR, aliases=(("aws", "B"),))], rule="QS1")
    assert shape.walk(value) == [] and shape.fast(value) is True


def test_bool_is_not_an_integer_and_subclasses_take_the_slow_path():
    shape = Shape("S", [F("n", INT)], rule="QS1")
    assert not shape.fast({"n": True}) and shape.walk({"n": True})[0].code == "type"
    assert shape.fast({"n": 3}) and shape.walk({"n": 3}) == []


# --- the walker's messages -------------------------------------------------------------


def test_walk_reports_missing_fields_with_the_fields_rule():
    [issue] = ITEM.walk({})
    assert (issue.path, issue.code, issue.severity, issue.rule) == ("$.id", "missing", "error", "QS6")
    assert "'id'" in issue.message


def test_walk_reports_types_in_plain_words():
    [issue] = ITEM.walk({"id": 3})
    assert issue.code == "type" and issue.message == "Expected a string, got a number (3)."


def test_walk_reports_the_enum_choices():
    value = {"name": "n", "kind": "C", "trace": "t", "items": [{"id": "1"}]}
    [issue] = SYNTHETIC.walk(value)
    assert issue.path == "$.kind" and issue.code == "enum" and "A, B" in issue.message


def test_walk_accepts_null_for_a_nullable_enum():
    value = {"name": "n", "kind": "A", "trace": "t", "items": [{"id": "1"}], "level": None}
    assert SYNTHETIC.walk(value) == [] and SYNTHETIC.fast(value)


def test_walk_reports_list_length_limits():
    base = {"name": "n", "kind": "A", "trace": "t"}
    [few] = SYNTHETIC.walk({**base, "items": []})
    [many] = SYNTHETIC.walk({**base, "items": [{"id": str(i)} for i in range(4)]})
    assert few.code == many.code == "limit"
    assert "at least 1" in few.message and "at most 3" in many.message


def test_unknown_keys_are_warnings_with_a_case_hint():
    [issue] = ITEM.walk({"id": "1", "N": 3})
    assert issue.severity == "warning" and issue.code == "unknown" and issue.rule == "G1"
    assert "Did you mean 'n'?" in issue.message


def test_unknown_keys_are_allowed_when_the_shape_says_so():
    assert OPEN.walk({"a": 1, "zzz": 2}) == [] and OPEN.fast({"a": 1, "zzz": 2})


def test_two_spellings_of_one_field_are_a_g2_conflict():
    value = {"name": "n", "kind": "A", "trace": "t", "Trace": "u", "items": [{"id": "1"}]}
    [issue] = SYNTHETIC.walk(value)
    assert issue.rule == "G2" and issue.code == "conflict" and issue.path == "$.Trace"


def test_map_keys_must_be_strings():
    [issue] = Shape("M", [F("m", MapOf(STR))], rule="QS1").walk({"m": {1: "x"}})
    assert issue.path == "$.m[1]" and issue.code == "type"


def test_nested_paths_are_located():
    issues = queue.EVENT_SHAPE.walk({"Records": [{}, {"messageId": 1}]})
    paths = {i.path for i in issues}
    assert "$.Records[0].messageId" in paths
    assert "$.Records[1].messageId" in paths


# --- typed parse -------------------------------------------------------------------------


def test_parse_builds_frozen_dataclasses_with_snake_case_fields():
    event = queue.build_event(["hello"], dialect="aws", trace_header="Root=1-x")
    parsed = queue.EVENT_SHAPE.parse(event)
    record = parsed.records[0]
    assert record.body == "hello"
    assert record.event_source_arn.startswith("arn:aws:sqs:")
    assert record.md5_of_body == event["Records"][0]["md5OfBody"]
    assert record.attributes.trace_header == "Root=1-x"  # the aws spelling lands on the same field
    assert record.md5_of_message_attributes is None
    assert isinstance(parsed.records, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.body = "changed"
    assert dataclasses.is_dataclass(record)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("eventSourceARN", "event_source_arn"),
        ("md5OfBody", "md5_of_body"),
        ("Records", "records"),
        ("ApproximateReceiveCount", "approximate_receive_count"),
        ("x-forwarded-for", "x_forwarded_for"),
        ("class", "class_"),
        ("awsRegion", "aws_region"),
    ],
)
def test_snake(name, expected):
    assert snake(name) == expected


# --- tables and schema ----------------------------------------------------------------------


def test_fields_table_flattens_nested_shapes():
    rows = {r["field"]: r for r in queue.EVENT_SHAPE.fields_table()}
    assert rows["Records"]["type"] == "list of Object"
    assert rows["Records[].md5OfBody"]["required"] == "yes"
    assert rows["Records[].attributes.SequenceNumber"]["required"] == "FIFO only"
    assert rows["Records[].attributes.ProviderTraceHeader"]["aliases"] == "aws: AWSTraceHeader"
    assert rows["Records[].eventSource"]["rule"] == "QS4"


def test_json_schema_accepts_built_events_and_rejects_broken_ones():
    jsonschema = pytest.importorskip("jsonschema")
    schema = queue.EVENT_SHAPE.json_schema()
    assert schema["title"] == "QueueEvent"
    jsonschema.validate(queue.build_event(["a", "b"], fifo=True), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"Records": [{"messageId": 1}]}, schema)


def test_json_schema_of_nullable_and_limits():
    schema = SYNTHETIC.json_schema()
    assert schema["properties"]["items"]["minItems"] == 1
    assert schema["properties"]["items"]["maxItems"] == 3
    assert {"type": "null"} in schema["properties"]["maybe"]["anyOf"]
    assert schema["properties"]["kind"]["enum"] == ["A", "B"]
    assert "trace" not in schema["required"]  # either spelling may carry it


# --- the compiled layer: Structs as the typed parse, Text constraints, column tests -------------------

import msgspec  # noqa: E402

from fnkit import alb, mail  # noqa: E402
from fnkit._shape import Text, all_digits  # noqa: E402


def test_the_typed_parse_is_the_compiled_struct_with_the_dataclass_protocol():
    parsed = queue.parse_event(queue.build_event(["hi"], fifo=True, group_ids=["g"]))
    record = parsed.records[0]
    assert isinstance(parsed, msgspec.Struct) and isinstance(record, queue.EVENT_SHAPE.fields[0].type.item.struct)
    assert dataclasses.replace(record, body="other").body == "other" and record.body == "hi"
    assert dataclasses.asdict(record.attributes)["message_group_id"] == "g"
    with pytest.raises(dataclasses.FrozenInstanceError):
        del record.body
    assert dataclasses.is_dataclass(record) and dataclasses.is_dataclass(type(record))


@pytest.mark.parametrize("dialect", ["provider", "aws"])
def test_the_aliased_trace_header_reads_the_same_in_both_spellings(dialect):
    event = queue.build_event(["x"], dialect=dialect, trace_header="Root=1-abc")
    for form in (event, json.dumps(event), json.dumps(event).encode()):
        attrs = queue.parse_event(form).records[0].attributes
        assert attrs.trace_header == "Root=1-abc"
        assert "trace_header" in {f.name for f in dataclasses.fields(cast(Any, attrs))}
    assert queue.parse_event(queue.build_event(["x"], dialect=dialect)).records[0].attributes.trace_header is None


def test_parsing_text_and_parsing_the_dict_give_equal_typed_values():
    for module, event in (
        (queue, queue.build_event(["a", "b"], message_attributes={"k": "v"})),
        (mail, mail.build_event(mail_from="a@example.com", recipients=["b@example.com"])),
        (alb, alb.build_event("POST", "/x", headers={"content-type": "text/plain"}, body=b"hi")),
    ):
        assert module.parse_event(event) == module.parse_event(json.dumps(event).encode())


def test_absent_optional_fields_read_as_none():
    typed = alb.parse_event(alb.build_event("GET", "/"))
    assert typed.multi_value_headers is None and typed.target_group_arn is None


def _declared_texts():
    seen, out = set(), []

    def visit(t):
        if isinstance(t, Nullable):
            visit(t.inner)
        elif isinstance(t, Text):
            if id(t) not in seen:
                seen.add(id(t))
                out.append(t)
        elif isinstance(t, ListOf):
            visit(t.item)
        elif isinstance(t, MapOf):
            visit(t.value)
            if t.keys is not None:
                visit(t.keys)
        elif isinstance(t, Shape):
            for f in t.fields:
                visit(f.type)

    for shape in (
        queue.EVENT_SHAPE,
        queue.RESPONSE_SHAPE,
        mail.EVENT_SHAPE,
        mail.RESPONSE_SHAPE,
        alb.EVENT_SHAPE,
        alb.RESPONSE_SHAPE,
    ):
        visit(shape)
    return [t for t in out if t.column_test is not None]


COLUMN_TESTED = _declared_texts()


def test_the_column_tests_are_found():
    assert {t.column_test for t in COLUMN_TESTED} >= {all_digits}
    assert len({t.column_test for t in COLUMN_TESTED}) >= 5


@pytest.mark.parametrize("text", COLUMN_TESTED, ids=lambda t: f"{t.column_test.__name__}:{t.pattern[:20]}")
@settings(deadline=None)
@given(data=st.data())
def test_a_column_test_never_accepts_what_its_pattern_rejects(text, data):
    import re

    alphabet = st.sampled_from([*list("09az AZ@.-_#/\n\t\x7féÉ%+"), "\xa0"])
    strings = st.one_of(st.text(alphabet, max_size=8), st.from_regex(text.pattern, fullmatch=True), st.text(max_size=6))
    values = data.draw(st.lists(strings, min_size=1, max_size=5))
    matches = all(re.fullmatch(text.pattern, v) for v in values)
    if text.column_test(values):
        assert matches, values
    if all(v.isascii() for v in values) and _exact(text):
        assert bool(text.column_test(values)) == matches, values  # on ASCII text it is exact


def _exact(text: Text) -> bool:
    """Column tests that answer exactly on ASCII text (the address test is for addresses, not the empty sender)."""
    from fnkit.alb._event import all_raw_url_text, all_without_capitals
    from fnkit.mail._address import ADDRESS_PATTERN, all_addresses
    from fnkit.queue._event import all_counts

    return text.column_test in (all_digits, all_counts, all_raw_url_text, all_without_capitals) or (
        text.column_test is all_addresses and text.pattern == ADDRESS_PATTERN
    )
