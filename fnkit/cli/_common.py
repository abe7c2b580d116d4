"""What every command of the command line shares: reading an input, the settings given as options, locating
issues in their file, writing a run in the format asked for, and the options common to several commands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .._engine.report import Issue
from ._formats import FORMAT_HELP, FORMATS, Finding, Run, render
from ._inputs import add_ignore, say_ignored, set_aside

SOURCE_CHOICES = ("queue", "mail", "alb")


def _version() -> str:
    from .. import __version__

    return str(__version__)


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    return Path(path).read_bytes()


def _cannot_read(exc: OSError) -> str:
    return f"cannot read the file ({exc.strerror or exc})"


def _source(name: str | None, value: Any) -> tuple[str, Any] | tuple[None, None]:
    from .._sources import detect_source, source_module

    name = name or detect_source(value)
    return (name, source_module(name)) if name else (None, None)


_LABELS = {"queue": "queue", "mail": "mail", "alb": "load balancer"}


def _add_settings(parser: argparse.ArgumentParser, verb: str) -> None:
    """The options of the settings each source's `verb` (outcome, run, ...) takes, made from the sources' configs."""
    from .._settings.config import settings_of
    from .._sources import SOURCES, source_module

    for name in SOURCES:
        config_class, names = settings_of(getattr(source_module(name), verb))
        if config_class is not None:
            config_class.add_arguments(parser, names, prefix=f"{_LABELS[name]}: ")


def _given(args: argparse.Namespace, source: str | None = None) -> dict[str, Any]:
    """The settings given on the command line (of one source's configuration, or of any)."""
    from .._sources import SOURCES, source_module

    given: dict[str, Any] = {}
    for name in [source] if source else SOURCES:
        given.update(source_module(name).Config.given(args))
    return given


def _findings(report: Sequence[Issue], file: str, data: bytes | str | None, first_line: int | None) -> list[Finding]:
    """The issues of one JSON document located in its file: line and column of each path (read only when needed)."""
    from .._engine.locate import Locator

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


_EXIT_CODES = "exit status: 0 nothing to report, 1 findings, 2 usage error or an input that cannot be read"


def _add_app_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--app-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder to import the handler from, put first on sys.path (repeat; the current folder comes next)",
    )
