"""The `fnkit` command line: validate files, decide outcomes, replay handlers, build events, list rules, serve.

Every checking command (`validate`, `outcome`, `replay`) exits as linters do: 0 when there
is nothing to report, 1 when there are findings, 2 for a usage error or an input that cannot
be read. Each writes `--format text|json|github|sarif|junit` (`fnkit.cli._formats`), gives
every input a record (an unreadable one too), and locates each issue as `file:line:col`
(`fnkit._engine.locate`) as well as by its JSONPath.

One file per family of commands, each with its arguments: `_validate` (validate, outcome),
`_replay`, `_rules` (rules, schema), `_build` (event build), `_serve` (serve-alb, serve-mail),
`_check` (check); below them what they share: `_common` (reading, settings, writing a run),
`_handlers` (importing MODULE:FUNCTION), `_inputs` (files, folders, rules set aside) and
`_formats` (the records and their formats).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .._optional import MissingDependency
from .._settings.project import SettingError
from ._build import cmd_event_build, event_parsers
from ._check import add_check_parser
from ._common import _EXIT_CODES, SOURCE_CHOICES, _add_app_dir, _add_format, _emit, _version
from ._formats import ERROR, escaped_output
from ._handlers import HandlerNotFound, resolve_handler
from ._inputs import finish, prepare
from ._replay import add_replay_parser, cmd_replay
from ._rules import add_rules_parser, add_schema_parser, cmd_rules, cmd_schema
from ._serve import add_serve_alb_parser, add_serve_mail_parser, cmd_serve_alb, cmd_serve_mail
from ._validate import add_outcome_parser, add_validate_parser, cmd_outcome, cmd_validate


def build_parser() -> argparse.ArgumentParser:
    """The `fnkit` argument parser: one sub-command per verb."""
    parser = argparse.ArgumentParser(
        prog="fnkit",
        description="Validate, decide and serve function event contracts (queue, mail, load balancer).",
        epilog=_EXIT_CODES,
    )
    parser.add_argument("--version", action="version", version=f"fnkit {_version()}", help="print the version")
    sub = parser.add_subparsers(dest="command", required=True)
    add_validate_parser(sub)
    add_outcome_parser(sub)
    add_rules_parser(sub)
    add_schema_parser(sub)
    event_parsers(sub)
    add_check_parser(sub, resolve_handler, HandlerNotFound, _emit, [_add_app_dir, _add_format])
    add_serve_alb_parser(sub)
    add_serve_mail_parser(sub)
    add_replay_parser(sub)
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


__all__ = [
    "SOURCE_CHOICES",
    "HandlerNotFound",
    "build_parser",
    "cmd_event_build",
    "cmd_outcome",
    "cmd_replay",
    "cmd_rules",
    "cmd_schema",
    "cmd_serve_alb",
    "cmd_serve_mail",
    "cmd_validate",
    "main",
    "resolve_handler",
]
