"""Where an issue's JSONPath points in the JSON text it came from: a line and a column, as editors count them.

The decoders fnkit uses keep no positions, so `Locator` reads the text once more with a
small scanner that notes where each value starts (and, for an object member, where its
key starts). A path then resolves step by step (`$.Records[1].md5OfBody`, `$['x-y']`); a
step that is not in the text (a missing key) stops at the deepest value that is, which is
where the missing key belongs. Lines and columns count from 1; columns count characters,
and a leading byte-order mark is not one of them. Text that is not JSON locates `$` where
the decoder gave up.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right

_WHITE = frozenset(" \t\r\n")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null")
_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]")


class _Malformed(Exception):
    """The text is not JSON at this offset."""


class _Node:
    """One value of the text: where it starts, and its members (an object's: key -> (key offset, node)) or items."""

    __slots__ = ("items", "members", "offset")

    def __init__(self, offset: int) -> None:
        self.offset = offset
        self.members: dict[str, tuple[int, _Node]] | None = None
        self.items: list[_Node] | None = None


def _skip(text: str, at: int) -> int:
    """The offset of the first character at or past `at` that is not JSON white space."""
    while text[at : at + 1] in _WHITE:
        at += 1
    return at


def _value(text: str, at: int) -> tuple[_Node, int]:
    """The value starting at `at` (no leading space) and the offset just past it."""
    node = _Node(at)
    char = text[at : at + 1]
    if char == "{":
        node.members = {}
        at = _skip(text, at + 1)
        if text[at : at + 1] == "}":
            return node, at + 1
        while True:
            key = _STRING.match(text, at)
            if key is None:
                raise _Malformed(at)
            name = json.loads(key.group())
            at = _skip(text, key.end())
            if text[at : at + 1] != ":":
                raise _Malformed(at)
            at = _skip(text, at + 1)
            child, at = _value(text, at)
            node.members[name] = (key.start(), child)  # a repeated key: the last wins, as decoders read it
            at = _skip(text, at)
            if text[at : at + 1] == ",":
                at = _skip(text, at + 1)
                continue
            if text[at : at + 1] == "}":
                return node, at + 1
            raise _Malformed(at)
    if char == "[":
        node.items = []
        at = _skip(text, at + 1)
        if text[at : at + 1] == "]":
            return node, at + 1
        while True:
            child, at = _value(text, at)
            node.items.append(child)
            at = _skip(text, at)
            if text[at : at + 1] == ",":
                at = _skip(text, at + 1)
                continue
            if text[at : at + 1] == "]":
                return node, at + 1
            raise _Malformed(at)
    found = (_STRING if char == '"' else _SCALAR).match(text, at)
    if found is None:
        raise _Malformed(at)
    return node, found.end()


def path_steps(path: str) -> list[str | int]:
    """The steps of a path as issues spell it (`$.a[2]['x-y']`): keys and indexes; an unreadable tail is left off."""
    steps: list[str | int] = []
    if not path.startswith("$"):
        return steps
    at = 1
    while at < len(path):
        m = _STEP.match(path, at)
        if m is None:
            break
        name, index, quoted = m.groups()
        if name is not None:
            steps.append(name)
        elif index is not None:
            steps.append(int(index))
        else:
            try:
                steps.append(json.loads(f'"{quoted}"'))
            except ValueError:
                break
        at = m.end()
    return steps


class Locator:
    """Line and column of JSON paths in one JSON text; `first_line`: the line the text starts on in its file."""

    def __init__(self, data: str | bytes, first_line: int = 1) -> None:
        text = data.decode("utf-8", "replace") if isinstance(data, (bytes, bytearray)) else data
        self._text = text.removeprefix("\ufeff")
        self._first_line = first_line
        self._line_starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", self._text)]
        self._root: _Node | None = None
        self._stop = 0  # where reading stopped: the root value, or where the text stops being JSON
        start = _skip(self._text, 0)
        try:
            self._root, _ = _value(self._text, start)
            self._stop = start
        except _Malformed as exc:
            self._stop = exc.args[0]
        except (RecursionError, ValueError):  # nested past the stack, or a key no decoder reads
            self._stop = start

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column) of a character offset of the text."""
        index = bisect_right(self._line_starts, offset) - 1
        return self._first_line + index, offset - self._line_starts[index] + 1

    def offset(self, path: str) -> int:
        """The offset `path` points at: its member's key, its item, or the deepest value of it the text holds."""
        node = self._root
        if node is None:
            return self._stop
        at = node.offset
        for step in path_steps(path):
            if isinstance(step, int) and node.items is not None and 0 <= step < len(node.items):
                node = node.items[step]
                at = node.offset
            elif isinstance(step, str) and node.members is not None and step in node.members:
                at, node = node.members[step]
            else:  # not in the text: where the missing part belongs, the deepest value that is
                return node.offset
        return at

    def locate(self, path: str) -> tuple[int, int]:
        """(line, column) of `path` in the text."""
        return self.position(self.offset(path))


def locate(data: str | bytes, path: str, first_line: int = 1) -> tuple[int, int]:
    """(line, column) where `path` points in the JSON text `data` (see `Locator`)."""
    return Locator(data, first_line).locate(path)


__all__ = ["Locator", "locate", "path_steps"]
