"""The command line as a CI gate (issue 22): exit codes, output formats, file:line:col, replay's inputs, event build.

The exit-code table is the linters' one for every checking command: 0 nothing to report, 1
findings, 2 a usage error or an input that cannot be read. Each machine format is read back
as its consumer would: JSON parsed, GitHub workflow commands parsed with a regular
expression, SARIF validated against a JSON Schema of SARIF 2.1.0 (the part fnkit writes), JUnit
parsed as XML.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import fnkit
from fnkit import alb, mail, queue
from fnkit._engine.locate import locate
from fnkit._engine.report import child_path
from fnkit.cli import build_parser, main

REPO_ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m fnkit ARGS` in a fresh interpreter, as CI runs it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "fnkit", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


_HANDLER_MODULES = ("shop", "spy", "broken_import", "syntax", "nowhere")


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder of inputs: queue, load balancer and mail events and responses, good and bad, and handlers.

    The command puts --app-dir on sys.path and imports the handler: both are undone after each test.
    """
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in _HANDLER_MODULES:
        monkeypatch.delitem(sys.modules, name, raising=False)
    event = queue.build_event(["first", "second", "third"], seed=3)
    ids = queue.correlation_ids(event)
    broken = json.loads(json.dumps(event))
    broken["Records"][1]["md5OfBody"] = "0" * 32
    eleven = queue.build_event(["x"] * 11)  # Q1: a warning only
    files = {
        "good.json": json.dumps(event),
        "pretty.json": json.dumps(event, indent=2),
        "broken.json": json.dumps(broken, indent=2),
        "warned.json": json.dumps(eleven),
        "partial.json": json.dumps({"batchItemFailures": [{"itemIdentifier": ids[1]}]}),
        "stranger.json": json.dumps({"batchItemFailures": [{"itemIdentifier": "not-in-the-batch"}]}),
        "empty.json": json.dumps({"batchItemFailures": []}),
        "cut.json": '{"batchItemFailures": [',
        "unknown.json": '{"hello": "world"}',
        "request.json": json.dumps(alb.build_event("GET", "/x")),
        "ok200.json": json.dumps({"statusCode": 200, "body": "hi"}),
        "mail-event.json": json.dumps(mail.build_event(mail_from="a@example.com", recipients=["b@example.com"])),
        "mail-default.json": json.dumps({"actions": [{"allRecipients": True, "action": {"type": "DEFAULT"}}]}),
        "mail-nonsense.json": json.dumps({"nonsense": 1}),
        "bad502.json": json.dumps({"statusCode": "two hundred"}),
        "app/shop.py": (
            "def handler(event, context):\n"
            "    if 'Records' in event:\n"
            "        return {'batchItemFailures': []}\n"
            "    return {'statusCode': 200, 'body': 'ok'}\n"
        ),
        "app/broken_import.py": "import a_module_nobody_has_written\n",
        "app/syntax.py": "def handler(event, context)\n    return 1\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    with (tmp_path / "events.jsonl").open("w") as fh:
        fh.write(json.dumps(event) + "\n")
        fh.write(json.dumps(alb.build_event("GET", "/y")) + "\n")
    with (tmp_path / "dirty.jsonl").open("w") as fh:
        fh.write(json.dumps(event) + "\n")
        fh.write("{not json\n")
        fh.write(json.dumps({"hello": "world"}) + "\n")
    (tmp_path / "garbage.jsonl").write_text("not json\nnor this\n")
    yield tmp_path
    for name in _HANDLER_MODULES:
        sys.modules.pop(name, None)


# --- the exit-code table ---------------------------------------------------------------------------------

EXIT_CODES = [
    # validate
    (["validate", "good.json"], 0),
    (["validate", "pretty.json", "good.json"], 0),
    (["validate", "broken.json"], 1),
    (["validate", "good.json", "broken.json"], 1),
    (["validate", "unknown.json"], 1),
    (["validate", "warned.json"], 0),
    (["validate", "--strict", "warned.json"], 1),
    (["validate", "missing.json"], 2),
    (["validate", "broken.json", "missing.json"], 2),
    (["validate", "--event", "good.json", "partial.json"], 2),  # --event without --response
    (["validate", "--response", "--event", "missing.json", "partial.json"], 2),
    (["validate", "--response", "--event", "events.jsonl", "partial.json"], 2),  # two events
    (["validate", "--response", "partial.json"], 0),
    (["validate", "--response", "--event", "good.json", "partial.json"], 0),
    (["validate", "--response", "--event", "good.json", "stranger.json"], 1),
    (["validate", "--response", "cut.json"], 1),
    # outcome
    (["outcome", "--event", "good.json", "--response", "partial.json"], 0),
    (["outcome", "--event", "good.json", "--response", "empty.json"], 0),
    (["outcome", "--event", "good.json", "--response", "cut.json"], 1),  # a failed batch
    (["outcome", "--event", "good.json", "--response", "stranger.json"], 1),
    (["outcome", "--event", "good.json", "--response", "partial.json", "--expect", "partial"], 0),
    (["outcome", "--event", "good.json", "--response", "partial.json", "--expect", "success"], 1),
    (["outcome", "--event", "good.json", "--response", "cut.json", "--expect", "failure"], 0),
    (["outcome", "--event", "request.json", "--response", "ok200.json"], 0),
    (["outcome", "--event", "request.json", "--response", "ok200.json", "--expect", "200"], 0),
    (["outcome", "--event", "request.json", "--response", "ok200.json", "--expect", "2xx"], 0),
    (["outcome", "--event", "request.json", "--response", "bad502.json"], 1),
    (["outcome", "--event", "request.json", "--response", "bad502.json", "--expect", "502"], 0),
    (["outcome", "--event", "request.json", "--response", "bad502.json", "--expect", "2xx"], 1),
    (["outcome", "--event", "mail-event.json", "--response", "mail-default.json", "--expect", "applied"], 0),
    (["outcome", "--event", "mail-event.json", "--response", "mail-nonsense.json"], 1),  # the fallback applies
    (["outcome", "--event", "mail-event.json", "--response", "mail-nonsense.json", "--expect", "fallback"], 0),
    (["outcome", "--event", "broken.json", "--response", "partial.json"], 1),  # the event has errors
    (["outcome", "--event", "missing.json", "--response", "partial.json"], 2),
    (["outcome", "--event", "good.json", "--response", "missing.json"], 2),
    (["outcome", "--event", "unknown.json", "--response", "partial.json"], 2),
    (["outcome", "--event", "cut.json", "--response", "partial.json"], 2),
    # replay
    (["replay", "--app-dir", "app", "shop:handler", "events.jsonl"], 0),
    (["replay", "--app-dir", "app", "shop:handler", "pretty.json"], 0),
    (["replay", "--app-dir", "app", "shop:handler", "dirty.jsonl"], 1),
    (["replay", "--app-dir", "app", "shop:handler", "dirty.jsonl", "--allow-invalid"], 0),
    (["replay", "--app-dir", "app", "shop:handler", "garbage.jsonl"], 1),  # every row unreadable
    (["replay", "--app-dir", "app", "shop:handler", "events.jsonl", "missing.jsonl"], 2),
    (["replay", "--app-dir", "app", "nowhere:handler", "events.jsonl"], 2),
    (["replay", "--app-dir", "app", "shop:nothing", "events.jsonl"], 2),
    (["replay", "--app-dir", "app", "shop", "events.jsonl"], 2),
    (["replay", "--app-dir", "app", "shop:handler", "events.jsonl", "--force-source"], 2),
    # event build
    (["event", "build", "queue"], 0),
    (["event", "build", "alb", "--method", "BREW"], 2),
]


@pytest.mark.parametrize(("argv", "code"), EXIT_CODES, ids=[" ".join(a) for a, _ in EXIT_CODES])
def test_the_exit_code_table(argv, code, work, capsys):
    assert main(argv) == code
    capsys.readouterr()


@pytest.mark.parametrize(
    "argv",
    [["validate"], ["validate", "--format", "xml", "good.json"], ["outcome", "--event", "good.json"], ["replay"]],
)
def test_usage_errors_exit_two(argv, work, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2


@pytest.mark.parametrize(
    ("handler", "said"),
    [
        ("nowhere:handler", "No module named 'nowhere'"),
        ("broken_import:handler", "importing broken_import raised ModuleNotFoundError"),
        ("syntax:handler", "SyntaxError"),
        ("shop:nothing", "has no 'nothing'"),
    ],
)
def test_an_unimportable_handler_is_one_line_and_exit_two(handler, said, work):
    proc = run_cli("replay", "--app-dir", "app", handler, "events.jsonl", cwd=work)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("fnkit replay: ") and said in line


@pytest.mark.parametrize("command", ["serve-alb", "serve-mail"])
def test_the_servers_refuse_an_unimportable_handler_in_one_line(command, work):
    domain = ["--domain", "example.com"] if command == "serve-mail" else []
    proc = run_cli(command, "--app-dir", "app", "broken_import:handler", *domain, cwd=work)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert "importing broken_import raised ModuleNotFoundError" in line


def test_a_handler_beside_the_current_folder_needs_app_dir(work):
    proc = run_cli("replay", "shop:handler", "events.jsonl", cwd=work)
    assert proc.returncode == 2 and "--app-dir" in proc.stderr
    proc = run_cli("replay", "--app-dir", str(work / "app"), "shop:handler", "events.jsonl", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert "2 row(s) from 2 event(s)" not in proc.stdout  # a queue batch of 3 records and one request
    assert "4 row(s) from 2 event(s)" in proc.stdout


# --- json: one document per run ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "good.json", "broken.json", "missing.json"],
        ["outcome", "--event", "good.json", "--response", "missing.json"],
        ["replay", "--app-dir", "app", "shop:handler", "dirty.jsonl", "missing.jsonl"],
    ],
    ids=["validate", "outcome", "replay"],
)
def test_json_is_one_document_with_a_summary_and_a_record_per_input(argv, work, capsys):
    code = main([*argv, "--format", "json"])
    doc = json.loads(capsys.readouterr().out)  # one document: json.loads refuses JSON Lines
    assert (doc["command"], doc["exit_code"], doc["ok"]) == (argv[0], code, False)
    assert code == 2
    files = {r["file"] for r in doc["records"]}
    named = {a for a in argv if "." in a and not a.startswith("shop")} - {"app"}
    assert named <= files  # every input has its record, the unreadable one too
    missing = [r for r in doc["records"] if r["file"].startswith("missing")]
    assert [r["status"] for r in missing] == ["unreadable"] and "cannot read" in missing[0]["error"]
    assert doc["summary"]["records"] == len(doc["records"])
    assert doc["summary"]["unreadable"] == 1


def test_validate_json_summary_counts(work, capsys):
    assert main(["validate", "--format", "json", "good.json", "broken.json", "warned.json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"] == {
        "records": 3,
        "ok": 2,
        "invalid": 1,
        "failed": 1,
        "errors": 1,
        "warnings": sum(1 for r in doc["records"] for i in r["issues"] if i["severity"] == "warning"),
    }
    assert doc["summary"]["warnings"] >= 1


def test_outcome_json_record_says_the_verdict_and_the_expectation(work, capsys):
    argv = ["outcome", "--event", "good.json", "--response", "partial.json", "--expect", "success", "--format", "json"]
    assert main(argv) == 1
    records = json.loads(capsys.readouterr().out)["records"]
    assert [r["kind"] for r in records] == ["event", "outcome"]
    outcome = records[1]
    assert (outcome["status"], outcome["expected"], outcome["verdicts"]) == ("failed", "success", ["partial"])
    [said] = [i for i in outcome["issues"] if i["code"] == "outcome"]
    assert "expected success, got partial" in said["message"]
    assert [r["action"] for r in outcome["rows"]] == ["delete", "retry", "delete"]


def test_replay_json_counts_rows_by_result(work, capsys):
    assert main(["replay", "--app-dir", "app", "shop:handler", "dirty.jsonl", "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    summary = doc["summary"]
    assert (summary["unreadable_rows"], summary["invalid_rows"]) == (1, 1)
    assert summary["results"] == {"delete": 3, "unreadable": 1, "invalid event": 1}
    [record] = doc["records"]
    located = sorted((i["line"], i["rule"]) for i in record["issues"])
    assert located == [(2, None), (3, "G3")]  # the line that is not JSON, the event of no known source


# --- github ---------------------------------------------------------------------------------------------

ANNOTATION = re.compile(r"^::(?P<level>error|warning|notice) (?P<props>[^:]*)::(?P<message>.*)$")


def _props(text: str) -> dict[str, str]:
    out = {}
    for part in text.split(","):
        key, _, value = part.partition("=")
        out[key] = value.replace("%2C", ",").replace("%3A", ":").replace("%0A", "\n").replace("%25", "%")
    return out


def test_github_annotations_parse_and_point_at_the_line(work, capsys):
    assert main(["validate", "--format", "github", "broken.json", "missing.json", "good.json"]) == 2
    lines = capsys.readouterr().out.splitlines()
    parsed = [ANNOTATION.match(line) for line in lines]
    assert all(parsed), lines
    by_file: dict[str, list[tuple[str, dict[str, str], str]]] = {}
    for m in parsed:
        assert m is not None
        props = _props(m.group("props"))
        by_file.setdefault(props["file"], []).append((m.group("level"), props, m.group("message")))
    assert set(by_file) == {"broken.json", "missing.json"}  # a valid file has nothing to annotate
    [(level, props, message)] = by_file["broken.json"]
    text = (work / "broken.json").read_text().splitlines()
    line = int(props["line"])
    assert text[line - 1][int(props["col"]) - 1 :].startswith('"md5OfBody"')
    assert (level, props["title"]) == ("error", "fnkit Q13") and "$.Records[1].md5OfBody" in message
    [(level, props, message)] = by_file["missing.json"]
    assert level == "error" and "cannot read" in message


def test_github_annotations_of_a_failed_outcome_and_of_replay(work, capsys):
    assert main(["outcome", "--event", "good.json", "--response", "cut.json", "--format", "github"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(ANNOTATION.match(line) for line in lines)
    assert any("the platform's outcome is failure" in line for line in lines)
    assert main(["replay", "--app-dir", "app", "shop:handler", "dirty.jsonl", "--format", "github"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(ANNOTATION.match(line) for line in lines)
    assert {_props(ANNOTATION.match(line).group("props"))["line"] for line in lines} == {"2", "3"}  # type: ignore[union-attr]


def test_github_escapes_what_would_break_the_command(work, capsys):
    weird = work / "a,b:c.json"
    weird.write_text('{"hello": "world"}')
    assert main(["validate", "--format", "github", str(weird.name)]) == 1
    [line] = capsys.readouterr().out.splitlines()
    m = ANNOTATION.match(line)
    assert m is not None and _props(m.group("props"))["file"] == "a,b:c.json"


# --- sarif ----------------------------------------------------------------------------------------------

_MESSAGE = {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}
_ARTIFACT_LOCATION = {
    "type": "object",
    "properties": {"uri": {"type": "string", "format": "uri-reference"}, "index": {"type": "integer", "minimum": 0}},
    "additionalProperties": False,
}
_LOCATION = {
    "type": "object",
    "properties": {
        "physicalLocation": {
            "type": "object",
            "properties": {
                "artifactLocation": _ARTIFACT_LOCATION,
                "region": {
                    "type": "object",
                    "properties": {
                        "startLine": {"type": "integer", "minimum": 1},
                        "startColumn": {"type": "integer", "minimum": 1},
                    },
                    "additionalProperties": False,
                },
            },
            "additionalProperties": False,
        },
        "logicalLocations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"fullyQualifiedName": {"type": "string"}, "kind": {"type": "string"}},
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": False,
}
#: the part of the SARIF 2.1.0 schema (OASIS) that covers what fnkit writes, written from the standard's text:
#: the required members, the enumerations and bounds, and no member the standard does not define
SARIF_SUBSET = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "$schema": {"type": "string", "format": "uri"},
        "version": {"enum": ["2.1.0"]},
        "runs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["tool"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "version": {"type": "string"},
                                    "rules": {
                                        "type": "array",
                                        "uniqueItems": True,
                                        "items": {
                                            "type": "object",
                                            "required": ["id"],
                                            "properties": {
                                                "id": {"type": "string"},
                                                "shortDescription": _MESSAGE,
                                                "properties": {"type": "object"},
                                            },
                                            "additionalProperties": False,
                                        },
                                    },
                                },
                                "additionalProperties": False,
                            }
                        },
                        "additionalProperties": False,
                    },
                    "invocations": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["executionSuccessful"],
                            "properties": {
                                "executionSuccessful": {"type": "boolean"},
                                "exitCode": {"type": "integer"},
                                "toolExecutionNotifications": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "required": ["message"],
                                        "properties": {
                                            "level": {"enum": ["none", "note", "warning", "error"]},
                                            "message": _MESSAGE,
                                            "locations": {"type": "array", "items": _LOCATION},
                                        },
                                        "additionalProperties": False,
                                    },
                                },
                            },
                            "additionalProperties": False,
                        },
                    },
                    "artifacts": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"location": _ARTIFACT_LOCATION},
                            "additionalProperties": False,
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["message"],
                            "properties": {
                                "ruleId": {"type": "string"},
                                "ruleIndex": {"type": "integer", "minimum": -1},
                                "level": {"enum": ["none", "note", "warning", "error"]},
                                "message": _MESSAGE,
                                "locations": {"type": "array", "items": _LOCATION},
                            },
                            "additionalProperties": False,
                        },
                    },
                    "properties": {"type": "object"},
                },
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": False,
}


def _sarif(capsys) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SARIF_SUBSET, format_checker=jsonschema.FormatChecker())
    return doc


def test_the_subset_schema_refuses_what_sarif_refuses():
    good = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "fnkit"}}, "results": []}]}
    jsonschema.validate(good, SARIF_SUBSET)
    for broken in (
        {"version": "2.0.0", "runs": good["runs"]},
        {"version": "2.1.0", "runs": [{"tool": {"driver": {}}}]},
        {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"level": "fatal"}]}]},
        {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "result": []}]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, SARIF_SUBSET)


def test_sarif_of_validate_is_valid_and_located(work, capsys):
    assert main(["validate", "--format", "sarif", "broken.json", "good.json", "missing.json"]) == 2
    doc = _sarif(capsys)
    [run] = doc["runs"]
    [result] = run["results"]
    assert (result["ruleId"], result["level"]) == ("Q13", "error")
    assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "Q13"
    [location] = result["locations"]
    region = location["physicalLocation"]["region"]
    text = (work / "broken.json").read_text().splitlines()
    assert text[region["startLine"] - 1][region["startColumn"] - 1 :].startswith('"md5OfBody"')
    assert location["logicalLocations"][0]["fullyQualifiedName"] == "$.Records[1].md5OfBody"
    assert {a["location"]["uri"] for a in run["artifacts"]} == {"broken.json", "good.json", "missing.json"}
    [invocation] = run["invocations"]
    assert invocation["executionSuccessful"] is False and invocation["exitCode"] == 2
    [notice] = invocation["toolExecutionNotifications"]
    assert "cannot read" in notice["message"]["text"]


def test_sarif_of_outcome_and_replay_is_valid(work, capsys):
    assert main(["outcome", "--event", "request.json", "--response", "bad502.json", "--format", "sarif"]) == 1
    results = _sarif(capsys)["runs"][0]["results"]
    assert results and all(r["level"] in ("error", "warning") for r in results)
    assert main(["replay", "--app-dir", "app", "shop:handler", "dirty.jsonl", "--format", "sarif"]) == 1
    results = _sarif(capsys)["runs"][0]["results"]
    assert sorted(r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results) == [2, 3]
    assert main(["validate", "--format", "sarif", str(work / "good.json")]) == 0
    run = _sarif(capsys)["runs"][0]
    assert run["results"] == [] and run["artifacts"][0]["location"]["uri"].startswith("file:///")


# --- junit ----------------------------------------------------------------------------------------------


def test_junit_has_a_test_case_per_input(work, capsys):
    assert main(["validate", "--format", "junit", "good.json", "broken.json", "warned.json", "missing.json"]) == 2
    root = ET.fromstring(capsys.readouterr().out)
    assert root.tag == "testsuites"
    [suite] = root
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert list(cases) == ["good.json", "broken.json", "warned.json", "missing.json"]
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "1", "1")
    assert len(cases["good.json"]) == 0
    [failure] = cases["broken.json"]
    assert failure.tag == "failure" and "[Q13]" in (failure.text or "")
    assert re.search(r"broken\.json:\d+:\d+: \$\.Records\[1\]\.md5OfBody", failure.text or "")
    [out] = cases["warned.json"]  # a warning does not fail, and is shown
    assert out.tag == "system-out" and "[Q1]" in (out.text or "")
    [error] = cases["missing.json"]
    assert error.tag == "error" and "cannot read" in (error.get("message") or "")


def test_junit_of_json_lines_names_each_line(work, capsys):
    assert main(["validate", "--format", "junit", "events.jsonl"]) == 0
    root = ET.fromstring(capsys.readouterr().out)
    assert [c.get("name") for c in root.iter("testcase")] == ["events.jsonl:1", "events.jsonl:2"]
    assert main(["outcome", "--event", "good.json", "--response", "partial.json", "--format", "junit"]) == 0
    root = ET.fromstring(capsys.readouterr().out)
    assert [c.get("name") for c in root.iter("testcase")] == ["good.json", "partial.json"]
    assert main(["replay", "--app-dir", "app", "shop:handler", "garbage.jsonl", "--format", "junit"]) == 1
    root = ET.fromstring(capsys.readouterr().out)
    [case] = root.iter("testcase")
    assert case.get("name") == "garbage.jsonl" and case[0].tag == "failure"


# --- file:line:col --------------------------------------------------------------------------------------


def _position(text: str, needle: str, occurrence: int = 1) -> tuple[int, int]:
    """Where the n-th `needle` starts, as an editor shows it (line and column from 1), found by plain search."""
    at = -1
    for _ in range(occurrence):
        at = text.index(needle, at + 1)
    line = text.count("\n", 0, at) + 1
    return line, at - (text.rfind("\n", 0, at) + 1) + 1


def test_issues_are_located_on_a_multi_line_file(work, capsys):
    event = queue.build_event(["a", "b", "c"], seed=5)
    event["Records"][2]["md5OfBody"] = "f" * 32
    event["Records"][1]["eventSource"] = "provider:elsewhere"
    del event["Records"][0]["receiptHandle"]  # type: ignore[misc]
    text = json.dumps(event, indent=4)
    (work / "many.json").write_text(text)
    assert main(["validate", "--format", "json", "many.json"]) == 1
    [record] = json.loads(capsys.readouterr().out)["records"]
    where = {i["path"]: (i["line"], i["column"]) for i in record["issues"]}
    assert where["$.Records[2].md5OfBody"] == _position(text, '"md5OfBody"', 3)
    assert where["$.Records[1].eventSource"] == _position(text, '"eventSource"', 2)
    # a missing key: where it belongs, the record's opening brace
    assert where["$.Records[0].receiptHandle"] == _position(text, "{", 2)
    for issue in record["issues"]:
        assert issue["location"] == f"many.json:{issue['line']}:{issue['column']}"
    assert main(["validate", "many.json"]) == 1
    lines = capsys.readouterr().out.splitlines()
    line, column = where["$.Records[2].md5OfBody"]
    assert any(s.startswith(f"many.json:{line}:{column}: $.Records[2].md5OfBody: error: ") for s in lines)


def test_json_lines_issues_carry_their_own_line(work, capsys):
    good = (work / "good.json").read_text()
    bad = json.loads(good)
    bad["Records"][0]["awsRegion"] = 7
    bad_text = json.dumps(bad)
    (work / "batch.jsonl").write_text(f"{good}\n\n{bad_text}\n")
    assert main(["validate", "--format", "json", "batch.jsonl"]) == 1
    records = json.loads(capsys.readouterr().out)["records"]
    [issue] = [i for r in records for i in r["issues"] if i["path"] == "$.Records[0].awsRegion"]
    assert (issue["line"], issue["column"]) == (3, bad_text.index('"awsRegion"') + 1)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_the_locator_counts_as_editors_do(newline):
    text = '{\n  "a": {"b-c": [10, {"d": 1}]},\n  "e": "\\u00e9\\"x", "f": null\n}'.replace("\n", newline)
    lines = text.split(newline)

    def at(line: int, needle: str) -> tuple[int, int]:
        return line, lines[line - 1].index(needle) + 1

    assert locate(text, "$") == (1, 1)
    assert locate(text, "$.a") == at(2, '"a"')  # a member: its key
    assert locate(text, "$.a['b-c']") == at(2, '"b-c"')
    assert locate(text, "$.a['b-c'][1]") == at(2, '{"d"')  # an item: its first character
    assert locate(text, "$.a['b-c'][1].d") == at(2, '"d"')
    assert locate(text, "$.f") == at(3, '"f"')  # past a string holding escapes
    assert locate(text, "$.a.missing") == at(2, '{"b-c"')  # the object the key is missing from
    assert locate(text, "$.a['b-c'][9]") == at(2, "[10")  # the list the item is missing from
    assert locate("\ufeff" + text, "$.a") == at(2, '"a"')  # a byte-order mark is no column
    assert locate('{"x": [1, 2,', "$") == (1, len('{"x": [1, 2,') + 1)  # not JSON: where reading stopped
    assert locate("[" * 100_000, "$[0]") == (1, 1)  # too deep to follow: the start
    accented = '{"é": {"k": 1}}'
    path = child_path(child_path("$", "é"), "k")  # as issues spell it: $['\\u00e9'].k
    assert locate(accented, path) == (1, accented.index('"k"') + 1)  # characters, not UTF-8 bytes


def test_a_not_json_file_is_located_where_it_stops_being_json(work, capsys):
    (work / "cut.json").write_text('{\n  "Records": [\n    {"messageId": }\n  ]\n}')
    assert main(["validate", "cut.json"]) == 1
    [line] = [s for s in capsys.readouterr().out.splitlines() if "[G0]" in s]
    column = '    {"messageId": }'.index("}") + 1  # where a value should have been
    assert line.startswith(f"cut.json:3:{column}: $: error:")


# --- --response without --event -----------------------------------------------------------------------


def test_a_response_without_its_event_says_what_was_not_checked(work, capsys):
    assert main(["validate", "--response", "stranger.json"]) == 0
    out = capsys.readouterr().out
    assert "stranger.json: note: not checked: whether each itemIdentifier names a message of the batch" in out
    assert main(["validate", "--response", "--format", "json", "stranger.json", "ok200.json"]) == 0
    records = json.loads(capsys.readouterr().out)["records"]
    assert ["--event" in " ".join(r["unchecked"]) for r in records] == [True, True]
    assert main(["validate", "--response", "--format", "json", "--multi-value", "ok200.json"]) == 0
    [record] = json.loads(capsys.readouterr().out)["records"]
    assert "unchecked" not in record  # the mode was given
    assert main(["validate", "--response", "--event", "good.json", "stranger.json"]) == 1
    out = capsys.readouterr().out
    assert "not checked" not in out and "is not a messageId of this batch" in out
    assert main(["validate", "--response", "--format", "github", "stranger.json"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith("::notice file=stranger.json,")


def test_a_mail_response_without_its_event(work, capsys):
    (work / "mail.json").write_text(json.dumps({"actions": [{"allRecipients": True, "action": {"type": "DEFAULT"}}]}))
    main(["validate", "--response", "--format", "json", "mail.json"])
    [record] = json.loads(capsys.readouterr().out)["records"]
    assert record["source"] == "mail" and "flow direction" in record["unchecked"][0]


# --- replay's inputs --------------------------------------------------------------------------------------


def test_replay_reads_one_pretty_printed_event(work, capsys):
    assert main(["replay", "--app-dir", "app", "shop:handler", "pretty.json", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["results"] == {"delete": 3}
    assert doc["records"][0]["yielded"] == 1 and doc["records"][0]["issues"] == []
    frame = fnkit.replay(lambda e, c: {"batchItemFailures": []}, work / "pretty.json", isolation="none")
    assert list(frame["result"]) == ["delete"] * 3


def test_replay_source_filters_and_force_source_forces(work, capsys):
    seen = work / "seen.txt"
    (work / "app" / "spy.py").write_text(
        "import json, os\n"
        "def handler(event, context):\n"
        f"    with open({str(seen)!r}, 'a') as fh:\n"
        "        fh.write(('queue' if 'Records' in event else 'alb') + '\\n')\n"
        "    return {'statusCode': 200, 'body': ''}\n"
    )
    assert (
        main(["replay", "--app-dir", "app", "spy:handler", "events.jsonl", "--source", "alb", "--format", "json"]) == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert seen.read_text().split() == ["alb"]  # the handler never saw the queue batch
    assert doc["summary"]["skipped"] == 1 and doc["records"][0]["skipped"] == {"queue": 1}
    assert {r["source"] for r in doc["summary"]["by_rule"]} == {"alb"}
    seen.unlink()
    argv = ["replay", "--app-dir", "app", "spy:handler", "events.jsonl", "--source", "alb", "--force-source"]
    main([*argv, "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["skipped"] == 0
    assert {r["source"] for r in doc["summary"]["by_rule"]} == {"alb"}
    assert doc["summary"]["events"] == 2  # the queue batch too, read as a load balancer event


def test_replay_text_names_the_located_problems(work):
    proc = run_cli("replay", "--app-dir", "app", "shop:handler", "dirty.jsonl", cwd=work)
    assert proc.returncode == 1
    assert "dirty.jsonl:2:1: error: The line is not valid JSON" in proc.stdout
    assert "dirty.jsonl:3:1: $: error: invalid event" in proc.stdout
    assert "--allow-invalid" in proc.stderr and "Traceback" not in proc.stderr


# --- event build ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["queue", "mail", "alb"])
@pytest.mark.parametrize("dialect", ["aws", "provider"])
def test_event_build_prints_a_valid_event_in_either_spelling(source, dialect, capsys):
    assert main(["event", "build", source, "--dialect", dialect, "--seed", "7"]) == 0
    text = capsys.readouterr().out
    event = json.loads(text)
    report = fnkit.validate(event)
    assert report.ok and report.source == source, report
    if source != "mail":  # the mail event has no brand spelling
        assert report.dialect == dialect
    assert main(["event", "build", source, "--dialect", dialect, "--seed", "7"]) == 0
    assert capsys.readouterr().out == text  # seeded: the same again
    assert main(["event", "build", source, "--dialect", dialect, "--seed", "8"]) == 0
    assert capsys.readouterr().out != text


def test_event_build_options(capsys):
    assert main(["event", "build", "queue", "--count", "3", "--fifo", "--group-id", "g1", "--compact"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    event = json.loads(out)
    assert [r["body"] for r in event["Records"]] == ["message 1", "message 2", "message 3"]
    assert {r["attributes"]["MessageGroupId"] for r in event["Records"]} == {"g1"}
    assert fnkit.validate(event).ok
    assert (
        main(["event", "build", "alb", "--method", "POST", "--path", "/o?x=1", "--header", "X-A: b", "--body", "hi"])
        == 0
    )
    event = json.loads(capsys.readouterr().out)
    assert (event["httpMethod"], event["path"], event["headers"]["x-a"]) == ("POST", "/o", "b")
    assert alb.validate_event(event).ok
    assert main(["event", "build", "alb", "--multi-value"]) == 0
    assert "multiValueHeaders" in json.loads(capsys.readouterr().out)
    assert main(["event", "build", "mail", "--to", "a@example.com", "--to", "b@example.com", "--outbound"]) == 0
    event = json.loads(capsys.readouterr().out)
    assert event["flowDirection"] == "OUTBOUND" and len(event["envelope"]["recipients"]) == 2
    assert mail.validate_event(event).ok


def test_an_event_built_on_the_command_line_validates_there(tmp_path):
    built = run_cli("event", "build", "queue", "--dialect", "aws", "--count", "2", cwd=tmp_path)
    assert built.returncode == 0
    (tmp_path / "built.json").write_text(built.stdout)
    proc = run_cli("validate", "built.json", cwd=tmp_path)
    assert proc.returncode == 0 and "aws spelling" in proc.stdout


# --- help ------------------------------------------------------------------------------------------------


def _parsers(parser: argparse.ArgumentParser, name: str = "fnkit") -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for verb, sub in action.choices.items():
                found += _parsers(sub, f"{name} {verb}")
    return found


def test_every_option_has_help_text():
    missing = []
    for name, parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if not (action.help or "").strip():
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []
    commands = dict(_parsers(build_parser()))
    for verb in ("validate", "outcome", "replay"):
        assert "--format" in commands[f"fnkit {verb}"].format_help()
        assert "exit status: 0 nothing to report, 1 findings, 2" in commands[f"fnkit {verb}"].format_help()
    assert len(commands) >= 12  # fnkit, its verbs, event build and its three sources
