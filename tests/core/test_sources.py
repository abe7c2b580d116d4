"""Source detection and the source-independent entry points (fnkit/_sources.py)."""

from __future__ import annotations

import json

import pytest

import fnkit
from fnkit import queue


@pytest.fixture
def event():
    return queue.build_event(["one", "two", "three"], seed=4)


def test_detect_queue_event(event):
    assert fnkit.detect_source(event) == "queue"


def test_detect_from_json_text_and_bytes(event):
    text = json.dumps(event)
    assert fnkit.detect_source(text) == "queue"
    assert fnkit.detect_source(text.encode()) == "queue"
    assert fnkit.detect_source(fnkit.Raw(text)) == "queue"


def test_detect_aws_spelling(event):
    assert fnkit.detect_source(queue.build_event(["x"], dialect="aws")) == "queue"


def test_detect_a_broken_queue_event_is_still_queue():
    # validation then says what is wrong with it, instead of "unknown source"
    assert fnkit.detect_source({"Records": []}) == "queue"
    assert fnkit.detect_source({"Records": [{"body": 1}]}) == "queue"


@pytest.mark.parametrize("value", [None, 3, "not json", b"\xff", [], [{"Records": []}], {}, {"records": []}, {1, 2}, object()])
def test_detect_unknown(value):
    assert fnkit.detect_source(value) is None


def test_validate_detects_then_validates(event):
    report = fnkit.validate(event)
    assert report.ok and report.source == "queue" and report.dialect == "provider"


def test_validate_json_text_and_bytes(event):
    assert fnkit.validate(json.dumps(event)).ok
    assert fnkit.validate(json.dumps(event).encode()).ok


def test_validate_finds_queue_problems(event):
    event["Records"][1]["md5OfBody"] = "0" * 32
    report = fnkit.validate(event)
    assert not report.ok and report.source == "queue"
    assert [(i.path, i.rule) for i in report.errors] == [("$.Records[1].md5OfBody", "Q13")]


@pytest.mark.parametrize("value", [{"hello": "world"}, [1, 2], 42, None, {1, 2}, object(), {("a",): 1}])
def test_unknown_objects_are_a_g3_issue(value):
    report = fnkit.validate(value)
    assert not report.ok
    [issue] = report
    assert issue.rule == "G3" and issue.path == "$" and issue.code == "unknown"
    assert "Records" in issue.message  # says what a known event looks like
    assert report.source is None


def test_invalid_json_text_is_a_g0_issue():
    report = fnkit.validate('{"Records": [')
    [issue] = report
    assert issue.rule == "G0" and not report.ok


def test_correlation_ids_of_a_queue_event_are_its_message_ids(event):
    ids = fnkit.correlation_ids(event)
    assert ids == [r["messageId"] for r in event["Records"]]
    assert len(set(ids)) == 3


def test_correlation_ids_from_text_and_bytes(event):
    ids = [r["messageId"] for r in event["Records"]]
    assert fnkit.correlation_ids(json.dumps(event)) == ids
    assert fnkit.correlation_ids(json.dumps(event).encode()) == ids


def test_correlation_ids_skip_records_without_a_string_id(event):
    event["Records"][0]["messageId"] = 5
    assert fnkit.correlation_ids(event) == [r["messageId"] for r in event["Records"][1:]]


@pytest.mark.parametrize("value", [{}, None, "nope", {"a": 1}, [1]])
def test_correlation_ids_of_unknown_values_are_empty(value):
    assert fnkit.correlation_ids(value) == []


def test_source_module_refuses_unknown_names():
    from fnkit._sources import source_module

    assert source_module("queue") is queue
    with pytest.raises(ValueError, match="unknown source"):
        source_module("kafka")
