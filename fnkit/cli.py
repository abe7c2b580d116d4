"""The `fnkit` command line: validate files, decide outcomes, list rules, serve handlers."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import rules as _rules
from ._report import Raw, Report

if TYPE_CHECKING:
    from distributed import LocalCluster

    from ._outcome import Outcome


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    return Path(path).read_bytes()


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


_JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")


def _documents(path: str, data: bytes) -> list[tuple[str, int | None, bytes]]:
    """The JSON documents of a file: (label, line number or None, bytes). A JSON Lines file (by its suffix, or
    several lines of which the first is a JSON value by itself) gives one per non-blank line, labelled file:line."""
    import msgspec

    from ._report import strip_bom

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
        return [(path, None, data)]
    return [(f"{path}:{n}", n, line) for n, line in numbered]


def _event_report(data: bytes, args: argparse.Namespace) -> Report:
    from ._config import accepted
    from ._report import MISSING, decode_json
    from ._sources import detect_source, lookalike_issue, source_module, validate

    name = args.source or detect_source(data)
    if name is None:
        return validate(data)  # says what the value is (G0, G3)
    module = source_module(name)
    report: Report = module.validate_event(data, **accepted(module.validate_event, _given(args, name)))
    if args.source and not report.ok:  # a named source that does not fit: say what the value looks like
        value, _ = decode_json(data, "G0")
        issue = lookalike_issue(value, "warning") if value is not MISSING else None
        if issue is not None:
            report = Report([issue, *report], report.source, report.dialect, report.subject)
    return report


def _read_event(path: str) -> tuple[Any, str | None]:
    """(the decoded event of --event, None) or (None, why it cannot be used)."""
    from ._report import MISSING, decode_json

    try:
        data = _read(path)
    except OSError as exc:
        return None, f"{path}: error: cannot read the event file ({exc.strerror or exc})"
    documents = _documents(path, data)
    if len(documents) > 1:
        return None, f"{path}: error: --event takes one event; this file holds {len(documents)} (JSON Lines)"
    value, issues = decode_json(data, "G0")
    if value is MISSING:
        return None, f"{path}: {issues[-1].path}: error: {issues[-1].message}"
    return value, None


def cmd_validate(args: argparse.Namespace) -> int:
    """`fnkit validate`: check event (or response) files; 0 only when every one is valid."""
    from ._sources import validate_response

    if args.event is not None and not args.response:
        print("fnkit validate: --event goes with --response (the event the responses answer)", file=sys.stderr)
        return 2
    event = None
    if args.event is not None:
        event, why = _read_event(args.event)
        if why is not None:
            print(why, file=sys.stderr)
            return 2
    all_ok = True
    for path in args.files:
        try:
            data = _read(path)
        except OSError as exc:
            print(f"{path}: error: cannot read the file ({exc.strerror or exc})", file=sys.stderr)
            all_ok = False
            continue
        for label, line, document in _documents(path, data):
            if args.response:
                report = validate_response(document, source=args.source, event=event, **_given(args))
            else:
                report = _event_report(document, args)
            failed = not report.ok or bool(args.strict and report.warnings)
            all_ok = all_ok and not failed
            _print_report(args, path, label, line, report, failed)
    return 0 if all_ok else 1


def _print_report(
    args: argparse.Namespace, path: str, label: str, line: int | None, report: Report, failed: bool
) -> None:
    if args.format == "json":
        doc: dict[str, Any] = {"file": path}
        if line is not None:
            doc["line"] = line
        doc.update(
            {
                "kind": report.subject,
                "ok": not failed,
                "source": report.source,
                "dialect": report.dialect,
                "issues": [
                    {"path": i.path, "severity": i.severity, "code": i.code, "message": i.message, "rule": i.rule}
                    for i in report
                ],
            }
        )
        print(json.dumps(doc))
        return
    for issue in report:
        print(f"{label}: {issue.path}: {issue.severity}: {issue.message} [{issue.rule or '-'}]")
    if not args.quiet:
        dialect = f", {report.dialect} spelling" if report.dialect else ""
        state = "ok" if not failed else "INVALID"
        what = report.source or "unknown source"
        if report.subject != "event":
            what += f" {report.subject}"
        print(f"{label}: {state} ({what}{dialect}; {len(report.errors)} error(s), {len(report.warnings)} warning(s))")


def cmd_outcome(args: argparse.Namespace) -> int:
    """`fnkit outcome`: what the platform does with a response to an event."""
    from ._report import MISSING, decode_json

    try:
        event_bytes = _read(args.event)
        response_bytes = _read(args.response)
    except OSError as exc:
        print(f"error: cannot read {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    event, issues = decode_json(event_bytes, "G0")
    if event is MISSING:
        print(f"{args.event}: {issues[0].path}: error: {issues[0].message}", file=sys.stderr)
        return 2
    name, module = _source(args.source, event)
    if module is None:
        print(f"{args.event}: error: not an event of a known source (queue, mail, alb)", file=sys.stderr)
        return 2
    report = module.validate_event(event)
    for issue in report.errors:
        print(f"{args.event}: {issue.path}: error: {issue.message} [{issue.rule}]", file=sys.stderr)
    result: Outcome = module.outcome(event, Raw(response_bytes), **_given(args, name))
    if args.format == "json":
        print(
            json.dumps(
                {
                    "source": name,
                    "rule": result.rule,
                    "reason": result.explanation,
                    "rows": [_jsonable(r) for r in result.rows()],
                    "issues": [
                        {"path": i.path, "severity": i.severity, "message": i.message, "rule": i.rule}
                        for i in result.issues
                    ],
                },
                default=str,
            )
        )
        return 0
    tag = " (inferred)" if result.inferred else ""
    print(f"{name}: rule {result.rule}{tag}: {result.explanation}")
    for row in result.rows():
        shown = {
            k: v
            for k, v in row.items()
            if k not in ("source", "reason", "rule", "inferred", "warnings", "explanation") and v not in (None, "")
        }
        print("  " + "  ".join(f"{k}={v}" for k, v in shown.items()))
    for issue in result.issues:
        print(f"  {issue.severity}: {issue.path}: {issue.message} [{issue.rule}]")
    return 0


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.decode("utf-8", "replace") if isinstance(v, bytes) else v) for k, v in row.items()}


def cmd_rules(args: argparse.Namespace) -> int:
    """`fnkit rules`: print the rules catalogue (or, with --examples, the example of each rule)."""
    rows = _rules.catalogue(args.source)
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


def _load_handler(spec: str) -> Callable[..., Any]:
    import importlib

    module_name, _, attr = spec.partition(":")
    if not attr:
        raise SystemExit(f"fnkit: give the handler as MODULE:FUNCTION, not {spec!r}")
    sys.path.insert(0, str(Path.cwd()))
    module = importlib.import_module(module_name)
    try:
        handler: Callable[..., Any] = getattr(module, attr)
    except AttributeError:
        raise SystemExit(f"fnkit: module {module_name!r} has no {attr!r}") from None
    return handler


def cmd_serve_alb(args: argparse.Namespace) -> int:
    """`fnkit serve-alb`: serve a handler over HTTP as the load balancer would."""
    from .alb._serve import cli_serve

    return cli_serve(args, _load_handler(args.handler)) or 0


def cmd_serve_mail(args: argparse.Namespace) -> int:
    """`fnkit serve-mail`: serve a handler as a mail-flow rule behind a real SMTP server."""
    from .mail._serve import cli_serve

    return cli_serve(args, _load_handler(args.handler)) or 0


def cmd_replay(args: argparse.Namespace) -> int:
    """`fnkit replay`: run a handler over events, an access log or a queue message dump."""
    from ._import import chain, open_events
    from ._replay import replay

    handler = _load_handler(args.handler)
    try:
        streams = [open_events(path, progress=args.progress) for path in args.inputs]
    except (OSError, TypeError, ValueError) as exc:
        print(f"fnkit replay: {exc}", file=sys.stderr)
        return 2
    options: dict[str, Any] = {"source": args.source, "label": args.label, **_given(args)}
    if args.timeout is not None:
        options["timeout_s"] = args.timeout
    client: Any = None  # dask: the scheduler's address, or a Client of the cluster this command starts
    cluster: LocalCluster | None = None  # started here: closed here
    if args.engine == "dask":
        from ._dask import get_client  # noqa: F401 - says how to install the Dask engine when it is missing

        if args.scheduler:
            client = args.scheduler
        else:
            import distributed

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
            chain(streams),
            engine=args.engine,
            client=client,
            compute=True,
            partition_size=args.partition_size,
            **{k: v for k, v in options.items() if v is not None},
        )
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
    for stream in streams:
        print(stream.summary())
        for issue in stream.issues:
            print(f"  {issue.path}: {issue.severity}: {issue.message}")
    print(
        f"{len(frame)} row(s) from {frame['event'].nunique() if len(frame) else 0} event(s) on the {args.engine} engine"
    )
    if len(frame):
        counts = frame.groupby(["source", "result", "rule"], dropna=False, sort=True).size().rename("rows")
        print(counts.reset_index().to_string(index=False))
    if "agrees" in frame.columns:
        compared = frame["agrees"].dropna()
        print(f"agrees with the log: {int(compared.sum())} of {len(compared)} request(s)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The `fnkit` argument parser: one sub-command per verb."""
    from .alb import AlbConfig
    from .alb._serve import add_arguments as serve_alb_arguments
    from .mail import MailConfig

    parser = argparse.ArgumentParser(
        prog="fnkit", description="Validate, decide and serve function event contracts (queue, mail, load balancer)."
    )
    parser.add_argument("--version", action="version", version=f"fnkit {__import__('fnkit').__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("validate", help="check event (or response) files; exit 0 only when every one is valid")
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="JSON files, or JSON Lines files (one event per line); '-' for standard input",
    )
    p.add_argument("--source", choices=["queue", "mail", "alb"], help="skip detection and validate as this source")
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
    MailConfig.add_arguments(p, ["mode"], prefix="mail responses: ")
    p.add_argument("--strict", action="store_true", help="warnings fail too")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the issues")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("outcome", help="what the platform does with a response to an event")
    p.add_argument("--event", required=True, metavar="FILE")
    p.add_argument("--response", required=True, metavar="FILE", help="the exact bytes the function returned")
    p.add_argument("--source", choices=["queue", "mail", "alb"])
    _add_settings(p, "outcome")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_outcome)

    p = sub.add_parser("rules", help="the rules catalogue")
    p.add_argument("--source", choices=["queue", "mail", "alb"])
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("--examples", action="store_true", help="for each rule, the example that triggers it")
    p.set_defaults(func=cmd_rules)

    p = sub.add_parser("schema", help="the JSON Schema (draft 2020-12) of an event or response")
    p.add_argument("source", choices=["queue", "mail", "alb"])
    p.add_argument("kind", nargs="?", choices=["event", "response"], default="event")
    p.add_argument("--compact", action="store_true", help="one line")
    p.set_defaults(func=cmd_schema)

    p = serve_alb_arguments(sub.add_parser("serve-alb", help="serve a handler over HTTP as the load balancer would"))
    p.set_defaults(func=cmd_serve_alb)

    p = sub.add_parser("serve-mail", help="serve a handler as a mail-flow rule behind a real SMTP server")
    p.add_argument("handler", metavar="MODULE:FUNCTION")
    p.add_argument("--domain", action="append", required=True, dest="domains", help="an organisation domain (repeat)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8025)
    p.add_argument("--maildir", default="maildir")
    MailConfig.add_arguments(p)
    p.add_argument("--outbound", action="store_true")
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
    p.set_defaults(func=cmd_serve_mail)

    p = sub.add_parser("replay", help="run a handler over events, an access log or a queue message dump")
    p.add_argument("handler", metavar="MODULE:FUNCTION")
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="JSON Lines events (.gz too), an access log (or a folder of them), a ReceiveMessage dump",
    )
    p.add_argument("--engine", choices=["local", "dask"], default="local")
    p.add_argument("--scheduler", metavar="ADDRESS", help="dask: an existing scheduler (default: a LocalCluster)")
    p.add_argument("--workers", type=int, default=2, help="dask: LocalCluster workers (default 2)")
    p.add_argument("--threads", action="store_true", help="dask: LocalCluster workers as threads, not processes")
    p.add_argument("--partition-size", type=int, default=None, metavar="N", help="dask: events per partition")
    p.add_argument("--source", choices=["queue", "mail", "alb"])
    p.add_argument("--label", help="a 'handler' column with this value")
    p.add_argument("--timeout", type=float, default=None, help="function timeout in seconds")
    _add_settings(p, "outcome")
    p.add_argument("--out", metavar="FILE", help="write every row: .csv, or JSON Lines otherwise")
    p.add_argument("--progress", action="store_true", help="a progress bar while reading")
    p.set_defaults(func=cmd_replay)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
