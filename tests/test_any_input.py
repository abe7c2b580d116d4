"""Every reader turns any input into rows or located issues, and the command line prints any text it reports.

Deep nesting, numbers of thousands of digits, lone surrogates and blank lines: each one a row
or an issue with its line number, never a traceback; the other files of a run still print.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fnkit
from fnkit._import import events_from_file
from fnkit.cli import main
from fnkit.queue import events_from_messages

ROOT = Path(__file__).resolve().parent.parent
QUEUE_EVENT = json.dumps(fnkit.queue.build_event(["hello"]))
#: a load balancer event whose method is a lone surrogate (valid JSON text): the issue quotes the method
SURROGATE = '{"httpMethod": "\\ud800", "path": "/\u00e9", "requestContext": {"elb": {"targetGroupArn": "arn"}}}'
MESSAGE = '{"MessageId": "m1", "ReceiptHandle": "r1", "Body": "x", "MD5OfBody": %s}'


def nothing(event, context):
    return None


def test_replay_on_a_line_of_10000_brackets_gives_a_row_saying_so_and_the_other_rows(tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_text(QUEUE_EVENT + "\n" + "[" * 10_000 + "\n" + QUEUE_EVENT + "\n", encoding="utf-8")
    frame = fnkit.replay(nothing, events)
    assert len(frame) == 3
    bad = frame[frame["result"] == "unreadable"]
    assert len(bad) == 1 and "nests too deeply" in bad.iloc[0]["reason"]
    assert bad.iloc[0]["file"].endswith("events.jsonl") and bad.iloc[0]["line"] == 2


def test_the_command_line_replay_on_a_line_too_deep_reports_its_line(tmp_path, capsys):
    events = tmp_path / "events.jsonl"
    events.write_text("[" * 10_000 + "\n", encoding="utf-8")
    assert main(["replay", f"{__file__}:nothing", str(events), "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    (finding,) = report["records"][0]["issues"]
    assert finding["line"] == 1 and "nests too deeply" in finding["message"]


def test_blank_lines_of_a_json_lines_replay_are_counted_and_said_with_their_line_numbers(tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_text(QUEUE_EVENT + "\n\n   \n" + QUEUE_EVENT + "\n\n", encoding="utf-8")
    stream = events_from_file(events)
    assert len(list(stream)) == 2
    assert stream.read == 5
    assert [(i.path, i.severity) for i in stream.issues] == [(f"{events}:2", "warning"), (f"{events}:5", "warning")]
    assert "lines 2-3 are blank" in stream.issues[0].message


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"Messages": [' + MESSAGE % ("9" * 5000) + "]}", "more than 4,300 digits"),
        ('{"Messages": [' + MESSAGE % ("[" * 5000 + "]" * 5000) + "]}", "nests too deeply"),
        ("[" * 10_000, "nests too deeply"),
    ],
    ids=["md5-of-5000-digits", "value-5000-deep", "file-10000-deep"],
)
def test_the_queue_importer_reports_what_it_cannot_read_with_its_line(text, words):
    stream = events_from_messages(text)
    assert list(stream) == []
    (issue,) = stream.issues
    assert issue.path == "<text>:1" and words in issue.message


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif", "junit"])
def test_validate_prints_a_lone_surrogate_escaped_and_every_other_file(tmp_path, capsys, fmt):
    surrogate = tmp_path / "surrogate.json"  # valid JSON text, whose method the issue quotes
    surrogate.write_text(SURROGATE, encoding="utf-8")
    other = tmp_path / "other.json"
    other.write_text("[1]", encoding="utf-8")
    assert main(["validate", "--format", fmt, str(surrogate), str(other)]) == 1
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "\\ud800" in out and "other.json" in out
    if fmt in ("json", "sarif"):
        json.loads(captured.out)  # still a JSON document: the escape is JSON's own


def test_a_terminal_that_carries_only_ascii_gets_escapes_not_a_traceback(tmp_path):
    surrogate = tmp_path / "surrogate.json"
    surrogate.write_text(SURROGATE, encoding="utf-8")
    other = tmp_path / "other.json"
    other.write_text("[1]", encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "fnkit", "validate", str(surrogate), str(other)],
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1 and b"Traceback" not in done.stderr, done.stderr
    assert b"other.json" in done.stdout + done.stderr and b"\\ud800" in done.stdout + done.stderr


ACCESS_LINE = (
    'http 2026-01-01T00:00:00.000000Z app/my-lb/1 198.51.100.7:1234 - -1 -1 -1 200 200 0 2 "GET http://a:80/x?y '
    'HTTP/1.1" "curl" - - arn - "-" "-" "-" 0 2026-01-01T00:00:00.000000Z "forward" "-" "-" "-" "-" "-" "-"'
)


@pytest.mark.parametrize("count", ["9" * 5000, "\u00b2", "\u0661\u0662"], ids=["5000-digits", "superscript", "arabic"])
def test_an_access_log_count_that_is_no_64_bit_number_is_said_in_words(count):
    stream = fnkit.alb.events_from_access_log([ACCESS_LINE.replace("200 200 0 2", f"200 200 {count} 2")])
    assert list(stream) == []
    (issue,) = stream.issues
    assert issue.path == "<lines>:1" and "expected a number of bytes (at most 19 digits)" in issue.message
