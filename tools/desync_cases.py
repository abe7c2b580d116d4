"""Make tests/data/http_desync/cases.json from the load balancer classifier's public test cases.

The cases are the YAML files under tests/ of aws/http-desync-guardian (Apache License 2.0;
its LICENSE and NOTICE are kept beside the table). Run with a checkout's tests folder:

    .venv/bin/python tools/desync_cases.py PATH/TO/http-desync-guardian/tests

Each case becomes one row: file, name, method, uri, version, headers ([name, value] pairs)
and the expected tier (lower-case) and reason. Strings are unescaped as the classifier's own
test runner does (a backslash escape in a YAML string is one character), so that the text,
sent as UTF-8, is the request that runner builds. single-case.yaml repeats a case of
ambiguous.yaml for debugging and is left out: 158 cases.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "tests" / "data" / "http_desync" / "cases.json"
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def unescape(text: object) -> str:
    """A YAML scalar as the classifier's runner reads it: `\\xHH` is that character, `\\n` a newline, `\\c` is c."""
    text = str(text)
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 == len(text):
            out.append(ch)
            i += 1
            continue
        code = text[i + 1]
        if code == "x":
            out.append(chr(int(text[i + 2 : i + 4], 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(code, code))
            i += 2
    return "".join(out)


def main(folder: str) -> int:
    """Write the table from the YAML files in `folder`; 0."""
    import yaml

    rows: list[dict[str, object]] = []
    for path in sorted(Path(folder).glob("*.yaml")):
        if path.name == "single-case.yaml":
            continue
        rows.extend(
            {
                "file": path.name,
                "name": case["name"],
                "method": unescape(case["method"]),
                "uri": unescape(case["uri"]),
                "version": unescape(case["version"]),
                "headers": [[unescape(h["name"]), unescape(h["value"])] for h in case.get("headers") or []],
                "tier": case["expected"]["tier"].lower(),
                "reason": case["expected"]["reason"],
            }
            for case in yaml.safe_load(path.read_text(encoding="utf-8"))
        )
    OUT.write_text(json.dumps(rows, indent=1, ensure_ascii=True) + "\n", encoding="utf-8")
    print(f"{len(rows)} cases -> {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
