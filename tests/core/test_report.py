"""Issues, reports, Raw and JSON decoding: what every source shares (fnkit/_engine/report.py)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fnkit
from fnkit._engine.report import MISSING, Raw, child_path, decode_json, describe, error, path_of, warning


def _report() -> fnkit.Report:
    return fnkit.Report(
        [
            error("$.Records[0].body", "type", "Expected a string, got a number (3).", "QS2"),
            warning("$.Recods", "unknown", "'Recods' is not a field of QueueEvent; it is ignored.", "G1"),
            error("$.Records[1].md5OfBody", "mismatch", "md5OfBody is 'x' but the MD5 of this body is 'y'.", "Q13"),
        ],
        source="queue",
        dialect="provider",
    )


# --- Issue -------------------------------------------------------------------------


def test_issue_prints_as_a_located_line_with_its_rule():
    issue = error("$.Records[3].md5OfBody", "mismatch", "The digest is wrong.", "Q13")
    assert str(issue) == "$.Records[3].md5OfBody: error: The digest is wrong. [Q13]"


def test_issue_without_a_rule_prints_no_tag():
    assert str(warning("$", "unchecked", "Could not check.", None)) == "$: warning: Could not check."


def test_issue_is_frozen_and_defaults_to_error():
    issue = fnkit.Issue("$", "missing", "Gone.")
    assert issue.severity == "error" and issue.rule is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        issue.path = "$.x"  # type: ignore[misc]


# --- Report ------------------------------------------------------------------------


def test_report_is_a_sequence_of_issues():
    report = _report()
    assert len(report) == 3
    assert report[0].rule == "QS2"
    assert [i.code for i in report] == ["type", "unknown", "mismatch"]
    assert list(report[1:]) == list(report)[1:]


def test_report_splits_errors_and_warnings():
    report = _report()
    assert not report.ok
    assert [i.rule for i in report.errors] == ["QS2", "Q13"]
    assert [i.rule for i in report.warnings] == ["G1"]
    assert report.codes() == ["type", "unknown", "mismatch"]
    assert report.rules() == ["QS2", "G1", "Q13"]


def test_a_report_with_only_warnings_is_ok():
    report = fnkit.Report([warning("$.x", "unknown", "Ignored.", "G1")], source="queue")
    assert report.ok
    assert report.summary() == "valid queue event: 0 error(s), 1 warning(s)"


def test_empty_report_is_ok_and_says_valid():
    report = fnkit.Report([], source="queue", subject="response")
    assert report.ok and len(report) == 0 and not report
    assert report.summary() == "valid queue response"
    assert "valid queue response" in repr(report)


def test_report_summary_counts_errors_and_warnings():
    assert _report().summary() == "invalid queue event: 2 error(s), 1 warning(s)"


def test_report_repr_lists_every_issue():
    text = repr(_report())
    assert "$.Records[0].body: error:" in text
    assert "[G1]" in text and "[Q13]" in text


def test_report_equality_compares_issues_and_source():
    assert _report() == _report()
    other = fnkit.Report(list(_report()), source="mail")
    assert _report() != other
    assert _report() == list(_report())


def test_report_to_frame_has_one_row_per_issue():
    frame = _report().to_frame()
    assert list(frame.columns) == ["source", "path", "severity", "code", "message", "rule"]
    assert len(frame) == 3
    assert frame.loc[2, "rule"] == "Q13"
    assert set(frame["source"]) == {"queue"}


def test_empty_report_to_frame_keeps_its_columns():
    frame = fnkit.Report([], source="queue").to_frame()
    assert frame.empty and "rule" in frame.columns


def test_report_html_escapes_what_it_shows():
    report = fnkit.Report([error("$['<b>']", "type", "Expected <a string>.", "QS2")], source="queue")
    html = report._repr_html_()
    assert "<b>" not in html.split("</b>", 1)[1]  # only the heading is bold
    assert "&lt;a string&gt;" in html
    assert fnkit.Report([], source="queue")._repr_html_() == "<b>valid queue event</b>"


# --- ContractError -----------------------------------------------------------------


def test_contract_error_is_a_value_error_carrying_the_report():
    report = _report()
    exc = fnkit.ContractError(report)
    assert isinstance(exc, ValueError)
    assert exc.report is report
    assert "$.Records[0].body" in str(exc) and "[Q13]" in str(exc)
    assert "Recods" not in str(exc)  # warnings are not the reason it was raised


def test_contract_error_message_shows_three_errors_and_counts_the_rest():
    report = fnkit.Report([error(f"$.a[{i}]", "type", "Bad.", "QS2") for i in range(5)])
    message = str(fnkit.ContractError(report))
    assert message.count("Bad.") == 3
    assert message.endswith("(and 2 more)")


# --- Raw ---------------------------------------------------------------------------


def test_raw_gives_text_back_for_text_and_utf8_bytes():
    assert fnkit.Raw("{}").text() == "{}"
    assert fnkit.Raw("é".encode()).text() == "é"


def test_raw_bytes_that_are_not_utf8_have_no_text():
    assert fnkit.Raw(b"\xff\xfe").text() is None


def test_raw_is_frozen_and_compares_by_value():
    assert fnkit.Raw("x") == fnkit.Raw("x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        fnkit.Raw("x").data = "y"  # type: ignore[misc]


# --- decode_json -------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        '{"a": [1, 2]}',
        b'{"a": [1, 2]}',
        bytearray(b'{"a": [1, 2]}'),
        memoryview(b'{"a": [1, 2]}'),
        fnkit.Raw('{"a": [1, 2]}'),
        fnkit.Raw(b'{"a": [1, 2]}'),
    ],
)
def test_decode_json_reads_text_bytes_and_raw(value):
    assert decode_json(value, "G0") == ({"a": [1, 2]}, [])


@pytest.mark.parametrize("value", [{"a": 1}, [1], None, 3, set(), object])
def test_decode_json_passes_other_values_through(value):
    decoded, issues = decode_json(value, "G0")
    assert decoded is value and issues == []


def test_decode_json_locates_invalid_json():
    value, issues = decode_json('{"a": 1,\n "b": }', "G0")
    assert value is MISSING
    [issue] = issues
    assert (issue.path, issue.code, issue.severity, issue.rule) == ("$", "format", "error", "G0")
    assert "line 2" in issue.message and "not valid JSON" in issue.message


def test_decode_json_rejects_bytes_that_are_not_utf8():
    value, [issue] = decode_json(b'{"a": "\xff"}', "Q8")
    assert value is MISSING
    assert issue.rule == "Q8" and "UTF-8" in issue.message and "position 7" in issue.message


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}'])
def test_decode_json_rejects_nan_and_infinity_which_are_not_json(text):
    # Python's json module accepts them; JSON and the platform do not.
    value, [issue] = decode_json(text, "G0")
    assert value is MISSING and issue.code == "format"


def test_decode_json_survives_absurd_nesting():
    value, [issue] = decode_json("[" * 200_000 + "]" * 200_000, "G0")
    assert value is MISSING and "nests too deeply" in issue.message


def test_decode_json_of_empty_text_is_an_issue():
    value, [issue] = decode_json("", "G0")
    assert value is MISSING and issue.code == "format"


# --- paths and descriptions --------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "key", "expected"),
    [
        ("$", "Records", "$.Records"),
        ("$.Records", 3, "$.Records[3]"),
        ("$", "x-provider-trace-id", "$['x-provider-trace-id']"),
        ("$.headers", "x-provider-trace-id", "$.headers['x-provider-trace-id']"),
        ("$", "_private1", "$._private1"),
        ("$", "1abc", "$['1abc']"),
        ("$", "", "$['']"),
        ("$", (1, 2), "$[(1, 2)]"),
    ],
)
def test_child_path(path, key, expected):
    assert child_path(path, key) == expected


def test_child_path_of_a_bool_key_is_not_an_index():
    assert child_path("$", True) == "$[True]"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet=st.sampled_from("ab_9\"[]\\' .-\u00e9"), max_size=6),
            st.integers(-3, 10**6),
            st.booleans(),
            st.none(),
            st.floats(allow_nan=False),
        ),
        max_size=6,
    )
)
def test_path_of_writes_each_step_as_child_path_does(keys):
    """path_of (which keeps each string key's step) writes the path that child_path writes step by step."""
    expected = "$"
    for key in keys:
        expected = child_path(expected, key)
    assert path_of(*keys) == expected
    assert path_of(*keys) == expected  # the second time from the kept steps


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "null"),
        (True, "a boolean (true)"),
        (3, "a number (3)"),
        (1.5, "a number (1.5)"),
        ("hi", 'a string ("hi")'),
        ("x" * 40, 'a string ("' + "x" * 27 + '...")'),
        ({}, "an object"),
        ([], "a list"),
        ((), "a list"),
        (b"", "bytes"),
        ({1}, "a Python set"),
    ],
)
def test_describe_names_values_for_a_learner(value, expected):
    assert describe(value) == expected


def test_dialects_are_provider_and_aws():
    assert fnkit.DIALECTS == ("provider", "aws")


def test_issue_round_trips_through_json_for_tools():
    issue = error("$.a", "type", "Bad.", "QS2")
    assert json.loads(json.dumps(dataclasses.asdict(issue)))["rule"] == "QS2"


@pytest.mark.parametrize(
    "value",
    [
        '\ufeff{"a": [1, 2]}',
        b'\xef\xbb\xbf{"a": [1, 2]}',
        bytearray(b'\xef\xbb\xbf{"a": [1, 2]}'),
        memoryview(b'\xef\xbb\xbf{"a": [1, 2]}'),
        Raw(b'\xef\xbb\xbf{"a": [1, 2]}'),
    ],
)
def test_decode_json_skips_one_byte_order_mark_and_names_it(value):
    decoded, [issue] = decode_json(value, "Q8")
    assert decoded == {"a": [1, 2]}
    assert (issue.path, issue.code, issue.severity, issue.rule) == ("$", "bom", "warning", "G0")
    assert "byte-order mark" in issue.message and "EF BB BF" in issue.message


def test_decode_json_names_the_bom_beside_a_defect_after_it():
    value, issues = decode_json(b'\xef\xbb\xbf{"a": }', "G0")
    assert value is MISSING
    assert [(i.severity, i.code) for i in issues] == [("warning", "bom"), ("error", "format")]
    value, [_bom, issue] = decode_json("\ufeff\ufeff{}", "G0")
    assert "second byte-order mark" in issue.message


@pytest.mark.parametrize(
    ("head", "words"),
    [(b"\xff\xfe", "UTF-16 little-endian (bytes FF FE)"), (b"\xfe\xff", "UTF-16 big-endian (bytes FE FF)")],
)
def test_decode_json_names_a_utf16_byte_order_mark(head, words):
    text = '{"a": 1}'.encode("utf-16-le" if head == b"\xff\xfe" else "utf-16-be")
    value, [issue] = decode_json(head + text, "G0")
    assert value is MISSING and issue.severity == "error" and words in issue.message and "UTF-8" in issue.message
