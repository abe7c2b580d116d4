"""The command line (fnkit/cli.py): `fnkit validate`, `fnkit outcome`, `fnkit rules`."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import fnkit
from fnkit import queue
from fnkit.cli import main

REPO_ROOT = Path(__file__).resolve().parent.parent
REAL_EVENT = REPO_ROOT / "tests" / "data" / "real" / "sqs_event.json"
LOCATED = re.compile(
    r"^(?P<file>[^:]+):(?P<line>\d+):(?P<column>\d+): (?P<path>\$\S*): (?P<severity>error|warning): "
    r"(?P<message>.+) \[(?P<rule>[A-Za-z0-9-]+)\]$"
)


def fnkit_cli(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """`python -m fnkit ARGS` in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "fnkit", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    event = queue.build_event(["first", "second", "third"], seed=1)
    ids = queue.correlation_ids(event)
    broken = json.loads(json.dumps(event))
    broken["Records"][1]["md5OfBody"] = "0" * 32
    broken["Records"][2]["eventSource"] = "aws:sns"
    out = {
        "good": tmp_path / "good.json",
        "broken": tmp_path / "broken.json",
        "notjson": tmp_path / "notjson.json",
        "unknown": tmp_path / "unknown.json",
        "partial": tmp_path / "partial.json",
        "badresponse": tmp_path / "badresponse.json",
        "misspelled": tmp_path / "misspelled.json",
    }
    out["good"].write_text(json.dumps(event))
    out["broken"].write_text(json.dumps(broken))
    out["notjson"].write_text('{"Records": [')
    out["unknown"].write_text('{"hello": "world"}')
    out["partial"].write_text(json.dumps({"batchItemFailures": [{"itemIdentifier": ids[1]}]}))
    out["badresponse"].write_text('{"batchItemFailures": [{"itemIdentifier": "' + ids[0] + '"}')  # cut short
    out["misspelled"].write_text(json.dumps({"BatchItemFailures": [{"itemIdentifier": ids[1]}]}))
    return out


def _located(lines: list[str]) -> list[dict[str, Any]]:
    return [m.groupdict() for m in map(LOCATED.match, lines) if m]


# --- validate, in a subprocess ---------------------------------------------------------------------


def test_validate_a_valid_file_exits_zero(files, tmp_path):
    proc = fnkit_cli("validate", "good.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert "good.json: ok (queue, provider spelling; 0 error(s), 0 warning(s))" in out


def test_validate_the_real_documented_event(tmp_path):
    proc = fnkit_cli("validate", str(REAL_EVENT), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert "aws spelling" in proc.stdout.decode()


def test_validate_an_invalid_file_exits_one_with_located_lines(files, tmp_path):
    proc = fnkit_cli("validate", "broken.json", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stdout.decode().splitlines()
    issues = _located(lines)
    assert [(i["file"], i["path"], i["severity"], i["rule"]) for i in issues] == [
        ("broken.json", "$.Records[2].eventSource", "error", "QS4"),
        ("broken.json", "$.Records[1].md5OfBody", "error", "Q13"),
    ]
    assert lines[-1].startswith("broken.json: INVALID (queue")


def test_validate_several_files_fails_if_any_fails(files, tmp_path):
    proc = fnkit_cli("validate", "good.json", "broken.json", "good.json", cwd=tmp_path)
    assert proc.returncode == 1
    out = proc.stdout.decode()
    assert out.count("good.json: ok") == 2
    assert "broken.json: INVALID" in out


def test_validate_several_valid_files_exits_zero(files, tmp_path):
    assert fnkit_cli("validate", "good.json", str(REAL_EVENT), cwd=tmp_path).returncode == 0


def test_validate_reads_standard_input(files, tmp_path):
    proc = fnkit_cli("validate", "-", cwd=tmp_path, stdin=files["good"].read_bytes())
    assert proc.returncode == 0
    assert proc.stdout.decode().startswith("-: ok (queue")
    proc = fnkit_cli("validate", "-", cwd=tmp_path, stdin=files["broken"].read_bytes())
    assert proc.returncode == 1
    assert _located(proc.stdout.decode().splitlines())[0]["file"] == "-"


def test_validate_an_unreadable_file(files, tmp_path):
    proc = fnkit_cli("validate", "missing.json", "good.json", cwd=tmp_path)
    assert proc.returncode == 2  # a read error, as for an unreadable --event
    err = proc.stderr.decode()
    assert "missing.json: error: cannot read the file" in err
    assert "Traceback" not in err
    assert "good.json: ok" in proc.stdout.decode()  # the other files are still checked


def test_validate_a_folder_without_json_files_is_a_usage_error_naming_it(tmp_path):
    proc = fnkit_cli("validate", ".", cwd=tmp_path)
    assert proc.returncode == 2 and ".: a folder with no *.json" in proc.stderr.decode()


def test_validate_not_json(files, tmp_path):
    proc = fnkit_cli("validate", "notjson.json", cwd=tmp_path)
    assert proc.returncode == 1
    [issue] = _located(proc.stdout.decode().splitlines())
    assert issue["rule"] == "G0" and "not valid JSON" in issue["message"]


@pytest.mark.parametrize("source", ["queue", "mail", "alb"])
def test_validate_invalid_utf8_in_a_key_prints_the_located_issue(source, tmp_path):
    (tmp_path / "key.json").write_bytes(b'{"Records": [{"\xffkey": 1}]}')
    for args in (["--source", source], ["--source", source, "--response"], []):
        proc = fnkit_cli("validate", *args, "key.json", cwd=tmp_path)
        assert proc.returncode == 1 and b"Traceback" not in proc.stderr, proc.stderr.decode()
        [issue] = _located(proc.stdout.decode().splitlines())
        assert issue["file"] == "key.json" and issue["path"] == "$"
        assert "bad byte at position 15" in issue["message"]


def test_validate_unknown_source(files, tmp_path):
    proc = fnkit_cli("validate", "unknown.json", cwd=tmp_path)
    assert proc.returncode == 1
    [issue] = _located(proc.stdout.decode().splitlines())
    assert issue["rule"] == "G3"


def test_validate_json_format(files, tmp_path):
    proc = fnkit_cli("validate", "--format", "json", "good.json", "broken.json", cwd=tmp_path)
    assert proc.returncode == 1
    docs = json.loads(proc.stdout)["records"]
    assert [(d["file"], d["ok"], d["source"]) for d in docs] == [
        ("good.json", True, "queue"),
        ("broken.json", False, "queue"),
    ]
    assert {i["rule"] for i in docs[1]["issues"]} == {"QS4", "Q13"}


def test_validate_strict_fails_on_warnings(tmp_path):
    event = queue.build_event(["x"] * 11)  # Q1 warning: above the default batch size
    (tmp_path / "eleven.json").write_text(json.dumps(event))
    assert fnkit_cli("validate", "eleven.json", cwd=tmp_path).returncode == 0
    proc = fnkit_cli("validate", "--strict", "eleven.json", cwd=tmp_path)
    assert proc.returncode == 1
    assert _located(proc.stdout.decode().splitlines())[0]["rule"] == "Q1"


# --- outcome, in a subprocess ---------------------------------------------------------------------------


def test_outcome_of_invalid_json_response_is_a_complete_failure(files, tmp_path):
    proc = fnkit_cli("outcome", "--event", "good.json", "--response", "badresponse.json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # a failed batch is a finding
    out = proc.stdout.decode()
    assert out.startswith("queue: rule Q8: ")
    assert "not valid JSON" in out
    assert out.count("action=retry") == 3 and "action=delete" not in out


def test_outcome_partial(files, tmp_path):
    proc = fnkit_cli("outcome", "--event", "good.json", "--response", "partial.json", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0
    [doc] = [r for r in json.loads(proc.stdout)["records"] if r["kind"] == "outcome"]
    assert doc["source"] == "queue" and doc["rule"] == "Q8"
    assert [r["action"] for r in doc["rows"]] == ["delete", "retry", "delete"]


def test_outcome_marks_inferred_rules(files, tmp_path):
    proc = fnkit_cli("outcome", "--event", "good.json", "--response", "misspelled.json", cwd=tmp_path)
    out = proc.stdout.decode()
    assert "rule Q8b (inferred)" in out
    assert "[Q8b]" in out  # the loud warning


def test_outcome_reporting_off(files, tmp_path):
    proc = fnkit_cli(
        "outcome", "--event", "good.json", "--response", "partial.json", "--no-report-failures", cwd=tmp_path
    )
    out = proc.stdout.decode()
    assert "rule Q7 (inferred)" in out and "[Q7]" in out


def test_outcome_of_an_unknown_event(files, tmp_path):
    proc = fnkit_cli("outcome", "--event", "unknown.json", "--response", "partial.json", cwd=tmp_path)
    assert proc.returncode == 2 and "not an event of a known source" in proc.stderr.decode()


def test_outcome_of_a_missing_file(files, tmp_path):
    proc = fnkit_cli("outcome", "--event", "good.json", "--response", "nope.json", cwd=tmp_path)
    assert proc.returncode == 2 and "nope.json: error: cannot read the file" in proc.stderr.decode()


# --- rules, in a subprocess -----------------------------------------------------------------------------


def test_rules_lists_every_id(tmp_path):
    proc = fnkit_cli("rules", cwd=tmp_path)
    assert proc.returncode == 0
    listed = [line.split()[0] for line in proc.stdout.decode().splitlines()]
    assert listed == [r.id for r in fnkit.rules.catalogue()]


def test_rules_json_parses(tmp_path):
    proc = fnkit_cli("rules", "--source", "queue", "--format", "json", cwd=tmp_path)
    rows = json.loads(proc.stdout)
    assert {r["source"] for r in rows} == {"queue", "any"}
    assert {"id", "source", "evidence", "origin", "summary"} == set(rows[0])
    assert next(r for r in rows if r["id"] == "Q8a")["evidence"] == "inferred"


def test_no_subcommand_is_a_usage_error(tmp_path):
    proc = fnkit_cli(cwd=tmp_path)
    assert proc.returncode == 2 and b"usage" in proc.stderr


def test_version(tmp_path):
    proc = fnkit_cli("--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.decode().strip() == f"fnkit {fnkit.__version__}"


# --- the same, in process ------------------------------------------------------------------------------------


def test_main_validate_in_process(files, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "good.json"]) == 0
    assert main(["validate", "broken.json", "good.json"]) == 1
    out = capsys.readouterr().out
    assert [i["rule"] for i in _located(out.splitlines())] == ["QS4", "Q13"]
    assert "good.json: ok" in out


def test_main_validate_quiet_prints_only_issues(files, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "-q", "good.json", "broken.json"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(LOCATED.match(line) for line in lines)


def test_main_validate_stdin_in_process(files, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(files["broken"].read_bytes())))
    assert main(["validate", "-"]) == 1
    assert _located(capsys.readouterr().out.splitlines())[0]["file"] == "-"


def test_main_validate_unreadable_in_process(capsys, tmp_path):
    assert main(["validate", str(tmp_path / "nope.json")]) == 2
    assert "cannot read the file" in capsys.readouterr().err


def test_main_validate_with_a_given_source(files, capsys):
    assert main(["validate", "--source", "queue", str(files["unknown"])]) == 1
    issues = _located(capsys.readouterr().out.splitlines())
    assert issues[0]["rule"] == "QS1"  # judged as a queue event: Records is missing


def test_main_outcome_in_process(files, capsys):
    assert main(["outcome", "--event", str(files["good"]), "--response", str(files["badresponse"])]) == 1
    out = capsys.readouterr().out
    assert "rule Q8:" in out and out.count("action=retry") == 3


def test_main_outcome_json_in_process(files, capsys):
    assert (
        main(["outcome", "--event", str(files["good"]), "--response", str(files["badresponse"]), "--format", "json"])
        == 1
    )
    [doc] = [r for r in json.loads(capsys.readouterr().out)["records"] if r["kind"] == "outcome"]
    assert doc["rule"] == "Q8" and {r["action"] for r in doc["rows"]} == {"retry"}
    assert doc["issues"][0]["rule"] == "Q8"


def test_main_outcome_prints_event_errors(files, capsys):
    assert main(["outcome", "--event", str(files["broken"]), "--response", str(files["partial"])]) == 1
    err = capsys.readouterr().err
    assert "[Q13]" in err and "[QS4]" in err


def test_main_outcome_not_json_event(files, capsys):
    assert main(["outcome", "--event", str(files["notjson"]), "--response", str(files["partial"])]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_main_rules_in_process(capsys):
    assert main(["rules", "--source", "queue"]) == 0
    out = capsys.readouterr().out
    ids = [line.split()[0] for line in out.splitlines()]
    assert "Q8a" in ids and "G0" in ids and not any(i.startswith("MS") for i in ids)
    q8a = next(line for line in out.splitlines() if line.startswith("Q8a"))
    assert "inferred" in q8a


def test_main_rules_json_in_process(capsys):
    assert main(["rules", "--format", "json"]) == 0
    assert {r["id"] for r in json.loads(capsys.readouterr().out)} == fnkit.rules.ids()


def test_main_bad_arguments_exit_two(capsys):
    with pytest.raises(SystemExit) as info:
        main(["validate"])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        main(["rules", "--source", "kafka"])
    assert info.value.code == 2


# --- validate: JSON Lines, responses (issue 11) --------------------------------------------------------------

LINE_LOCATED = re.compile(
    r"^(?P<file>[^:]+):(?P<line>\d+):(?P<column>\d+): (?P<path>\$\S*): (?P<severity>error|warning): .+ "
    r"\[(?P<rule>\S+)\]$"
)


def test_main_validate_json_lines_one_verdict_per_line(files, capsys, tmp_path):
    good, broken = files["good"].read_text(), files["broken"].read_text()
    path = tmp_path / "events.log"  # no .jsonl suffix: several lines, each a JSON value, say JSON Lines
    path.write_text(f"{good}\n\n{broken}\r\n{good}\n")
    assert main(["validate", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [m.group("line") for m in map(LINE_LOCATED.match, lines) if m] == ["3", "3"]
    assert lines[0] == f"{path}:1: ok (queue, provider spelling; 0 error(s), 0 warning(s))"
    assert lines[-1].startswith(f"{path}:4: ok")
    assert main(["validate", "--format", "json", str(path)]) == 1
    docs = json.loads(capsys.readouterr().out)["records"]
    assert [(d["line"], d["ok"], d["kind"]) for d in docs] == [
        (1, True, "event"),
        (3, False, "event"),
        (4, True, "event"),
    ]


def test_main_validate_a_pretty_printed_file_is_one_event(files, capsys, tmp_path):
    path = tmp_path / "pretty.json"
    path.write_text(json.dumps(json.loads(files["good"].read_text()), indent=2))
    assert main(["validate", "--format", "json", str(path)]) == 0
    [doc] = json.loads(capsys.readouterr().out)["records"]
    assert "line" not in doc and doc["ok"]


def test_main_validate_response_text_output(files, capsys):
    assert main(["validate", "--response", "--event", str(files["good"]), str(files["partial"])]) == 0
    assert capsys.readouterr().out.strip() == f"{files['partial']}: ok (queue response; 0 error(s), 0 warning(s))"
    assert main(["validate", "--response", str(files["badresponse"])]) == 1
    out = capsys.readouterr().out
    assert "not valid JSON" in out and "INVALID (unknown source response" in out


def test_main_validate_event_needs_response_and_one_readable_event(files, capsys, tmp_path):
    assert main(["validate", "--event", str(files["good"]), str(files["partial"])]) == 2
    assert "--event goes with --response" in capsys.readouterr().err
    assert main(["validate", "--response", "--event", str(tmp_path / "nope.json"), str(files["partial"])]) == 2
    assert "cannot read the event file" in capsys.readouterr().err
    assert main(["validate", "--response", "--event", str(files["notjson"]), str(files["partial"])]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    two = tmp_path / "two.jsonl"
    two.write_text(files["good"].read_text() + "\n" + files["good"].read_text() + "\n")
    assert main(["validate", "--response", "--event", str(two), str(files["partial"])]) == 2
    assert "--event takes one event" in capsys.readouterr().err


def test_main_validate_multi_value_for_events(capsys, tmp_path):
    from fnkit import alb

    path = tmp_path / "alb.json"
    path.write_text(json.dumps(alb.build_event("GET", "/x")))
    assert main(["validate", "--strict", str(path)]) == 0
    assert main(["validate", "--strict", "--multi-value", str(path)]) == 1
    assert "[A3]" in capsys.readouterr().out


def test_main_validate_a_named_source_that_does_not_fit_says_what_the_value_looks_like(capsys, tmp_path):
    path = tmp_path / "sns.json"
    path.write_text(json.dumps({"Records": [{"EventSource": "aws:sns", "Sns": {"Message": "hi"}}]}))
    assert main(["validate", "--source", "queue", str(path)]) == 1
    issues = _located(capsys.readouterr().out.splitlines())
    assert (issues[0]["path"], issues[0]["severity"], issues[0]["rule"]) == ("$", "warning", "G3")
    assert "an SNS notification event, not a queue event" in issues[0]["message"]
