"""`fnkit check MODULE:FUNCTION`: the command line's face of `fnkit.check`, in validate's formats and exit codes.

One record for the handler: its findings (one per rule broken, each with the shrunk event and the
handler's answer in the JSON's `findings`); exit 0 when it kept its contract, 1 with findings, 2 for a
usage error (a handler that cannot be imported, hypothesis missing).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ._formats import ERROR, Finding, Record, Run, counts, exit_code

#: where found cases are kept, in the folder the command runs in, so they are tried first next time
DATABASE = Path(".fnkit") / "check-examples"


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number of at least 1, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"a whole number of at least 1, not {text!r}")
    return value


def add_check_parser(
    sub: Any,
    resolve: Callable[..., Any],
    not_found: type[Exception],
    emit: Callable[..., int],
    common: Sequence[Callable[[argparse.ArgumentParser], None]],
) -> None:
    """`fnkit check`'s arguments, on the command line's subcommands; the command line lends what every command
    shares: how it imports a handler (`resolve`, raising `not_found`), writes a run (`emit`), and its common
    options (`common`: --app-dir, --format)."""
    from .._check import CHECK_SOURCES

    p = sub.add_parser(
        "check",
        help="run a handler on valid events and report the smallest event on which it breaks its contract",
        epilog="exit status: 0 nothing to report, 1 findings, 2 usage error or a handler that cannot be imported",
    )
    p.add_argument("handler", metavar="MODULE:FUNCTION", help="the handler, e.g. app:handler or app.py:handler")
    p.add_argument("--source", choices=CHECK_SOURCES, default="queue", help="the events to draw (default queue)")
    p.add_argument("--examples", type=_positive, default=200, metavar="N", help="events to try (default 200)")
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help=f"the same seed, the same events and findings (default: a fresh draw, each found case kept in "
        f"{DATABASE} and tried first next time)",
    )
    p.add_argument(
        "--isolation",
        choices=["process", "none"],
        default=None,
        help="where the handler runs: process (a worker: a hang or a crash is a finding; the default unless the "
        "project sets isolation) or none (in this process, for mocks such as moto)",
    )
    p.add_argument("--timeout", type=float, default=None, help="function timeout in seconds (default: the source's)")
    p.add_argument(
        "--no-database",
        action="store_true",
        help=f"without --seed: keep no found case (default: kept in {DATABASE} and tried first next time)",
    )
    for add in common:
        add(p)
    p.set_defaults(func=lambda args: cmd_check(args, resolve, not_found, emit))


def _isolation(given: str | None) -> str:
    """The isolation asked for, else the project's setting when it names one, else a worker process."""
    if given is not None:
        return given
    from .._settings.project import default_of

    value, where = default_of("isolation")
    return str(value) if where != "fnkit's built-in default" else "process"


def cmd_check(
    args: argparse.Namespace, resolve: Callable[..., Any], not_found: type[Exception], emit: Callable[..., int]
) -> int:
    """`fnkit check`: 0 when the handler kept its contract on every event tried, 1 with findings, 2 usage."""
    from .._check import check

    try:
        handler = resolve(args.handler, args.app_dir)
    except not_found as exc:
        print(f"fnkit check: {exc}", file=sys.stderr)
        return ERROR
    result = check(
        handler,
        args.source,
        examples=args.examples,
        seed=args.seed,
        isolation=_isolation(args.isolation),
        database=None if args.no_database else DATABASE,
        timeout_s=args.timeout,
    )
    findings = [Finding(args.handler, None, None, f.path, f.severity, f.says, f.rule, "check") for f in result.findings]
    record = Record(
        args.handler,
        "handler",
        "ok" if result.ok else "findings",
        result.ok,
        source=args.source,
        findings=findings,
        details={
            "examples": result.examples,
            "seed": result.seed,
            "findings": [
                {"rule": f.rule, "event": f.event, "answer": f.answer, "sentence": f.sentence, "platform": f.platform}
                for f in result.findings
            ],
        },
    )
    summary = counts([record])
    run = Run("check", [record], summary, exit_code([record]))
    return emit(args, run, lambda _: _text(result))


def _text(result: Any) -> None:
    print(str(result).splitlines()[0])
    for f in result.findings:
        print(f"\n[{f.rule}] {f.severity}: {f.says}")
        print(f"  answer: {json.dumps(f.answer, default=str, ensure_ascii=False)}")
        print(f"  event:  {json.dumps(f.event, default=str, ensure_ascii=False)}")


__all__ = ["DATABASE", "add_check_parser", "cmd_check"]
