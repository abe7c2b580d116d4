"""What locating issues as file:line:col costs `fnkit validate` (issue 22): the locator against the validation itself.

Builds a pretty-printed queue event of N records (default 5,000 records of 400-byte bodies,
about 5.5 MB), breaks the last record's md5OfBody, and times, best of 5: validating the text
(`fnkit.validate`), reading it into a `Locator` (the decoder's pass that says whether it is
JSON), locating the first issue (the path's containers listed on the way) and locating 100
more issues in the same text. Prints one line per step, in milliseconds.

    python tests/benchmarks/bench_locate.py [--records N]
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import fnkit
from fnkit import queue
from fnkit._engine.locate import Locator


def best_ms(step: Callable[[], Any], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def main() -> None:
    records = int(sys.argv[sys.argv.index("--records") + 1]) if "--records" in sys.argv else 5_000
    batches = [queue.build_event(["x" * 400] * 10, seed=i)["Records"] for i in range(records // 10)]
    event = {"Records": [r for batch in batches for r in batch]}
    event["Records"][-1]["md5OfBody"] = "0" * 32
    text = json.dumps(event, indent=2)
    last = f"$.Records[{len(event['Records']) - 1}].md5OfBody"
    report = fnkit.validate(text)
    assert [i.path for i in report.errors] == [last], report
    print(f"{len(event['Records'])} records, {len(text) / 1e6:.1f} MB of pretty-printed JSON")
    print(f"validate                      {best_ms(lambda: fnkit.validate(text)):9.1f} ms")
    print(f"Locator(text)                 {best_ms(lambda: Locator(text)):9.1f} ms")
    print(f"Locator(text).locate(1 path)  {best_ms(lambda: Locator(text).locate(last)):9.1f} ms")
    locator = Locator(text)
    locator.locate(last)
    paths = [f"$.Records[{i}].body" for i in range(0, len(event["Records"]), max(1, len(event["Records"]) // 100))]
    print(f"100 more paths, same locator  {best_ms(lambda: [locator.locate(p) for p in paths]):9.1f} ms")


if __name__ == "__main__":
    main()
