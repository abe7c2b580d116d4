"""Benchmark: the time `import fnkit` adds to a fresh interpreter (target <= 40 ms), run by hand.

    .venv/bin/python tests/benchmarks/bench_import.py [--python PATH] [--rounds N]

Two readings, each the median over `--rounds` fresh interpreters started alternately (the
machine's noise hits both alike): the wall time of `python -c "import fnkit"` less that of
`python -c "pass"`, and fnkit's cumulative figure in `python -X importtime`. Then the ten
modules that cost most inside that import, and whether pandas, numpy or hypothesis were
loaded (they must not be). `--python`: another interpreter, such as a venv holding only
the core install (`pip install fnkit` without extras).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

TARGET_MS = 40.0
HEAVY = ("pandas", "numpy", "hypothesis", "pytest", "ipywidgets", "dask")


def wall_ms(python: str, code: str) -> float:
    """Milliseconds one fresh interpreter takes to run `code`."""
    started = time.perf_counter()
    subprocess.run([python, "-c", code], check=True)
    return (time.perf_counter() - started) * 1000


def importtime(python: str) -> dict[str, tuple[int, int]]:
    """`-X importtime` of `import fnkit`: module -> (self µs, cumulative µs)."""
    done = subprocess.run(
        [python, "-X", "importtime", "-c", "import fnkit"], capture_output=True, text=True, check=True
    )
    table: dict[str, tuple[int, int]] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "self [us]" in line:
            continue
        own, cumulative, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
        table[name] = (int(own), int(cumulative))
    return table


def main(argv: list[str] | None = None) -> int:
    """Measure and print; 0 when the median is within the target."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter to measure (default: this one)")
    parser.add_argument("--rounds", type=int, default=21, help="fresh interpreters per reading (default 21)")
    args = parser.parse_args(argv)

    # compile the bytecode once, as pip does on install (PYTHONDONTWRITEBYTECODE would have every import compile)
    warm = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([args.python, "-c", "import fnkit, fnkit.rules; fnkit.rules.catalogue()"], check=True, env=warm)
    bare, loaded, cumulative = [], [], []
    for _ in range(args.rounds):
        bare.append(wall_ms(args.python, "pass"))
        loaded.append(wall_ms(args.python, "import fnkit"))
        cumulative.append(importtime(args.python)["fnkit"][1] / 1000)
    added = statistics.median(loaded) - statistics.median(bare)
    self_reported = statistics.median(cumulative)
    print(f"== import fnkit with {args.python} (median of {args.rounds} fresh interpreters)")
    print(f"   wall time added: {added:6.1f} ms  (interpreter alone {statistics.median(bare):.1f} ms)")
    print(f"   -X importtime:   {self_reported:6.1f} ms  (fnkit's cumulative figure)")
    table = importtime(args.python)
    costly = sorted(((own, name) for name, (own, _) in table.items()), reverse=True)[:10]
    print(
        "   costliest modules (self time): " + ", ".join(f"{name.strip()} {own / 1000:.1f} ms" for own, name in costly)
    )
    heavy = [m for m in HEAVY if any(name.strip() == m for name in table)]
    print(f"   heavy packages loaded: {', '.join(heavy) if heavy else 'none'}")
    verdict = "PASS" if self_reported <= TARGET_MS and not heavy else "MISS"
    print(f"   target <= {TARGET_MS:.0f} ms (-X importtime), no heavy package: {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    raise SystemExit(main())
