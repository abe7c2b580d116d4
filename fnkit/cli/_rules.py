"""`fnkit rules` (the catalogue, each rule's one function, the examples) and `fnkit schema` (JSON Schema)."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import Any, cast

from .. import rules as _rules
from ._common import SOURCE_CHOICES


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
                # every function that finds problems of the rule (the engine stamps the id on its findings)
                "issued_by": _rules.issued_by(rule_id),
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
        print(f"issued by: {', '.join(cast(list[str], s['issued_by']))}")
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
    from .._sources import source_module

    schema = source_module(args.source).json_schema(args.kind)
    print(json.dumps(schema, indent=None if args.compact else 2, ensure_ascii=False))
    return 0


def add_rules_parser(sub: Any) -> None:
    """`fnkit rules`'s arguments."""
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


def add_schema_parser(sub: Any) -> None:
    """`fnkit schema`'s arguments."""
    p = sub.add_parser("schema", help="the JSON Schema (draft 2020-12) of an event or response")
    p.add_argument("source", choices=SOURCE_CHOICES, help="the source: queue, mail or alb")
    p.add_argument(
        "kind", nargs="?", choices=["event", "response"], default="event", help="event (default) or response"
    )
    p.add_argument("--compact", action="store_true", help="one line")
    p.set_defaults(func=cmd_schema)
