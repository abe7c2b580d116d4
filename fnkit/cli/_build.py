"""`fnkit event build queue|mail|alb`: a valid event of a source, printed, deterministic for a seed."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._common import _read
from ._formats import ERROR


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
    from .._sources import source_module

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


def event_parsers(sub: Any) -> None:
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
