"""Tables at the edge (fnkit/_table.py): `fnkit.tabulate` of reports, invocations, outcomes, dicts."""

from __future__ import annotations

import pytest

import fnkit
from fnkit import queue


@pytest.fixture
def broken_report():
    event = queue.build_event(["a", "b"])
    event["Records"][0]["md5OfBody"] = "x"
    event["Records"][1]["eventSource"] = "aws:sns"
    return queue.validate_event(event)


def test_one_report_is_one_row_per_issue(broken_report):
    frame = fnkit.tabulate(broken_report)
    assert list(frame["rule"]) == ["QS4", "Q13"]
    assert list(frame["path"]) == ["$.Records[1].eventSource", "$.Records[0].md5OfBody"]
    assert set(frame["source"]) == {"queue"}


def test_many_reports_stack(broken_report):
    assert len(fnkit.tabulate([broken_report, broken_report])) == 4


def test_a_valid_report_has_no_rows():
    assert fnkit.tabulate(queue.validate_event(queue.build_event(["a"]))).empty


def test_outcome_rows_and_invocation_rows_mix():
    event = queue.build_event(["a", "b"])
    frame = fnkit.tabulate([queue.outcome(event, None), fnkit.invoke(lambda e, c: 1, {})])
    assert len(frame) == 3
    assert list(frame["action"][:2]) == ["delete", "delete"]
    assert frame["status"].iloc[2] == "returned"


def test_plain_dicts_are_rows():
    frame = fnkit.tabulate([{"a": 1}, {"a": 2}])
    assert list(frame["a"]) == [1, 2]
    assert list(fnkit.tabulate({"a": 1})["a"]) == [1]


def test_nothing_is_an_empty_frame():
    assert fnkit.tabulate([]).empty


def test_unknown_items_are_refused_by_name():
    with pytest.raises(TypeError, match="int"):
        fnkit.tabulate([1])
