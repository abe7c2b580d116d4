"""How fast the contract engine is, as ratios measured in one process, each beside its target.

A plain script (pytest collects only test_*.py): `python3 kit.py bench`, or
`python tests/benchmarks/bench_validate.py [--rounds N] [--quick] [--check]`.

Each ratio is the median, over `--rounds` interleaved rounds, of (fnkit's time / the baseline's
time) measured back to back in the same round, in this thread's CPU time, so a machine that gets busier or quieter
affects both sides alike. Baselines: `json.loads` of the same event's JSON text (bytes for
the bytes row), and Powertools' parser models (`aws-lambda-powertools[parser]`, the `bench`
extra), which check no digest. Rows and targets are those of issue 30 ("The contract engine"):
each validate and parse row beside json.loads, then how far it is from Powertools (the aim: faster
on every case; mail has no Powertools model). Floors (what MD5 alone, the compiled decode alone,
the declared patterns cost) are printed beside them, so that a missed target comes with what it
cannot go below. `--check` exits 1 when a target is missed.

The QueueSim row runs `bench_sim.py --sim-only` in a fresh process (its peak RSS is that
process's own); `import fnkit` is timed in fresh interpreters (best of 7), with fnkit's bytecode written once
beforehand as an installed package has it (and, in the note, compiling every module each time, as a machine that
sets PYTHONDONTWRITEBYTECODE does).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmark the working tree

HEAVY_MODULES = ("pandas", "ipywidgets", "msgspec")


def _timeit(fn: Callable[[], Any], number: int) -> float:
    """Seconds of this thread's CPU time for `number` calls: on a shared machine, time spent waiting for a core
    is not counted (wall time would be, on one side of a ratio and not the other)."""
    return timeit.Timer(fn, timer=time.thread_time).timeit(number)


def bodies(n: int, size: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 "
    return ["".join(rng.choice(alphabet) for _ in range(size)) for _ in range(n)]


def _number(fn: Callable[[], Any], floor_s: float = 0.02) -> int:
    number = 1
    while _timeit(fn, number=number) < floor_s:
        number *= 2
    return number


def ratio(fn: Callable[[], Any], base: Callable[[], Any], rounds: int) -> tuple[float, float, float]:
    """(median of per-round time ratios fn/base, fn's median µs per call, base's median µs per call)."""
    n_fn, n_base = _number(fn), _number(base)
    ratios, fn_us, base_us = [], [], []
    for _ in range(rounds):
        a = _timeit(fn, number=n_fn) / n_fn
        b = _timeit(base, number=n_base) / n_base
        ratios.append(a / b)
        fn_us.append(a * 1e6)
        base_us.append(b * 1e6)
    return statistics.median(ratios), statistics.median(fn_us), statistics.median(base_us)


def absolute_us(fn: Callable[[], Any], rounds: int) -> float:
    n = _number(fn)
    return statistics.median(_timeit(fn, number=n) / n for _ in range(rounds)) * 1e6


class Table:
    def __init__(self) -> None:
        self.rows: list[list[str]] = []
        self.misses: list[str] = []

    def add(self, case: str, measured: str, target: str, ok: bool | None, note: str = "") -> None:
        verdict = "" if ok is None else ("PASS" if ok else "MISS")
        self.rows.append([case, measured, target, verdict, note])
        if ok is False:
            self.misses.append(f"{case}: {measured} (target {target})")

    def ratio_row(
        self,
        case: str,
        r: tuple[float, float, float],
        target: float | None,
        *,
        faster: bool = False,
        base: str = "json.loads",
        note: str = "",
    ) -> None:
        value, fn_us, base_us = r
        if faster and target is not None:  # "at least N times faster than base": base/fnkit >= N
            speed = 1 / value
            self.add(
                case,
                f"{speed:.2f}× faster than {base}",
                f"≥{target:.1f}×",
                speed >= target,
                note or f"{fn_us:.2f} µs vs {base_us:.2f} µs",
            )
        else:
            self.add(
                case,
                f"{value:.2f}× {base}",
                "-" if target is None else f"≤{target:.2f}×",
                None if target is None else value <= target,
                note or f"{fn_us:.2f} µs vs {base_us:.2f} µs",
            )

    def powertools_row(self, case: str, r: tuple[float, float, float] | None) -> None:
        """How far a row is from Powertools (fnkit's time / Powertools' time, same round): the aim is below 1."""
        if r is None:
            self.add(f"  {case} vs Powertools", "not installed", "aim: faster", None)
            return
        value, fn_us, base_us = r
        how = f"{1 / value:.2f}× as fast as Powertools" if value > 1 else f"{1 / value:.2f}× faster than Powertools"
        self.add(f"  {case} vs Powertools", how, "aim: faster", None, f"{fn_us:.2f} µs vs {base_us:.2f} µs")

    def print(self) -> None:
        head = ["case", "measured", "target", "", "note"]
        widths = [max(len(r[i]) for r in [head, *self.rows]) for i in range(len(head))]
        for n, row in enumerate([head, *self.rows]):
            print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
            if n == 0:
                print("  ".join("-" * w for w in widths))


def load_powertools() -> tuple[Any, Any, str | None]:
    try:
        from aws_lambda_powertools.utilities.parser.models import AlbModel, SqsModel
    except Exception as exc:  # noqa: BLE001 - any failure means: no Powertools rows
        return None, None, f"{type(exc).__name__}: {exc}"
    return SqsModel, AlbModel, None


BROWSER_HEADERS = [
    ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-language", "en-GB,en;q=0.9"),
    ("cache-control", "no-cache"),
    ("cookie", "session=8f14e45fceea167a5a36dedd4bea2543; theme=dark"),
    ("pragma", "no-cache"),
    ("referer", "https://shop.example.com/cart"),
    ("sec-fetch-dest", "document"),
    ("sec-fetch-mode", "navigate"),
    ("sec-fetch-site", "same-origin"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"),
    ("dnt", "1"),
    ("sec-ch-ua-platform", '"Linux"'),
    ("if-none-match", 'W/"5e-18f2c"'),
]


def alb_get_with(alb: Any, total_headers: int) -> dict[str, Any]:
    """A GET whose event carries `total_headers` headers (the builder adds host, trace and x-forwarded-*)."""
    added = len(alb.build_event("GET", "/path", dialect="aws")["headers"])
    extra = BROWSER_HEADERS[: max(0, total_headers - added)]
    event: dict[str, Any] = alb.build_event("GET", "/path", query="page=2&sort=price", headers=extra, dialect="aws")
    return event


IMPORT_PROBE = """
import sys, time
t = time.perf_counter()
import fnkit
elapsed = time.perf_counter() - t
print(elapsed * 1000)
print(",".join(m for m in {heavy!r} if m in sys.modules))
"""


def import_ms(runs: int = 7, *, compiled: bool = True) -> tuple[float, list[str]]:
    """The best of `runs` imports of fnkit in fresh interpreters, in ms, and the heavy modules any of them loaded.

    `compiled`: with fnkit's bytecode written once beforehand into a folder of its own (PYTHONPYCACHEPREFIX), as an
    installed package has it (pip compiles what it installs); else as this environment leaves it (a machine that
    sets PYTHONDONTWRITEBYTECODE compiles every module again in every interpreter)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    cache = None
    if compiled:
        cache = tempfile.TemporaryDirectory(prefix="fnkit-import-")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache.name
        runs += 1  # the first writes the bytecode: not counted
    best, loaded = float("inf"), set()
    for k in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", IMPORT_PROBE.format(heavy=HEAVY_MODULES)],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        if not (compiled and k == 0):
            best = min(best, float(out[0]))
        loaded |= {m for m in (out[1] if len(out) > 1 else "").split(",") if m}
    if cache is not None:
        cache.cleanup()
    return best, sorted(loaded)


def _check_ok(report: Any, what: str) -> None:
    if not report.ok or len(report):
        raise SystemExit(f"the benchmark's {what} is not clean: {report!r}")


def unconstrained(t: Any, done: dict[int, Any] | None = None) -> Any:
    """A copy of a declared type with every Text made a plain string: its Struct is the compiled check without
    the declared patterns and length bounds (a floor row: what those cost)."""
    from dataclasses import replace

    from fnkit._engine.shape import STR, ListOf, MapOf, Nullable, Shape, Text

    done = {} if done is None else done
    if isinstance(t, Text):
        return STR
    if isinstance(t, Nullable):
        return Nullable(unconstrained(t.inner, done))
    if isinstance(t, ListOf):
        return replace(t, item=unconstrained(t.item, done))
    if isinstance(t, MapOf):
        return MapOf(unconstrained(t.value, done))
    if isinstance(t, Shape):
        if id(t) not in done:
            fields = [replace(f, type=unconstrained(f.type, done)) for f in t.fields]
            done[id(t)] = Shape(t.name, fields, t.rule, t.unknown, t.doc)
        return done[id(t)]
    return t


def constraint_rows(table: Table, rounds: int, shape: Any, event: Any, base: Callable[[], Any]) -> None:
    """Two floor rows: msgspec.convert of the event with the declared constraints (the compiled check), and
    without its Text patterns and length bounds (what msgspec does in C alone; the difference is Python's `re`,
    which msgspec calls once per constrained string)."""
    import msgspec

    struct, plain = shape.struct, unconstrained(shape).struct
    table.ratio_row(
        "  floor: msgspec.convert(dict) alone (the compiled check)",
        ratio(lambda: msgspec.convert(event, struct, strict=True), base, rounds),
        None,
    )
    table.ratio_row(
        "  floor: the same without the declared patterns and bounds",
        ratio(lambda: msgspec.convert(event, plain, strict=True), base, rounds),
        None,
    )


def rules_rows(table: Table, rounds: int, contract: Any, make: Callable[[], Any], base: Callable[[], Any]) -> None:
    """Two floor rows of a validate_event row: the semantic rules' own cost (each rule called directly over one
    typed value), and the whole pipeline called step by step without the engine around it (compiled read,
    tables, the spelling check, the rules): what is left of the row when the engine costs nothing."""
    from fnkit._engine.validate import Seen

    contract.check(make())  # compiles the contract's parts
    typed = make()
    shape = contract.shape
    tables = shape.tables(typed)
    checks = contract.checks

    def rules() -> None:
        seen = Seen(None, tables)
        for check in checks:
            check(typed, seen)

    def pipeline() -> None:
        value = make()
        columns = shape.tables(value)
        if shape.spellings:
            shape.spelled_once(value, columns)
        seen = Seen(None, columns)
        for check in checks:
            check(value, seen)

    names = ", ".join(c.__name__.removeprefix("check_") for c in checks)
    own = ratio(rules, base, rounds)
    table.ratio_row(f"  floor: the {len(checks)} rules' own cost", own, None, note=f"{own[1]:.2f} µs: {names}")
    table.ratio_row(
        "  floor: compiled read + tables + spellings + rules, no engine", ratio(pipeline, base, rounds), None
    )


def queue_rows(table: Table, rounds: int, sqs_model: Any) -> None:
    import msgspec

    from fnkit import queue
    from fnkit.queue import md5_of_body
    from fnkit.queue._event import EVENT_CONTRACT, EVENT_SHAPE

    event = queue.build_event(bodies(10, 200, 1), dialect="aws", seed=1)
    text = json.dumps(event)
    data = text.encode()
    _check_ok(queue.validate_event(event), "queue event")
    loads = lambda: json.loads(text)  # noqa: E731
    table.ratio_row(
        "queue, 10 × 200 B, validate_event(dict)", ratio(lambda: queue.validate_event(event), loads, rounds), 1.3
    )
    if sqs_model is not None:
        sqs_model.model_validate(event)
        sqs_model.model_validate_json(data)
    pt = sqs_model is not None
    table.powertools_row(
        "validate_event(dict): SqsModel.model_validate (no digest)",
        ratio(lambda: queue.validate_event(event), lambda: sqs_model.model_validate(event), rounds) if pt else None,
    )
    table.ratio_row(
        "queue, validate_event(bytes), decoding included",
        ratio(lambda: queue.validate_event(data), lambda: json.loads(data), rounds),
        1.5,
    )
    table.powertools_row(
        "validate_event(bytes): SqsModel.model_validate_json",
        ratio(lambda: queue.validate_event(data), lambda: sqs_model.model_validate_json(data), rounds) if pt else None,
    )
    table.ratio_row("queue, parse_event(dict)", ratio(lambda: queue.parse_event(event), loads, rounds), 1.3)
    table.powertools_row(
        "parse_event(dict): SqsModel.model_validate",
        ratio(lambda: queue.parse_event(event), lambda: sqs_model.model_validate(event), rounds) if pt else None,
    )
    struct = EVENT_SHAPE.struct
    records = event["Records"]
    table.ratio_row(
        "  floor: MD5 of the 10 bodies", ratio(lambda: [md5_of_body(r["body"]) for r in records], loads, rounds), None
    )
    constraint_rows(table, rounds, EVENT_SHAPE, event, loads)
    decoder = msgspec.json.Decoder(struct)
    table.ratio_row(
        "  floor: msgspec decode(bytes) alone",
        ratio(lambda: decoder.decode(data), lambda: json.loads(data), rounds),
        None,
    )
    typed = msgspec.convert(event, struct, strict=True)
    tables = EVENT_SHAPE.tables(typed)
    table.ratio_row(
        "  floor: reading the tables (columns of records, attributes)",
        ratio(lambda: EVENT_SHAPE.tables(typed), loads, rounds),
        None,
    )
    table.ratio_row(
        "  floor: the one-spelling check over the tables (G2)",
        ratio(lambda: EVENT_SHAPE.spelled_once(typed, tables), loads, rounds),
        None,
    )
    table.ratio_row(
        "  floor: convert + tables + MD5 (what no check can skip)",
        ratio(
            lambda: (
                EVENT_SHAPE.tables(msgspec.convert(event, struct, strict=True)),
                [md5_of_body(r["body"]) for r in records],
            ),
            loads,
            rounds,
        ),
        None,
    )
    rules_rows(table, rounds, EVENT_CONTRACT, lambda: msgspec.convert(event, struct, strict=True), loads)


def alb_rows(table: Table, rounds: int, alb_model: Any) -> None:
    from fnkit import alb

    event = alb_get_with(alb, 15)
    text = json.dumps(event)
    _check_ok(alb.validate_event(event), "load balancer event")
    name = f"alb GET, {len(event['headers'])} headers, validate_event(dict)"
    table.ratio_row(name, ratio(lambda: alb.validate_event(event), lambda: json.loads(text), rounds), 1.6)
    if alb_model is not None:
        alb_model.model_validate(event)
    table.powertools_row(
        "validate_event(dict): AlbModel.model_validate",
        None
        if alb_model is None
        else ratio(lambda: alb.validate_event(event), lambda: alb_model.model_validate(event), rounds),
    )
    import msgspec

    from fnkit.alb._event import EVENT_CONTRACT, EVENT_SHAPE

    struct = EVENT_SHAPE.struct
    constraint_rows(table, rounds, EVENT_SHAPE, event, lambda: json.loads(text))
    rules_rows(
        table, rounds, EVENT_CONTRACT, lambda: msgspec.convert(event, struct, strict=True), lambda: json.loads(text)
    )


def fill_pattern_memo(pattern: str) -> None:
    """Fill a declared pattern's memo of accepted values to its budget (when the engine has one), so that values
    met later are never remembered: their rows measure the derived check itself."""
    try:
        from fnkit._engine.patterns import pattern_check
    except ImportError:  # an engine without per-pattern memos
        return
    check = pattern_check(pattern)
    for k in range(100_000):
        if check._full:
            return
        check.holds([f"filler{k}-{i}@memo.example" for i in range(50)])


def mail_rows(table: Table, rounds: int) -> None:
    from fnkit import mail

    event = mail.build_event(
        mail_from="billing@example.com",
        recipients=[f"user{i:02d}@example.com" for i in range(50)],
        subject="Your invoice for March",
    )
    text = json.dumps(event)
    _check_ok(mail.validate_event(event), "mail event")
    loads = lambda: json.loads(text)  # noqa: E731
    table.ratio_row(
        "mail, 50 recipients, validate_event(dict)", ratio(lambda: mail.validate_event(event), loads, rounds), 1.3
    )
    table.add("  validate_event(dict) vs Powertools", "no model", "aim: faster", None, "Powertools has no mail model")
    table.ratio_row(
        "mail, 50 recipients, parse_event(dict)", ratio(lambda: mail.parse_event(event), loads, rounds), 1.3
    )
    import msgspec

    from fnkit._engine.patterns import whole
    from fnkit.mail._event import EVENT_CONTRACT, EVENT_SHAPE

    struct = EVENT_SHAPE.struct
    constraint_rows(table, rounds, EVENT_SHAPE, event, loads)
    rules_rows(table, rounds, EVENT_CONTRACT, lambda: msgspec.convert(event, struct, strict=True), loads)
    address = EVENT_SHAPE.field("envelope").type.field("recipients").type.item.field("address").type
    search = re.compile(whole(address.pattern)).search
    addresses = [r["address"] for r in event["envelope"]["recipients"]]
    table.ratio_row(
        f"  floor: the address pattern alone, {len(addresses)} searches (MS3)",
        ratio(lambda: [*map(search, addresses)], loads, rounds),
        None,
    )
    # the rows above validate one event again and again (the addresses' pattern remembers what it accepted);
    # events whose addresses were never seen before take the pattern's derived check every time: the memo is
    # filled to its budget first, so that none of these addresses is remembered
    fresh = [
        mail.build_event(
            mail_from=f"billing{k}@example.com",
            recipients=[f"user{k}-{i:02d}@example.com" for i in range(50)],
            subject="Your invoice",
        )
        for k in range(400)
    ]
    fill_pattern_memo(address.pattern)
    cursor = iter(range(10**9))
    table.ratio_row(
        "mail, 50 recipients never seen before, validate_event(dict)",
        ratio(lambda: mail.validate_event(fresh[next(cursor) % len(fresh)]), loads, rounds),
        2.3,
    )


def outcome_row(table: Table, rounds: int) -> None:
    from fnkit import queue

    event = queue.build_event(bodies(10, 200, 3), seed=3)
    ids = queue.correlation_ids(event)
    response = {"batchItemFailures": [{"itemIdentifier": ids[4]}]}
    result = queue.outcome(event, response)
    assert result.kind == "partial" and result.failed_ids == (ids[4],), result
    us = absolute_us(lambda: queue.outcome(event, response), rounds)
    # an absolute target depends on how fast the machine is during the run: the same run's json.loads of this
    # event's text says how fast that was (the outcome's cost in those units does not move with it)
    text = json.dumps(event)
    loads_us = absolute_us(lambda: json.loads(text), rounds)
    table.add(
        "queue outcome, 10 records, one failure",
        f"{us:.2f} µs",
        "≤3.00 µs",
        us <= 3.0,
        f"{result.kind}, rule {result.rule}; json.loads of the event's text {loads_us:.2f} µs in this run "
        f"(the outcome: {us / loads_us:.3f}× it)",
    )
    import msgspec

    from fnkit.queue._outcome import BatchOutcome
    from fnkit.queue._response import QueueResponse

    ids_t = tuple(ids)
    floor = absolute_us(
        lambda: (
            queue.correlation_ids(event),
            msgspec.convert(response, QueueResponse),
            BatchOutcome("partial", (ids[4],), ids_t, "Q8", "r", result.issues, None, ids_t),
        ),
        rounds,
    )
    table.add(
        "  floor: ids + compiled read + the outcome object",
        f"{floor:.2f} µs",
        "",
        None,
        "correlation_ids, msgspec.convert of the response, BatchOutcome()",
    )
    from fnkit.queue._outcome import decide
    from fnkit.queue._response import read_response

    typed = msgspec.convert(response, QueueResponse, strict=True)
    reading = absolute_us(lambda: read_response(typed, ids_t), rounds)
    deciding = absolute_us(lambda: decide(event, ids_t, response, True), rounds)
    table.add(
        "  of which: the one decision over the batch's ids (decide)",
        f"{deciding:.2f} µs",
        "",
        None,
        f"the compiled read, the identifiers' verdict (Q8, Q8c: {reading:.2f} µs), the split into failed and "
        "deleted, the Q10 test; outside it: the batch's ids and the settings",
    )


def sim_row(table: Table, quick: bool) -> None:
    script = Path(__file__).resolve().parent / "bench_sim.py"
    argv = [sys.executable, str(script), "--sim-only", "--json"] + (["--quick"] if quick else [])
    out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        table.add("QueueSim", "failed", "", False, out.stderr.strip().splitlines()[-1] if out.stderr else "")
        return
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    limit_s = 0.8 if quick else 8.0
    table.add(
        f"QueueSim, {facts['messages']:,} messages: time",
        f"{facts['seconds']:.2f} s",
        f"≤{limit_s:g} s",
        facts["seconds"] <= limit_s,
        f"{facts['invocations']:,} invocations, {facts['receives']:,} receives",
    )
    if not quick:
        table.add(
            f"QueueSim, {facts['messages']:,} messages: peak RSS",
            f"{facts['peak_mb']:,.0f} MB",
            "≤800 MB",
            facts["peak_mb"] <= 800,
            f"interpreter at start {facts['start_mb']:,.0f} MB",
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, help="interleaved rounds per ratio, median taken (15; 5 with --quick)")
    parser.add_argument("--quick", action="store_true", help="fewer rounds, a 10x smaller simulation")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    rounds = args.rounds or (5 if args.quick else 15)

    import fnkit

    print(
        f"fnkit {fnkit.__version__} from {Path(fnkit.__file__).parent}; Python {sys.version.split()[0]}; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    sqs_model, alb_model, pt_missing = load_powertools()
    if pt_missing:
        print(f'Powertools parser models not installed ({pt_missing}): pip install "aws-lambda-powertools[parser]"')
    print(f"ratios: median of {rounds} interleaved rounds (fnkit time / baseline time, same round)\n")
    table = Table()
    queue_rows(table, rounds, sqs_model)
    alb_rows(table, rounds, alb_model)
    mail_rows(table, rounds)
    outcome_row(table, rounds)
    sim_row(table, args.quick)
    best_ms, heavy = import_ms()
    compiling_ms, _ = import_ms(compiled=False)
    table.add(
        "import fnkit (fresh interpreter, best of 7)",
        f"{best_ms:.1f} ms",
        "≤40 ms",
        best_ms <= 40,
        (f"loads {', '.join(heavy)}" if heavy else f"loads none of {', '.join(HEAVY_MODULES)}")
        + f"; bytecode written once, as installed (compiling every module each time: {compiling_ms:.1f} ms)",
    )
    if heavy:
        table.misses.append(f"import fnkit loads {', '.join(heavy)}")
    table.print()
    print()
    print(f"{len(table.misses)} target(s) missed: " + "; ".join(table.misses) if table.misses else "every target met")
    return 1 if (args.check and table.misses) else 0


if __name__ == "__main__":
    raise SystemExit(main())
