"""Errors in plain words, for the learner's tools (the widgets and the workshop both use them).

Where a JSON text a person typed is broken, and where in their own code a handler raised.
"""

from __future__ import annotations

import json
import os
import re

from .._engine.report import Issue, decode_json
from ..rules import id_of


def json_problem(text: str, what: str) -> Issue | None:
    """None when `text` is JSON; else an issue saying where and why, with the line shown."""
    try:
        json.loads(text)
        return None
    except json.JSONDecodeError as exc:
        line = (
            text.splitlines()[exc.lineno - 1] if text.splitlines() and exc.lineno - 1 < len(text.splitlines()) else ""
        )
        shown = line.strip()
        if len(shown) > 60:
            shown = shown[:57] + "..."
        near = f" (the line reads: {shown})" if shown else ""
        return Issue(
            "$",
            "format",
            f"The {what} is not valid JSON: at line {exc.lineno}, column {exc.colno}, "
            f"{_plain_json_error(exc.msg)}{near}.",
            "error",
            id_of(decode_json),
        )
    except (ValueError, RecursionError):
        return Issue("$", "format", f"The {what} is not valid JSON: it nests too deeply.", "error", id_of(decode_json))


_JSON_WORDS = {
    "Expecting value": "a value was expected (a string, number, object, list, true, false or null)",
    "Expecting ',' delimiter": "a comma was expected between two items",
    "Expecting ':' delimiter": "a colon was expected after a key",
    "Expecting property name enclosed in double quotes": (
        "a key in double quotes was expected (JSON has no trailing commas and no single quotes)"
    ),
    "Extra data": "there is more text after the end of the JSON value",
    "Unterminated string starting at": "a string is not closed with a double quote",
    "Invalid control character at": "a string holds a raw line break or tab (write \\n or \\t)",
    "Invalid \\escape": "a backslash escape is not valid JSON",
}


def _plain_json_error(msg: str) -> str:
    for key, words in _JSON_WORDS.items():
        if msg.startswith(key):
            return words
    return msg[:1].lower() + msg[1:]


# fnkit's own files (a learner's project may itself sit in a folder named "fnkit": its files are the learner's)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))).replace("\\", "/") + "/"  # fnkit/
_FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>.+)$')


def locate_error(traceback_text: str) -> str:
    """Where in the learner's code an error was raised: 'in handler, line 3: return 1 / 0'.

    The last frame outside the standard library, site-packages and fnkit itself; file
    names are left out on purpose (notebook cells have random temporary names).
    """
    frames: list[tuple[str, str, str, str]] = []
    lines = traceback_text.splitlines()
    for n, text in enumerate(lines):
        m = _FRAME.match(text)
        if m:
            code = lines[n + 1].strip() if n + 1 < len(lines) and not _FRAME.match(lines[n + 1]) else ""
            frames.append((m["file"], m["line"], m["func"], code))
    if not frames:
        return ""

    def own(frame: tuple[str, str, str, str]) -> bool:
        file = frame[0].replace("\\", "/")
        if file.startswith(_PACKAGE_DIR):
            return False
        return not any(part in file for part in ("/lib/python", "site-packages", "<frozen"))

    mine = [f for f in frames if own(f)]
    if not mine:  # fnkit's own example handlers: nothing of the learner's to point at
        return ""
    _file, line, func, code = mine[-1]
    where = f"in {func}, line {line}"
    if code and "^" not in code:
        where += f": {code}"
    return where
