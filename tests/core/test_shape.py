"""Shapes declared once (fnkit/_engine/shape.py).

The walker, the compiled check (Structs with the declared constraints as msgspec.Meta, and the one-spelling
check), the typed parse, the tables; and the one test that the compiled and located ways report alike.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, cast

import pytest

from fnkit import queue
from fnkit._engine.columns import snake
from fnkit._engine.shape import ANY, BOOL, INT, NUMBER, STR, F, ListOf, MapOf, Nullable, Shape

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
ONE_ALIASED = Shape("OneAliased", [F("x", STR, aliases=(("aws", "X"),))], rule="QS6")


# --- the compiled check: what msgspec cannot say (two spellings of one field) -----------------


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


# --- the compiled layer: Structs as the typed parse, Text constraints as msgspec.Meta -----------------

import msgspec  # noqa: E402

from fnkit import alb, mail  # noqa: E402
from fnkit._engine.shape import Text  # noqa: E402


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


DIGITS = Text(pattern=r"^[0-9]+$", rule="QS3", message="'{value}' is not digits.")
TEXTS = Shape(
    "Texts",
    [
        F("n", DIGITS),
        F("short", Text(max_len=2, rule="QS3"), required=False),
        F("tags", MapOf(STR, keys=Text(pattern=r"^[a-z]*$", rule="QS3", severity="warning")), required=False),
    ],
    rule="QS1",
)


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ({"n": "12"}, True),
        ({"n": "12\n"}, False),  # `$` alone would match before the line break: the whole string must match
        ({"n": "a12"}, False),  # msgspec searches: the pattern is anchored for it
        ({"n": "12a"}, False),
        ({"n": ""}, False),
        ({"n": "1", "short": "😀😀"}, True),  # lengths count characters, as len() does
        ({"n": "1", "short": "abc"}, False),
        ({"n": "1", "tags": {"ab": "x"}}, True),
        ({"n": "1", "tags": {"aB": "x"}}, False),  # a warning's constraint too: the walk then says it
    ],
)
def test_text_constraints_are_checked_by_the_compiled_check_and_the_walk_alike(value, ok):
    assert TEXTS.fast(value) is ok
    assert (not TEXTS.walk(value)) is ok


def test_a_broken_text_is_one_located_issue_in_the_texts_words():
    [issue] = TEXTS.walk({"n": "x1"})
    assert (issue.path, issue.code, issue.rule, issue.message) == ("$.n", "format", "QS3", "'x1' is not digits.")
    [issue] = TEXTS.walk({"n": "1", "tags": {"aB": "x"}})
    assert (issue.path, issue.severity) == ("$.tags.aB", "warning")


def test_a_text_gives_msgspec_its_lengths_and_its_pattern_to_the_one_check_of_that_pattern():
    # msgspec would call Python's re once per string: the Structs carry no pattern, the engine checks it per column
    assert DIGITS.annotation is str and DIGITS.check is not None and DIGITS.check.pattern == DIGITS.pattern
    assert Text(pattern=DIGITS.pattern, rule="Q4").check is DIGITS.check  # one check (and memo) per pattern
    assert Text(min_len=1).annotation.__metadata__[0].min_length == 1 and Text().annotation is str
    assert Text().check is None


NESTED_ALIASED = Shape(
    "Outer", [F("m", MapOf(ListOf(ONE_ALIASED))), F("one", Nullable(ONE_ALIASED), required=False)], rule="QS6"
)


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ({"m": {"a": [{"x": "1"}, {"X": "2"}]}}, True),
        ({"m": {"a": [{"x": "1"}], "b": [{"x": "1", "X": "2"}]}}, False),  # both spellings, deep in a map's list
        ({"m": {"a": [{}]}}, False),  # a required field in neither spelling
        ({"m": {}, "one": {"X": "1"}}, True),
        ({"m": {}, "one": None}, True),
        ({"m": {}, "one": {"X": "1", "x": "2"}}, False),
    ],
)
def test_two_spellings_are_found_at_any_depth(value, ok):
    assert NESTED_ALIASED.fast(value) is ok and (not NESTED_ALIASED.walk(value)) is ok


def test_two_spellings_of_the_trace_header_in_one_record_take_the_located_way():
    event = queue.build_event(["a", "b"], trace_header="Root=1-x")
    event["Records"][1]["attributes"]["AWSTraceHeader"] = "Root=1-y"
    assert not queue.EVENT_SHAPE.fast(event)
    assert any(
        i.rule == "G2" and i.path == "$.Records[1].attributes.AWSTraceHeader" for i in queue.validate_event(event)
    )


# --- the compiled and the located ways give one report -----------------------------------------


def _contracts() -> list[Any]:
    from fnkit.alb._event import EVENT_CONTRACT as ALB
    from fnkit.mail._event import EVENT_CONTRACT as MAIL
    from fnkit.mail._response import RESPONSE_CONTRACT as MAIL_RESPONSE
    from fnkit.queue._event import EVENT_CONTRACT as QUEUE

    return [QUEUE, ALB, MAIL, MAIL_RESPONSE]


def _documents() -> list[Any]:
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[1] / "conformance" / "fixtures"
    files = sorted(fixtures.rglob("*.json"))
    built = [
        queue.build_event(["a", "b"], fifo=True, dialect="aws", seed=1, message_attributes={"k": "v"}),
        alb.build_event("POST", "/x", query="a=1&b=2", headers={"content-type": "text/plain"}, body=b"hi"),
        mail.build_event(mail_from="a@example.com", recipients=["b@example.com", "c@example.com"]),
    ]
    return [f.read_bytes() for f in files] + built + [json.dumps(e) for e in built]


def test_the_compiled_and_the_located_ways_report_alike():
    """Both ways exist by design (the compiled one for speed, the located one to name every issue): over the
    conformance fixtures and built events, under every contract, they give one report."""
    documents = _documents()
    assert len(documents) > 100
    for contract in _contracts():
        for document in documents:
            fast, full = contract.validate(document), contract.located(document)
            assert (list(fast), fast.dialect) == (list(full), full.dialect), (contract.shape.name, document[:200])


# --- a check that declares what it reads gets values of their declared types -----------------


def test_a_check_that_declares_what_it_reads_is_given_only_the_rows_that_hold_their_declared_types():
    from fnkit._engine.findings import Table, caution, problem
    from fnkit._engine.validate import Contract, reads

    items = Table("items")
    listing = Shape("Listing", [F("items", ListOf(ITEM))], rule="QS6")

    @reads(items, "id")
    def lower_ids(value: Any, seen: Any) -> list[Any]:  # no guard: an id is a string here
        table = seen.tables[items]
        return [
            problem("format", f"'{i}' is not lower case.", "id", row=items.row(k))
            for k, i in zip(table["at"], table["id"], strict=True)
            if not i.islower()
        ]

    @reads(items)
    def counted(value: Any, seen: Any) -> list[Any]:  # no guard: the list is there
        return [caution("limit", f"{len(value.items)} item(s).", "items")]

    contract = Contract(listing, [lower_ids, counted], source="queue")
    report = contract.validate({"items": [{"id": "A"}, {"id": 5}, {"id": "c"}, {}]})
    assert [(i.path, i.code) for i in report] == [
        ("$.items[1].id", "type"),
        ("$.items[3].id", "missing"),
        ("$.items[0].id", "format"),
        ("$.items", "limit"),
    ]
    assert report[-1].message == "4 item(s)."  # every item of the list, a row of the table or not
    # the list is not there: the walk says so, and the checks that read it do not run
    assert [(i.path, i.code) for i in contract.validate({"items": "x"})] == [("$.items", "type")]
    # a typed value: every row, every check
    assert [(i.path, i.code) for i in contract.validate({"items": [{"id": "B"}]})] == [
        ("$.items[0].id", "format"),
        ("$.items", "limit"),
    ]


def test_a_check_that_reads_the_value_s_own_fields_runs_only_when_they_hold_their_declared_types():
    from fnkit._engine.findings import VALUE, problem
    from fnkit._engine.validate import Contract, reads

    @reads(VALUE, "name")
    def short_name(value: Any, seen: Any) -> list[Any]:  # no guard: the value is an object, its name a string
        return [problem("limit", "The name is long.", "name")] if len(value.name) > 3 else []

    item = Shape("Named", [F("name", STR), F("n", INT)], rule="QS6")
    contract = Contract(item, [short_name], source="queue")
    assert [(i.path, i.code) for i in contract.validate({"name": "long", "n": 1})] == [("$.name", "limit")]
    assert [(i.path, i.code) for i in contract.validate({"name": "long", "n": "1"})] == [
        ("$.n", "type"),
        ("$.name", "limit"),
    ]
    assert [(i.path, i.code) for i in contract.validate({"name": 12345, "n": 1})] == [("$.name", "type")]
    assert [(i.path, i.code) for i in contract.validate(["not", "an", "object"])] == [("$", "type")]


def test_a_check_that_reads_a_field_of_an_object_field_runs_only_when_the_way_down_holds_its_types():
    from fnkit._engine.findings import VALUE, problem
    from fnkit._engine.validate import Contract, reads

    @reads(VALUE, "child.id")
    def upper_id(value: Any, seen: Any) -> list[Any]:  # no guard: child is an Item, its id a string
        return [] if value.child.id.isupper() else [problem("format", "Not upper case.", "child", "id")]

    contract = Contract(Shape("Outer", [F("child", ITEM), F("n", INT)], rule="QS6"), [upper_id], source="queue")
    assert [(i.path, i.code) for i in contract.validate({"child": {"id": "a"}, "n": "1"})] == [
        ("$.n", "type"),
        ("$.child.id", "format"),
    ]
    assert [(i.path, i.code) for i in contract.validate({"child": {"id": 1}, "n": 1})] == [("$.child.id", "type")]
    assert [(i.path, i.code) for i in contract.validate({"child": "a", "n": 1})] == [("$.child", "type")]
