"""fnkit.alb.events_from_access_log: documented access-log entries in, events and logged facts out."""

from __future__ import annotations

import gzip

import pytest

from fnkit import alb
from fnkit.alb._access_log import FIELDS, MIN_FIELDS, parse_line

TG = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/shop-fn/73e2d6bc24d8a067"


def entry(
    request='"GET https://shop.example.com:443/api/items?page=2&sort=price%20asc HTTP/1.1"',
    *,
    status="200",
    target_status="200",
    times=("0.001", "0.045", "0.000"),
    agent='"curl/8.11.1"',
    trace='"Root=1-6960f8a1-0123456789abcdef01234567"',
    error='"-"',
    kind="https",
    tail=True,
) -> str:
    fields = [
        kind,
        "2026-01-05T10:00:01.123456Z",
        "app/shop-lb/50dc6c495c0c9188",
        "203.0.113.24:52311",
        "-",
        *times,
        status,
        target_status,
        "312",
        "1290",
        request,
        agent,
        "ECDHE-RSA-AES128-GCM-SHA256",
        "TLSv1.2",
        TG,
        trace,
    ]
    if tail:
        fields += [
            '"shop.example.com"',
            '"-"',
            "1",
            "2026-01-05T10:00:01.077000Z",
            '"forward"',
            '"-"',
            error,
            '"-"',
            '"-"',
            '"-"',
            '"-"',
            "TID_1a2b3c",
        ]
    return " ".join(fields)


def test_a_documented_entry_becomes_a_valid_event_with_the_request_as_logged():
    stream = alb.events_from_access_log([entry()])
    (logged,) = list(stream)
    event = logged.event
    assert alb.validate_event(event).ok
    assert (event["httpMethod"], event["path"]) == ("GET", "/api/items")
    assert event["queryStringParameters"] == {"page": "2", "sort": "price%20asc"}  # raw, never decoded (A2)
    assert event["headers"]["user-agent"] == "curl/8.11.1"
    assert event["headers"]["x-amzn-trace-id"] == "Root=1-6960f8a1-0123456789abcdef01234567"
    assert event["headers"]["host"] == "shop.example.com"
    assert event["headers"]["x-forwarded-for"] == "203.0.113.24"
    assert (event["headers"]["x-forwarded-port"], event["headers"]["x-forwarded-proto"]) == ("443", "https")
    assert event["requestContext"]["elb"]["targetGroupArn"] == TG
    assert event["body"] == "" and logged.body_known is False
    assert logged.status == 200 and logged.log["target_processing_time"] == 0.045
    assert logged.where == "<lines>:1"
    assert stream.summary() == "access log: read 1 line, yielded 1 request, reported 0 lines"


def test_every_documented_field_is_read_by_its_name_and_later_fields_are_kept_aside():
    log = parse_line(entry(error='"LambdaUnhandled"') + ' "new-field" 7')
    assert [f.name for f in FIELDS][:3] == ["type", "time", "elb"]
    assert log["client:port"] == ("203.0.113.24", 52311) and log["target:port"] is None
    assert log["error_reason"] == "LambdaUnhandled" and log["matched_rule_priority"] == 1
    assert log["conn_trace_id"] == "TID_1a2b3c" and log["extra"] == ("new-field", "7")
    older = parse_line(entry(tail=False))  # entries written before domain_name existed
    assert older["trace_id"].startswith("Root=") and older["error_reason"] is None
    assert MIN_FIELDS == 18


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (entry(tail=False).rsplit(" ", 3)[0], "has 15 field(s)"),
        (entry(status="2OO"), "Field 9 (elb_status_code) is '2OO': expected a whole number"),
        (entry(times=("fast", "0.1", "0")), "Field 6 (request_processing_time) is 'fast'"),
        (
            entry(request="GET https://shop.example.com/ HTTP/1.1"),
            "Field 13 (request) is 'GET': it is written in double quotes",
        ),
        (entry(agent="curl"), "Field 14 (user_agent) is 'curl': it is written in double quotes"),
        (entry(request='"GET shop.example.com/x HTTP/1.1"'), "is not scheme://host:port/path"),
        (entry(request='"get https://shop.example.com:443/ HTTP/1.1"'), "is not an HTTP method"),
        (entry() + " ", "no trailing space"),
        (entry().replace(" 312 ", "  312 "), "a single space between fields"),
        (entry(agent='"unterminated'), "The entry cannot be split into fields"),
        (entry() + ' "open', "an unmatched double quote"),
    ],
)
def test_a_malformed_line_is_reported_with_its_number_and_why(line, says):
    stream = alb.events_from_access_log([entry(), line, entry()])
    assert len(list(stream)) == 2
    (issue,) = stream.issues
    assert issue.path == "<lines>:2" and issue.severity == "error"
    assert says in issue.message
    assert (stream.read, stream.yielded, stream.reported) == (3, 2, 1)


def test_an_incomplete_request_and_a_blank_line_are_reported_as_warnings_in_place():
    incomplete = entry(
        request='"- https://shop.example.com:443- -"', status="400", target_status="-", times=("-1", "-1", "-1")
    )
    stream = alb.events_from_access_log("\n".join([entry(), "", incomplete, entry()]) + "\n")
    entries = list(stream.entries())
    assert [type(e).__name__ for e in entries] == ["LoggedRequest", "Unreadable", "Unreadable", "LoggedRequest"]
    assert [i.code for i in stream.issues] == ["blank", "incomplete"]
    assert "answered 400 itself" in stream.issues[1].message
    assert stream.report.ok  # warnings only


def test_gzip_files_and_folders_are_read_in_name_order(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "b.log.gz").write_bytes(gzip.compress((entry(status="404", target_status="404") + "\n").encode()))
    (folder / "a.log").write_text(
        entry() + "\n" + entry(status="502", target_status="-", error='"LambdaUnhandled"') + "\n"
    )
    (folder / ".hidden").write_text("not a log\n")
    got = list(alb.events_from_access_log(folder))
    assert [(r.where.rsplit("/", 1)[-1], r.status) for r in got] == [
        ("a.log:1", 200),
        ("a.log:2", 502),
        ("b.log.gz:1", 404),
    ]
    assert got[1].error_reason == "LambdaUnhandled"


def test_a_gzip_file_cut_short_is_reported_not_raised(tmp_path):
    data = gzip.compress(("\n".join([entry()] * 200) + "\n").encode())
    path = tmp_path / "cut.log.gz"
    path.write_bytes(data[: len(data) // 2])
    stream = alb.events_from_access_log(path)
    got = list(stream)
    assert 0 < len(got) < 200
    assert stream.reported == 1 and "cannot be read past line" in stream.issues[0].message


def test_a_line_that_is_not_utf8_is_reported(tmp_path):
    path = tmp_path / "bad.log"
    path.write_bytes(entry().encode() + b"\n" + entry(agent='"caf\xe9"').encode("latin-1") + b"\n")
    stream = alb.events_from_access_log(path)
    assert len(list(stream)) == 1 and "not UTF-8" in stream.issues[0].message and stream.issues[0].path.endswith(":2")


def test_a_missing_path_fails_at_once():
    with pytest.raises(FileNotFoundError):
        alb.events_from_access_log("no/such/access.log")


def test_websocket_requests_and_unforwarded_methods_replay_as_the_load_balancer_answers():
    import fnkit

    lines = [
        entry(kind="wss", request='"GET wss://shop.example.com:443/live HTTP/1.1"', status="400", target_status="-"),
        entry(request='"TRACE https://shop.example.com:443/ HTTP/1.1"', status="405", target_status="-"),
    ]
    frame = fnkit.replay(lambda e, c: {"statusCode": 200}, alb.events_from_access_log(lines))
    assert list(frame["status"]) == [400, 405] and list(frame["rule"]) == ["A1", "A14"]
    assert list(frame["agrees"]) == [True, True]
