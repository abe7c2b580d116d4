"""The `fnkit` command line: validate files, decide outcomes, replay handlers, build events, list rules, serve.

Every checking command (`validate`, `outcome`, `replay`) exits as linters do: 0 when there
is nothing to report, 1 when there are findings, 2 for a usage error or an input that cannot
be read. Each writes `--format text|json|github|sarif|junit` (`fnkit._cli_formats`), gives
every input a record (an unreadable one too), and locates each issue as `file:line:col`
(`fnkit._engine.locate`) as well as by its JSONPath.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import textwrap
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from . import rules as _rules
from ._cli_formats import (
    ERROR,
    FORMAT_HELP,
    FORMATS,
    Finding,
    Record,
    Run,
    counts,
    escaped_output,
    exit_code,
    render,
)
from ._cli_inputs import add_ignore, expectation, finish, prepare, say_ignored, set_aside
from ._cli_inputs import documents as _documents
from ._engine.report import Issue, Raw, Report
from ._optional import MissingDependency
from ._replay_columns import agreement, agreement_text
from ._settings import SettingError

if TYPE_CHECKING:
    from distributed import LocalCluster

    from ._engine.outcome import Outcome
    from ._import import ImportStream

SOURCE_CHOICES = ("queue", "mail", "alb")


def _version() -> str:
    from . import __version__

    return str(__version__)


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    return Path(path).read_bytes()


def _cannot_read(exc: OSError) -> str:
    return f"cannot read the file ({exc.strerror or exc})"


def _source(name: str | None, value: Any) -> tuple[str, Any] | tuple[None, None]:
    from ._sources import detect_source, source_module

    name = name or detect_source(value)
    return (name, source_module(name)) if name else (None, None)


_LABELS = {"queue": "queue", "mail": "mail", "alb": "load balancer"}


def _add_settings(parser: argparse.ArgumentParser, verb: str) -> None:
    """The options of the settings each source's `verb` (outcome, run, ...) takes, made from the sources' configs."""
    from ._config import settings_of
    from ._sources import SOURCES, source_module

    for name in SOURCES:
        config_class, names = settings_of(getattr(source_module(name), verb))
        if config_class is not None:
            config_class.add_arguments(parser, names, prefix=f"{_LABELS[name]}: ")


def _given(args: argparse.Namespace, source: str | None = None) -> dict[str, Any]:
    """The settings given on the command line (of one source's configuration, or of any)."""
    from ._sources import SOURCES, source_module

    given: dict[str, Any] = {}
    for name in [source] if source else SOURCES:
        given.update(source_module(name).Config.given(args))
    return given


def _findings(report: Sequence[Issue], file: str, data: bytes | str | None, first_line: int | None) -> list[Finding]:
    """The issues of one JSON document located in its file: line and column of each path (read only when needed)."""
    from ._engine.locate import Locator

    if not report:
        return []
    locator = Locator(data, first_line or 1) if data is not None else None
    found = []
    for issue in report:
        line, column = locator.locate(issue.path) if locator is not None else (first_line, None)
        found.append(Finding(file, line, column, issue.path, issue.severity, issue.message, issue.rule, issue.code))
    return found


def _emit(args: argparse.Namespace, run: Run, text: Callable[[Run], None]) -> int:
    """Write the run in the format asked for (the findings of ignored rules set aside); its exit code."""
    run = set_aside(run, args)
    if args.format == "text":
        text(run)
        say_ignored(run)
    else:
        rendered = render(run, args.format, _version())
        print(rendered, end="\n" if rendered else "")  # a clean run in github format prints nothing
        for notice in run.notices:
            print(f"fnkit {run.command}: {notice}", file=sys.stderr)
    return run.exit_code


def _add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=FORMATS, default="text", help=FORMAT_HELP)
    add_ignore(parser)


# --- validate -------------------------------------------------------------------------------------------------


def _event_report(data: bytes, args: argparse.Namespace) -> Report:
    from ._config import accepted
    from ._engine.report import MISSING, decode_json
    from ._sources import detect_source, lookalike_issue, source_module, validate

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
    from ._engine.report import MISSING, decode_json

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
    from ._engine.report import MISSING
    from ._sources import validate_response

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
    from ._engine.locate import Locator
    from ._engine.report import MISSING, decode_json

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


# --- rules, schema ----------------------------------------------------------------------------------------------


def cmd_rules(args: argparse.Namespace) -> int:
    """`fnkit rules`: print the rules catalogue (or, with --examples, the example of each rule; or, given ids,
    each rule with the one function that holds its logic, at file:line)."""
    if args.ids:
        return _show_rules(args)
    rows = _rules.catalogue(args.source)
    if args.format == "markdown":
        if args.source or args.examples:
            print(
                "fnkit rules: --format markdown writes the whole catalogue (no --source, no --examples)",
                file=sys.stderr,
            )
            return 2
        sys.stdout.write(_rules.markdown())
        return 0
    if args.examples:
        return _print_examples(args, {r.id for r in rows})
    if args.format == "json":
        print(
            json.dumps(
                [
                    {"id": r.id, "source": r.source, "evidence": r.evidence, "origin": r.origin, "summary": r.summary}
                    for r in rows
                ],
                indent=1,
            )
        )
        return 0
    for r in rows:
        print(f"{r.id:<5} {r.source:<6} {r.evidence:<9} {r.summary}")
    return 0


def _show_rules(args: argparse.Namespace) -> int:
    """`fnkit rules Q8 A1`: each rule, where its one function is (file:line), and that function's code."""
    known = _rules.ids()
    unknown = [i for i in args.ids if i not in known]
    if unknown:
        print(
            f"fnkit rules: no rule {', '.join(unknown)} in the catalogue (`fnkit rules` lists every id)",
            file=sys.stderr,
        )
        return 2
    if args.format == "markdown" or args.examples:
        print("fnkit rules ID: shows rules as text or json (no --format markdown, no --examples)", file=sys.stderr)
        return 2
    shown = []
    written = _rules.written_at()
    for rule_id in args.ids:
        r = _rules.get(rule_id)
        path, line = _rules.location(rule_id)
        what, _ = _rules.where(r)
        shown.append(
            {
                "id": r.id,
                "source": r.source,
                "evidence": r.evidence,
                "severity": r.severity,
                "summary": r.summary,
                "implemented_by": what,
                "file": path,
                "line": line,
                "code": _rules.code(rule_id),
                # every place in fnkit's code that writes the id (one at most: the rest name its function)
                "written_at": written[rule_id],
            }
        )
    if args.format == "json":
        print(json.dumps(shown, indent=1))
        return 0
    for i, s in enumerate(shown):
        if i:
            print()
        print(f"{s['id']} ({s['source']}, {s['evidence']}, {s['severity']}): {s['summary']}")
        print(f"{s['file']}:{s['line']}: {s['implemented_by']}")
        places = cast(list[str], s["written_at"])
        print(f"id written in: {', '.join(places) or 'its declaration alone'}")
        print()
        print(textwrap.indent(textwrap.dedent(str(s["code"])).rstrip("\n"), "    "))
    return 0


def _print_examples(args: argparse.Namespace, wanted: set[str]) -> int:
    """The rule -> example table: for each rule, the example that triggers it (fnkit/data/rule_examples.json)."""
    examples = [e for e in _rules.examples() if e["rule"] in wanted]
    if args.format == "json":
        print(json.dumps(examples, indent=1))
        return 0
    for e in examples:
        what = json.dumps(e["input"], separators=(",", ":"))
        if len(what) > 110:
            what = what[:107] + "..."
        print(f"{e['rule']:<5} {e['kind']:<9} {e['title']}")
        print(f"{'':<15} {what}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    """`fnkit schema`: print the JSON Schema of a source's event or response."""
    from ._sources import source_module

    schema = source_module(args.source).json_schema(args.kind)
    print(json.dumps(schema, indent=None if args.compact else 2, ensure_ascii=False))
    return 0


# --- handlers ---------------------------------------------------------------------------------------------------


class HandlerNotFound(Exception):
    """A MODULE:FUNCTION that cannot be imported or named; the message is one line."""


def _add_app_dirs(app_dirs: Sequence[str]) -> None:
    """Put the application's folders first on sys.path, then the current folder (fnkit's workers copy sys.path)."""
    folders = [str(Path(d).resolve()) for d in app_dirs] + [str(Path.cwd())]
    for folder in reversed(folders):
        if folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)


def _export_app_dirs(app_dirs: Sequence[str]) -> None:
    """The application's folders on PYTHONPATH too, for processes that start from the environment (Dask's)."""
    if app_dirs:
        old = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [*(str(Path(d).resolve()) for d in app_dirs), *([old] if old else [])]
        )


def resolve_handler(spec: str, app_dirs: Sequence[str] = ()) -> Callable[..., Any]:
    """`module:function` or `path/to/file.py:function` → the function; HandlerNotFound (one line) when it is not."""
    import importlib

    target, _, attr = spec.rpartition(":")
    if not target or not attr:
        raise HandlerNotFound(f"give the handler as MODULE:FUNCTION (app:handler), not {spec!r}")
    _add_app_dirs(app_dirs)
    if target.endswith(".py"):
        path = Path(target).resolve()
        if not path.is_file():
            raise HandlerNotFound(f"cannot import the handler {spec!r}: no such file {target}")
        sys.path.insert(0, str(path.parent))
        target = path.stem
    try:
        module = importlib.import_module(target)
    except SyntaxError as exc:
        where = f" ({exc.filename}:{exc.lineno})" if exc.filename else ""
        raise HandlerNotFound(f"cannot import the handler {spec!r}: SyntaxError: {exc.msg}{where}") from None
    except ModuleNotFoundError as exc:
        if exc.name != target:  # the module is there; something it imports is not
            raise HandlerNotFound(
                f"cannot import the handler {spec!r}: importing {target} raised ModuleNotFoundError: {exc}"
            ) from None
        hint = "" if app_dirs else "; give its folder with --app-dir"
        raise HandlerNotFound(f"cannot import the handler {spec!r}: {exc}{hint}") from None
    except Exception as exc:  # noqa: BLE001 - whatever the module raises on import, said in one line
        raise HandlerNotFound(
            f"cannot import the handler {spec!r}: importing {target} raised {type(exc).__name__}: {exc}"
        ) from None
    handler = getattr(module, attr, None)
    if handler is None:
        raise HandlerNotFound(f"the module {target!r} ({module.__file__}) has no {attr!r}")
    if not callable(handler):
        raise HandlerNotFound(f"{spec!r} is {type(handler).__name__}, not a function")
    found: Callable[..., Any] = handler
    return found


def _load_handler(spec: str, app_dirs: Sequence[str] = ()) -> Callable[..., Any]:
    """The handler of a serve command; one line and exit status 2 when it cannot be imported."""
    try:
        return resolve_handler(spec, app_dirs)
    except HandlerNotFound as exc:
        print(f"fnkit: {exc}", file=sys.stderr)
        raise SystemExit(ERROR) from None


def cmd_serve_alb(args: argparse.Namespace) -> int:
    """`fnkit serve-alb`: serve a handler over HTTP as the load balancer would."""
    from .alb._serve import cli_serve

    _load_handler(args.handler, args.app_dir)  # one line and exit 2 when it cannot be imported (--app-dir first)
    return cli_serve(args) or 0  # the server keeps the import path: its workers import the handler themselves


def cmd_serve_mail(args: argparse.Namespace) -> int:
    """`fnkit serve-mail`: serve a handler as a mail-flow rule behind a real SMTP server."""
    from .mail._serve import cli_serve

    return cli_serve(args, _load_handler(args.handler, args.app_dir)) or 0


# --- replay -----------------------------------------------------------------------------------------------------

#: the results of replay rows that say an event could not be run (an unreadable line is its importer's issue)
_NOT_RUN = ("invalid event", "not sent")
_WHERE = re.compile(r"^(?P<file>.*):(?P<line>\d+)$")


class _Inputs:
    """The replay's inputs in order, each entry numbered as the replay numbers it and remembered by where it came from.

    With `keep` (a source), events detected as another source are left out and counted (`skipped`).
    """

    def __init__(self, streams: list[tuple[str, ImportStream, bool]], keep: str | None) -> None:
        self.streams = streams
        self.keep = keep
        self.input_of: dict[int, str] = {}
        self.where: dict[int, str | None] = {}
        self.skipped: dict[str, Counter[str]] = {path: Counter() for path, _, _ in streams}

    def __iter__(self) -> Iterator[Any]:
        from ._import import Unreadable
        from ._sources import detect_source

        index = 0
        for path, stream, by_line in self.streams:
            for entry in stream.entries():
                if self.keep is not None and not isinstance(entry, Unreadable):
                    event = entry.event if hasattr(entry, "replay_columns") else entry
                    found = detect_source(event)
                    if found is not None and found != self.keep:
                        self.skipped[path][found] += 1
                        continue
                self.input_of[index] = path
                where = getattr(entry, "where", None)
                self.where[index] = where if isinstance(where, str) else (f"{path}:{stream.read}" if by_line else None)
                index += 1
                yield entry


def _located(where: str | None, fallback: str) -> tuple[str, int | None]:
    m = _WHERE.match(where or "")
    return (m.group("file"), int(m.group("line"))) if m else (where or fallback, None)


def _row_finding(row: dict[str, Any], inputs: _Inputs, path: str) -> Finding:
    """An invalid (or unsent) event's row as a located finding: the input's file and line, the JSONPath, the rule."""
    file, line = _located(inputs.where.get(row["event"]), path)
    reason = str(row["reason"])
    json_path = None
    if row["result"] == "invalid event":
        json_path = "$"
        head, sep, rest = reason.partition(": ")
        if sep and head.startswith("$"):
            json_path, reason = head, rest
    rule = row.get("rule")
    return Finding(
        file,
        line,
        1 if line is not None else None,
        json_path,
        "error",
        f"{row['result']}: {reason}",
        rule if isinstance(rule, str) else None,
        str(row["result"]),
    )


def cmd_replay(args: argparse.Namespace) -> int:
    """`fnkit replay`: run a handler over events, access logs or message dumps; 1 on unreadable or invalid rows."""
    from ._import import files_of, is_json_lines, kind_of
    from ._replay import open_events, replay

    if args.force_source and args.source is None:
        print("fnkit replay: --force-source goes with --source (the source to run every event as)", file=sys.stderr)
        return ERROR
    try:
        handler = resolve_handler(args.handler, args.app_dir)
    except HandlerNotFound as exc:
        print(f"fnkit replay: {exc}", file=sys.stderr)
        return ERROR
    records: dict[str, Record] = {}
    streams: list[tuple[str, ImportStream, bool]] = []
    for path in args.inputs:
        try:
            stream = open_events(path, progress=args.progress)
            files = files_of(path)
            by_line = len(files) == 1 and kind_of(path) == "events" and is_json_lines(files[0])
        except (OSError, TypeError, ValueError) as exc:
            why = str(exc) if not isinstance(exc, OSError) or not exc.strerror else f"{exc.strerror}"
            records[path] = Record(path, "input", "unreadable", False, error=f"cannot read the input ({why})")
            continue
        streams.append((path, stream, by_line))
    options: dict[str, Any] = {
        "source": args.source if args.force_source else None,
        "label": args.label,
        **_given(args),
    }
    if args.timeout is not None:
        options["timeout_s"] = args.timeout
    inputs = _Inputs(streams, None if args.force_source else args.source)
    client: Any = None  # dask: the scheduler's address, or a Client of the cluster this command starts
    cluster: LocalCluster | None = None  # started here: closed here
    if args.engine == "dask":
        from ._dask import _distributed

        _distributed()  # a missing Dask engine says how to install it before the handler runs
        if args.scheduler:
            client = args.scheduler
        else:
            import distributed

            _export_app_dirs(args.app_dir)

            cluster = distributed.LocalCluster(
                n_workers=args.workers,
                threads_per_worker=1,
                processes=not args.threads,
                dashboard_address="127.0.0.1:0",
            )
            client = distributed.Client(cluster)
    try:
        frame = replay(
            handler,
            iter(inputs),
            engine=args.engine,
            client=client,
            compute=True,
            partition_size=args.partition_size,
            **{k: v for k, v in options.items() if v is not None},
        )
    except (TypeError, ValueError) as exc:  # a setting no source takes, or one the platform refuses
        print(f"fnkit replay: {exc}", file=sys.stderr)
        return ERROR
    finally:
        if cluster is not None:
            client.close()
            cluster.close()
    if args.out:
        out = Path(args.out)
        if out.suffix == ".csv":
            frame.to_csv(out, index=False)
        else:
            frame.to_json(out, orient="records", lines=True, force_ascii=False)
    rows: list[dict[str, Any]] = [{str(k): v for k, v in r.items()} for r in frame.to_dict("records")]
    bad_rows = [r for r in rows if r.get("result") in _NOT_RUN]
    for path, stream, _ in streams:
        findings = []
        for issue in stream.issues:
            file, line = _located(issue.path, path)
            column = 1 if line is not None else None
            findings.append(Finding(file, line, column, None, issue.severity, issue.message, issue.rule, issue.code))
        findings += [_row_finding(r, inputs, path) for r in bad_rows if inputs.input_of.get(r["event"]) == path]
        failed = any(f.severity == "error" for f in findings)
        mine = [r for r in rows if inputs.input_of.get(r["event"]) == path]
        records[path] = Record(
            path,
            "input",
            "invalid" if failed else "ok",
            not failed or args.allow_invalid,
            findings=findings,
            details={
                "what": stream.what,
                "summary": stream.summary(),
                "read": stream.read,
                "yielded": stream.yielded,
                "reported": stream.reported,
                "rows": len(mine),
                "events": len({r["event"] for r in mine}),
                "skipped": dict(inputs.skipped[path]),
            },
        )
    ordered = [records[path] for path in args.inputs if path in records]
    summary: dict[str, Any] = {
        **counts(ordered),
        "engine": args.engine,
        "rows": len(frame),
        "events": int(frame["event"].nunique()) if len(frame) else 0,
        "results": dict(Counter(str(r.get("result")) for r in rows)),
        "unreadable_rows": sum(r.get("result") == "unreadable" for r in rows),
        "invalid_rows": len(bad_rows),
        "skipped": sum(sum(c.values()) for c in inputs.skipped.values()),
        "allow_invalid": args.allow_invalid,
        "source": args.source,
        "force_source": args.force_source,
    }
    if len(frame):
        grouped = frame.groupby(["source", "result", "rule"], dropna=False, sort=True).size()
        summary["by_rule"] = [
            {"source": _plain(s), "result": _plain(res), "rule": _plain(rule), "rows": int(n)}
            for (s, res, rule), n in cast("Any", grouped).items()
        ]
    if "agrees" in frame.columns:
        summary["agrees"] = agreement(frame)
    code = exit_code(ordered)
    run = Run("replay", ordered, summary, code)
    if code == 1:
        run.notices.append(
            f"{summary['unreadable_rows']} unreadable and {summary['invalid_rows']} invalid row(s); "
            "--allow-invalid accepts them"
        )
    return _emit(args, run, lambda r: _replay_text(r, frame))


def _plain(value: Any) -> Any:
    """A pandas cell as JSON: NaN and None as null, numpy scalars as Python's."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value.item() if hasattr(value, "item") else value


def _replay_text(run: Run, frame: Any) -> None:
    for record in run.records:
        if record.error is not None:
            print(f"{record.file}: error: {record.error}", file=sys.stderr)
            continue
        print(record.details["summary"])
        for finding in record.findings:
            print(f"  {finding.text()}")
        skipped = record.details["skipped"]
        if skipped:
            said = ", ".join(f"{n} {_LABELS[s]} event(s)" for s, n in sorted(skipped.items()))
            print(f"  skipped {said}: not {_LABELS[run.summary['source']]} events (--source)")
    engine = run.summary["engine"]
    print(f"{run.summary['rows']} row(s) from {run.summary['events']} event(s) on the {engine} engine")
    if len(frame):
        grouped = frame.groupby(["source", "result", "rule"], dropna=False, sort=True).size().rename("rows")
        print(grouped.reset_index().to_string(index=False))
    if "agrees" in run.summary:
        print(agreement_text(run.summary["agrees"]))
    for notice in run.notices:
        print(f"fnkit replay: {notice}", file=sys.stderr)


# --- event build ------------------------------------------------------------------------------------------------


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"a header is NAME:VALUE, not {text!r}")
    return name.strip(), value.strip()


def _build_queue(module: Any, args: argparse.Namespace, keywords: dict[str, Any]) -> Any:
    bodies = args.body or [f"message {n}" for n in range(1, args.count + 1)]
    if args.group_id:
        keywords["group_ids"] = (args.group_id * len(bodies))[: len(bodies)]
    for name in ("queue_arn", "region"):
        if getattr(args, name) is not None:
            keywords[name] = getattr(args, name)
    return module.build_event(bodies, fifo=args.fifo or bool(args.group_id), **keywords)


def _build_mail(module: Any, args: argparse.Namespace, keywords: dict[str, Any]) -> Any:
    if args.message is not None:
        keywords["message"] = _read(args.message)
    return module.build_event(
        mail_from=args.mail_from,
        recipients=args.to or (None if args.message is not None else ["recipient@example.com"]),
        subject=args.subject,
        flow_direction="OUTBOUND" if args.outbound else "INBOUND",
        **keywords,
    )


def _build_alb(module: Any, args: argparse.Namespace, keywords: dict[str, Any]) -> Any:
    if args.target_group_arn is not None:
        keywords["target_group_arn"] = args.target_group_arn
    return module.build_event(
        args.method,
        args.path,
        query=args.query,
        headers=args.header or None,
        body=args.body if args.body is not None else b"",
        multi_value=args.multi_value,
        **keywords,
    )


_BUILDERS = {"queue": _build_queue, "mail": _build_mail, "alb": _build_alb}


def cmd_event_build(args: argparse.Namespace) -> int:
    """`fnkit event build queue|mail|alb`: print a valid event, built by the source's own builder."""
    from ._sources import source_module

    keywords: dict[str, Any] = {"seed": args.seed}
    if args.dialect is not None:
        keywords["dialect"] = args.dialect
    try:
        event = _BUILDERS[args.source](source_module(args.source), args, keywords)
    except (OSError, TypeError, ValueError) as exc:
        print(f"fnkit event build {args.source}: {exc}", file=sys.stderr)
        return ERROR
    print(json.dumps(event, indent=None if args.compact else 2, ensure_ascii=False))
    return 0


def _event_parsers(sub: Any) -> None:
    p = sub.add_parser("event", help="make events: fnkit event build queue|mail|alb")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="build")
    build = verbs.add_parser("build", help="print a valid event of a source, deterministic for a seed")
    kinds = build.add_subparsers(dest="source", required=True, metavar="queue|mail|alb")

    def common(q: argparse.ArgumentParser) -> argparse.ArgumentParser:
        q.add_argument(
            "--dialect",
            choices=("aws", "provider"),
            default=None,
            help="the spelling: 'aws' (aws:sqs, arn:aws:...) as the real platform sends it, or the spec's 'provider' "
            "(default: FNKIT_DIALECT, else [tool.fnkit] dialect in pyproject.toml, else provider)",
        )
        q.add_argument("--seed", type=int, default=0, help="ids, times and traces follow from it (default 0)")
        q.add_argument("--compact", action="store_true", help="one line (for a JSON Lines file), not indented")
        q.set_defaults(func=cmd_event_build)
        return q

    q = common(kinds.add_parser("queue", help="a queue batch event: one record per body"))
    q.add_argument("--body", action="append", metavar="TEXT", help="a message body (repeat for several records)")
    q.add_argument(
        "--count", type=int, default=1, metavar="N", help="without --body: N records 'message 1'... (default 1)"
    )
    q.add_argument("--fifo", action="store_true", help="a FIFO queue (records get a group id and a sequence number)")
    q.add_argument(
        "--group-id", action="append", metavar="ID", help="FIFO message group id (repeat: one per body, cycled)"
    )
    q.add_argument("--queue-arn", metavar="ARN", help="the queue's ARN (default: one of the dialect's spelling)")
    q.add_argument("--region", metavar="REGION", help="the region (default: the ARN's, else us-east-1)")

    m = common(kinds.add_parser("mail", help="a mail-flow rule event"))
    m.add_argument(
        "--from",
        dest="mail_from",
        default="sender@example.com",
        metavar="ADDRESS",
        help="the envelope sender (default sender@example.com)",
    )
    m.add_argument(
        "--to", action="append", metavar="ADDRESS", help="a recipient (repeat; default recipient@example.com)"
    )
    m.add_argument("--subject", default="", help="the subject")
    m.add_argument("--outbound", action="store_true", help="an outbound rule's event (default: inbound)")
    m.add_argument("--message", metavar="FILE", help="a raw RFC 5322 message: subject, sender and recipients from it")

    a = common(kinds.add_parser("alb", help="a load balancer request event"))
    a.add_argument("--method", default="GET", help="the HTTP method (default GET)")
    a.add_argument("--path", default="/", help="the path, a query may follow '?' (default /)")
    a.add_argument("--query", help="the raw query string, kept as given")
    a.add_argument("--header", action="append", type=_header, metavar="NAME:VALUE", help="a request header (repeat)")
    a.add_argument("--body", help="the request body (text)")
    a.add_argument("--multi-value", action="store_true", help="the target group has multi-value headers on")
    a.add_argument(
        "--target-group-arn", metavar="ARN", help="the target group's ARN (default: one of the dialect's spelling)"
    )


# --- the parser -------------------------------------------------------------------------------------------------

_EXIT_CODES = "exit status: 0 nothing to report, 1 findings, 2 usage error or an input that cannot be read"


def _add_app_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--app-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder to import the handler from, put first on sys.path (repeat; the current folder comes next)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The `fnkit` argument parser: one sub-command per verb."""
    from ._check_cli import add_check_parser
    from .alb import AlbConfig
    from .alb._serve import add_arguments as serve_alb_arguments
    from .mail import MailConfig

    parser = argparse.ArgumentParser(
        prog="fnkit",
        description="Validate, decide and serve function event contracts (queue, mail, load balancer).",
        epilog=_EXIT_CODES,
    )
    parser.add_argument("--version", action="version", version=f"fnkit {_version()}", help="print the version")
    sub = parser.add_subparsers(dest="command", required=True)

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

    p = sub.add_parser("rules", help="the rules catalogue, or given ids, each rule's one function (file:line)")
    p.add_argument("ids", nargs="*", metavar="ID", help="show these rules (Q8, A1, M1) with the function holding each")
    p.add_argument("--source", choices=SOURCE_CHOICES, help="only this source's rules (and the common ones)")
    p.add_argument(
        "--format",
        choices=["text", "json", "markdown"],
        default="text",
        help="text (a table), json (a list), or markdown: the whole catalogue as docs/RULES.md holds it "
        "(with --examples: json or text)",
    )
    p.add_argument("--examples", action="store_true", help="for each rule, the example that triggers it")
    p.set_defaults(func=cmd_rules)

    p = sub.add_parser("schema", help="the JSON Schema (draft 2020-12) of an event or response")
    p.add_argument("source", choices=SOURCE_CHOICES, help="the source: queue, mail or alb")
    p.add_argument(
        "kind", nargs="?", choices=["event", "response"], default="event", help="event (default) or response"
    )
    p.add_argument("--compact", action="store_true", help="one line")
    p.set_defaults(func=cmd_schema)

    _event_parsers(sub)
    add_check_parser(sub, resolve_handler, HandlerNotFound, _emit, [_add_app_dir, _add_format])

    p = serve_alb_arguments(sub.add_parser("serve-alb", help="serve a handler over HTTP as the load balancer would"))
    _add_app_dir(p)
    p.set_defaults(func=cmd_serve_alb)

    p = sub.add_parser("serve-mail", help="serve a handler as a mail-flow rule behind a real SMTP server")
    p.add_argument("handler", metavar="MODULE:FUNCTION", help="the handler, e.g. app:handler or app.py:handler")
    p.add_argument("--domain", action="append", required=True, dest="domains", help="an organisation domain (repeat)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8025, help="SMTP port (default 8025; 0 picks a free one)")
    p.add_argument("--maildir", default="maildir", help="where delivered mail is written (default ./maildir)")
    MailConfig.add_arguments(p)
    p.add_argument("--outbound", action="store_true", help="an outbound rule (default: inbound)")
    p.add_argument(
        "--isolation",
        choices=["process", "thread", "none"],
        default="process",
        help="where the handler runs (default: a worker process, killed past the timeout)",
    )
    p.add_argument(
        "--max-store-bytes",
        type=int,
        default=64 * 1024 * 1024,
        metavar="BYTES",
        help="raw messages kept readable through the content API (default 64 MiB); past it the oldest are dropped",
    )
    _add_app_dir(p)
    p.set_defaults(func=cmd_serve_mail)

    p = sub.add_parser(
        "replay",
        help="run a handler over events, an access log or a queue message dump; exit 1 on unreadable or invalid rows",
        epilog=_EXIT_CODES,
    )
    p.add_argument("handler", metavar="MODULE:FUNCTION", help="the handler, e.g. app:handler or app.py:handler")
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="events (JSON Lines, a JSON list, or one JSON document; .gz too), an access log (or a folder of them), "
        "a ReceiveMessage dump",
    )
    _add_app_dir(p)
    p.add_argument("--engine", choices=["local", "dask"], default="local", help="local (default) or a Dask cluster")
    p.add_argument("--scheduler", metavar="ADDRESS", help="dask: an existing scheduler (default: a LocalCluster)")
    p.add_argument("--workers", type=int, default=2, help="dask: LocalCluster workers (default 2)")
    p.add_argument("--threads", action="store_true", help="dask: LocalCluster workers as threads, not processes")
    p.add_argument("--partition-size", type=int, default=None, metavar="N", help="dask: events per partition")
    p.add_argument(
        "--source",
        choices=SOURCE_CHOICES,
        help="run only this source's events; events detected as another source are skipped and counted",
    )
    p.add_argument(
        "--force-source",
        action="store_true",
        help="with --source: run every event as that source, even one detected as another (checked against "
        "that source's contract first)",
    )
    p.add_argument(
        "--allow-invalid",
        action="store_true",
        help="exit 0 even when rows are unreadable or invalid (they are still reported)",
    )
    p.add_argument("--label", help="a 'handler' column with this value")
    p.add_argument("--timeout", type=float, default=None, help="function timeout in seconds")
    _add_settings(p, "outcome")
    p.add_argument("--out", metavar="FILE", help="write every row: .csv, or JSON Lines otherwise")
    p.add_argument("--progress", action="store_true", help="a progress bar while reading")
    _add_format(p)
    p.set_defaults(func=cmd_replay)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 nothing to report, 1 findings, 2 usage or read errors)."""
    args = build_parser().parse_args(argv)
    try:
        refused = prepare(args) if args.command in ("validate", "outcome", "replay") else None
        if refused is not None:
            print(f"fnkit {args.command}: {refused}", file=sys.stderr)
            return ERROR
        with escaped_output():  # a lone surrogate in a value, a name the terminal cannot show: escaped, printed
            code: int = args.func(args)
        return code
    except MissingDependency as exc:  # an extra is not installed: one line with the pip command, no traceback
        print(f"fnkit {args.command}: {exc}", file=sys.stderr)
        return 2
    except SettingError as exc:  # FNKIT_DIALECT, FNKIT_ISOLATION or [tool.fnkit] holds a bad value: one line
        print(f"fnkit {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    finally:
        finish(args)  # [tool.fnkit] is looked for where it was before this command


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
