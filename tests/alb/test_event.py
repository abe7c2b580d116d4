"""The load balancer event: builder, validation rules, typed parse, correlation ids."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest

from fnkit import ContractError, alb
from fnkit.alb._event import EVENT_CONTRACT

TRACE = re.compile(r"Root=1-[0-9a-f]{8}-[0-9a-f]{24}")


def rules_of(report) -> set[Any]:
    return {i.rule for i in report}


# --- building --------------------------------------------------------------------------------------------


def test_built_get_has_every_field_the_platform_sends():
    e = alb.build_event()
    assert e["httpMethod"] == "GET" and e["path"] == "/"
    assert e["queryStringParameters"] == {}  # A2: {} without a query
    assert e["body"] == "" and e["isBase64Encoded"] is False
    assert e["requestContext"]["elb"]["targetGroupArn"].startswith("arn:provider:elasticloadbalancing:")
    h = e["headers"]
    assert TRACE.fullmatch(h["x-provider-trace-id"])
    assert h["x-forwarded-for"] and h["x-forwarded-port"] == "80" and h["x-forwarded-proto"] == "http"
    assert h["host"]
    report = alb.validate_event(e)
    assert report.ok and len(report) == 0 and report.dialect == "provider"


def test_builder_is_deterministic_per_seed():
    assert alb.build_event("POST", "/x", body=b"\x00", seed=7) == alb.build_event("POST", "/x", body=b"\x00", seed=7)
    a = alb.build_event(seed=1)["headers"]["x-provider-trace-id"]
    b = alb.build_event(seed=2)["headers"]["x-provider-trace-id"]
    assert a != b


def test_aws_dialect_spells_trace_header_and_arn_the_real_way():
    e = alb.build_event(dialect="aws")
    assert "x-amzn-trace-id" in e["headers"] and "x-provider-trace-id" not in e["headers"]
    assert e["requestContext"]["elb"]["targetGroupArn"].startswith("arn:aws:")
    assert alb.validate_event(e).dialect == "aws"


def test_raw_query_is_kept_exactly_and_last_value_wins():
    e = alb.build_event(query="q=a%20b&plus=1+2&x=1&x=2&flag")
    assert e["queryStringParameters"] == {"q": "a%20b", "plus": "1+2", "x": "2", "flag": ""}


def test_multi_value_keeps_every_value_in_order_and_never_both_forms():
    e = alb.build_event(query="x=1&x=2", headers=[("X-Tag", "a"), ("x-tag", "b")], multi_value=True)
    assert e["multiValueQueryStringParameters"] == {"x": ["1", "2"]}
    assert e["multiValueHeaders"]["x-tag"] == ["a", "b"]
    assert "headers" not in e and "queryStringParameters" not in e
    assert alb.validate_event(e).ok


def test_repeated_header_keeps_last_value_with_multi_value_off():
    e = alb.build_event(headers=[("X-Tag", "a"), ("x-tag", "b")])
    assert e["headers"]["x-tag"] == "b"


def test_query_pairs_are_percent_encoded_like_a_client():
    e = alb.build_event(query=[("q", "a b"), ("q", "c&d")], multi_value=True)
    assert e["multiValueQueryStringParameters"] == {"q": ["a%20b", "c%26d"]}
    assert len(alb.validate_event(e)) == 0


def test_query_in_path_is_split_off():
    e = alb.build_event("GET", "/search?term=x%2By")
    assert e["path"] == "/search" and e["queryStringParameters"] == {"term": "x%2By"}


@pytest.mark.parametrize(
    ("headers", "body", "text", "encoded"),
    [
        ({"content-type": "text/plain"}, "héllo".encode(), "héllo", False),
        ({"content-type": "application/json; charset=utf-8"}, b'{"a":1}', '{"a":1}', False),
        ({"content-type": "application/xml"}, b"<a/>", "<a/>", False),
        ({"content-type": "application/javascript"}, b"f()", "f()", False),
        ({"content-type": "image/png"}, b"\x89PNG", base64.b64encode(b"\x89PNG").decode(), True),
        ({}, b"raw", base64.b64encode(b"raw").decode(), True),
        ({"content-type": "text/plain", "content-encoding": "gzip"}, b"zz", base64.b64encode(b"zz").decode(), True),
        ({"content-type": "text/plain"}, b"\xff\xfe", base64.b64encode(b"\xff\xfe").decode(), True),
        ({"content-type": "text/plain"}, b"", "", False),
    ],
)
def test_request_body_is_text_or_base64_by_content_type(headers, body, text, encoded):
    e = alb.build_event("POST", "/", headers=headers, body=body)
    assert e["body"] == text and e["isBase64Encoded"] is encoded  # A4
    assert len(alb.validate_event(e)) == 0


def test_dict_body_is_sent_as_json():
    e = alb.build_event("POST", "/", body={"a": 1})
    assert json.loads(e["body"]) == {"a": 1} and e["headers"]["content-type"] == "application/json"


def test_builder_refuses_what_the_platform_never_forwards():
    with pytest.raises(ValueError, match="1 MB"):
        alb.build_event("POST", body=b"x" * (alb.MAX_REQUEST_BODY + 1))
    with pytest.raises(ValueError, match="WebSocket"):
        alb.build_event(headers={"Upgrade": "websocket"})
    with pytest.raises(ValueError, match="TRACE"):
        alb.build_event("TRACE")
    with pytest.raises(ValueError, match="/"):
        alb.build_event("GET", "items")


def test_body_of_exactly_1_mb_is_accepted():
    e = alb.build_event("POST", "/", body=b"x" * alb.MAX_REQUEST_BODY)
    assert alb.body_size(e) == alb.MAX_REQUEST_BODY
    assert alb.validate_event(e).ok


def test_health_check_event_is_the_a11_event():
    e = alb.health_check_event()
    assert e["httpMethod"] == "GET" and e["path"] == "/" and e["queryStringParameters"] == {}
    assert e["headers"] == {"user-agent": "ELB-HealthChecker/2.0"}
    assert e["body"] == "" and e["isBase64Encoded"] is False
    assert len(alb.validate_event(e)) == 0  # no trace header, and that is fine for a health check
    m = alb.health_check_event(multi_value=True)
    assert m["multiValueHeaders"] == {"user-agent": ["ELB-HealthChecker/2.0"]}
    assert len(alb.validate_event(m)) == 0


# --- validation: one test per rule ---------------------------------------------------------------------------


def test_as1_shape_errors(event):
    del event["httpMethod"]
    report = alb.validate_event(event)
    assert not report.ok and ("$.httpMethod", "missing", "AS1") in [(i.path, i.code, i.rule) for i in report]


def test_as1_method_enum(event):
    event["httpMethod"] = "TRACE"
    assert [(i.code, i.rule) for i in alb.validate_event(event).errors] == [("enum", "AS1")]


def test_as1_path_must_start_with_slash(event):
    event["path"] = "items"
    errors = alb.validate_event(event).errors
    assert [(i.path, i.rule) for i in errors] == [("$.path", "AS1")]


def test_as1_target_group_arn_format(event):
    event["requestContext"]["elb"]["targetGroupArn"] = "arn:aws:sqs:us-east-1:123456789012:queue"
    errors = alb.validate_event(event).errors
    assert [(i.path, i.code, i.rule) for i in errors] == [("$.requestContext.elb.targetGroupArn", "format", "AS1")]


def test_as1_top_level_arn_must_match(event):
    event["targetGroupArn"] = alb.make_target_group_arn("provider", name="other")
    report = alb.validate_event(event)
    assert report.ok and [(i.code, i.rule) for i in report] == [("mismatch", "AS1")]


def test_as2_header_map_of_strings(event):
    event["headers"]["x-count"] = 3
    errors = alb.validate_event(event).errors
    assert [(i.path, i.rule) for i in errors] == [("$.headers['x-count']", "AS2")]


def test_as3_missing_trace_header_is_a_warning(event):
    del event["headers"]["x-provider-trace-id"]
    report = alb.validate_event(event)
    assert report.ok and rules_of(report) == {"AS3"}


def test_a1_websocket_upgrade_never_reaches_a_function(event):
    event["headers"]["upgrade"] = "websocket"
    assert "A1" in rules_of(alb.validate_event(event).errors)


def test_a1_body_over_1_mb(event):
    event.update(
        httpMethod="POST", body=base64.b64encode(b"x" * (alb.MAX_REQUEST_BODY + 1)).decode(), isBase64Encoded=True
    )
    errors = alb.validate_event(event).errors
    assert [(i.code, i.rule) for i in errors] == [("limit", "A1")]


def test_a2_upper_case_header_name(event):
    event["headers"]["Content-Type"] = "text/plain"
    errors = alb.validate_event(event).errors
    assert [(i.path, i.rule) for i in errors] == [("$.headers['Content-Type']", "A2")]
    assert "content-type" in errors[0].message


def test_a2_decoded_query_value_is_a_warning(event):
    event["queryStringParameters"]["q"] = "hello world"
    report = alb.validate_event(event)
    assert report.ok and [(i.path, i.code, i.rule) for i in report] == [("$.queryStringParameters.q", "decoded", "A2")]
    assert "space" in report[0].message


def test_a2_decoded_query_key_is_a_warning(multi_event):
    multi_event["multiValueQueryStringParameters"]["naïve"] = ["1"]
    report = alb.validate_event(multi_event)
    assert [(i.code, i.rule) for i in report] == [("decoded", "A2")]


def test_a2_get_with_a_body_is_a_warning(event):
    event["headers"]["content-type"] = "text/plain"
    event["body"] = "surprise"
    report = alb.validate_event(event)
    assert report.ok and [(i.path, i.rule) for i in report] == [("$.body", "A2")]


def test_a3_both_forms_at_once_is_an_error(event):
    event["multiValueHeaders"] = {k: [v] for k, v in event["headers"].items()}
    errors = alb.validate_event(event).errors
    assert [(i.path, i.code, i.rule) for i in errors] == [("$.multiValueHeaders", "conflict", "A3")]


def test_a3_mixed_forms_is_a_warning(event):
    event["multiValueQueryStringParameters"] = {k: [v] for k, v in event.pop("queryStringParameters").items()}
    report = alb.validate_event(event)
    assert report.ok and rules_of(report) == {"A3"}


def test_a3_form_against_the_setting(event, multi_event):
    assert rules_of(alb.validate_event(event, multi_value=True)) == {"A3"}
    assert rules_of(alb.validate_event(multi_event, multi_value=False)) == {"A3"}
    assert len(alb.validate_event(multi_event, multi_value=True)) == 0


def test_a4_base64_flag_with_a_body_that_is_not_base64(event):
    event.update(httpMethod="POST", body="not base64!", isBase64Encoded=True)
    errors = alb.validate_event(event).errors
    assert [(i.path, i.rule) for i in errors] == [("$.body", "A4")]


@pytest.mark.parametrize(
    "headers", [{"content-type": "image/png"}, {}, {"content-type": "text/plain", "content-encoding": "gzip"}]
)
def test_a4_text_body_where_the_platform_sends_base64(event, headers):
    event["headers"].update(headers)
    event.update(httpMethod="POST", body="abc", isBase64Encoded=False)
    report = alb.validate_event(event)
    assert report.ok and [(i.path, i.rule) for i in report] == [("$.isBase64Encoded", "A4")]


def test_a11_health_checker_with_an_odd_request():
    e = alb.health_check_event()
    e["path"] = "/status"
    report = alb.validate_event(e)
    assert [(i.rule) for i in report] == ["A11"] and "the path is not /" in report[0].message


def test_a_client_claiming_to_be_the_health_checker_is_an_ordinary_request():
    e = alb.build_event(
        "POST", "/status", headers={"user-agent": "ELB-HealthChecker/2.0", "content-type": "text/plain"}, body=b"hi"
    )
    assert len(alb.validate_event(e)) == 0  # it has a trace header: it came through the load balancer


def test_unknown_field_is_a_g1_warning(event):
    event["httpmethod"] = "GET"
    report = alb.validate_event(event)
    assert report.ok and [(i.code, i.rule) for i in report] == [("unknown", "G1")]
    assert "httpMethod" in report[0].message


def test_mixed_dialects_are_reported(event):
    event["requestContext"]["elb"]["targetGroupArn"] = alb.make_target_group_arn("aws")
    report = alb.validate_event(event)
    assert report.dialect is None and rules_of(report) == {"G2"}


def test_json_text_and_bytes_are_decoded(event):
    assert alb.validate_event(json.dumps(event)).ok
    assert alb.validate_event(json.dumps(event).encode()).ok
    assert rules_of(alb.validate_event("{not json")) == {"G0"}


def test_compiled_and_located_checks_agree_on_a_clean_event(event):
    fast, full = alb.validate_event(event), EVENT_CONTRACT.located(event)
    assert list(fast) == list(full) == [] and fast.dialect == full.dialect == "provider"


# --- parse, correlation ids, detection -------------------------------------------------------------------------


def test_parse_event_gives_frozen_snake_case_dataclasses(event):
    typed = alb.parse_event(event)
    assert typed.http_method == "GET" and typed.path == "/items"
    assert typed.request_context.elb.target_group_arn == event["requestContext"]["elb"]["targetGroupArn"]
    assert typed.query_string_parameters == {"page": "2", "sort": "price"}
    assert typed.is_base64_encoded is False and typed.multi_value_headers is None
    with pytest.raises(AttributeError):
        typed.path = "/other"
    assert alb.parse_event(json.dumps(event)).path == "/items"


def test_parse_event_raises_contract_error_with_the_report(event):
    event["isBase64Encoded"] = "no"
    with pytest.raises(ContractError) as info:
        alb.parse_event(event)
    assert info.value.report.errors[0].path == "$.isBase64Encoded"


def test_correlation_ids_are_the_trace_header(event, multi_event):
    assert alb.correlation_ids(event) == [event["headers"]["x-provider-trace-id"]]
    assert alb.correlation_ids(multi_event) == multi_event["multiValueHeaders"]["x-provider-trace-id"]
    assert alb.correlation_ids(alb.build_event(dialect="aws")) == [
        alb.build_event(dialect="aws")["headers"]["x-amzn-trace-id"]
    ]
    assert alb.correlation_ids(alb.health_check_event()) == []
    assert alb.correlation_ids("junk") == []


def test_looks_like(event):
    assert alb.looks_like(event) and alb.looks_like(alb.health_check_event())
    assert alb.looks_like({"httpMethod": "GET", "path": "/", "isBase64Encoded": False})
    assert (
        not alb.looks_like({"Records": []})
        and not alb.looks_like([event])
        and not alb.looks_like({"httpMethod": "GET"})
    )


def test_top_level_detection_finds_the_load_balancer(event):
    import fnkit

    assert fnkit.detect_source(event) == "alb"
    assert fnkit.validate(event).source == "alb"
    assert fnkit.correlation_ids(event) == alb.correlation_ids(event)


# --- real-world events (issue 11): the right verdict for the right reason ---------------------------

_TG = "arn:{p}:elasticloadbalancing:{r}:{a}:targetgroup/{n}/{i}"


def _with_arn(event, arn):
    event["requestContext"]["elb"]["targetGroupArn"] = arn
    return alb.validate_event(event)


@pytest.mark.parametrize(
    ("parts", "words"),
    [
        (
            dict(p="provider", r="region", a="123456789012", n="my-target-group", i="6d0ecf831eec9f09"),
            ["region 'region'"],
        ),
        (dict(p="provider", r="us-east-1", a="12345", n="targets", i="6d0ecf831eec9f09"), ["account '12345'"]),
        (
            dict(p="provider", r="us-east-1", a="123456789012", n="my_targets", i="6d0ecf831eec9f09"),
            ["name 'my_targets'"],
        ),
        (dict(p="provider", r="us-east-1", a="123456789012", n="-targets", i="6d0ecf831eec9f09"), ["name '-targets'"]),
        (dict(p="provider", r="us-east-1", a="123456789012", n="t" * 33, i="6d0ecf831eec9f09"), ["name 'ttt"]),
        (dict(p="provider", r="us-east-1", a="123456789012", n="targets", i="XYZ"), ["id 'XYZ'"]),
        (
            dict(p="partition", r="us-east-1", a="123456789012", n="targets", i="6d0ecf831eec9f09"),
            ["partition 'partition'"],
        ),
        (
            dict(p="provider", r="us-east-1", a="ACCOUNT", n="t.v1", i="1"),
            ["account 'ACCOUNT'", "name 't.v1'", "id '1'"],
        ),
    ],
)
def test_a15_an_unusual_target_group_arn_is_an_inferred_warning_never_an_error(event, parts, words):
    arn = _TG.format(**parts)
    report = _with_arn(event, arn)
    assert report.ok
    [issue] = report
    assert (issue.path, issue.severity, issue.rule) == ("$.requestContext.elb.targetGroupArn", "warning", "A15")
    assert arn in issue.message and all(w in issue.message for w in words)
    from fnkit import rules

    assert rules.get("A15").inferred


def test_a15_the_dialect_is_read_from_the_partition(event):
    report = _with_arn(event, _TG.format(p="provider", r="region", a="1", n="t", i="x"))
    assert report.dialect == "provider"
    event["headers"]["x-amzn-trace-id"] = event["headers"].pop("x-provider-trace-id")
    for partition in ("aws", "aws-cn", "aws-us-gov"):
        assert _with_arn(event, _TG.format(p=partition, r="us-east-1", a="1", n="t", i="x")).dialect == "aws"
    assert (
        _with_arn(event, _TG.format(p="aws", r="us-east-1", a="123456789012", n="t", i="6d0ecf831eec9f09")).dialect
        == "aws"
    )


def test_a15_a_top_level_copy_of_the_arn_is_said_once(event):
    arn = _TG.format(p="provider", r="us-east-1", a="12345", n="t", i="6d0ecf831eec9f09")
    event["targetGroupArn"] = arn
    assert [(i.path, i.rule) for i in _with_arn(event, arn)] == [("$.requestContext.elb.targetGroupArn", "A15")]


@pytest.mark.parametrize(
    ("arn", "words"),
    [
        ("arn:provider:elasticloadbalancing:us-east-1:123456789012:targetgroup/my targets/6d0ecf831eec9f09", "a space"),
        ("arn:provider:elasticloadbalancing:us-east-1:123456789012:targetgroup/t/6d0ecf831eec9f09 ", "a space"),
        ("arn:provider:elasticloadbalancing:us-east-1:targetgroup/t/6d0ecf831eec9f09", "5 colon-separated part(s)"),
        ("arn:provider:elasticloadbalancing::123456789012:targetgroup/t/6d0ecf831eec9f09", "no region"),
        ("arn:provider:elasticloadbalancing:us-east-1:123456789012:targetgroup/t", "targetgroup/<name>/<id>"),
        (
            "arn:provider:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/t/6d0ecf831eec9f09",
            "'loadbalancer'",
        ),
        ("arn:provider:sqs:us-east-1:123456789012:queue", "the service 'sqs'"),
    ],
)
def test_as1_an_arn_with_whitespace_or_missing_parts_is_an_error(event, arn, words):
    report = _with_arn(event, arn)
    assert [(i.path, i.severity, i.rule) for i in report] == [("$.requestContext.elb.targetGroupArn", "error", "AS1")]
    assert words in report[0].message


def test_a3_one_multi_value_form_without_the_other_is_named(multi_event):
    del multi_event["multiValueQueryStringParameters"]
    report = alb.validate_event(multi_event)
    assert report.ok
    assert [(i.path, i.code, i.rule) for i in report] == [("$.multiValueQueryStringParameters", "missing", "A3")]
    assert "multiValueHeaders but no multiValueQueryStringParameters" in report[0].message


def test_a3_the_reverse_is_named_too(multi_event):
    del multi_event["multiValueHeaders"]
    report = alb.validate_event(multi_event)
    assert [(i.path, i.rule) for i in report] == [("$.multiValueHeaders", "A3")]
    assert "multiValueQueryStringParameters but no multiValueHeaders" in report[0].message


@pytest.mark.parametrize(
    ("headers", "said"),
    [
        ({"user-agent": "kube-probe/1.29"}, "its user-agent is 'kube-probe/1.29'"),
        ({}, "it has no user-agent header"),
    ],
)
def test_a11_a_health_check_like_event_without_a_trace_header(headers, said):
    e = alb.health_check_event()
    e["headers"] = headers
    report = alb.validate_event(e)
    assert report.ok
    [issue] = report
    assert (issue.severity, issue.rule) == ("warning", "A11")
    assert "only the load balancer's health checks come without one" in issue.message and said in issue.message


def test_an_ordinary_request_without_a_trace_header_is_still_as3(event):
    del event["headers"]["x-provider-trace-id"]
    assert [i.rule for i in alb.validate_event(event)] == ["AS3"]
    e = alb.health_check_event()
    e["headers"] = {"user-agent": "curl/8", "accept": "*/*"}  # more than a user-agent: a client's request
    assert [i.rule for i in alb.validate_event(e)] == ["AS3"]
