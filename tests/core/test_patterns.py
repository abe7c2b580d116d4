"""The declared patterns are checked per column by tests derived from them (fnkit/_engine/patterns.py): each derived
test says what the declared pattern says, on any input; reports are the located way's, whatever the event holds;
and nothing becomes a typed value of a shape with a string that breaks its pattern."""

from __future__ import annotations

import copy
import functools
import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fnkit import ContractError, alb, mail, queue
from fnkit._engine.patterns import PatternCheck, pattern_check, whole
from fnkit._engine.shape import Text
from fnkit.alb._event import EVENT_CONTRACT as ALB_EVENTS
from fnkit.mail._event import ADDRESS_TEXT
from fnkit.mail._event import EVENT_CONTRACT as MAIL_EVENTS
from fnkit.mail._response import RESPONSE_CONTRACT as MAIL_RESPONSES
from fnkit.queue._contents import ATTRIBUTE_NAME
from fnkit.queue._event import EVENT_CONTRACT as QUEUE_EVENTS
from fnkit.queue._event import RECORD

# --- every derived test is its declared pattern -----------------------------------------------------


CONTRACTS = [QUEUE_EVENTS, ALB_EVENTS, MAIL_EVENTS, MAIL_RESPONSES]
DECLARED = sorted({check.pattern for contract in CONTRACTS for check, *_ in contract.shape.patterns})
# patterns no shape declares, that reach every branch of the derivation (anchors, flags, classes, assertions)
MADE_UP = [
    r"^a$",
    r"^$",
    r"a|b",
    r"^(?:ab|c)+$",
    r"(?i:^[a-z]+$)",
    r"(?s:^.+$)",
    r"^.*$",
    r"^[^\n]*$",
    r"^[^x]+$",
    r"^\w+$",
    r"^\S{2,4}$",
    r"^[\s\S]*$",
    r"^\d*\D$",
    r"^\W+$",
    r"^x{2,3}$",
    r"^(a)\1$",
    r"^(?=a)\w+$",
    r"\Aa+\Z",
    r"^a\b",
    r"^(?s:.)b$",
    r"(?m:^a$)",
    r"^[0-9]{0,3}$",
    r"^a*?$",
    r"^(?>a|ab)c$",
    r"^ab*+$",
    r"^\n?x$",
    # a greedy repeat made possessive only where nothing after it could take back a character
    r"^[a-z]+(?:\.[a-z]+)*@[a-z]+$",
    r"^[ab]+b$",
    r"^x*x$",
    r"^(a+)(?:a|b)$",
    r"^[^:]+:[^:]*:?$",
    r"^(?:[0-9]+-)*[0-9]+$",
    r"^[a-z]{1,3}[a-z0-9]$",
    # a repeated group made possessive only where it matches one way and what follows cannot start a round
    r"^(?:-[a-z]+)*-x$",
    r"^(?:\.[a-z]+)+\.?$",
    r"^(?:ab)*a$",
    r"^(?:a|ab)*c$",
    r"^(?:x[a-w]*)*y$",
    r"^(?:a(?:b+)c)*d$",
    # classes narrowed to ASCII for an ASCII column: one that holds none, one that holds both
    r"^[é-ÿ]*:[a-z]+$",
    r"^[a-zé😀]+(?:-[^\s\x80-\uffff]+)*$",
]
PATTERNS = DECLARED + MADE_UP

# strings near and far from every pattern: line breaks, spaces, unicode, empty
PIECES = ["", "\n", "\r\n", " ", "a", "b", "ab", "x", "7", "0", "-", ".", ":", "@", "/", "é", "😀", "\u2028", "\x00"]
pieces = st.sampled_from(PIECES)
texts = st.one_of(
    st.text(max_size=12),
    st.lists(pieces, max_size=5).map("".join),
    st.text(alphabet="ab0123x\n .:@/-", max_size=10),
)


def values_for(pattern: str) -> st.SearchStrategy[str]:
    """Strings that meet the pattern, the same with a piece added, and anything."""
    # (at most 24 characters: a pattern whose repeats overlap takes time exponential in a failing value's length in
    # Python's regex engine itself, which the test asks too; 24 keeps that to milliseconds)
    meets = st.from_regex(re.compile(whole(pattern)), fullmatch=True).map(lambda v: v[:24])
    near = st.tuples(meets, pieces, st.booleans()).map(lambda t: t[1] + t[0] if t[2] else t[0] + t[1])
    return st.one_of(meets, near, texts)


@functools.cache
def _search(pattern: str) -> Any:
    return re.compile(whole(pattern)).search  # what msgspec asks of each string (compiled once: a class with the
    # astral planes takes 30 ms, and re's own cache does not keep it while hypothesis compiles its strategies)


def declared(pattern: str, values: list[str]) -> bool:
    search = _search(pattern)
    return all(search(v) is not None for v in values)


@pytest.mark.parametrize("pattern", PATTERNS)
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_every_derived_check_says_what_its_declared_pattern_says(pattern, data):
    values = data.draw(st.lists(values_for(pattern), min_size=1, max_size=6))
    repeated = data.draw(st.booleans())
    if repeated:
        values = [values[0]] * len(values)
    fresh = PatternCheck(pattern)  # the derived column test, without a memo's help
    expected = declared(pattern, values)
    assert fresh._column(values) is expected or len(values) == 1
    assert [fresh.matches(v) for v in values] == [declared(pattern, [v]) for v in values]
    assert fresh.holds(values) is expected
    assert pattern_check(pattern).holds(values) is expected  # the shared one, with what it remembered
    assert fresh.holds(values) is expected  # asked again: from the memo when accepted


def test_a_column_of_a_pattern_whose_repeats_overlap_costs_what_its_values_cost():
    # `-` is in the repeated class too, so "-b-b" splits many ways: each value alone is quick to judge, but a
    # column that made every split of one value be tried again for each split of the next never ended (found
    # by the property test above)
    pattern = r"^[a-zé😀]+(?:-[^\s\x80-\uffff]+)*$"
    good, bad = "a" + "-b" * 16, "a" + "-b" * 16 + "é"
    check = PatternCheck(pattern)
    assert check.how == "joined"
    for values in ([good] * 4 + [bad], [good, bad, good], [good] * 5):
        assert check.holds(values) is declared(pattern, values)


def _how(text: Text) -> str:
    assert text.check is not None
    return text.check.how


def test_the_derivation_takes_the_cheap_ways_where_the_pattern_allows():
    assert pattern_check(r"^[0-9]+$").how == "class"  # timestamps, sequence numbers
    assert _how(RECORD.field("eventSourceARN").type) == "joined"
    assert _how(ADDRESS_TEXT) == "joined"
    assert pattern_check(r"^[^A-Z]*$").how == "class"  # header names
    # lookarounds, `\b`, back-references, a `.` that matches a line break: one test per value
    assert _how(ATTRIBUTE_NAME) == "each"
    assert {pattern_check(p).how for p in (r"^a\b", r"^(a)\1$", r"^(?s:.)+x$", r"^[\s\S]*x$")} == {"each"}


@example(values=["1\n2", "3"])  # a line break inside a value is one line too many
@example(values=["1", ""])  # an empty value in a class repeated at least once
@given(values=st.lists(st.text(alphabet="0123456789\n a", max_size=4), min_size=2, max_size=8))
def test_a_column_of_digits_is_one_match_and_says_what_each_value_says(values):
    check = PatternCheck(r"^[0-9]+$")
    assert check.holds(values) is declared(r"^[0-9]+$", values)


# --- reports are the located way's, whatever a pattern governs -----------------------------------------------


def _slots(value: Any, out: list[tuple[Any, Any, bool]]) -> list[tuple[Any, Any, bool]]:
    """Every string of a plain event: (its container, its key or index, True when it is the key itself)."""
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((value, k, True))
            if isinstance(v, str):
                out.append((value, k, False))
            else:
                _slots(v, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            if isinstance(v, str):
                out.append((value, i, False))
            else:
                _slots(v, out)
    return out


EVENTS = {
    "queue": queue.build_event(
        ["a", "b", "c"], fifo=True, dialect="aws", seed=1, message_attributes={"k": "v", "n": 1}
    ),
    "queue-standard": queue.build_event(["a", "b"], dialect="provider", seed=2, trace_header="Root=1-x"),
    "alb": alb.build_event("POST", "/x", query="a=1&b=2", headers={"content-type": "text/plain"}, body=b"hi"),
    "mail": mail.build_event(mail_from="a@example.com", recipients=["b@example.com", "c@example.com", "d@x.org"]),
}
OF_EVENT = {"queue": QUEUE_EVENTS, "queue-standard": QUEUE_EVENTS, "alb": ALB_EVENTS, "mail": MAIL_EVENTS}


def _mutate(original: Any, data: st.DataObject) -> dict[str, Any]:
    event: dict[str, Any] = copy.deepcopy(original)
    for _ in range(data.draw(st.integers(1, 3))):
        slots = _slots(event, [])
        container, key, is_key = data.draw(st.sampled_from(slots))
        old = key if is_key else container[key]
        new = data.draw(st.one_of(texts, pieces.map(str(old).__add__), st.just(old)))
        if is_key:
            container[new] = container.pop(key)
        else:
            container[key] = new
            if data.draw(st.booleans()):  # the same value in every row: a column of one repeated value
                for other, k, k_is_key in slots:
                    same_field = k == key and not k_is_key and other is not container and isinstance(other, dict)
                    if same_field and isinstance(other.get(k), str):
                        other[k] = new
    return event


@pytest.mark.parametrize("name", sorted(EVENTS))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_report_is_the_located_ways_whatever_the_strings_hold(name, data):
    contract = OF_EVENT[name]
    event = _mutate(EVENTS[name], data)
    located = contract.located(event)
    for form in (event, json.dumps(event).encode("utf-8", "surrogatepass")):
        report = contract.validate(form)
        assert (list(report), report.dialect) == (list(located), located.dialect)


# --- nothing is typed with a string that breaks its pattern ------------------------------------------------


def test_a_message_attribute_whose_data_type_breaks_its_pattern_is_refused_by_the_simulator():
    sim = queue.QueueSim()
    with pytest.raises(ValueError, match=r"message attribute 'a': dataType 'Bad type' is not String, Number or Binary"):
        sim.send("hello", message_attributes={"a": {"dataType": "Bad type", "stringValue": "x"}})
    assert sim.send("hello", message_attributes={"a": {"dataType": "Number.int", "stringValue": "1"}})


def test_a_shape_types_no_value_that_breaks_a_declared_pattern():
    event = queue.build_event(["a", "b"], seed=1, message_attributes={"k": "v"})
    assert queue.EVENT_SHAPE.compiled(event) is not None
    for where, broken in [
        (("attributes", "SentTimestamp"), "12a"),
        (("eventSourceARN",), "arn:aws:sqs:us-east-1:1:q\n"),
        (("messageAttributes", "k", "dataType"), "Bad type"),
    ]:
        bad = json.loads(json.dumps(event))  # (the built records share one attributes map)
        target = bad["Records"][1]
        for step in where[:-1]:
            target = target[step]
        target[where[-1]] = broken
        assert queue.EVENT_SHAPE.compiled(bad) is None and not queue.EVENT_SHAPE.fast(bad)
        with pytest.raises(ContractError) as refused:
            queue.parse_event(bad)
        assert [i.path for i in refused.value.report.errors] == ["$.Records[1]." + ".".join(where)]


def test_an_optional_field_empty_in_every_row_is_still_checked_against_its_pattern():
    event: Any = copy.deepcopy(EVENTS["queue"])
    for record in event["Records"]:
        record["attributes"]["SequenceNumber"] = ""  # held, and empty: not absent
    report = queue.validate_event(event)
    assert [(i.path, i.rule) for i in report.errors] == [
        (f"$.Records[{n}].attributes.SequenceNumber", "QS5") for n in range(3)
    ]
    assert report == QUEUE_EVENTS.located(event)


def test_each_pattern_decides_over_every_place_it_governs_whatever_the_memos_lacked_before_it():
    """The memos lack strings at several places of one pattern (two timestamps) and of an earlier one (the ARN):
    each pattern tests all it lacks, and a broken string at any of its places, or of a later pattern, is caught."""
    base = json.loads(json.dumps(queue.build_event(["a", "b", "c"], seed=1)))

    def made(arn: str, first_at: int, first: str) -> dict[str, Any]:
        event: dict[str, Any] = copy.deepcopy(base)
        for n, record in enumerate(event["Records"]):
            record["eventSourceARN"] = arn
            record["attributes"]["SentTimestamp"] = f"91{arn[-6:]}{n}"  # digits no memo met before
            record["attributes"]["ApproximateFirstReceiveTimestamp"] = first if n == first_at else f"92{arn[-6:]}{n}"
        return event

    fine = made("arn:aws:sqs:us-east-1:123456789012:q-513871", 0, "93513871")
    assert queue.EVENT_SHAPE.compiled(fine) is not None  # both patterns lacked their strings, and all meet them
    for event, path in [
        (made("arn:aws:sqs:us-east-1:123456789012:q-513872", 2, "9x"), "attributes.ApproximateFirstReceiveTimestamp"),
        (made("arn:aws:sqs:us-east-1 :123456789012:q-513873", 1, "94513873"), "eventSourceARN"),
    ]:
        at = 2 if path.startswith("attributes") else 0
        assert queue.EVENT_SHAPE.compiled(event) is None
        report = queue.validate_event(event)
        assert report == QUEUE_EVENTS.located(event)
        assert f"$.Records[{at}].{path}" in [i.path for i in report.errors]
