"""validate_response and outcome read a response with the same rules, so they never disagree (Q7, Q8, Q8a-c, Q10).

For one batch event E, one response R and one reporting mode (`report_batch_item_failures` on or
off), let V = queue.validate_response(R, event=E, ...) and O = queue.outcome(E, R, ...). The
correspondence this file holds, over generated responses:

1. Same issues: V lists exactly O.issues, in order (path, rule, severity and sentence).
2. Errors ⇔ whole-batch failure: V has an error exactly when O.kind == "failure", and then every
   message of E returns (O.failed_ids is every id, O.deleted_ids is empty).
3. Reporting off (Q7): V has no error and O is "success" under rule Q7 with every message deleted,
   whatever R is (the platform ignores the response); V warns (Q7) exactly when R lists failures.
4. Reporting on, no error: O is "success" (nothing deleted is retried) when R lists no identifier,
   else "partial" with O.failed_ids the listed messages, each once, and every other message deleted.
5. The decision matches the spec, read off how R was made (not off either function): a response
   holding any of a null, empty, wrongly typed, misplaced or unknown identifier, an entry that is not
   an object, a `batchItemFailures` that is not a list, a top level that is not an object or null,
   or text that is not JSON, fails the whole batch; null, {}, null/[] failures and a misspelled key
   succeed; otherwise the listed known ids fail.

R is given to both functions alike: a Python value (not str or bytes: validate_response reads those
as JSON text, while outcome takes a returned str as a JSON string), or `Raw` JSON text, which both
read as text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import fnkit
from fnkit import queue


@dataclass
class Made:
    """A generated response, and what the spec says of it (from how it was made)."""

    value: Any
    breaks: bool = False  # the whole batch fails when reporting is on
    listed: list[str] = field(default_factory=list)  # the known ids it lists, in order, repeats included
    lists_failures: bool = False  # a non-empty batchItemFailures: Q7 warns that it is lost


def _entries(ids: list[str]) -> st.SearchStrategy[tuple[Any, bool, str | None]]:
    """(an entry of batchItemFailures, does it break the batch, the known id it lists)."""
    known = st.sampled_from(ids).map(lambda i: ({"itemIdentifier": i}, False, i))
    return st.one_of(
        known,
        known,  # twice as likely: most entries list a message of the batch (repeats are Q8c)
        st.sampled_from(ids).map(lambda i: ({"itemIdentifier": i, "reason": "x"}, False, i)),  # G1: ignored key
        st.just(({"itemIdentifier": "00000000-0000-4000-8000-000000000000"}, True, None)),  # unknown id
        st.sampled_from(ids).map(lambda i: ({"itemIdentifier": i.upper()}, True, None)),  # case matters
        st.just(({"itemIdentifier": ""}, True, None)),
        st.just(({"itemIdentifier": None}, True, None)),
        st.one_of(st.integers(), st.booleans(), st.lists(st.text(max_size=3), max_size=2)).map(
            lambda v: ({"itemIdentifier": v}, True, None)
        ),  # Q8a: not a string
        st.sampled_from(ids).map(lambda i: ({"messageId": i}, True, None)),  # under another key
        st.just(({}, True, None)),
        st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2)).map(
            lambda v: (v, True, None)
        ),  # Q8a: an entry that is not an object
    )


@st.composite
def made_responses(draw: st.DrawFn, ids: list[str]) -> Made:
    form = draw(
        st.sampled_from(["list", "list", "list", "null", "empty", "no failures", "misspelled", "odd list", "top"])
    )
    if form == "null":
        return Made(None)
    if form == "empty":
        return Made({})
    if form == "no failures":
        return Made({"batchItemFailures": draw(st.sampled_from([None, []]))})
    if form == "misspelled":  # Q8b: read as no failures
        key = draw(st.sampled_from(["BatchItemFailures", "batch_item_failures", "failures"]))
        return Made({key: [{"itemIdentifier": draw(st.sampled_from(ids))}]})
    if form == "odd list":  # Q8a: batchItemFailures is not a list
        odd = draw(st.one_of(st.text(min_size=1, max_size=5), st.integers(), st.just({"itemIdentifier": ids[0]})))
        return Made({"batchItemFailures": odd}, breaks=True, lists_failures=True)
    if form == "top":  # Q8a: not an object or null
        return Made(draw(st.one_of(st.lists(st.integers(), max_size=2), st.integers(), st.booleans())), breaks=True)
    entries = draw(st.lists(_entries(ids), max_size=6))
    value: dict[str, Any] = {"batchItemFailures": [e for e, _, _ in entries]}
    if draw(st.booleans()):
        value["note"] = "ignored"  # G1
    return Made(
        value,
        breaks=any(b for _, b, _ in entries),
        listed=[i for _, _, i in entries if i is not None],
        lists_failures=bool(entries),
    )


def _issues(issues: Any) -> list[tuple[str, str, str, str]]:
    return [(i.path, i.rule, i.severity, i.message) for i in issues]


@given(
    data=st.data(),
    n=st.integers(1, 6),
    fifo=st.booleans(),
    seed=st.integers(0, 50),
    reporting=st.booleans(),
    as_text=st.booleans(),
)
def test_validate_response_and_outcome_read_every_response_alike(data, n, fifo, seed, reporting, as_text):
    groups = (["g", "h"] * n)[:n] if fifo else None
    event = queue.build_event([f"m{i}" for i in range(n)], fifo=fifo, group_ids=groups, seed=seed)
    ids = queue.correlation_ids(event)
    made = data.draw(made_responses(ids))
    response = fnkit.Raw(json.dumps(made.value)) if as_text else made.value
    report = queue.validate_response(response, event=event, report_batch_item_failures=reporting)
    result = queue.outcome(event, response, report_batch_item_failures=reporting)

    assert _issues(report) == _issues(result.issues)  # 1
    assert (not report.ok) == (result.kind == "failure")  # 2
    if result.kind == "failure":
        assert result.failed_ids == tuple(ids) and result.deleted_ids == ()
    if not reporting:  # 3
        assert report.ok and result.kind == "success" and result.rule == "Q7"
        assert result.deleted_ids == tuple(ids) and result.failed_ids == ()
        assert any(i.rule == "Q7" for i in report) == made.lists_failures
        return
    assert result.kind == ("failure" if made.breaks else "partial" if made.listed else "success")  # 5
    if result.kind != "failure":  # 4
        once = list(dict.fromkeys(made.listed))
        assert sorted(result.failed_ids) == sorted(once)
        assert set(result.deleted_ids) == set(ids) - set(once)
        assert len(result.failed_ids) + len(result.deleted_ids) == len(ids)
        assert any(i.rule == "Q8c" for i in report) == (len(once) < len(made.listed))


@given(seed=st.integers(0, 50), reporting=st.booleans())
def test_text_that_is_not_json_fails_only_when_reporting(seed, reporting):
    event = queue.build_event(["a", "b"], seed=seed)
    for text in ('{"batchItemFailures": [', "not json", "NaN", ""):
        report = queue.validate_response(fnkit.Raw(text), event=event, report_batch_item_failures=reporting)
        result = queue.outcome(event, fnkit.Raw(text), report_batch_item_failures=reporting)
        assert _issues(report) == _issues(result.issues)
        assert result.kind == ("failure" if reporting else "success")
        assert report.ok is not reporting


def test_the_issue_example_now_agrees_with_q7():
    # reporting off: the platform ignores the body, so a malformed list fails nothing; both say so, and warn
    event = queue.build_event(["a", "b", "c"], seed=1)
    response = {"batchItemFailures": "oops"}
    report = queue.validate_response(response, event=event, report_batch_item_failures=False)
    result = queue.outcome(event, response, report_batch_item_failures=False)
    assert report.ok and [i.rule for i in report] == ["Q7"]
    assert result.kind == "success" and result.rule == "Q7"
    assert _issues(report) == _issues(result.issues)
    assert "lost" in next(iter(report)).message


def test_a_fifo_partial_response_warns_of_the_group_order_in_both():
    event = queue.build_event(["a", "b", "c"], fifo=True, group_ids=["g", "g", "h"], seed=2)
    ids = queue.correlation_ids(event)
    response = {"batchItemFailures": [{"itemIdentifier": ids[0]}]}
    report = queue.validate_response(response, event=event)
    result = queue.outcome(event, response)
    assert [i.rule for i in report] == ["Q10"] and report.ok
    assert _issues(report) == _issues(result.issues) and "group order breaks" in result.reason


@pytest.mark.parametrize("broken", [None, "not a record", "a messageId that is a number"])
def test_the_group_order_of_one_listed_message_is_judged_at_its_own_record(broken):
    # the outcome finds the listed message's record from where it sits among the batch's ids; a record before it
    # that has no messageId shifts the records against the ids, and the warning must still land on the record
    # that follows the failed one in its group (and nowhere when the failed message has no group)
    event: Any = queue.build_event(["a", "b", "c", "d"], fifo=True, group_ids=["g", "h", "g", "h"], seed=3)
    if broken == "not a record":
        event["Records"].insert(0, broken)
    elif broken is not None:  # a record like the first, of the same FIFO queue, whose messageId is no string
        event["Records"].insert(0, {**event["Records"][0], "messageId": 5})
    event["Records"][-4]["attributes"] = {**event["Records"][-4]["attributes"]}
    del event["Records"][-4]["attributes"]["MessageGroupId"]  # "a", where "b" sits among the ids when shifted
    ids = queue.correlation_ids(event)
    listed = event["Records"][-3]["messageId"]  # "b", group h: "d" follows it in h and is deleted
    response = {"batchItemFailures": [{"itemIdentifier": listed}]}
    report = queue.validate_response(response, event=event)
    result = queue.outcome(event, response)
    assert [(i.rule, i.path) for i in result.issues] == [("Q10", f"$.Records[{len(event['Records']) - 1}]")]
    assert _issues(report) == _issues(result.issues) and "group order breaks" in result.reason
    assert result.failed_ids == (listed,) and len(result.deleted_ids) == len(ids) - 1
    del event["Records"][-3]["attributes"]["MessageGroupId"]  # the failed message in no group: nothing follows it
    assert [i.rule for i in queue.outcome(event, response).issues] == []
