"""Where an issue's JSONPath points in the JSON text it came from: a line and a column, as editors count them.

The decoders fnkit uses keep no positions, so `Locator` reads the text once more, only along
the paths it is asked about: it lists the members (or items) of each object (or list) on the
way, with where each starts, and steps over the values in between without reading them
(a regular expression finds the strings and brackets; nesting is counted, never recursed
into). A path resolves step by step (`$.Records[1].md5OfBody`, `$['x-y']`): a member points at
its key, an item at its first character, and a step that is not in the text (a missing key)
stops at the deepest value that is, where the missing key belongs. Lines and columns count
from 1; columns count characters, and a leading byte-order mark is not one of them. Text that
is not JSON locates every path where the decoder gave up.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right

_WHITE = frozenset(" \t\r\n")
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # the unrolled loop: no alternation per character
_NESTING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_DECODER = json.JSONDecoder()
_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]")


class _Malformed(Exception):
    """The text is not JSON at this offset."""


def _skip_space(text: str, at: int) -> int:
    """The offset of the first character at or past `at` that is not JSON white space."""
    while text[at : at + 1] in _WHITE:
        at += 1
    return at


def _past_value(text: str, at: int) -> int:
    """The offset just past the value starting at `at`: the C decoder steps over it (a value the decoder cannot
    read, nested past its stack say, is stepped over by counting its brackets)."""
    try:
        return _DECODER.raw_decode(text, at)[1]
    except (ValueError, RecursionError):
        pass
    if text[at : at + 1] not in ("{", "["):
        raise _Malformed(at)
    depth = 0
    for token in _NESTING.finditer(text, at):
        first = token.group()[0]
        if first in "{[":
            depth += 1
        elif first in "}]":
            depth -= 1
            if depth == 0:
                return token.end()
    raise _Malformed(len(text))


def _children(text: str, at: int) -> dict[str, int] | list[int]:
    """The members of the object at `at` (key -> where its key starts; a repeated key: the last, as decoders read
    it) or the items of the list at `at` (where each starts)."""
    closing = "}" if text[at] == "{" else "]"
    members: dict[str, int] = {}
    items: list[int] = []
    at = _skip_space(text, at + 1)
    if text[at : at + 1] == closing:
        return members if closing == "}" else items
    while True:
        if closing == "}":
            key = _STRING.match(text, at)
            if key is None:
                raise _Malformed(at)
            members[json.loads(key.group())] = at
            at = _skip_space(text, key.end())
            if text[at : at + 1] != ":":
                raise _Malformed(at)
            at = _skip_space(text, at + 1)
        else:
            items.append(at)
        at = _skip_space(text, _past_value(text, at))
        if text[at : at + 1] == ",":
            at = _skip_space(text, at + 1)
            continue
        if text[at : at + 1] == closing:
            return members if closing == "}" else items
        raise _Malformed(at)


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
        self._line_starts: list[int] | None = None
        self._broken_at: int | None = None  # where the text stops being JSON (None: it is JSON)
        self._root = _skip_space(self._text, 0)
        self._children: dict[int, dict[str, int] | list[int]] = {}  # by container offset, read when first asked
        try:
            json.loads(self._text)
        except json.JSONDecodeError as exc:
            self._broken_at = exc.pos
        except (ValueError, RecursionError):  # nested past the stack, or a constant: followed as far as it goes
            pass

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column) of a character offset of the text."""
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", self._text)]
        index = bisect_right(self._line_starts, offset) - 1
        return self._first_line + index, offset - self._line_starts[index] + 1

    def _value_at(self, offset: int) -> int:
        """Where the value of the member whose key starts at `offset` starts."""
        key = _STRING.match(self._text, offset)
        assert key is not None  # `_children` found a key there
        return _skip_space(self._text, _skip_space(self._text, key.end()) + 1)

    def offset(self, path: str) -> int:
        """The offset `path` points at: its member's key, its item, or the deepest value of it the text holds."""
        if self._broken_at is not None:
            return self._broken_at
        value = at = self._root
        for step in path_steps(path):
            if self._text[value : value + 1] not in ("{", "["):
                return value
            try:
                children = self._children.get(value)
                if children is None:
                    children = self._children[value] = _children(self._text, value)
            except (_Malformed, ValueError):
                return value
            if isinstance(step, int) and isinstance(children, list) and 0 <= step < len(children):
                at = value = children[step]
            elif isinstance(step, str) and isinstance(children, dict) and step in children:
                at = children[step]
                value = self._value_at(at)
            else:  # not in the text: where the missing part belongs, the deepest value that is
                return value
        return at

    def locate(self, path: str) -> tuple[int, int]:
        """(line, column) of `path` in the text."""
        return self.position(self.offset(path))


def locate(data: str | bytes, path: str, first_line: int = 1) -> tuple[int, int]:
    """(line, column) where `path` points in the JSON text `data` (see `Locator`)."""
    return Locator(data, first_line).locate(path)


__all__ = ["Locator", "locate", "path_steps"]
