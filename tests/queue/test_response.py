"""The queue response (fnkit/queue/_response.py): `batchItemFailures` and how it is read (QS6, Q7, Q8, Q8a-c)."""

from __future__ import annotations

from typing import Any

import pytest

import fnkit
from fnkit import queue


def _rules(report) -> list[Any]:
    return [i.rule for i in report]


def _failures(*ids):
    return {"batchItemFailures": [{"itemIdentifier": i} for i in ids]}


# --- QS6: the declared shape -----------------------------------------------------------------


def test_qs6_the_response_shape_declares_batch_item_failures():
    rows = {r["field"]: r for r in queue.RESPONSE_SHAPE.fields_table()}
    assert rows["batchItemFailures"]["rule"] == "QS6"
    assert rows["batchItemFailures"]["required"] == "no"
    assert rows["batchItemFailures[].itemIdentifier"]["type"] == "String"


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"batchItemFailures": "x"}, "$.batchItemFailures"),
        ({"batchItemFailures": [{"itemIdentifier": 3}]}, "$.batchItemFailures[0].itemIdentifier"),
        ({"batchItemFailures": [{}]}, "$.batchItemFailures[0].itemIdentifier"),
        ([], "$"),
    ],
)
def test_qs6_the_shape_walk_cites_qs6(value, path):
    issues = queue.RESPONSE_SHAPE.walk(value)
    assert [(i.path, i.rule) for i in issues] == [(path, "QS6")]


@pytest.mark.parametrize("value", [{}, {"batchItemFailures": None}, {"batchItemFailures": []}, _failures("a", "b")])
def test_qs6_the_shape_accepts_the_contract_forms(value):
    assert queue.RESPONSE_SHAPE.walk(value) == [] and queue.RESPONSE_SHAPE.fast(value)


# --- the four complete-success forms ------------------------------------------------------------


@pytest.mark.parametrize(
    "response",
    [None, {}, {"batchItemFailures": None}, {"batchItemFailures": []}],
    ids=["null", "empty-object", "null-list", "empty-list"],
)
def test_complete_success_forms_are_valid(response, event):
    report = queue.validate_response(response, event=event)
    assert report.ok and len(report) == 0
    assert report.source == "queue" and report.subject == "response"


@pytest.mark.parametrize("text", ["null", "{}", '{"batchItemFailures": null}', '{"batchItemFailures": []}', b" {} "])
def test_complete_success_forms_as_json_text(text):
    assert queue.validate_response(text).ok
    assert queue.validate_response(fnkit.Raw(text)).ok


def test_listed_messages_of_the_batch_are_valid(event, ids):
    assert queue.validate_response(_failures(ids[0], ids[2]), event=event).ok


# --- the five complete-failure forms ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ['{"batchItemFailures": [', "", "not json", "{'single': 'quotes'}", b"\xff\xfe", "NaN"]
)
def test_q8_invalid_json_is_an_error(text):
    report = queue.validate_response(fnkit.Raw(text))
    assert not report.ok and _rules(report) == ["Q8"]
    assert "complete failure" in report[0].message


def test_q8_empty_item_identifier(event):
    report = queue.validate_response(_failures(""), event=event)
    assert [(i.path, i.rule, i.code) for i in report] == [("$.batchItemFailures[0].itemIdentifier", "Q8", "format")]


def test_q8_null_item_identifier(event):
    report = queue.validate_response(_failures(None), event=event)
    assert [(i.path, i.rule) for i in report] == [("$.batchItemFailures[0].itemIdentifier", "Q8")]
    assert "null" in report[0].message


@pytest.mark.parametrize("key", ["itemidentifier", "ItemIdentifier", "messageId", "id"])
def test_q8_wrong_key_name(event, ids, key):
    report = queue.validate_response({"batchItemFailures": [{key: ids[0]}]}, event=event)
    assert [(i.rule, i.code) for i in report.errors] == [("Q8", "missing")]
    assert repr(key) in report.errors[0].message and "wrong key name" in report.errors[0].message


def test_q8_an_id_not_in_the_batch(event, ids):
    report = queue.validate_response(_failures(ids[0], "00000000-0000-4000-8000-000000000000"), event=event)
    assert [(i.path, i.rule, i.code) for i in report] == [("$.batchItemFailures[1].itemIdentifier", "Q8", "unknown")]


def test_q8_ids_are_case_sensitive_and_the_message_says_so(event, ids):
    report = queue.validate_response(_failures(ids[1].upper()), event=event)
    assert not report.ok
    assert f"Did you mean '{ids[1]}'?" in report[0].message


def test_without_an_event_ids_are_not_matched():
    assert queue.validate_response(_failures("anything")).ok


# --- Q8a: other shapes that fail the batch (inferred) --------------------------------------------------


@pytest.mark.parametrize(
    ("response", "path"),
    [
        ([], "$"),
        (2.5, "$"),
        (0, "$"),
        (True, "$"),
        ({"batchItemFailures": {}}, "$.batchItemFailures"),
        ({"batchItemFailures": "id"}, "$.batchItemFailures"),
        ({"batchItemFailures": 0}, "$.batchItemFailures"),
        ({"batchItemFailures": ["id"]}, "$.batchItemFailures[0]"),
        ({"batchItemFailures": [{"itemIdentifier": 5}]}, "$.batchItemFailures[0].itemIdentifier"),
        ({"batchItemFailures": [{"itemIdentifier": ["id"]}]}, "$.batchItemFailures[0].itemIdentifier"),
    ],
)
def test_q8a_other_shapes_are_errors(response, path):
    report = queue.validate_response(response)
    assert [(i.path, i.rule) for i in report.errors] == [(path, "Q8a")]


def test_q8a_json_text_of_a_list():
    assert _rules(queue.validate_response("[]")) == ["Q8a"]


# --- Q8b: misspelled top-level key (inferred) -----------------------------------------------------------


@pytest.mark.parametrize(
    "key", ["BatchItemFailures", "batchitemfailures", "batch_item_failures", "batchItemFailure", "failures"]
)
def test_q8b_misspelled_key_is_a_loud_warning(event, ids, key):
    report = queue.validate_response({key: [{"itemIdentifier": ids[0]}]}, event=event)
    assert report.ok  # the platform reads it as success...
    [warning] = report.warnings
    assert warning.rule == "Q8b"  # ...and the failures are lost
    assert "lost" in warning.message and "case-sensitive" in warning.message


def test_other_unknown_keys_are_plain_g1_warnings(event):
    report = queue.validate_response({"batchItemFailures": [], "statusCode": 200}, event=event)
    assert report.ok and [(i.path, i.rule) for i in report] == [("$.statusCode", "G1")]


def test_extra_keys_in_a_failure_entry_are_g1_warnings(event, ids):
    report = queue.validate_response({"batchItemFailures": [{"itemIdentifier": ids[0], "reason": "x"}]}, event=event)
    assert report.ok and [(i.path, i.rule) for i in report] == [("$.batchItemFailures[0].reason", "G1")]


# --- Q8c: duplicates count once (inferred) ----------------------------------------------------------------


def test_q8c_duplicate_identifier_warns(event, ids):
    report = queue.validate_response(_failures(ids[0], ids[1], ids[0]), event=event)
    assert report.ok
    assert [(i.path, i.rule) for i in report] == [("$.batchItemFailures[2].itemIdentifier", "Q8c")]


# --- Q7: reporting off ----------------------------------------------------------------------------------------


def test_q7_returned_failures_with_reporting_off_warn_they_are_lost(event, ids):
    report = queue.validate_response(_failures(ids[0]), event=event, report_batch_item_failures=False)
    assert report.ok
    [warning] = report.warnings
    assert warning.rule == "Q7" and "lost" in warning.message


@pytest.mark.parametrize("response", [None, {}, {"batchItemFailures": []}])
def test_q7_nothing_to_lose_nothing_to_warn(response):
    assert len(queue.validate_response(response, report_batch_item_failures=False)) == 0


# --- never raises -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "response",
    [{1, 2}, object(), {(1,): 2}, {"batchItemFailures": [{1: 2}]}, float("nan"), memoryview(b"{}"), bytearray(b"[]")],
)
def test_odd_values_give_a_report(response):
    assert isinstance(queue.validate_response(response), fnkit.Report)


def test_deeply_nested_response_gives_a_report():
    deep: list[Any] = []
    cur = deep
    for _ in range(5000):
        cur.append([])
        cur = cur[0]
    assert not queue.validate_response({"batchItemFailures": deep}).ok
    assert not queue.validate_response(fnkit.Raw("[" * 100_000 + "]" * 100_000)).ok


def test_the_order_of_issues_follows_the_list(event, ids):
    report = queue.validate_response(
        {"batchItemFailures": [{"itemIdentifier": ""}, {"itemIdentifier": None}, {"id": ids[0]}]}, event=event
    )
    assert [i.path for i in report] == [
        "$.batchItemFailures[0].itemIdentifier",
        "$.batchItemFailures[1].itemIdentifier",
        "$.batchItemFailures[2].itemIdentifier",
    ]
