"""The conformance suite: fixture files written from public facts, run through the command line as a user would.

Each case of manifest.json names a fixture file (under fixtures/), the command a user would type
(`fnkit validate --format json FILE`, `fnkit validate --response ...`, `fnkit outcome ...`: one JSON
document per run, with a record per input), the expected verdict and the rule ids of its errors and
warnings, the words its messages must show, and why (the public fact it rests on). Most cases run
in-process through `fnkit.cli.main`; a handful run in a real subprocess (`python -m fnkit`) and
must print the same.

Besides each verdict, every issue must point at what the user sees in the file: its path
resolves in the document (the key, the record index), or names a missing key whose parent is
there, or is `$` for what concerns the whole text (a byte-order mark, not JSON, another kind of
event).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fnkit import rules
from fnkit.cli import main

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
REPO_ROOT = HERE.parent.parent
MANIFEST = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))
CASES = MANIFEST["cases"]

#: rules no file can show: what they govern is a configuration, a simulator's clock, or a handler's behaviour
#: (each has its example in fnkit/data/rule_examples.json and its tests beside its code)
NOT_FILE_LEVEL = {
    "H1": "how a handler is called",
    "H2": "a returned Python value JSON cannot encode",
    "H3": "a handler that raises",
    "H4": "a handler past its timeout",
    "Q2": "a queue configuration",
    "Q3": "a queue configuration",
    "Q5": "the simulator's receive counts over time",
    "Q6": "a handler that raises or times out",
    "Q9": "the simulator's FIFO groups over time",
    "Q11": "the simulator's deduplication window over time",
    "Q16": "a message over 1 MiB: a file that size is no fixture to commit (its example builds one; tests/queue)",
    "Q17": "an event over 6 MB: likewise (its example builds one; tests/queue)",
    "M2": "a mail rule configuration",
    "M9": "the message content API during an invocation",
    "A5": "a handler that raises or times out (and a response file over 1 MB)",
    "A16": "bytes on an HTTP connection, not an event: sent to a real server by tests/alb/test_desync.py",
    "A17": "a request line on an HTTP connection, not an event: tests/alb/test_desync.py",
    "QS6": "the queue response's declared shape: a response that breaks it is cited by what the poller then does (Q8, "
    "Q8a)",
}
#: the classes of real-world failure issue 11 names, each with fixtures
CLASSES = {
    "target-group-arn",
    "bom",
    "list-values",
    "queue-arn",
    "fifo-inference",
    "multi-value-form",
    "md5-missing",
    "detection",
    "health-check",
    "mail-async",
    "jsonl",
}


def _argv(case: dict[str, Any]) -> list[str]:
    file = str(FIXTURES / case["file"])
    args = case.get("args", [])
    event = ["--event", str(FIXTURES / case["event"])] if "event" in case else []
    if case["command"] == "validate":
        return ["validate", "--format", "json", *args, file]
    if case["command"] == "response":
        return ["validate", "--response", "--format", "json", *args, *event, file]
    assert case["command"] == "outcome"
    return ["outcome", "--format", "json", *event, "--response", file, *args]


def _records(out: str, case: dict[str, Any]) -> list[dict[str, Any]]:
    """The records of the one JSON document a run prints: the outcome's, or those of the files checked."""
    records: list[dict[str, Any]] = json.loads(out)["records"]
    if case["command"] == "outcome":
        return [r for r in records if r["kind"] == "outcome"]
    return [r for r in records if r["file"] == str(FIXTURES / case["file"])]  # not --event's record


def _run(case: dict[str, Any], capsys) -> tuple[int, list[dict[str, Any]]]:
    code = main(_argv(case))
    return code, _records(capsys.readouterr().out, case)


# --- where an issue points ------------------------------------------------------------------

_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]")
_ABSENT = object()


def _steps(path: str) -> list[Any]:
    assert path.startswith("$"), path
    steps, at = [], 1
    while at < len(path):
        m = _STEP.match(path, at)
        assert m, f"not a path of the documented form: {path!r}"
        name, index, quoted = m.groups()
        steps.append(name if name is not None else int(index) if index is not None else json.loads(f'"{quoted}"'))
        at = m.end()
    return steps


def _resolve(doc: Any, steps: list[Any]) -> Any:
    for step in steps:
        if isinstance(step, int) and isinstance(doc, list) and 0 <= step < len(doc):
            doc = doc[step]
            continue
        if isinstance(step, str) and isinstance(doc, dict) and step in doc:
            doc = doc[step]
            continue
        return _ABSENT
    return doc


def _document(case: dict[str, Any], line: int | None) -> Any:
    data = (FIXTURES / case["file"]).read_bytes()
    if line is not None:
        data = data.splitlines()[line - 1]
    try:
        return json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError):
        return _ABSENT


def _assert_located(case: dict[str, Any], doc: dict[str, Any]) -> None:
    """Each issue names what the file shows: a path that is there, or a missing key below one that is."""
    value = _document(case, doc.get("line"))
    for issue in doc["issues"]:
        steps = _steps(issue["path"])
        if not steps:
            continue  # the whole text: a byte-order mark, not JSON, another kind of event
        assert value is not _ABSENT, issue
        if issue["code"] == "missing":
            assert _resolve(value, steps[:-1]) is not _ABSENT, f"{case['file']}: parent of {issue['path']} absent"
            assert _resolve(value, steps) is _ABSENT, f"{case['file']}: {issue['path']} is there, yet said missing"
        else:
            assert _resolve(value, steps) is not _ABSENT, f"{case['file']}: {issue['path']} is not in the file"


def _check_verdict(case: dict[str, Any], doc: dict[str, Any], expect: dict[str, Any]) -> None:
    issues = doc["issues"]
    assert doc["ok"] is expect["ok"], (case["file"], issues)
    errors = sorted({i["rule"] for i in issues if i["severity"] == "error"})
    warnings = sorted({i["rule"] for i in issues if i["severity"] == "warning"})
    assert (errors, warnings) == (expect["errors"], expect["warnings"]), (case["file"], issues)
    said = "\n".join(f"{i['path']}: {i['message']}" for i in issues)
    for words in expect.get("mentions", ()):
        assert words in said, f"{case['file']}: no message shows {words!r}:\n{said}"
    for key in ("source", "dialect"):
        if key in expect:
            assert doc[key] == expect[key], (case["file"], key, doc[key])
    _assert_located(case, doc)


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_case(case, capsys):
    code, docs = _run(case, capsys)
    expect = case["expect"]
    if case["command"] == "outcome":
        [doc] = docs
        failed = doc["tone"] == "bad" or any(i["severity"] == "error" and i["code"] != "outcome" for i in doc["issues"])
        assert (code, doc["ok"]) == ((1, False) if failed else (0, True)), doc
        assert doc["rule"] == expect["rule"], (case["file"], doc)
        if "kind" in expect:  # the queue's verdict: every row's action follows from it
            actions = {"success": {"delete"}, "failure": {"retry"}, "partial": {"delete", "retry"}}[expect["kind"]]
            assert {r["action"] for r in doc["rows"]} == actions, doc["rows"]
        assert set(expect.get("warnings", ())) <= {i["rule"] for i in doc["issues"]}, doc["issues"]
        for cited in expect.get("cites", ()):  # a rule the outcome's sentence says it applied
            assert f"({cited})" in doc["reason"] or f"({cited}," in doc["reason"], doc["reason"]
        return
    per_document = expect.get("lines", [expect])
    assert len(docs) == len(per_document), docs
    for doc, want in zip(docs, per_document, strict=True):
        assert doc["file"] == str(FIXTURES / case["file"])
        assert doc["kind"] == ("response" if case["command"] == "response" else "event")
        _check_verdict(case, doc, want)
    if "lines" in expect:  # one document per line, numbered as an editor shows them
        numbered = [n for n, line in enumerate((FIXTURES / case["file"]).read_bytes().splitlines(), 1) if line.strip()]
        assert [d["line"] for d in docs] == numbered
    assert code == (0 if all(w["ok"] for w in per_document) else 1)


# --- what the suite covers -------------------------------------------------------------------


def _cited(case: dict[str, Any]) -> set[str]:
    expect = case["expect"]
    found = ({expect["rule"]} | set(expect.get("cites", ()))) if "rule" in expect else set()
    for want in expect.get("lines", [expect]):
        found |= set(want.get("errors", ())) | set(want.get("warnings", ()))
    return found


def test_every_rule_a_file_can_show_has_a_fixture():
    covered = set().union(*map(_cited, CASES))
    ids = rules.ids()
    assert set(NOT_FILE_LEVEL) <= ids
    assert not covered & set(NOT_FILE_LEVEL), "a rule said to be beyond files has a fixture: update NOT_FILE_LEVEL"
    missing = ids - covered - set(NOT_FILE_LEVEL)
    assert not missing, f"rules without a conformance fixture: {sorted(missing)}"


def test_every_class_of_failure_has_fixtures():
    assert {c["class"] for c in CASES if "class" in c} == CLASSES
    assert any(c["command"] == "response" for c in CASES) and any(c["command"] == "outcome" for c in CASES)


def test_every_fixture_is_in_the_manifest_and_says_why():
    named = {c["file"] for c in CASES} | {c["event"] for c in CASES if "event" in c}
    on_disk = {p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*") if p.is_file()}
    assert named == on_disk
    assert all(c["why"].strip() for c in CASES)


def test_the_fixtures_come_in_every_file_form():
    """BOM bytes, CRLF line ends, pretty-printed and minified JSON, JSON Lines with several events."""
    data = {c["file"]: (FIXTURES / c["file"]).read_bytes() for c in CASES}
    assert any(d.startswith(b"\xef\xbb\xbf") for d in data.values())
    assert any(b"\r\n" in d and not d.startswith(b"\xef\xbb\xbf") for d in data.values())
    assert any(d.startswith(b"\xef\xbb\xbf") and b"\r\n" in d for d in data.values())
    assert any(len(d.splitlines()) == 1 for d in data.values())
    assert any(d.count(b"\n") > 10 for d in data.values())
    jsonl = [d for f, d in data.items() if f.endswith(".jsonl")]
    assert jsonl and all(len(d.splitlines()) >= 3 for d in jsonl)


# --- a handful, as a user runs them: a real process ----------------------------------------------

IN_A_PROCESS = [
    "queue/bom-with-defect.json",
    "queue/batches.jsonl",
    "responses/queue/responses.jsonl",
    "other/apigw-rest.json",
    "alb/arn-short-account.json",
    "responses/mail/async-invalid.json",
    "responses/queue/partial-reporting-off.json",
]


@pytest.mark.parametrize("name", IN_A_PROCESS)
def test_a_real_process_prints_the_same(name, capsys):
    [case] = [c for c in CASES if c["file"] == name]
    code, docs = _run(case, capsys)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(
        [sys.executable, "-m", "fnkit", *_argv(case)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == code, proc.stderr.decode()
    assert _records(proc.stdout.decode(), case) == docs
    assert b"Traceback" not in proc.stderr
