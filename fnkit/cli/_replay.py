"""`fnkit replay`: run a handler over events, access logs or message dumps, one record per input."""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .._replay.columns import agreement, agreement_text
from ._common import _EXIT_CODES, _LABELS, SOURCE_CHOICES, _add_app_dir, _add_format, _add_settings, _emit, _given
from ._formats import ERROR, Finding, Record, Run, counts, exit_code
from ._handlers import HandlerNotFound, _export_app_dirs, resolve_handler

if TYPE_CHECKING:
    from distributed import LocalCluster

    from .._import import ImportStream


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
        from .._import import Unreadable
        from .._sources import detect_source

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
    from .._import import files_of, is_json_lines, kind_of
    from .._replay.run import open_events, replay

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
        from .._replay.dask import _distributed

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


def add_replay_parser(sub: Any) -> None:
    """`fnkit replay`'s arguments."""
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
