"""Properties of the queue source: never crashes, never loses a message, builders always valid."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import fnkit
from fnkit import queue

from ..fuzzing import deep_list

# --- strategies ---------------------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=10)
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=20,
)


def _deep_dict(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    cur = root
    for _ in range(depth):
        cur["Records"] = [{}]
        cur = cur["Records"][0]
    return root


def _self_referencing() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


class _Thing:
    def __repr__(self) -> str:
        return "<thing>"


def _view(data: bytes) -> memoryview:
    return memoryview(data)


odd_objects = st.one_of(
    st.sets(st.integers(), max_size=3),
    st.frozensets(st.text(max_size=3), max_size=3),
    st.builds(object),
    st.builds(_Thing),
    st.just(math.nan),
    st.just(math.inf),
    st.just(-math.inf),
    st.dictionaries(st.integers(), json_scalars, max_size=3),
    st.dictionaries(st.tuples(st.integers(), st.integers()), json_scalars, min_size=1, max_size=3),
    st.just({"Records": [{1: "a", (2, 3): "b"}]}),
    st.just({"Records": {1, 2}}),
    st.just({"Records": [math.nan, {"messageId": math.inf}]}),
    st.sampled_from([5, 500, 5000]).map(deep_list),
    st.sampled_from([5, 500, 3000]).map(_deep_dict),
    st.builds(_self_referencing),
    st.tuples(json_scalars, json_scalars),
    st.complex_numbers(allow_nan=True),
    st.binary(max_size=20).map(bytearray),
    st.binary(max_size=20).map(_view),
    st.text(max_size=20).map(fnkit.Raw),
    st.binary(max_size=20).map(fnkit.Raw),
    st.just(fnkit.Raw("[" * 50_000 + "]" * 50_000)),
    st.just(fnkit.Raw('{"batchItemFailures": [], "x": NaN}')),
    st.just(iter([1, 2])),
    st.just(len),
)

json_texts = st.one_of(
    json_values.map(json.dumps),
    json_values.map(json.dumps).map(lambda t: t[: len(t) // 2]),  # truncated JSON
    st.text(max_size=40),
    st.sampled_from(["NaN", "[Infinity]", "[" * 50_000, "{" * 10, '{"Records": [' * 3000, "\ufeff{}", "null", ""]),
)
anything = st.one_of(json_values, json_texts, st.binary(max_size=60), json_texts.map(str.encode), odd_objects)

record_shaped = st.fixed_dictionaries(
    {},
    optional={
        "messageId": st.one_of(st.text(max_size=5), json_scalars),
        "body": st.one_of(st.text(max_size=5), json_scalars),
        "md5OfBody": st.one_of(st.text(max_size=5), json_scalars),
        "eventSource": st.sampled_from(["provider:queue", "aws:sqs", "x", 1]),
        "eventSourceARN": st.sampled_from(
            ["arn:aws:sqs:us-east-1:123456789012:q", "arn:provider:sqs:eu-west-1:1:q.fifo", "nope", None]
        ),
        "awsRegion": st.sampled_from(["us-east-1", "eu-west-1", 3]),
        "attributes": st.one_of(
            json_values,
            st.fixed_dictionaries(
                {},
                optional={
                    k: st.one_of(st.text(max_size=4), st.sampled_from(["1", "0", "1545082649183"]), json_scalars)
                    for k in (
                        "ApproximateReceiveCount",
                        "SentTimestamp",
                        "SenderId",
                        "ApproximateFirstReceiveTimestamp",
                        "MessageGroupId",
                        "SequenceNumber",
                        "MessageDeduplicationId",
                        "AWSTraceHeader",
                        "ProviderTraceHeader",
                    )
                },
            ),
        ),
        "messageAttributes": st.one_of(
            json_values,
            st.dictionaries(
                st.text(max_size=4),
                st.fixed_dictionaries(
                    {},
                    optional={
                        "dataType": st.sampled_from(["String", "Number", "Binary", "Binary.x", "Bad", 1]),
                        "stringValue": st.one_of(st.text(max_size=4), json_scalars),
                        "binaryValue": st.one_of(st.sampled_from(["AAE=", "!!", ""]), json_scalars),
                    },
                ),
                max_size=3,
            ),
        ),
        "md5OfMessageAttributes": st.one_of(st.text(max_size=4), json_scalars),
    },
)
queue_shaped = st.fixed_dictionaries({"Records": st.one_of(st.lists(record_shaped, max_size=4), json_values)})

_NAME_PART = st.text(alphabet="abcXYZ019_-", min_size=1, max_size=8)
ATTRIBUTE_NAME = st.one_of(
    _NAME_PART, st.tuples(_NAME_PART, _NAME_PART).map(".".join)
)  # no leading/trailing/double dots
attribute_values = st.one_of(
    st.text(max_size=20),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.binary(max_size=20),
    st.booleans(),
)


def _is_report(report, source=None) -> None:
    assert isinstance(report, fnkit.Report)
    for issue in report:
        assert isinstance(issue, fnkit.Issue)
        assert issue.path.startswith("$")
        assert issue.severity in ("error", "warning")
        assert issue.rule is None or issue.rule in fnkit.rules.ids(), issue
        assert issue.message


def _is_contract_error(exc: BaseException) -> bool:
    return isinstance(exc, fnkit.ContractError) and not exc.report.ok


SLOW_OK = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], deadline=None)


# --- validators never raise ------------------------------------------------------------------------


@SLOW_OK
@given(value=st.one_of(anything, queue_shaped))
def test_validate_event_never_raises(value):
    _is_report(queue.validate_event(value))


@SLOW_OK
@given(value=st.one_of(anything, queue_shaped))
def test_fnkit_validate_never_raises(value):
    _is_report(fnkit.validate(value))


@SLOW_OK
@given(value=anything, with_event=st.booleans(), reporting=st.booleans())
def test_validate_response_never_raises(value, with_event, reporting):
    event = queue.build_event(["a", "b"]) if with_event else None
    _is_report(queue.validate_response(value, event=event, report_batch_item_failures=reporting))


@SLOW_OK
@given(value=st.one_of(anything, queue_shaped))
def test_detect_source_and_correlation_ids_never_raise(value):
    assert fnkit.detect_source(value) in (None, "queue", "mail", "alb")
    ids = fnkit.correlation_ids(value)
    assert isinstance(ids, list)
    assert all(isinstance(i, str) for i in ids)


@SLOW_OK
@given(value=st.one_of(anything, queue_shaped))
def test_parse_event_raises_only_contract_error(value):
    raised: fnkit.ContractError | None = None
    try:
        parsed = queue.parse_event(value)
    except fnkit.ContractError as exc:
        raised = exc
    else:
        assert queue.validate_event(value).ok
        assert isinstance(parsed.records, tuple)
    assert raised is None or _is_contract_error(raised)


@SLOW_OK
@given(value=queue_shaped)
def test_a_report_is_ok_exactly_when_parse_succeeds(value):
    ok = queue.validate_event(value).ok
    try:
        queue.parse_event(value)
        parsed = True
    except fnkit.ContractError:
        parsed = False
    assert parsed is ok


# --- outcome never raises and never loses a message -------------------------------------------------


@st.composite
def batches(draw):
    n = draw(st.integers(1, 10))
    fifo = draw(st.booleans())
    groups = draw(st.lists(st.sampled_from(["g", "h", "i"]), min_size=n, max_size=n)) if fifo else None
    return queue.build_event([f"m{i}" for i in range(n)], fifo=fifo, group_ids=groups, seed=draw(st.integers(0, 1000)))


@st.composite
def responses_for(draw, ids, wrapped: bool = True):
    identifier = st.one_of(
        st.sampled_from(ids),
        st.sampled_from([i.upper() for i in ids]),
        st.just(""),
        st.none(),
        st.text(max_size=5),
        st.integers(),
    )
    entry = st.one_of(
        st.fixed_dictionaries({"itemIdentifier": identifier}),
        st.fixed_dictionaries({"itemIdentifier": st.sampled_from(ids)}),
        st.dictionaries(st.sampled_from(["itemIdentifier", "ItemIdentifier", "id", "reason"]), identifier, max_size=2),
        json_scalars,
    )
    failures = st.one_of(st.lists(entry, max_size=6), st.none(), json_values)
    key = st.sampled_from(["batchItemFailures", "batchItemFailures", "BatchItemFailures", "failures"])
    value = draw(
        st.one_of(
            st.none(),
            st.dictionaries(key, failures, max_size=2),
            st.fixed_dictionaries(
                {
                    "batchItemFailures": st.lists(
                        st.fixed_dictionaries({"itemIdentifier": st.sampled_from(ids)}), max_size=len(ids) + 2
                    )
                }
            ),
            # distinct ids of the batch in any order: a well-formed partial response
            st.permutations(ids).flatmap(
                lambda order: st.integers(0, len(order)).map(
                    lambda k: {"batchItemFailures": [{"itemIdentifier": i} for i in order[:k]]}
                )
            ),
            json_values,
            odd_objects,
        )
    )
    wrap = draw(st.sampled_from(["value", "raw-text", "raw-bytes", "invocation"])) if wrapped else "value"
    if wrap == "value":
        return value
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return value
    if wrap == "raw-text":
        return fnkit.Raw(draw(st.sampled_from([text, text[:-1], text + "x"])))
    if wrap == "raw-bytes":
        return fnkit.Raw(text.encode())
    return fnkit.invoke(lambda e, c: value, {})


@SLOW_OK
@given(data=st.data(), reporting=st.booleans())
def test_outcome_never_raises_and_partitions_the_batch(data, reporting):
    event = data.draw(batches())
    ids = queue.correlation_ids(event)
    response = data.draw(responses_for(ids))
    result = queue.outcome(event, response, report_batch_item_failures=reporting)
    failed, deleted = set(result.failed_ids), set(result.deleted_ids)
    assert failed | deleted == set(ids), "a message was lost"
    assert not failed & deleted, "a message was both deleted and retried"
    assert len(result.failed_ids) == len(failed) and len(result.deleted_ids) == len(deleted)
    assert result.kind in ("success", "partial", "failure")
    if result.kind == "success":
        assert not failed
    elif result.kind == "failure":
        assert not deleted
    else:
        assert failed
    assert result.rule in fnkit.rules.ids()
    assert result.inferred == fnkit.rules.get(result.rule).inferred
    if result.inferred:
        assert "inferred" in result.reason
    if not reporting and not isinstance(response, fnkit.Invocation):
        assert result.kind == "success" and result.rule == "Q7"
    _is_report(result.issues)
    rows = result.rows()
    assert [r["item"] for r in rows] == ids
    assert {r["action"] for r in rows} <= {"retry", "delete"}
    assert sum(r["action"] == "retry" for r in rows) == len(failed)


@SLOW_OK
@given(data=st.data())
def test_a_value_and_its_exact_json_text_have_the_same_outcome(data):
    # the quick path for returned values and the full reading of text must agree
    event = data.draw(batches())
    ids = queue.correlation_ids(event)
    value = data.draw(responses_for(ids, wrapped=False))
    assume(not isinstance(value, (fnkit.Raw, fnkit.Invocation)))
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        assume(False)
    a = queue.outcome(event, value)
    b = queue.outcome(event, fnkit.Raw(text))
    assert (a.kind, a.failed_ids, a.deleted_ids, a.rule) == (b.kind, b.failed_ids, b.deleted_ids, b.rule)
    assert [(i.path, i.rule) for i in a.issues] == [(i.path, i.rule) for i in b.issues]


@given(data=st.data(), n=st.integers(1, 10), fifo=st.booleans(), seed=st.integers(0, 1000))
def test_a_well_formed_partial_response_returns_exactly_the_listed_messages(data, n, fifo, seed):
    event = queue.build_event([f"m{i}" for i in range(n)], fifo=fifo, seed=seed)
    ids = queue.correlation_ids(event)
    listed = data.draw(st.permutations(ids).flatmap(lambda order: st.integers(1, n).map(lambda k: order[:k])))
    response = {"batchItemFailures": [{"itemIdentifier": i} for i in listed]}
    result = queue.outcome(event, response)
    assert result.kind == "partial" and result.rule == "Q8"
    assert result.failed_ids == tuple(i for i in ids if i in listed)  # in batch order
    assert result.deleted_ids == tuple(i for i in ids if i not in listed)
    assert result == queue.outcome(event, fnkit.Raw(json.dumps(response)))


@SLOW_OK
@given(event=st.one_of(anything, queue_shaped), response=st.one_of(json_values, odd_objects))
def test_outcome_of_any_event_never_raises(event, response):
    result = queue.outcome(event, response)
    assert not set(result.failed_ids) & set(result.deleted_ids)


# --- builders always build valid events ---------------------------------------------------------------


@SLOW_OK
@given(
    seed=st.integers(0, 2**32),
    bodies=st.lists(st.text(max_size=50), min_size=1, max_size=10),
    fifo=st.booleans(),
    dialect=st.sampled_from(["provider", "aws"]),
    attributes=st.one_of(st.none(), st.dictionaries(ATTRIBUTE_NAME, attribute_values, max_size=10)),
    trace=st.one_of(st.none(), st.text(min_size=1, max_size=30)),
    data=st.data(),
)
def test_build_event_always_validates(seed, bodies, fifo, dialect, attributes, trace, data):
    n = len(bodies)
    groups = data.draw(st.lists(st.text(min_size=1, max_size=5), min_size=n, max_size=n)) if fifo else None
    event = queue.build_event(
        bodies,
        fifo=fifo,
        group_ids=groups,
        message_attributes=attributes,
        dialect=dialect,
        seed=seed,
        trace_header=trace,
    )
    report = queue.validate_event(event)
    assert report.ok and len(report) == 0, list(report)
    assert report.dialect == dialect
    assert [r["body"] for r in event["Records"]] == bodies
    assert json.loads(json.dumps(event)) == event
    assert (
        queue.build_event(
            bodies,
            fifo=fifo,
            group_ids=groups,
            message_attributes=attributes,
            dialect=dialect,
            seed=seed,
            trace_header=trace,
        )
        == event
    )
    assert queue.parse_event(event).records[-1].body == bodies[-1]


@SLOW_OK
@given(
    seed=st.integers(0, 2**32),
    per_body=st.lists(st.dictionaries(ATTRIBUTE_NAME, attribute_values, max_size=4), min_size=1, max_size=5),
)
def test_build_event_with_attributes_per_body_validates(seed, per_body):
    event = queue.build_event([str(i) for i in range(len(per_body))], message_attributes=per_body, seed=seed)
    assert queue.validate_event(event).ok
    for rec, attrs in zip(event["Records"], per_body, strict=True):
        assert set(rec["messageAttributes"]) == set(attrs)
        assert ("md5OfMessageAttributes" in rec) == bool(attrs)
