"""What the checking commands take before they check: their files and folders, the project's settings, the rules set
aside, the outcome expected.

- Folders: `fnkit validate fixtures/` reads every `*.json`, `*.jsonl` and `*.ndjson` file under
  the folder, in name order; a folder holding none is a usage error (exit 2).
- The project: [tool.fnkit] is looked for from the first file given that has a pyproject.toml
  with one above it, else from the current directory (`fnkit._settings.project`).
- `--ignore RULE[,RULE...]` and `[tool.fnkit] ignore = [...]`: each finding of those rules is
  set aside, never dropped: it no longer fails its input, and every format says it was ignored
  (text: an `ignored` line; json: `ignored` per record and in the summary; github: a notice;
  sarif: the result with a suppression; junit: the test case's output). An id that names no
  rule is a usage error (exit 2).
- `--expect`: a kind (success, partial, failure, applied, fallback, ignored, delivered,
  refused, error), an HTTP status (200) or a class (5xx); anything else is a usage error.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ._formats import Run, counts, exit_code

_JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")
DOCUMENT_SUFFIXES = (".json", *_JSON_LINES_SUFFIXES)
EXPECTED_KINDS = ("success", "partial", "failure", "applied", "fallback", "ignored", "delivered", "refused", "error")
_STATUS = re.compile(r"^([1-5][0-9][0-9]|[1-5]xx)$", re.IGNORECASE)


def documents(path: str, data: bytes) -> list[tuple[int | None, bytes]]:
    """The JSON documents of a file: (line number or None, bytes). A JSON Lines file (by its suffix, or several
    lines of which the first is a JSON value by itself) gives one per non-blank line, numbered as editors do."""
    import msgspec

    from .._engine.report import strip_bom

    lines = data.splitlines()
    numbered = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
    json_lines = path.lower().endswith(_JSON_LINES_SUFFIXES)
    if not json_lines and len(numbered) > 1:
        try:  # a pretty-printed document's first line ("{") is no JSON value by itself
            msgspec.json.decode(strip_bom(numbered[0][1])[0])
            json_lines = True
        except (msgspec.DecodeError, UnicodeDecodeError):
            json_lines = False
    if not json_lines or not numbered:
        return [(None, data)]
    return list(numbered)


def expand(paths: list[str]) -> tuple[list[str], list[str]]:
    """The files to read: each file as given, each folder's JSON and JSON Lines files (recursive, in name order);
    and a sentence for each folder that holds none."""
    files: list[str] = []
    empty: list[str] = []
    for given in paths:
        folder = Path(given)
        if given == "-" or not folder.is_dir():
            files.append(given)
            continue
        found = sorted(str(p) for p in folder.rglob("*") if p.suffix.lower() in DOCUMENT_SUFFIXES and p.is_file())
        if not found:
            empty.append(f"{given}: a folder with no {', '.join('*' + s for s in DOCUMENT_SUFFIXES)} file in it")
        files.extend(found)
    return files, empty


def expectation(text: str) -> str:
    """argparse's `type=` of `--expect`: a kind, a status or a status class; anything else is refused (exit 2)."""
    if text.strip().lower() in EXPECTED_KINDS or _STATUS.match(text.strip()):
        return text
    raise argparse.ArgumentTypeError(
        f"{text!r} is no outcome: expected one of {', '.join(EXPECTED_KINDS)}, an HTTP status (200) or a class (5xx)"
    )


def add_ignore(parser: argparse.ArgumentParser) -> None:
    """`--ignore RULE[,RULE...]` (repeatable)."""
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="RULE[,RULE...]",
        help="set these rules' findings aside (reported as ignored, in every format; also [tool.fnkit] ignore)",
    )


def prepare(args: argparse.Namespace) -> str | None:
    """Ready a checking command's arguments: the project's folder, folders as files, the rules set aside.

    Returns the usage error to print (exit 2), or None.
    """
    from .. import rules
    from .._settings.project import project_root_of, project_setting, set_project_root

    given = [p for p in (*getattr(args, "files", ()), *getattr(args, "inputs", ())) if isinstance(p, str)]
    given += [p for p in (getattr(args, "event", None), getattr(args, "response", None)) if isinstance(p, str)]
    found = project_root_of(given)
    if found is not None:  # else the project as it was (pytest's, when fnkit.cli.main runs in a test), then cwd
        args.project_root_before = set_project_root(found)
    if hasattr(args, "files"):
        args.files, empty = expand(args.files)
        if empty:
            return "; ".join(empty)
    if not hasattr(args, "ignore"):
        return None
    wanted = {rule.strip() for option in args.ignore for rule in option.split(",") if rule.strip()}
    reasons = dict.fromkeys(wanted, "--ignore")
    from_project = project_setting("ignore")
    if from_project is not None:
        for rule in from_project[0]:
            reasons.setdefault(rule.strip(), from_project[1])
    unknown = sorted(r for r in reasons if r not in rules.ids())
    if unknown:
        where = " and ".join(sorted({reasons[r] for r in unknown}))
        return f"{where}: no rule {', '.join(map(repr, unknown))} in the catalogue (fnkit rules lists them)"
    args.ignored = reasons
    return None


def finish(args: argparse.Namespace) -> None:
    """The project's folder as it was before `prepare`."""
    from .._settings.project import set_project_root

    if hasattr(args, "project_root_before"):
        set_project_root(args.project_root_before)


def set_aside(run: Run, args: argparse.Namespace) -> Run:
    """The run with the findings of the ignored rules moved to each record's `ignored`, verdicts and exit code anew."""
    ignored: dict[str, str] = getattr(args, "ignored", {})
    if not ignored:
        return run
    strict = bool(getattr(args, "strict", False))
    records = []
    for record in run.records:
        aside = [f for f in record.findings if f.rule in ignored]
        if not aside:
            records.append(record)
            continue
        kept = [f for f in record.findings if f.rule not in ignored]
        changed = replace(record, findings=kept, ignored=[*record.ignored, *aside])
        failing = any(f.severity == "error" or strict for f in kept)
        if record.status == "invalid" and record.error is None and not failing:
            changed = replace(changed, status="ok", ok=True)
        records.append(changed)
    stale = counts(run.records)  # the statuses counted before: some may be none now
    summary: dict[str, Any] = {k: v for k, v in run.summary.items() if k not in stale} | counts(records)
    summary["ignored"] = sum(len(r.ignored) for r in records)
    summary["ignored_rules"] = {rule: ignored[rule] for rule in sorted(ignored)}
    code = exit_code(records) if run.exit_code != 2 else run.exit_code
    return replace(run, records=records, summary=summary, exit_code=code)


def say_ignored(run: Run) -> None:
    """The text format's lines for the findings set aside: each one, as `ignored`, and a count."""
    aside = [f for record in run.records for f in record.ignored]
    for finding in aside:
        print(replace(finding, severity=f"ignored {finding.severity}").text())
    if aside:
        rules = ", ".join(sorted({f.rule or "-" for f in aside}))
        print(f"fnkit {run.command}: {len(aside)} finding(s) ignored ({rules})", file=sys.stderr)


__all__ = [
    "DOCUMENT_SUFFIXES",
    "add_ignore",
    "documents",
    "expand",
    "expectation",
    "finish",
    "prepare",
    "say_ignored",
    "set_aside",
]
