"""Benchmark: `fnkit.check` examples per second for a trivial handler, in this process and in a worker process.

Each mode checks the same handler on the same seeded events (nothing is found, so every example is drawn and
run once, none shrunk); the figures are printed beside their ratio, measured in this one run. Pass --quick for
a 4x smaller run.
"""

from __future__ import annotations

import sys
import time

import fnkit

QUICK = "--quick" in sys.argv
EXAMPLES = 50 if QUICK else 200


def trivial(event, context):
    return {"batchItemFailures": []}


def examples_per_s(isolation: str) -> float:
    started = time.perf_counter()
    result = fnkit.check(trivial, "queue", examples=EXAMPLES, seed=0, isolation=isolation)
    elapsed = time.perf_counter() - started
    assert result.ok, str(result)
    return EXAMPLES / elapsed


def main() -> None:
    fnkit.check(trivial, "queue", examples=5, seed=1, isolation="process")  # warm: imports, the worker started
    rates = {mode: examples_per_s(mode) for mode in ("none", "process")}
    for mode, rate in rates.items():
        print(f"check, isolation={mode:7}: {rate:7.1f} examples/s ({EXAMPLES} queue examples, trivial handler)")
    print(f"process / none: {rates['process'] / rates['none']:.2f}")


if __name__ == "__main__":
    main()
