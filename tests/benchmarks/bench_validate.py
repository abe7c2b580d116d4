"""How fast fnkit checks events, next to json.loads and Powertools' parser models.

A plain script (pytest collects only test_*.py): `python3 kit.py bench`, or
`python tests/benchmarks/bench_validate.py [--repeat N] [--check]`.

Every timing is the median (`--stat min`: the best) over `--repeat` runs of timeit
(each run long enough to be above the clock's noise), per call. Ratios are fnkit's time over the other's:
below 1 means fnkit is faster. Each target is printed beside its measure with
PASS or MISS; `--check` makes any MISS exit with status 1 (default: report only).

Rows:
- queue, 10 records of 200-byte bodies: `fnkit.queue.validate_event(dict)` vs
  `json.loads(text)` vs Powertools `SqsModel.model_validate(dict)`;
- queue, 1,000 records: the same three;
- load balancer GET with 15 headers: `fnkit.alb.validate_event` vs json.loads vs `AlbModel`;
- load balancer POST with a 100 KB body: the same three;
- mail event with 50 recipients: `fnkit.mail.validate_event` vs json.loads;
- `fnkit.queue.outcome` on a 10-record batch with a one-failure response (absolute);
- `import fnkit` in a fresh interpreter (best of 5), and that it loads neither pandas
  nor ipywidgets.

fnkit.alb and fnkit.mail are imported lazily: a source that cannot be imported (yet)
shows as "not available" and the rest still runs. The queue events are built in the
real platform's spelling (`dialect="aws"`), which Powertools' models require.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import statistics
import subprocess
import sys
import timeit
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmark the working tree

# Targets of the issue "fnkit core". Ratios are fnkit / other (lower is better); None: shown, no target.
TARGET_VS_JSON = {            # validate_event on the decoded event / json.loads of its text
    "queue: 10 records, 200 B bodies": 0.5,
    "alb: GET": 0.3,
    "mail: 50 recipients": 1.0,
}
TARGET_VS_POWERTOOLS = {      # fnkit / Powertools model_validate: "at least 2x faster"
    "alb: GET": 0.5,
}
TARGET_OUTCOME_US = 2.0      # queue.outcome, 10 records, one failure
TARGET_IMPORT_MS = 100.0     # `import fnkit` in a fresh interpreter
HEAVY_MODULES = ("pandas", "ipywidgets")


# --- timing -------------------------------------------------------------------------------------------


STAT = statistics.median  # --stat min: the best run, steadier on a busy machine


def per_call_us(fn: Callable[[], Any], repeat: int, min_run_s: float = 0.05) -> float:
    """Per-call time in µs: the median (or min) over `repeat` timeit runs of ≥ min_run_s each."""
    timer = timeit.Timer(fn)
    number = 1
    while True:  # like Timer.autorange, but to a shorter, fixed floor
        if timer.timeit(number) >= min_run_s:
            break
        number *= 2 if number < 8 else 4
    runs = timer.repeat(repeat=repeat, number=number)
    return STAT(runs) / number * 1e6


def fmt_us(us: float | None) -> str:
    if us is None:
        return "-"
    if us >= 1000:
        return f"{us / 1000:,.2f} ms"
    return f"{us:,.2f} µs"


def fmt_ratio(value: float, target: float | None) -> str:
    """Two decimals, three when two would hide which side of the target it is on."""
    return f"{value:.3f}×" if target is not None and round(value, 2) == round(target, 2) else f"{value:.2f}×"


def verdict(value: float | None, target: float | None) -> str:
    if value is None:
        return ""
    if target is None:
        return "(no target)"
    return f"(≤{target:.2f}) " + ("PASS" if value <= target else "MISS")


# --- optional comparisons ----------------------------------------------------------------------------------


def load_powertools() -> tuple[Any, Any, str | None]:
    try:
        from aws_lambda_powertools.utilities.parser.models import AlbModel, SqsModel
    except Exception as exc:  # noqa: BLE001 - any failure means: no Powertools columns
        return None, None, f"{type(exc).__name__}: {exc}"
    return SqsModel, AlbModel, None


def load_source(name: str) -> tuple[Any, str | None]:
    try:
        return importlib.import_module(f"fnkit.{name}"), None
    except Exception as exc:  # noqa: BLE001 - a source still being written
        return None, f"{type(exc).__name__}: {exc}"


# --- rows -----------------------------------------------------------------------------------------------------


@dataclass
class Row:
    case: str
    fnkit_us: float | None = None
    json_us: float | None = None
    powertools_us: float | None = None
    note: str = ""
    compare_powertools: bool = True
    problems: list[str] = field(default_factory=list)

    def target(self, targets: dict[str, float]) -> float | None:
        return next((t for prefix, t in targets.items() if self.case.startswith(prefix)), None)

    @property
    def vs_json(self) -> float | None:
        return self.fnkit_us / self.json_us if self.fnkit_us and self.json_us else None

    @property
    def vs_powertools(self) -> float | None:
        return self.fnkit_us / self.powertools_us if self.fnkit_us and self.powertools_us else None


def measure(case: str, validate: Callable[[Any], Any], event: dict, repeat: int, model: Any = None,
            compare_powertools: bool = True) -> Row:
    """One row: fnkit's validator on the decoded event, json.loads of its text, the Powertools model."""
    row = Row(case, compare_powertools=compare_powertools)
    text = json.dumps(event)
    report = validate(event)
    if not report.ok:
        row.problems.append(f"fnkit finds the benchmark event invalid ({report.summary()}): timings are of the error path")
    elif len(report):
        row.note = f"{len(report.warnings)} warning(s): {', '.join(sorted({str(i.rule) for i in report}))}"
    row.fnkit_us = per_call_us(lambda: validate(event), repeat)
    row.json_us = per_call_us(lambda: json.loads(text), repeat)
    if model is not None:
        try:
            model.model_validate(event)
        except Exception as exc:  # noqa: BLE001
            row.problems.append(f"Powertools rejects the event: {str(exc).splitlines()[0]}")
        else:
            row.powertools_us = per_call_us(lambda: model.model_validate(event), repeat)
    size = len(text.encode())
    row.note = f"{size / 1024:,.1f} KB JSON" + (f"; {row.note}" if row.note else "")
    return row


def bodies(n: int, size: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 "
    return ["".join(rng.choice(alphabet) for _ in range(size)) for _ in range(n)]


def queue_rows(repeat: int, sqs_model: Any) -> list[Row]:
    from fnkit import queue

    rows = []
    small = queue.build_event(bodies(10, 200, 1), dialect="aws", seed=1)
    rows.append(measure("queue: 10 records, 200 B bodies", queue.validate_event, small, repeat, sqs_model))
    big = queue.build_event(bodies(1000, 200, 2), dialect="aws", seed=2)
    rows.append(measure("queue: 1,000 records (batch_size=1000)",
                        lambda e: queue.validate_event(e, batch_size=1000), big, max(3, repeat // 2), sqs_model))
    return rows


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


def alb_get_with(alb: Any, total_headers: int) -> dict:
    """A GET whose event carries `total_headers` headers (the builder adds host, trace and x-forwarded-*)."""
    added = len(alb.build_event("GET", "/path", dialect="aws")["headers"])
    extra = BROWSER_HEADERS[: max(0, total_headers - added)]
    return alb.build_event("GET", "/path", query="page=2&sort=price", headers=extra, dialect="aws")


def alb_rows(repeat: int, alb_model: Any) -> list[Row]:
    alb, why = load_source("alb")
    if alb is None:
        return [Row("alb: GET, 15 headers", note=f"not available ({why})"),
                Row("alb: POST, 100 KB body", note=f"not available ({why})")]
    rows = []
    try:
        get = alb_get_with(alb, 15)
        row = measure(f"alb: GET, {len(get.get('headers') or {})} headers", alb.validate_event, get, repeat, alb_model)
    except Exception as exc:  # noqa: BLE001 - a source still being written
        row = Row("alb: GET, 15 headers", note=f"not available ({type(exc).__name__}: {exc})")
    rows.append(row)
    try:
        payload = json.dumps({"items": "x" * (100 * 1024 - 13)}).encode()
        post = alb.build_event("POST", "/upload", headers=[("content-type", "application/json")], body=payload, dialect="aws")
        row = measure("alb: POST, 100 KB JSON body", alb.validate_event, post, repeat, alb_model)
    except Exception as exc:  # noqa: BLE001
        row = Row("alb: POST, 100 KB body", note=f"not available ({type(exc).__name__}: {exc})")
    rows.append(row)
    return rows


def mail_rows(repeat: int) -> list[Row]:
    mail, why = load_source("mail")
    if mail is None:
        return [Row("mail: 50 recipients", note=f"not available ({why})", compare_powertools=False)]
    try:
        event = mail.build_event(
            mail_from="billing@example.com",
            recipients=[f"user{i:02d}@example.com" for i in range(50)],
            subject="Your invoice for March",
        )
        return [measure("mail: 50 recipients", mail.validate_event, event, repeat, None, compare_powertools=False)]
    except Exception as exc:  # noqa: BLE001
        return [Row("mail: 50 recipients", note=f"not available ({type(exc).__name__}: {exc})", compare_powertools=False)]


def outcome_us(repeat: int) -> tuple[float, str]:
    from fnkit import queue

    event = queue.build_event(bodies(10, 200, 3), seed=3)
    ids = queue.correlation_ids(event)
    response = {"batchItemFailures": [{"itemIdentifier": ids[4]}]}
    result = queue.outcome(event, response)
    assert result.kind == "partial" and result.failed_ids == (ids[4],), result
    return per_call_us(lambda: queue.outcome(event, response), repeat), f"{result.kind}, rule {result.rule}"


IMPORT_PROBE = """
import sys, time
t = time.perf_counter()
import fnkit
elapsed = time.perf_counter() - t
print(elapsed * 1000)
print(",".join(m for m in {heavy!r} if m in sys.modules))
"""


def import_ms(runs: int = 5) -> tuple[float, list[str]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    best, loaded = float("inf"), set()
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", IMPORT_PROBE.format(heavy=HEAVY_MODULES)], env=env, cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.splitlines()
        best = min(best, float(out[0]))
        loaded |= {m for m in (out[1] if len(out) > 1 else "").split(",") if m}
    return best, sorted(loaded)


# --- the report ---------------------------------------------------------------------------------------------


def print_table(rows: list[Row], have_powertools: bool) -> list[str]:
    misses = []
    head = ["case", "fnkit", "json.loads", "Powertools", "fnkit/json (target)", "fnkit/PT (target)", "note"]
    table = [head]
    for r in rows:
        vj, vp = r.vs_json, r.vs_powertools
        tj, tp = r.target(TARGET_VS_JSON), r.target(TARGET_VS_POWERTOOLS)
        cell_j = f"{fmt_ratio(vj, tj)} {verdict(vj, tj)}" if vj is not None else "-"
        if not r.compare_powertools:
            cell_p = "n/a (no model)"
        elif not have_powertools:
            cell_p = "skipped"
        else:
            cell_p = f"{fmt_ratio(vp, tp)} {verdict(vp, tp)}" if vp is not None else "-"
        pt_time = fmt_us(r.powertools_us) if (have_powertools and r.compare_powertools) else "-"
        table.append([r.case, fmt_us(r.fnkit_us), fmt_us(r.json_us), pt_time, cell_j, cell_p, r.note])
        if vj is not None and tj is not None and vj > tj:
            misses.append(f"{r.case}: fnkit/json.loads {fmt_ratio(vj, tj)} (target {tj})")
        if vp is not None and tp is not None and vp > tp:
            misses.append(f"{r.case}: fnkit/Powertools {fmt_ratio(vp, tp)} (target {tp})")
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for n, row in enumerate(table):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))
    for r in rows:
        for problem in r.problems:
            print(f"  ! {r.case}: {problem}")
    return misses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="timeit runs per measure (median taken); default 7")
    parser.add_argument("--stat", choices=["median", "min"], default="median",
                        help="per measure, the median of the runs (default) or the best run")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    global STAT
    STAT = statistics.median if args.stat == "median" else min

    import fnkit

    print(f"fnkit {fnkit.__version__} from {Path(fnkit.__file__).parent}; Python {sys.version.split()[0]} on {sys.platform}")
    sqs_model, alb_model, pt_missing = load_powertools()
    if pt_missing:
        print(f"Powertools parser models not installed ({pt_missing}): "
              f"install with  pip install \"aws-lambda-powertools[parser]\"  -- the Powertools columns are skipped.")
    else:
        import aws_lambda_powertools

        version = getattr(aws_lambda_powertools, "__version__", None)
        if version is None:
            from importlib.metadata import version as _version
            version = _version("aws-lambda-powertools")
        print(f"Powertools {version} (SqsModel, AlbModel)")
    print(f"timings: {args.stat} of {args.repeat} timeit runs, per call (a busy machine shows in the median; try --stat min)\n")

    rows = queue_rows(args.repeat, sqs_model) + alb_rows(args.repeat, alb_model) + mail_rows(args.repeat)
    misses = print_table(rows, have_powertools=pt_missing is None)

    print()
    out_us, what = outcome_us(args.repeat)
    v = verdict(out_us, TARGET_OUTCOME_US)
    print(f"queue.outcome, 10 records, one failure ({what}): {out_us:.2f} µs   target ≤ {TARGET_OUTCOME_US:.1f} µs   {v}")
    if v == "MISS":
        misses.append(f"queue.outcome {out_us:.2f} µs")

    best_ms, heavy = import_ms()
    v = verdict(best_ms, TARGET_IMPORT_MS)
    print(f"import fnkit, fresh interpreter, best of 5: {best_ms:.1f} ms   target ≤ {TARGET_IMPORT_MS:.0f} ms   {v}")
    if v == "MISS":
        misses.append(f"import fnkit {best_ms:.1f} ms")
    if heavy:
        print(f"after import fnkit, loaded: {', '.join(heavy)}   target: none of {', '.join(HEAVY_MODULES)}   MISS")
        misses.append(f"import fnkit loads {', '.join(heavy)}")
    else:
        print(f"after import fnkit, not loaded: {', '.join(HEAVY_MODULES)}   PASS")

    print()
    if misses:
        print(f"{len(misses)} target(s) missed: " + "; ".join(misses))
    else:
        print("every target met")
    return 1 if (args.check and misses) else 0


if __name__ == "__main__":
    raise SystemExit(main())
