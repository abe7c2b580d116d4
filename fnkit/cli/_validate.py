"""`fnkit validate` (event or response files) and `fnkit outcome` (what the platform does with a response)."""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING, Any

from .._engine.report import Raw, Report
from ._common import (
    _EXIT_CODES,
    SOURCE_CHOICES,
    _add_format,
    _add_settings,
    _cannot_read,
    _emit,
    _findings,
    _given,
    _read,
    _source,
)
from ._formats import ERROR, Finding, Record, Run, counts, exit_code
from ._inputs import documents as _documents
from ._inputs import expectation

if TYPE_CHECKING:
    from .._engine.outcome import Outcome


# --- validate -------------------------------------------------------------------------------------------------


def _event_report(data: bytes, args: argparse.Namespace) -> Report:
    from .._engine.report import MISSING, decode_json
    from .._settings.config import accepted
    from .._sources import detect_source, lookalike_issue, source_module, validate

    name = args.source or detect_source(data)
    if name is None:
        return validate(data)  # says what the value is (G0, G3)
    module = source_module(name)
    report: Report = module.validate_event(data, **accepted(module.validate_event, _given(args, name)))
    if args.source and not report.ok:  # a named source that does not fit: say what the value looks like
        value, _ = decode_json(data)
        issue = lookalike_issue(value, "warning") if value is not MISSING else None
        if issue is not None:
            report = Report([issue, *report], report.source, report.dialect, report.subject)
    return report


def _read_event(path: str) -> tuple[Any, Record]:
    """The decoded event of --event (MISSING when it cannot be used) and its record."""
    from .._engine.report import MISSING, decode_json

    try:
        data = _read(path)
    except OSError as exc:
        return MISSING, Record(path, "event", "unreadable", False, error=_cannot_read(exc))
    documents = _documents(path, data)
    if len(documents) > 1:
        why = f"--event takes one event; this file holds {len(documents)} (JSON Lines)"
        return MISSING, Record(path, "event", "unreadable", False, error=why)
    value, issues = decode_json(data)
    if value is MISSING:
        found = _findings(issues, path, data, None)
        return MISSING, Record(path, "event", "unreadable", False, findings=found, error=issues[-1].message)
    return value, Record(path, "event", "ok", True, findings=_findings(issues, path, data, None))


#: what a response check leaves out without the event it answers, by source, unless the setting named is given
_NEEDS_EVENT = {
    "queue": ("whether each itemIdentifier names a message of the batch (Q8): give the batch with --event", None),
    "alb": ("the target group's multi-value mode (read as off): give --event, or --multi-value", "multi_value"),
    "mail": ("the flow direction (an outbound rule's recipient limit): give the event with --event", None),
}


def _unchecked(args: argparse.Namespace, report: Report, event_record: Record | None) -> list[str]:
    if not args.response or report.source is None:
        return []
    if event_record is not None and event_record.error is not None:
        return [f"what the event answers: --event {event_record.file} cannot be used ({event_record.error})"]
    if event_record is not None:
        return []
    why, setting = _NEEDS_EVENT.get(report.source, (None, None))
    if why is None or (setting is not None and hasattr(args, setting)):
        return []
    return [why]


def cmd_validate(args: argparse.Namespace) -> int:
    """`fnkit validate`: check event (or response) files; 0 when every one is valid, 1 if not, 2 if unreadable."""
    from .._engine.report import MISSING
    from .._sources import validate_response

    if args.event is not None and not args.response:
        print("fnkit validate: --event goes with --response (the event the responses answer)", file=sys.stderr)
        return ERROR
    records: list[Record] = []
    event: Any = None
    event_record: Record | None = None
    if args.event is not None:
        event, event_record = _read_event(args.event)
        records.append(event_record)
        event = None if event is MISSING else event
    kind = "response" if args.response else "event"
    for path in args.files:
        try:
            data = _read(path)
        except OSError as exc:
            records.append(Record(path, kind, "unreadable", False, error=_cannot_read(exc)))
            continue
        for line, document in _documents(path, data):
            if args.response:
                report = validate_response(document, source=args.source, event=event, **_given(args))
            else:
                report = _event_report(document, args)
            failed = not report.ok or bool(args.strict and report.warnings)
            records.append(
                Record(
                    path,
                    report.subject,
                    "invalid" if failed else "ok",
                    not failed,
                    line=line,
                    source=report.source,
                    dialect=report.dialect,
                    findings=_findings(report, path, document, line),
                    unchecked=_unchecked(args, report, event_record),
                )
            )
    summary = counts(records)
    run = Run("validate", records, summary, exit_code(records))
    return _emit(args, run, lambda r: _validate_text(args, r))


def _validate_text(args: argparse.Namespace, run: Run) -> None:
    for record in run.records:
        if record.error is not None:
            what = "the event file" if record.kind == "event" and args.response else "the file"
            for finding in record.findings:
                print(finding.text(), file=sys.stderr)
            print(f"{record.file}: error: {record.error.replace('the file', what)}", file=sys.stderr)
            continue
        for finding in record.findings:
            print(finding.text())
        if args.quiet or (record.kind == "event" and args.response):
            continue
        for note in record.unchecked:
            print(f"{record.label}: note: not checked: {note}")
        dialect = f", {record.dialect} spelling" if record.dialect else ""
        state = "ok" if record.ok else "INVALID"
        what = record.source or "unknown source"
        if record.kind != "event":
            what += f" {record.kind}"
        errors = sum(f.severity == "error" for f in record.findings)
        warnings = len(record.findings) - errors
        print(f"{record.label}: {state} ({what}{dialect}; {errors} error(s), {warnings} warning(s))")


# --- outcome --------------------------------------------------------------------------------------------------

_STATUS_CLASS = re.compile(r"^[1-5]xx$", re.IGNORECASE)


def _verdicts(result: Outcome) -> list[str]:
    """What an outcome can be expected to be: its kind (success, partial, failure) and status (502, applied)."""
    found = []
    for name in ("kind", "status"):
        value = getattr(result, name, None)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            found.append(str(value))
    return found


def _meets(expected: str, verdicts: list[str]) -> bool:
    wanted = expected.strip().lower()
    for verdict in verdicts:
        if verdict.lower() == wanted:
            return True
        if _STATUS_CLASS.match(wanted) and verdict.isdigit() and verdict[:1] == wanted[:1]:
            return True
    return False


def cmd_outcome(args: argparse.Namespace) -> int:
    """`fnkit outcome`: what the platform does with a response to an event; 1 when it fails or is not --expect's."""
    from .._engine.locate import Locator
    from .._engine.report import MISSING, decode_json

    records: list[Record] = []
    event_bytes = response_bytes = None
    response_record: Record | None = None
    try:
        event_bytes = _read(args.event)
    except OSError as exc:
        records.append(Record(args.event, "event", "unreadable", False, error=_cannot_read(exc)))
    try:
        response_bytes = _read(args.response)
    except OSError as exc:
        response_record = Record(args.response, "outcome", "unreadable", False, error=_cannot_read(exc))
    name = module = None
    event: Any = MISSING
    if event_bytes is not None:
        event, issues = decode_json(event_bytes)
        if event is MISSING:
            records.append(
                Record(
                    args.event,
                    "event",
                    "unreadable",
                    False,
                    findings=_findings(issues, args.event, event_bytes, None),
                    error=f"not valid JSON: {issues[-1].message}",
                )
            )
        else:
            name, module = _source(args.source, event)
            if module is None:
                records.append(
                    Record(
                        args.event,
                        "event",
                        "unreadable",
                        False,
                        error="not an event of a known source (queue, mail, alb)",
                    )
                )
            else:
                report = module.validate_event(event)
                records.append(
                    Record(
                        args.event,
                        "event",
                        "ok" if report.ok else "invalid",
                        report.ok,
                        source=name,
                        dialect=report.dialect,
                        findings=_findings([*issues, *report.errors], args.event, event_bytes, None),
                    )
                )
    if response_bytes is None:
        assert response_record is not None  # set where the response cannot be read
        records.append(response_record)
    elif module is None:
        records.append(
            Record(
                args.response,
                "outcome",
                "undecided",
                False,
                unchecked=[f"the outcome: the event ({args.event}) cannot be used"],
            )
        )
    else:
        result: Outcome = module.outcome(event, Raw(response_bytes), **_given(args, name))
        findings = _findings(result.issues, args.response, response_bytes, None)
        verdicts = _verdicts(result)
        if args.expect is not None:
            passed = _meets(args.expect, verdicts)
            why = f"expected {args.expect}, got {' / '.join(verdicts) or result.headline}: {result.explanation}"
        else:
            passed = result.tone != "bad" and not result.issues.errors
            why = f"the platform's outcome is {result.headline}: {result.explanation}"
        if not passed:
            line, column = Locator(response_bytes).locate("$")
            findings.append(Finding(args.response, line, column, "$", "error", why, result.rule, "outcome"))
        records.append(
            Record(
                args.response,
                "outcome",
                "ok" if passed else "failed",
                passed,
                source=name,
                findings=findings,
                details={
                    "event": args.event,
                    "rule": result.rule,
                    "inferred": result.inferred,
                    "reason": result.explanation,
                    "headline": result.headline,
                    "tone": result.tone,
                    "verdicts": verdicts,
                    "expected": args.expect,
                    "rows": [_jsonable(r) for r in result.rows()],
                },
            )
        )
    run = Run("outcome", records, counts(records), exit_code(records))  # an unusable event has its `error`: 2
    return _emit(args, run, _outcome_text)


def _outcome_text(run: Run) -> None:
    for record in run.records:
        if record.kind == "event":
            for finding in record.findings:
                print(finding.text(), file=sys.stderr)
            if record.error is not None:
                print(f"{record.file}: error: {record.error}", file=sys.stderr)
            continue
        if record.error is not None:
            print(f"{record.file}: error: {record.error}", file=sys.stderr)
            continue
        if "rule" not in record.details:
            continue
        d = record.details
        tag = " (inferred)" if d["inferred"] else ""
        print(f"{record.source}: rule {d['rule']}{tag}: {d['reason']}")
        for row in d["rows"]:
            shown = {
                k: v
                for k, v in row.items()
                if k not in ("source", "reason", "rule", "inferred", "warnings", "explanation") and v not in (None, "")
            }
            print("  " + "  ".join(f"{k}={v}" for k, v in shown.items()))
        for finding in record.findings:
            print(f"  {finding.text()}")
        if d["expected"] is not None:
            state = "as expected" if record.ok else "NOT as expected"
            print(
                f"{record.file}: {state} ({d['expected']}; the outcome: {' / '.join(d['verdicts']) or d['headline']})"
            )


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.decode("utf-8", "replace") if isinstance(v, bytes) else v) for k, v in row.items()}


def add_validate_parser(sub: Any) -> None:
    """`fnkit validate`'s arguments."""
    from ..alb import AlbConfig
    from ..mail import MailConfig

    p = sub.add_parser(
        "validate", help="check event (or response) files; exit 0 only when every one is valid", epilog=_EXIT_CODES
    )
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="JSON files, or JSON Lines files (one event per line); '-' for standard input",
    )
    p.add_argument("--source", choices=SOURCE_CHOICES, help="skip detection and validate as this source")
    p.add_argument(
        "--response",
        action="store_true",
        help="the files are handler responses; the source is read from their shape, --source or --event",
    )
    p.add_argument(
        "--event",
        metavar="FILE",
        help="with --response: the event they answer (queue: the batch's "
        "messageIds; load balancer: multi-value mode; mail: the flow direction)",
    )
    AlbConfig.add_arguments(p, ["multi_value"], prefix="load balancer: ")
    MailConfig.add_arguments(p, ["mode", "extensions"], prefix="mail responses: ")
    p.add_argument("--strict", action="store_true", help="warnings fail too")
    _add_format(p)
    p.add_argument("-q", "--quiet", action="store_true", help="text: print only the issues")
    p.set_defaults(func=cmd_validate)


def add_outcome_parser(sub: Any) -> None:
    """`fnkit outcome`'s arguments."""
    p = sub.add_parser(
        "outcome",
        help="what the platform does with a response to an event; exit 1 when it fails or is not --expect's",
        epilog=_EXIT_CODES,
    )
    p.add_argument("--event", required=True, metavar="FILE", help="the event the function was called with (JSON)")
    p.add_argument("--response", required=True, metavar="FILE", help="the exact bytes the function returned")
    p.add_argument("--source", choices=SOURCE_CHOICES, help="read the event as this source's (default: from its shape)")
    p.add_argument(
        "--expect",
        type=expectation,
        metavar="KIND|STATUS",
        help="the outcome the response should have: a queue batch's success, partial or failure; a mail rule's "
        "applied, fallback or ignored; a load balancer status (200, 502, or a class: 2xx). Without it, exit 1 "
        "when the outcome is a failure (a failed batch, a fallback, a 5xx) or the response has errors",
    )
    _add_settings(p, "outcome")
    _add_format(p)
    p.set_defaults(func=cmd_outcome)
