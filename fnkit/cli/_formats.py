"""What the command line reports, in each of its formats: text, json, github, sarif, junit.

A command turns each input (a file, a JSON Lines document, an event and its response, an
importer's input) into a `Record`: its verdict, its located `Finding`s, what could not be
read. A `Run` is one command's records, a summary and the exit code, and `render` writes it
in one of the machine formats (text stays with each command). The exit code follows the
linters' convention: 0 no findings, 1 findings, 2 usage or read errors.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

FORMATS = ("text", "json", "github", "sarif", "junit")
FORMAT_HELP = (
    "text (default: one line per issue, FILE:LINE:COL first), json (one document per run, with a summary), "
    "github (workflow annotations), sarif (SARIF 2.1.0, for code scanning) or junit (JUnit XML, one test case "
    "per input)"
)
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

OK, FINDINGS, ERROR = 0, 1, 2


@contextmanager
def escaped_output() -> Iterator[None]:
    """While a command runs, what its terminal (or pipe, or file) cannot carry is written as a backslash escape
    (a lone surrogate as \\ud800, a non-ASCII character on an ASCII terminal as \\u2026), never an error that
    stops the run: every file's findings still print. In the JSON, SARIF and JUnit formats the escape is the
    same character again (JSON's own \\u escape), or reads as one."""
    changed: list[tuple[Any, str]] = []
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        errors = getattr(stream, "errors", None)
        if reconfigure is not None and errors in ("strict", "surrogateescape"):
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a stream that cannot change how it encodes: left as it is
                continue
            changed.append((stream, errors))
    try:
        yield
    finally:
        for stream, errors in changed:
            try:
                stream.reconfigure(errors=errors)
            except (ValueError, OSError):
                pass


@dataclass
class Finding:
    """One located issue: the file, line and column (1-based; None when unknown), the JSONPath, and what is wrong."""

    file: str
    line: int | None
    column: int | None
    path: str | None
    severity: str
    message: str
    rule: str | None = None
    code: str | None = None

    @property
    def where(self) -> str:
        """`file:line:col` (or as much of it as is known)."""
        parts = [self.file, *(str(n) for n in (self.line, self.column) if n is not None)]
        return ":".join(parts)

    def text(self) -> str:
        """The text format's line: `file:line:col: $.path: severity: message [rule]`."""
        path = f" {self.path}:" if self.path else ""
        return f"{self.where}:{path} {self.severity}: {self.message} [{self.rule or '-'}]"

    def to_json(self) -> dict[str, Any]:
        """The finding as a JSON object (its location both as `file:line:col` and as fields)."""
        return {
            "path": self.path,
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "rule": self.rule,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "location": self.where,
        }


@dataclass
class Record:
    """One input's verdict: `status` is "ok", "invalid", "unreadable" (then `error` says why) or a command's own."""

    file: str
    kind: str
    status: str
    ok: bool
    line: int | None = None
    source: str | None = None
    dialect: str | None = None
    findings: list[Finding] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    ignored: list[Finding] = field(default_factory=list)  # findings of rules set aside (--ignore): said, not counted

    @property
    def label(self) -> str:
        """The input as the text format names it: the file, or `file:line` for one line of a JSON Lines file."""
        return self.file if self.line is None else f"{self.file}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        """The record as one JSON object."""
        doc: dict[str, Any] = {"file": self.file}
        if self.line is not None:
            doc["line"] = self.line
        doc.update(
            {
                "kind": self.kind,
                "status": self.status,
                "ok": self.ok,
                "source": self.source,
                "dialect": self.dialect,
                "issues": [f.to_json() for f in self.findings],
            }
        )
        if self.ignored:
            doc["ignored"] = [f.to_json() for f in self.ignored]
        if self.unchecked:
            doc["unchecked"] = self.unchecked
        if self.error is not None:
            doc["error"] = self.error
        doc.update(self.details)
        return doc


@dataclass
class Run:
    """One command's records, its summary and its exit code."""

    command: str
    records: list[Record]
    summary: dict[str, Any] = field(default_factory=dict)
    exit_code: int = OK
    notices: list[str] = field(default_factory=list)  # what the run says beyond its records (text: stderr)


def exit_code(records: list[Record]) -> int:
    """2 when an input could not be read, else 1 when any record failed, else 0."""
    if any(r.error is not None for r in records):
        return ERROR
    return FINDINGS if any(not r.ok for r in records) else OK


def counts(records: list[Record]) -> dict[str, int]:
    """The summary every command shares: inputs by status, and the issues by severity."""
    findings = [f for r in records for f in r.findings]
    out = {"records": len(records)}
    for r in records:
        out[r.status] = out.get(r.status, 0) + 1
    out["failed"] = sum(not r.ok for r in records)
    out["errors"] = sum(f.severity == "error" for f in findings)
    out["warnings"] = sum(f.severity == "warning" for f in findings)
    return out


def render(run: Run, fmt: str, version: str) -> str:
    """The run in a machine format: json, github, sarif or junit."""
    if fmt == "json":
        return _json(run, version)
    if fmt == "github":
        return _github(run)
    if fmt == "sarif":
        return _sarif(run, version)
    if fmt == "junit":
        return _junit(run)
    raise ValueError(f"no such format: {fmt!r}")


def _json(run: Run, version: str) -> str:
    doc = {
        "tool": "fnkit",
        "version": version,
        "command": run.command,
        "exit_code": run.exit_code,
        "ok": run.exit_code == OK,
        "summary": run.summary,
        "records": [r.to_json() for r in run.records],
    }
    if run.notices:
        doc["notices"] = run.notices
    return json.dumps(doc, indent=1, default=str, ensure_ascii=False)


# --- GitHub workflow commands -------------------------------------------------------------------


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _annotation(level: str, message: str, **where: Any) -> str:
    props = ",".join(f"{k}={_escape_property(str(v))}" for k, v in where.items() if v is not None)
    return f"::{level} {props}::{_escape_data(message)}"


def _github(run: Run) -> str:
    lines = []
    for record in run.records:
        if record.error is not None:
            lines.append(_annotation("error", record.error, file=record.file, title="fnkit: cannot read"))
        for f in record.findings:
            at = f" (at {f.path})" if f.path else ""
            lines.append(
                _annotation(
                    "error" if f.severity == "error" else "warning",
                    f"{f.message}{at}",
                    file=f.file,
                    line=f.line,
                    col=f.column,
                    title=f"fnkit {f.rule}" if f.rule else "fnkit",
                )
            )
        lines.extend(
            _annotation("notice", f"not checked: {note}", file=record.file, title="fnkit") for note in record.unchecked
        )
        lines.extend(
            _annotation(
                "notice",
                f"ignored ({f.severity}): {f.message}" + (f" (at {f.path})" if f.path else ""),
                file=f.file,
                line=f.line,
                col=f.column,
                title=f"fnkit {f.rule} (ignored)",
            )
            for f in record.ignored
        )
    return "\n".join(lines)


# --- SARIF 2.1.0 --------------------------------------------------------------------------------


def _uri(path: str) -> str:
    from pathlib import Path

    if path == "-":
        return "stdin"
    p = Path(path)
    try:  # a name as the file system holds it (a byte that is not UTF-8 is %XX)
        raw = os.fsencode(p.as_posix())
    except UnicodeEncodeError:  # a lone surrogate that no file system name holds: its UTF-8 form, escaped
        raw = p.as_posix().encode("utf-8", "surrogatepass")
    return f"file://{quote(raw)}" if p.is_absolute() else quote(raw)


def _sarif(run: Run, version: str) -> str:
    from .. import rules as _rules

    files: dict[str, int] = {}
    for record in run.records:
        for name in [record.file, *(f.file for f in record.findings)]:
            files.setdefault(name, len(files))
    rule_ids = sorted({f.rule for r in run.records for f in (*r.findings, *r.ignored) if f.rule})
    rules = []
    for rule_id in rule_ids:
        entry: dict[str, Any] = {"id": rule_id}
        try:
            known = _rules.get(rule_id)
        except KeyError:
            known = None
        if known is not None:
            entry["shortDescription"] = {"text": known.summary}
            entry["properties"] = {"evidence": known.evidence, "source": known.source}
        rules.append(entry)
    index = {rule_id: i for i, rule_id in enumerate(rule_ids)}
    results = []
    reasons = run.summary.get("ignored_rules", {})
    for record in run.records:
        for f, aside in [*((f, False) for f in record.findings), *((f, True) for f in record.ignored)]:
            region = {k: v for k, v in (("startLine", f.line), ("startColumn", f.column)) if v is not None}
            physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(f.file), "index": files[f.file]}}
            if region:
                physical["region"] = region
            location: dict[str, Any] = {"physicalLocation": physical}
            if f.path:
                location["logicalLocations"] = [{"fullyQualifiedName": f.path, "kind": "member"}]
            result: dict[str, Any] = {
                "level": "error" if f.severity == "error" else "warning",
                "message": {"text": f.message},
                "locations": [location],
            }
            if f.rule:
                result["ruleId"] = f.rule
                result["ruleIndex"] = index[f.rule]
            if aside:  # set aside by --ignore or [tool.fnkit] ignore: a suppressed result
                result["suppressions"] = [{"kind": "external", "justification": f"ignored by {reasons.get(f.rule)}"}]
            results.append(result)
    notifications = [
        {
            "level": "error",
            "message": {"text": record.error},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(record.file)}}}],
        }
        for record in run.records
        if record.error is not None
    ]
    invocation: dict[str, Any] = {"executionSuccessful": run.exit_code != 2, "exitCode": run.exit_code}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "fnkit", "version": version, "rules": rules}},
                "invocations": [invocation],
                "artifacts": [{"location": {"uri": _uri(name)}} for name in files],
                "results": results,
                "properties": {"command": run.command, "summary": run.summary},
            }
        ],
    }
    return json.dumps(doc, indent=1, default=str, ensure_ascii=False)


# --- JUnit XML ----------------------------------------------------------------------------------


def _junit(run: Run) -> str:
    import xml.etree.ElementTree as ET

    suites = ET.Element("testsuites", name=f"fnkit {run.command}")
    suite = ET.SubElement(suites, "testsuite", name=f"fnkit {run.command}")
    tests = failures = errors = 0
    for record in run.records:
        tests += 1
        case = ET.SubElement(suite, "testcase", classname=f"fnkit.{run.command}", name=record.label, file=record.file)
        if record.line is not None:
            case.set("line", str(record.line))
        said = "\n".join([*(f.text() for f in record.findings), *(f"ignored: {f.text()}" for f in record.ignored)])
        if record.error is not None:
            errors += 1
            ET.SubElement(case, "error", message=record.error, type="unreadable").text = record.error
        elif not record.ok:
            failures += 1
            first = next((f for f in record.findings if f.severity == "error"), None) or next(
                iter(record.findings), None
            )
            message = first.message if first is not None else record.status
            ET.SubElement(case, "failure", message=message, type=record.status).text = said or message
        elif said:
            ET.SubElement(case, "system-out").text = said  # warnings of a passing input
    for element in (suites, suite):
        element.set("tests", str(tests))
        element.set("failures", str(failures))
        element.set("errors", str(errors))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode")


__all__ = ["FORMATS", "FORMAT_HELP", "Finding", "Record", "Run", "counts", "exit_code", "render"]
