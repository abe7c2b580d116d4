"""`fnkit serve-alb` and `fnkit serve-mail`: a handler behind a real HTTP or SMTP server on this machine."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import _add_app_dir
from ._handlers import _load_handler


def cmd_serve_alb(args: argparse.Namespace) -> int:
    """`fnkit serve-alb`: serve a handler over HTTP as the load balancer would."""
    from ..alb._serve import cli_serve

    _load_handler(args.handler, args.app_dir)  # one line and exit 2 when it cannot be imported (--app-dir first)
    return cli_serve(args) or 0  # the server keeps the import path: its workers import the handler themselves


def cmd_serve_mail(args: argparse.Namespace) -> int:
    """`fnkit serve-mail`: serve a handler as a mail-flow rule behind a real SMTP server."""
    from ..mail._serve import cli_serve

    return cli_serve(args, _load_handler(args.handler, args.app_dir)) or 0


def add_serve_alb_parser(sub: Any) -> None:
    """`fnkit serve-alb`'s arguments (the server's own, then --app-dir)."""
    from ..alb._serve import add_arguments as serve_alb_arguments

    p = serve_alb_arguments(sub.add_parser("serve-alb", help="serve a handler over HTTP as the load balancer would"))
    _add_app_dir(p)
    p.set_defaults(func=cmd_serve_alb)


def add_serve_mail_parser(sub: Any) -> None:
    """`fnkit serve-mail`'s arguments."""
    from ..mail import MailConfig

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
