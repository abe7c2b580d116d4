"""The response contract: every A6 case, A5 size, A7 header fields and cookies, A9, A12, A13."""

from __future__ import annotations

import json

import pytest

from fnkit import Raw, alb


def errors(report) -> list[tuple[str, str]]:
    return [(i.path, i.rule) for i in report.errors]


def test_status_code_alone_is_valid():
    report = alb.validate_response({"statusCode": 200})
    assert report.ok and len(report) == 0 and report.source == "alb" and report.subject == "response"


def test_full_response_is_valid():
    assert (
        len(
            alb.validate_response(
                {
                    "statusCode": 200,
                    "statusDescription": "200 OK",
                    "isBase64Encoded": False,
                    "headers": {"Content-Type": "text/plain"},
                    "body": "hi",
                }
            )
        )
        == 0
    )


@pytest.mark.parametrize(
    ("response", "path"),
    [
        ([], "$"),
        ('"just text"', "$"),
        (None, "$"),
        (200, "$"),
        (True, "$"),
        ({}, "$.statusCode"),
        ({"statusCode": "200"}, "$.statusCode"),
        ({"statusCode": True}, "$.statusCode"),
        ({"statusCode": 200.0}, "$.statusCode"),
        ({"statusCode": 200, "isBase64Encoded": "true"}, "$.isBase64Encoded"),
        ({"statusCode": 200, "body": None}, "$.body"),
        ({"statusCode": 200, "body": {"a": 1}}, "$.body"),
        ({"statusCode": 200, "statusDescription": 200}, "$.statusDescription"),
        ({"statusCode": 200, "headers": None}, "$.headers"),
        ({"statusCode": 200, "headers": {"X-A": 1}}, "$.headers['X-A']"),
        ({"statusCode": 200, "headers": {"X-A": ["1"]}}, "$.headers['X-A']"),
        ({"statusCode": 200, "isBase64Encoded": True, "body": "not base64"}, "$.body"),
    ],
)
def test_every_a6_case_is_an_error(response, path):
    report = alb.validate_response(response)
    assert not report.ok and (path, "A6") in errors(report)


@pytest.mark.parametrize(
    ("response", "path"),
    [
        ({"statusCode": 200, "multiValueHeaders": None}, "$.multiValueHeaders"),
        ({"statusCode": 200, "multiValueHeaders": {"X-A": "1"}}, "$.multiValueHeaders['X-A']"),
        ({"statusCode": 200, "multiValueHeaders": {"X-A": ["1", 2]}}, "$.multiValueHeaders['X-A'][1]"),
    ],
)
def test_a6_multi_value_headers_must_be_lists_of_strings(response, path):
    assert (path, "A6") in errors(alb.validate_response(response, multi_value=True))


@pytest.mark.parametrize("status", [99, 600, -1, 10_000])
def test_a12_status_outside_100_599(status):
    report = alb.validate_response({"statusCode": status})
    assert errors(report) == [("$.statusCode", "A12")] and "inferred" in report[0].message


def test_a13_informational_status_and_unsendable_headers():
    assert errors(alb.validate_response({"statusCode": 101})) == [("$.statusCode", "A13")]
    assert errors(alb.validate_response({"statusCode": 200, "headers": {"Bad Name": "x"}})) == [
        ("$.headers['Bad Name']", "A13")
    ]
    assert errors(alb.validate_response({"statusCode": 200, "headers": {"X-A": "a\r\nInjected: 1"}})) == [
        ("$.headers['X-A']", "A13")
    ]


@pytest.mark.parametrize("description", ["200 OK\r\nInjected: 1", "200 O\nK", "200 \x00", "200 \x7f"])
def test_a13_a_status_description_the_status_line_cannot_carry(description):
    # the reason phrase goes on the status line: a line break there would start a header of the function's making
    report = alb.validate_response({"statusCode": 200, "statusDescription": description})
    assert errors(report) == [("$.statusDescription", "A13")] and "status line" in report[0].message
    assert alb.validate_response({"statusCode": 200, "statusDescription": "200 Tab\tand Très bien"}).ok


def test_a5_response_over_1_mb():
    big = {"statusCode": 200, "body": "x" * alb.MAX_RESPONSE_JSON}
    report = alb.validate_response(big)
    assert errors(report) == [("$", "A5")]
    # the limit counts the JSON text's bytes
    fits = {"statusCode": 200, "body": ""}
    room = alb.MAX_RESPONSE_JSON - len(json.dumps(fits, separators=(",", ":")))
    assert alb.validate_response({"statusCode": 200, "body": "x" * room}).ok
    assert not alb.validate_response({"statusCode": 200, "body": "x" * (room + 1)}).ok


def test_a7_inactive_header_field_is_ignored_with_a_warning():
    report = alb.validate_response({"statusCode": 200, "multiValueHeaders": "junk"})
    assert report.ok and [(i.path, i.code, i.rule) for i in report] == [("$.multiValueHeaders", "ignored", "A7")]
    report = alb.validate_response({"statusCode": 200, "headers": {"X-A": "1"}}, multi_value=True)
    assert report.ok and [(i.path, i.rule) for i in report] == [("$.headers", "A7")]
    assert "multiValueHeaders" in report[0].message


def test_a7_cookie_keys_differing_in_case_get_a_hint():
    report = alb.validate_response({"statusCode": 200, "headers": {"Set-Cookie": "a=1", "set-cookie": "b=2"}})
    assert report.ok and [(i.code, i.rule) for i in report] == [("cookies", "A7")]
    report = alb.validate_response(
        {"statusCode": 200, "multiValueHeaders": {"Set-Cookie": ["a=1"], "SET-COOKIE": ["b=2"]}}, multi_value=True
    )
    assert [(i.code, i.rule) for i in report] == [("cookies", "A7")] and "one list" in report[0].message
    assert (
        len(
            alb.validate_response(
                {"statusCode": 200, "multiValueHeaders": {"Set-Cookie": ["a=1", "b=2"]}}, multi_value=True
            )
        )
        == 0
    )


def test_a7_hop_by_hop_and_wrong_content_length_are_warnings():
    report = alb.validate_response(
        {"statusCode": 200, "body": "abc", "headers": {"Connection": "close", "Content-Length": "10"}}
    )
    assert report.ok and [(i.code, i.rule) for i in report] == [("dropped", "A7"), ("recomputed", "A7")]
    assert len(alb.validate_response({"statusCode": 200, "body": "abc", "headers": {"Content-Length": "3"}})) == 0


def test_a9_description_that_names_another_code():
    report = alb.validate_response({"statusCode": 200, "statusDescription": "404 Not Found"})
    assert report.ok and [(i.code, i.rule) for i in report] == [("mismatch", "A9")]


def test_unknown_response_field_is_a_g1_warning():
    report = alb.validate_response({"statusCode": 200, "Body": "hi"})
    assert report.ok and [(i.rule) for i in report] == ["G1"] and "body" in report[0].message


def test_raw_text_and_bytes_are_read_as_json():
    assert alb.validate_response(Raw('{"statusCode": 204}')).ok
    assert alb.validate_response(b'{"statusCode": 204}').ok
    assert alb.validate_response('{"statusCode": 204}').ok
    assert [i.rule for i in alb.validate_response(Raw(b"{oops"))] == ["G0"]
    assert [i.rule for i in alb.validate_response(Raw(b"\xff"))] == ["G0"]


def test_value_json_cannot_encode():
    report = alb.validate_response({"statusCode": 200, "body": {1, 2}})
    assert not report.ok and report.errors[0].rule == "H2"
