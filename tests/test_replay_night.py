"""The on-call night, rebuilt (tests/night.py): what an analyst reads from fnkit must be true and typed."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import fnkit
from fnkit import alb, queue
from tests.night import write_night


@pytest.fixture(scope="module")
def night(tmp_path_factory):
    return write_night(tmp_path_factory.mktemp("night"), cut=False)


@pytest.fixture(scope="module")
def cut_night(tmp_path_factory):
    return write_night(tmp_path_factory.mktemp("cut-night"), requests=1_200, messages=50)


def v42(event, context):
    """The next version: the report still crashes, CSV reports answer a string status, search hangs."""
    path = event["path"]
    if path == "/api/report":
        if "format" in (event.get("queryStringParameters") or {}):
            return {"statusCode": "200", "body": "a,b"}
        raise KeyError("month")
    if path == "/api/orders":
        return {"statusCode": 201 if json.loads(event["body"] or "{}") else 400}
    return {"statusCode": 200, "body": "[]"}


@pytest.fixture(scope="module")
def frame(night):
    return fnkit.replay(v42, alb.events_from_access_log(night.logs, progress=False))


def test_a_dump_of_concatenated_receive_message_outputs_is_read_in_full_with_line_numbers(night):
    stream = queue.events_from_messages(night.dump, progress=False)
    batches = list(stream)
    assert stream.read == night.messages and not stream.issues
    assert sum(len(b["Records"]) for b in batches) == night.messages
    # the same dump, one answer per line (jq -c): the same messages
    lines = queue.events_from_messages(night.dump_jsonl, progress=False)
    assert sum(len(b["Records"]) for b in lines) == night.messages and not lines.issues


def test_a_broken_answer_in_a_concatenated_dump_is_located_and_the_next_ones_are_read(tmp_path, night):
    text = night.dump.read_text()
    answers = text.split("\n{\n")
    broken = answers[0] + "\n{\n" + answers[1].replace('"Body"', '"Body" "', 1) + "\n{\n" + "\n{\n".join(answers[2:])
    path = tmp_path / "broken.json"
    path.write_text(broken)
    stream = queue.events_from_messages(path, progress=False)
    records = sum(len(b["Records"]) for b in stream)
    first_lines = answers[0].count("\n") + 2
    second = json.loads("{\n" + answers[1])["Messages"]
    assert records == night.messages - len(second)
    assert len(stream.issues) == 1 and "not valid JSON" in stream.issues[0].message
    line = int(stream.issues[0].path.rsplit(":", 1)[1])
    assert first_lines <= line < first_lines + answers[1].count("\n") + 1


def test_requests_the_load_balancer_answered_itself_are_reported_and_never_replayed(night, frame):
    stream = alb.events_from_access_log(night.logs, progress=False)
    list(stream)
    skipped = [i for i in stream.issues if i.code == "not-forwarded"]
    assert len(skipped) == night.not_forwarded and skipped[0].severity == "warning"
    assert "never saw this request" in skipped[0].message
    assert len(frame[frame["status"].notna()]) == night.forwarded  # no row for a redirect, a fixed response, a login
    assert set(frame["actions_executed"].dropna()) == {"forward"}
    assert not frame["logged_status"].isin([301, 401, 503]).any()


def test_rows_that_depend_on_the_body_the_log_lacks_are_marked_and_not_judged(night, frame):
    posts = frame[frame["method"] == "POST"]
    assert len(posts) == night.kinds["order"]
    assert (posts["depends_on"] == "body").all() and not posts["replayable"].any()
    assert posts["agrees"].isna().all()  # the 400s for an empty body are not disagreements
    judged = frame[frame["replayable"] == True]  # noqa: E712
    assert judged["agrees"].notna().all() and len(judged) == night.forwarded - night.kinds["order"]
    assert fnkit._replay.columns.agreement(frame)["not_replayable"] == night.kinds["order"]


def test_causes_are_a_column_and_the_a6_sentence_names_the_field(frame):
    report = frame[frame["path"] == "/api/report"]
    crashed = report[report["rule"] == "A5"]
    invalid = report[report["rule"] == "A6"]
    assert len(crashed) and set(crashed["cause"]) == {"raised"}
    assert len(invalid) and set(invalid["cause"]) == {"statusCode: not an integer"}
    assert invalid["reason"].str.contains("statusCode: Expected an integer", regex=False).all()
    assert frame.loc[frame["rule"] == "AS4", "cause"].isna().all()
    # the analysis the issue asked for: 502s per minute, by cause
    per_minute = (
        frame[frame["status"] == 502].groupby([frame["logged_time"].dt.floor("min"), "cause"], observed=True).size()
    )
    assert per_minute.sum() == len(crashed) + len(invalid)


def test_every_column_has_its_documented_dtype(frame):
    schema = fnkit.columns().set_index("name")["dtype"]
    undocumented = [c for c in frame.columns if c not in schema.index]
    assert not undocumented
    typed = [c for c in frame.columns if schema[c] != "object"]
    wrong = {c: str(frame[c].dtype) for c in typed if str(frame[c].dtype) != schema[c]}
    assert not wrong
    assert isinstance(frame["file"].dtype, pd.CategoricalDtype) and frame["file"].cat.categories.size == 4
    assert frame["result"].map(type).eq(str).all()  # one meaning: a word, never 502 beside "unreadable"


def test_unreadable_lines_and_the_cut_gzip_are_rows_with_file_and_line(cut_night):
    frame = fnkit.replay(v42, alb.events_from_access_log(cut_night.logs, progress=False))
    bad = frame[frame["result"] == "unreadable"]
    assert len(bad) >= cut_night.garbage_lines  # every garbage line, and the cut
    assert bad["item"].isna().all() and bad["line"].notna().all() and bad["file"].notna().all()
    cut = bad[bad["reason"].str.contains("cannot be read past line")]
    assert len(cut) == 1 and cut["file"].iloc[0] == str(cut_night.cut_file)
