"""The command line in a service's repository: folders of fixtures, rules set aside, the project's [tool.fnkit]."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fnkit import queue
from fnkit.cli import main


@pytest.fixture
def service(tmp_path, monkeypatch):
    """A service: pyproject.toml (no [tool.fnkit] yet), fixtures/ with a good event and one whose only error is Q13
    (nested a folder down), and the current directory elsewhere."""
    root = tmp_path / "svc"
    (root / "fixtures" / "sqs").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "svc"\n', encoding="utf-8")
    good = queue.build_event(["fine"], seed=1, dialect="aws")
    bad = queue.build_event(["copied from a blog"], seed=2, dialect="aws")
    bad["Records"][0]["md5OfBody"] = "0" * 32
    (root / "fixtures" / "good.json").write_text(json.dumps(good), encoding="utf-8")
    (root / "fixtures" / "sqs" / "md5.json").write_text(json.dumps(bad, indent=2), encoding="utf-8")
    (root / "fixtures" / "notes.txt").write_text("not a fixture", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for name in ("FNKIT_DIALECT", "FNKIT_ISOLATION"):
        monkeypatch.delenv(name, raising=False)
    return root


def tool_fnkit(root: Path, text: str) -> None:
    (root / "pyproject.toml").write_text("[tool.fnkit]\n" + textwrap.dedent(text), encoding="utf-8")


def test_a_folder_is_walked_for_json_and_json_lines_files(service, capsys):
    assert main(["validate", str(service / "fixtures")]) == 1
    out = capsys.readouterr().out
    assert "good.json: ok" in out and "md5.json: INVALID" in out and "notes.txt" not in out
    assert "[Q13]" in out


def test_ignore_q13_passes_an_event_whose_only_error_is_q13_and_says_so(service, capsys):
    fixtures = str(service / "fixtures")
    assert main(["validate", fixtures, "--ignore", "Q13"]) == 0
    captured = capsys.readouterr()
    assert "md5.json: ok" in captured.out
    ignored = [line for line in captured.out.splitlines() if "ignored error" in line]
    assert len(ignored) == 1 and ignored[0].endswith("[Q13]") and "md5.json:" in ignored[0]
    assert "1 finding(s) ignored (Q13)" in captured.err
    # another rule's errors still fail: the rule set aside is only the one named
    assert main(["validate", fixtures, "--ignore", "Q1,QS2"]) == 1


@pytest.mark.parametrize("fmt", ["json", "github", "sarif", "junit"])
def test_every_format_reports_the_ignored_finding(service, capsys, fmt):
    assert main(["validate", str(service / "fixtures"), "--ignore", "Q13", "--format", fmt]) == 0
    out = capsys.readouterr().out
    if fmt == "json":
        doc = json.loads(out)
        assert doc["summary"]["ignored"] == 1 and doc["summary"]["ignored_rules"] == {"Q13": "--ignore"}
        assert doc["summary"]["failed"] == 0 and "invalid" not in doc["summary"]
        (record,) = [r for r in doc["records"] if r["file"].endswith("md5.json")]
        assert record["ok"] and record["issues"] == [] and record["ignored"][0]["rule"] == "Q13"
    elif fmt == "github":
        (line,) = out.splitlines()
        assert line.startswith("::notice file=") and "title=fnkit Q13 (ignored)" in line
    elif fmt == "sarif":
        (result,) = json.loads(out)["runs"][0]["results"]
        assert result["ruleId"] == "Q13" and result["suppressions"][0]["kind"] == "external"
    else:
        suite = ET.fromstring(out).find("testsuite")
        assert suite is not None and suite.get("failures") == "0"
        assert any("ignored:" in (case.findtext("system-out") or "") for case in suite.iter("testcase"))


def test_the_project_ignore_setting_is_read_from_the_files_project_not_the_current_directory(service, capsys):
    tool_fnkit(service, 'ignore = ["Q13"]\n')
    assert main(["validate", str(service / "fixtures"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["ignored_rules"]["Q13"] == f"[tool.fnkit] ignore in {service / 'pyproject.toml'}"


def test_an_unknown_key_or_a_bad_value_exits_2_naming_the_key_and_the_file(service, capsys):
    tool_fnkit(service, 'dialekt = "aws"\n')
    assert main(["validate", str(service / "fixtures" / "good.json")]) == 2
    err = capsys.readouterr().err
    assert "'dialekt'" in err and str(service / "pyproject.toml") in err and "did you mean 'dialect'" in err
    tool_fnkit(service, 'extensions = "yes"\n')
    assert main(["validate", str(service / "fixtures" / "good.json")]) == 2
    assert "[tool.fnkit] extensions in" in capsys.readouterr().err
    tool_fnkit(service, 'ignore = ["Q99"]\n')
    assert main(["validate", str(service / "fixtures" / "good.json")]) == 2
    assert "no rule 'Q99'" in capsys.readouterr().err


def test_an_unknown_rule_to_ignore_is_a_usage_error(service, capsys):
    assert main(["validate", str(service / "fixtures"), "--ignore", "Q13,NOPE"]) == 2
    assert "--ignore: no rule 'NOPE'" in capsys.readouterr().err


def test_expect_takes_only_an_outcome(service, tmp_path, capsys):
    response = tmp_path / "response.json"
    response.write_text('{"batchItemFailures": []}', encoding="utf-8")
    event = str(service / "fixtures" / "good.json")
    with pytest.raises(SystemExit) as usage:
        main(["outcome", "--event", event, "--response", str(response), "--expect", "banana"])
    assert usage.value.code == 2 and "'banana' is no outcome" in capsys.readouterr().err
    assert main(["outcome", "--event", event, "--response", str(response), "--expect", "success"]) == 0
    assert main(["outcome", "--event", event, "--response", str(response), "--expect", "5xx"]) == 1


def test_validate_response_takes_extensions_as_outcome_does_and_from_the_project(service, capsys):
    junk = service / "junk.json"
    junk.write_text(json.dumps({"actions": [{"action": {"type": "MOVE_TO_JUNK"}, "allRecipients": True}]}))
    assert main(["validate", "--response", "--source", "mail", str(junk)]) == 1
    assert "[M4]" in capsys.readouterr().out
    assert main(["validate", "--response", "--source", "mail", "--extensions", str(junk)]) == 0
    tool_fnkit(service, "extensions = true\n")
    assert main(["validate", "--response", "--source", "mail", str(junk)]) == 0


def test_a_clean_run_in_github_format_prints_nothing(service, capsys):
    assert main(["validate", str(service / "fixtures" / "good.json"), "--format", "github"]) == 0
    assert capsys.readouterr().out == ""
