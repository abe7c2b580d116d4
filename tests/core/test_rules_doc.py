"""docs/RULES.md is the rules catalogue as a document: written by `fnkit rules --format markdown`, and kept current."""

from __future__ import annotations

import re
from pathlib import Path

from fnkit import rules
from fnkit.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "RULES.md"


def test_docs_rules_md_is_the_catalogue_as_it_is_now():
    assert DOC.read_text(encoding="utf-8") == rules.markdown(), f"docs/RULES.md is behind: run `{rules.REGENERATE}`"


def test_the_command_line_writes_the_document(capsys):
    assert main(["rules", "--format", "markdown"]) == 0
    assert capsys.readouterr().out == rules.markdown()
    assert main(["rules", "--format", "markdown", "--source", "queue"]) == 2
    assert "whole catalogue" in capsys.readouterr().err


def test_every_rule_is_one_row_with_its_evidence_and_the_file_that_holds_it():
    rows = {}
    for line in rules.markdown().splitlines():
        m = re.match(r"^\| (\w+) \| (.+) \| (\w+) \| ([\w ]+) \| `(.+)` in `(.+)` \|$", line)
        if m:
            rows[m.group(1)] = m.groups()[1:]
    assert set(rows) == set(rules.ids())
    for r in rules.catalogue():
        _, evidence, severity, what, file = rows[r.id]
        assert (evidence, severity) == (r.evidence, r.severity), r.id
        assert (ROOT / file).is_file(), (r.id, file)
        assert what and what.split()[-1].split(".")[-1] in (ROOT / file).read_text(encoding="utf-8"), (r.id, what)
    assert rows["Q16"][3] == "check_message_size" and rows["Q16"][4] == "fnkit/queue/_contents.py"


def test_a_sentence_keeps_its_pipes_and_angle_brackets_readable():
    assert rules._cell("a|b <name> `x<y>` & c") == "a\\|b &lt;name&gt; `x<y>` &amp; c"


def test_the_project_cites_no_file_outside_the_repository():
    # documents of the lead's own folder (the spec, the platform rules, the style and API notes) are not shipped:
    # code, configuration and documents point at docs/ instead
    outside = re.compile(r"\b(API\.md|PLATFORM-RULES\.md|STYLE\.md)|\bshared/")
    found = []
    for path in ROOT.rglob("*"):
        if any(
            part in {".git", ".venv", "work", "build", "node_modules"} or part.startswith(".")
            for part in path.parts[len(ROOT.parts) :]
        ):
            continue
        if not path.is_file() or path.suffix not in {
            ".py",
            ".md",
            ".toml",
            ".yml",
            ".yaml",
            ".cfg",
            ".txt",
            ".json",
            ".ipynb",
        }:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in outside.finditer(text)]
    assert not found, "references to files outside the repository:\n" + "\n".join(found)
