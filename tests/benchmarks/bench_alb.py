"""How fast the load balancer's rules are: the ALB rows of bench_validate.py, then the response side.

A plain script (pytest collects only test_*.py):
`python tests/benchmarks/bench_alb.py [--rounds N] [--quick]`.

Rows: `validate_event` of a GET with 15 headers (bench_validate's ALB rows, with their floors
and Powertools' AlbModel when installed), then `validate_response` and `outcome` of a plain
200 answer, a multi-value answer with cookies, a refused WebSocket upgrade (A1) and an
invalid answer (502), each in µs per call (median of interleaved rounds) and as a ratio to
`json.loads` of the response's JSON text. Last, the CPU time (the thread's own, best of
`--rounds` repeats: what a busy machine disturbs least) of each event rule over the typed
event, of validate_event, validate_response and outcome.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import timeit
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmark the working tree

from tests.benchmarks.bench_validate import ROOT, Table, absolute_us, alb_rows, load_powertools, ratio


def response_rows(table: Table, rounds: int) -> None:
    from fnkit import alb

    event = alb.build_event("GET", "/orders", query="page=2", headers={"accept": "application/json"}, seed=1)
    multi_event = alb.build_event("GET", "/orders", headers={"accept": "*/*"}, multi_value=True, seed=1)
    upgrade = alb.build_event("GET", "/chat", seed=1)
    upgrade["headers"]["upgrade"] = "websocket"
    plain = {
        "statusCode": 200,
        "statusDescription": "200 OK",
        "headers": {"content-type": "application/json", "cache-control": "no-store"},
        "body": '{"orders": [1, 2, 3]}',
        "isBase64Encoded": False,
    }
    multi = {
        "statusCode": 200,
        "multiValueHeaders": {"set-cookie": ["a=1", "b=2"], "content-type": ["text/html"]},
        "body": "<p>hi</p>",
    }
    invalid = {"statusCode": "200", "headers": {"x": 1}, "body": "ok"}
    cases = [
        ("plain 200", event, plain, {}),
        ("multi-value 200, cookies", multi_event, multi, {"multi_value": True}),
        ("invalid (502)", event, invalid, {}),
    ]
    for name, ev, response, options in cases:
        text = json.dumps(response)

        def loads(text: str = text) -> Any:
            return json.loads(text)

        def validate(r: Any = response, o: dict[str, Any] = options) -> Any:
            return alb.validate_response(r, **o)

        def decide(e: Any = ev, r: Any = response, o: dict[str, Any] = options) -> Any:
            return alb.outcome(e, r, **o)

        table.ratio_row(f"alb validate_response, {name}", ratio(validate, loads, rounds), None)
        table.ratio_row(f"alb outcome, {name}", ratio(decide, loads, rounds), None)
    assert alb.outcome(upgrade, plain).status == 400
    us = absolute_us(lambda: alb.outcome(upgrade, plain), rounds)
    table.add("alb outcome, WebSocket upgrade refused (A1)", f"{us:.2f} µs", "-", None)
    us = absolute_us(lambda: alb.refusal(event), rounds)
    table.add("alb refusal, a request that is forwarded", f"{us:.2f} µs", "-", None)


def cpu_us(fn: Any, number: int, rounds: int) -> float:
    """The thread's CPU time per call, best of `rounds` repeats, in µs."""
    return min(timeit.repeat(fn, number=number, repeat=rounds, timer=time.thread_time)) / number * 1e6


def cpu_rows(table: Table, rounds: int) -> None:
    import msgspec

    from fnkit import alb
    from fnkit._engine.validate import Seen
    from fnkit.alb._event import EVENT_CONTRACT, EVENT_SHAPE
    from tests.benchmarks.bench_validate import alb_get_with

    event = alb_get_with(alb, 15)
    typed = msgspec.convert(event, EVENT_SHAPE.struct, strict=True)
    tables = EVENT_SHAPE.tables(typed)
    for check in EVENT_CONTRACT.checks:
        us = cpu_us(lambda check=check: check(typed, Seen(None, tables)), 20_000, rounds)
        table.add(f"cpu: {check.__name__} (typed GET, 15 headers)", f"{us:.3f} µs", "-", None)
    text = json.dumps(event)
    table.add("cpu: json.loads of that event", f"{cpu_us(lambda: json.loads(text), 2_000, rounds):.2f} µs", "-", None)
    table.add("cpu: validate_event", f"{cpu_us(lambda: alb.validate_event(event), 2_000, rounds):.2f} µs", "-", None)
    small = alb.build_event("GET", "/orders", seed=1)
    plain = {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": '{"orders": [1]}'}
    table.add(
        "cpu: validate_response, plain 200",
        f"{cpu_us(lambda: alb.validate_response(plain), 500, rounds):.2f} µs",
        "-",
        None,
    )
    table.add("cpu: outcome, plain 200", f"{cpu_us(lambda: alb.outcome(small, plain), 500, rounds):.2f} µs", "-", None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds per ratio (median taken)")
    parser.add_argument("--quick", action="store_true", help="5 rounds")
    args = parser.parse_args(argv)
    rounds = 5 if args.quick else args.rounds

    import fnkit

    print(
        f"fnkit {fnkit.__version__} from {Path(fnkit.__file__).parent} (root {ROOT}); Python "
        f"{sys.version.split()[0]}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    _, alb_model, missing = load_powertools()
    if missing:
        print(f"Powertools parser models not installed ({missing})")
    table = Table()
    alb_rows(table, rounds, alb_model)
    response_rows(table, rounds)
    cpu_rows(table, rounds)
    table.print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
