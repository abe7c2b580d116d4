"""The `fnkit` command line: validate files, decide outcomes, list rules, serve handlers."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from . import rules as _rules
from ._report import Raw, Report


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    return Path(path).read_bytes()


def _source(name: str | None, value: Any):
    from ._sources import detect_source, source_module

    name = name or detect_source(value)
    return (name, source_module(name)) if name else (None, None)


def cmd_validate(args: argparse.Namespace) -> int:
    from ._sources import source_module, validate

    all_ok = True
    for path in args.files:
        try:
            data = _read(path)
        except OSError as exc:
            print(f"{path}: error: cannot read the file ({exc.strerror or exc})", file=sys.stderr)
            all_ok = False
            continue
        report: Report = source_module(args.source).validate_event(data) if args.source else validate(data)
        failed = not report.ok or (args.strict and report.warnings)
        all_ok = all_ok and not failed
        if args.format == "json":
            print(json.dumps({
                "file": path, "ok": not failed, "source": report.source, "dialect": report.dialect,
                "issues": [{"path": i.path, "severity": i.severity, "code": i.code, "message": i.message, "rule": i.rule} for i in report],
            }))
            continue
        for issue in report:
            print(f"{path}: {issue.path}: {issue.severity}: {issue.message} [{issue.rule or '-'}]")
        if not args.quiet:
            dialect = f", {report.dialect} spelling" if report.dialect else ""
            state = "ok" if not failed else "INVALID"
            print(f"{path}: {state} ({report.source or 'unknown source'}{dialect}; {len(report.errors)} error(s), {len(report.warnings)} warning(s))")
    return 0 if all_ok else 1


def cmd_outcome(args: argparse.Namespace) -> int:
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
    options: dict[str, Any] = {}
    if name == "queue":
        options["report_batch_item_failures"] = not args.no_report_failures
    elif name == "mail":
        options.update(mode=args.mode, fallback_action=args.fallback)
    elif name == "alb" and args.multi_value:
        options["multi_value"] = True
    result = module.outcome(event, Raw(response_bytes), **options)
    if args.format == "json":
        print(json.dumps({"source": name, "rule": result.rule, "reason": getattr(result, "explanation", None) or result.reason,
                          "rows": [_jsonable(r) for r in result.rows()],
                          "issues": [{"path": i.path, "severity": i.severity, "message": i.message, "rule": i.rule} for i in result.issues]},
                         default=str))
        return 0
    tag = " (inferred)" if _rules.get(result.rule).inferred else ""
    # the load balancer's `reason` is the status phrase; its sentence is `explanation`
    sentence = getattr(result, "explanation", None) or result.reason
    print(f"{name}: rule {result.rule}{tag}: {sentence}")
    for row in result.rows():
        shown = {k: v for k, v in row.items()
                 if k not in ("source", "reason", "rule", "inferred", "warnings", "explanation") and v not in (None, "")}
        print("  " + "  ".join(f"{k}={v}" for k, v in shown.items()))
    for issue in result.issues:
        print(f"  {issue.severity}: {issue.path}: {issue.message} [{issue.rule}]")
    return 0


def _jsonable(row: dict) -> dict:
    return {k: (v.decode("utf-8", "replace") if isinstance(v, bytes) else v) for k, v in row.items()}


def cmd_rules(args: argparse.Namespace) -> int:
    rows = _rules.catalogue(args.source)
    if args.format == "json":
        print(json.dumps([{"id": r.id, "source": r.source, "evidence": r.evidence, "origin": r.origin, "summary": r.summary} for r in rows], indent=1))
        return 0
    for r in rows:
        print(f"{r.id:<5} {r.source:<6} {r.evidence:<9} {r.summary}")
    return 0


def _load_handler(spec: str):
    import importlib

    module_name, _, attr = spec.partition(":")
    if not attr:
        raise SystemExit(f"fnkit: give the handler as MODULE:FUNCTION, not {spec!r}")
    sys.path.insert(0, str(Path.cwd()))
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise SystemExit(f"fnkit: module {module_name!r} has no {attr!r}") from None


def cmd_serve_alb(args: argparse.Namespace) -> int:
    from .alb._serve import cli_serve

    return cli_serve(args, _load_handler(args.handler)) or 0


def cmd_serve_mail(args: argparse.Namespace) -> int:
    from .mail._serve import cli_serve

    return cli_serve(args, _load_handler(args.handler)) or 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fnkit", description="Validate, decide and serve function event contracts (queue, mail, load balancer).")
    parser.add_argument("--version", action="version", version=f"fnkit {__import__('fnkit').__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("validate", help="check event files; exit 0 only when every file is valid")
    p.add_argument("files", nargs="+", metavar="FILE", help="JSON files ('-' for standard input)")
    p.add_argument("--source", choices=["queue", "mail", "alb"], help="skip detection and validate as this source")
    p.add_argument("--strict", action="store_true", help="warnings fail too")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the issues")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("outcome", help="what the platform does with a response to an event")
    p.add_argument("--event", required=True, metavar="FILE")
    p.add_argument("--response", required=True, metavar="FILE", help="the exact bytes the function returned")
    p.add_argument("--source", choices=["queue", "mail", "alb"])
    p.add_argument("--no-report-failures", action="store_true", help="queue: partial-batch reporting off (Q7)")
    p.add_argument("--mode", choices=["sync", "async"], default="sync", help="mail: rule mode")
    p.add_argument("--fallback", choices=["DEFAULT", "BOUNCE", "DROP"], default="DEFAULT", help="mail: fallback action")
    p.add_argument("--multi-value", action="store_true", help="load balancer: multi-value headers on")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_outcome)

    p = sub.add_parser("rules", help="the rules catalogue")
    p.add_argument("--source", choices=["queue", "mail", "alb"])
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_rules)

    p = sub.add_parser("serve-alb", help="serve a handler over HTTP as the load balancer would")
    p.add_argument("handler", metavar="MODULE:FUNCTION")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--multi-value", action="store_true")
    p.add_argument("--timeout", type=float, default=None, help="function timeout in seconds")
    p.add_argument("--health-check-interval", type=float, default=None)
    p.add_argument("--isolation", choices=["process", "thread", "none"], default="process",
                   help="where the handler runs (default: a worker process, killed past the timeout)")
    p.set_defaults(func=cmd_serve_alb)

    p = sub.add_parser("serve-mail", help="serve a handler as a mail-flow rule behind a real SMTP server")
    p.add_argument("handler", metavar="MODULE:FUNCTION")
    p.add_argument("--domain", action="append", required=True, dest="domains", help="an organisation domain (repeat)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8025)
    p.add_argument("--maildir", default="maildir")
    p.add_argument("--mode", choices=["sync", "async"], default="sync")
    p.add_argument("--fallback", choices=["DEFAULT", "BOUNCE", "DROP"], default="DEFAULT")
    p.add_argument("--rule-timeout-minutes", type=float, default=0)
    p.add_argument("--outbound", action="store_true")
    p.add_argument("--isolation", choices=["process", "thread", "none"], default="process",
                   help="where the handler runs (default: a worker process, killed past the timeout)")
    p.set_defaults(func=cmd_serve_mail)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
