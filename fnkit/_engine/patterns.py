"""A declared pattern checked over a column of strings, the cheapest way the pattern allows.

A shape declares each pattern once (`Text.pattern`, matched whole). Its compiled Structs carry
types and lengths only: msgspec would call Python's `re` once per string. The engine checks each
declared pattern over every value it governs in the value at hand (a column: the 10 ARNs of a
batch, its 30 timestamps, 50 addresses) with a test derived here from the declared pattern:
- a column that is one value repeated: that value, once;
- a pattern that is one repeated character class (`[0-9]+`): one match of the class over the
  values joined end to end, and their lengths against the repetition's bounds;
- a pattern that, its anchors set aside, cannot match a line break and holds no assertion
  (lookaround, `^`, `\\b`, a back-reference): one match of `P(?:\\nP)*` over the values joined by
  line breaks (a value holding a line break shows as one break too many); when the joined text is
  ASCII, with each character class narrowed to the ASCII characters it holds (a table of 128, where a
  class naming non-ASCII characters costs Python's `re` more per character);
- else one match per value.
Values accepted once are remembered per pattern, bounded by bytes as `fnkit._engine.memo` bounds its
memos (`PATTERN_BYTES` each; a value longer than `LONGEST` is tested every time), so a column met
before costs one set look-up.

The derivation reads the pattern's parse tree with Python's own parser (`re._parser`, a private
module): when that is not there, or the tree holds what the derivation does not know, the test is
the declared pattern, one search per value. The tests hold every derived test equal to the
declared pattern on random input.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, cast

from .memo import _SLOT, LONGEST, MEMO_BYTES

#: the most bytes one pattern's memo of accepted values keeps alive (a shape declares a dozen patterns)
PATTERN_BYTES = MEMO_BYTES // 4

_compiler: Any = None
_parser: Any = None
sre: Any = None
try:  # Python's own regular-expression parser and compiler (private modules: the derivation falls back without)
    _compiler, _parser, sre = (importlib.import_module(f"re.{name}") for name in ("_compiler", "_parser", "_constants"))
except ImportError:  # pragma: no cover - another Python: one search per value
    pass


def whole(pattern: str) -> str:
    """`pattern` made to match a whole string when searched (msgspec searches: `re.search`), as `re.fullmatch`
    matches it: `\\A(?:pattern)\\Z` (a `$` alone would also match before a final line break)."""
    return rf"\A(?:{pattern})\Z"


_ANCHOR = re.compile(r"(?<!\\)\$")


def schema_pattern(pattern: str) -> str:
    """A declared pattern as JSON Schema states it: `$` made strict (`$(?!\\n)`), so that a validator that
    searches with Python's `re`, where `$` also matches before a final line break, agrees with ECMA-262."""
    return _ANCHOR.sub(lambda m: "$(?!\\n)", pattern)


class PatternCheck:
    """The test of one declared pattern over a column of strings (`holds`), or one string (`matches`).

    `how` names the test derived for a column: "joined" (one match over the values joined by line
    breaks), "class" (one repeated character class over the values joined end to end) or "each".
    """

    __slots__ = ("_column", "_full", "_memo", "_size", "how", "known", "match", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.match: Callable[[str], Any]  # a match object when the string meets the pattern whole, else None
        self._column: Callable[[Sequence[str]], bool]
        self.match, self._column, self.how = _derive(pattern)
        self._memo: set[str] = set()  # values that met the pattern
        #: True when every string of an iterable met the pattern before (the memo asked alone, in C)
        self.known: Callable[[Iterable[str]], bool] = self._memo.issuperset
        self._size = 0  # the bytes the memo keeps alive (fnkit._engine.memo's count)
        self._full = False

    def matches(self, value: str) -> bool:
        """True when the string meets the pattern whole (the declared test)."""
        return self.match(value) is not None

    def holds(self, values: Collection[str]) -> bool:
        """True when every string of `values` (a sequence, a map's keys or values) meets the pattern whole."""
        if self._memo.issuperset(values):  # every value met before (or none at all)
            return True
        return self.tested(values)

    def tested(self, values: Collection[str]) -> bool:
        """`holds`, the memo not asked first (the caller asked `known`): the derived test, then remembered."""
        column = cast("Sequence[str]", values) if type(values) is list or type(values) is tuple else [*values]
        first = column[0]
        n = len(column)
        if n == 1 or column.count(first) == n:  # one value, maybe repeated: tested once
            if self.match(first) is None:
                return False
            column = (first,)
        elif not self._column(column):
            return False
        if not self._full:
            self._remember(column)
        return True

    def _remember(self, values: Sequence[str]) -> None:
        if max(map(len, values)) > LONGEST:  # a long value is tested again rather than pinned
            return
        cost = sum(map(sys.getsizeof, values)) + _SLOT * len(values)
        if self._size + cost > PATTERN_BYTES:
            self._full = True  # the memo stops growing; what it holds stays useful
            return
        self._memo.update(values)
        self._size += cost


_CHECKS: dict[str, PatternCheck] = {}


def pattern_check(pattern: str) -> PatternCheck:
    """The one check of a declared pattern (shared by every Text that declares it, with its memo)."""
    check = _CHECKS.get(pattern)
    if check is None:
        check = _CHECKS.setdefault(pattern, PatternCheck(pattern))
    return check


# --- deriving the tests from the pattern's parse tree ----------------------------------------------


def _derive(pattern: str) -> tuple[Callable[[str], Any], Callable[[Sequence[str]], bool], str]:
    """(the test of one string, the test of a column, its name), derived from the declared pattern."""
    search = re.compile(whole(pattern)).search  # the declared test, as msgspec asks it
    try:
        derived = _from_tree(pattern)
    except Exception:  # noqa: BLE001 - anything the derivation does not know: the declared test
        derived = None
    if derived is not None:
        return derived
    return search, _each(search), "each"


def _each(match: Callable[[str], Any]) -> Callable[[Sequence[str]], bool]:
    def column(values: Sequence[str]) -> bool:
        return all(map(match, values))

    return column


def _from_tree(pattern: str) -> tuple[Callable[[str], Any], Callable[[Sequence[str]], bool], str] | None:
    if _parser is None:
        return None
    tree = _parser.parse(pattern)
    state, flags = tree.state, tree.state.flags
    core = list(tree.data)
    # `^`/`\A` first and `$`/`\Z` last say "the whole string", which a full match says already
    if core and core[0][0] is sre.AT and core[0][1] in (sre.AT_BEGINNING, sre.AT_BEGINNING_STRING):
        core.pop(0)
    if core and core[-1][0] is sre.AT and core[-1][1] in (sre.AT_END, sre.AT_END_STRING):
        core.pop()

    def build(data: list[Any]) -> Any:
        return _compiler.compile(_parser.SubPattern(state, data), flags)

    match = build(core).fullmatch
    repeat = _one_class(core)
    if repeat is not None:
        lo, hi, item = repeat
        star = build([(sre.MAX_REPEAT, (0, sre.MAXREPEAT, _parser.SubPattern(state, [item])))]).fullmatch
        return match, _class(star, lo, None if hi == sre.MAXREPEAT else hi), "class"
    if _line(core, bool(flags & sre.SRE_FLAG_DOTALL)):
        plain = not flags & sre.SRE_FLAG_IGNORECASE  # (with it, a literal stands for more than its own character)
        if plain:
            match = build(_possessive(core, {_END}, state, flags)).fullmatch
        line = _possessive([*core, (sre.LITERAL, 10)], {_END}, state, flags) if plain else [*core, (sre.LITERAL, 10)]
        if _one_way(line):  # each value matches one way: nothing to try again when a later one fails
            rest = _parser.SubPattern(state, [(sre.LITERAL, 10), *core])
            lines = [*core, (sre.MAX_REPEAT, (0, sre.MAXREPEAT, rest))]
            lines = _possessive(lines, {_END}, state, flags) if plain else lines
        else:
            # every value but the last, each with its line break, in an atomic group: a line matched is never
            # tried again another way when a later one fails (the line breaks are fixed, so no other way could
            # help), so a column costs the sum of its values' costs, not their product (a pattern whose repeats
            # overlap, `a+(?:-[^ ]+)*`, took minutes over three values, one failing)
            atomic = _parser.SubPattern(state, [(sre.ATOMIC_GROUP, _parser.SubPattern(state, line))])
            last = _possessive(core, {_END}, state, flags) if plain else core
            lines = [(sre.POSSESSIVE_REPEAT, (0, sre.MAXREPEAT, atomic)), *last]  # (the last has no line break)
        in_ascii = None
        if plain:
            narrowed = _ascii(lines, state, flags)
            in_ascii = None if narrowed is None else build(narrowed).fullmatch
        return match, _joined(build(lines).fullmatch, in_ascii), "joined"
    return match, _each(match), "each"


def _joined(match: Callable[[str], Any], in_ascii: Callable[[str], Any] | None) -> Callable[[Sequence[str]], bool]:
    """The column test: one match over the values joined by line breaks (`in_ascii`: the same test for an ASCII
    text, its classes narrowed to ASCII)."""
    if in_ascii is None:

        def column(values: Sequence[str]) -> bool:
            text = "\n".join(values)
            # the pattern matches no line break, so each line is one value; a value holding one adds a line
            return text.count("\n") == len(values) - 1 and match(text) is not None

        return column

    def narrowed(values: Sequence[str]) -> bool:
        text = "\n".join(values)
        if text.count("\n") != len(values) - 1:
            return False
        return (in_ascii if text.isascii() else match)(text) is not None

    return narrowed


def _ascii(items: list[Any], state: Any, flags: int) -> list[Any] | None:
    """`items` with each character class narrowed to the ASCII characters it holds (asked of the regex engine,
    character by character): what the pattern says of an ASCII text, in classes of 128 characters at most.
    None when there is no class to narrow."""
    narrowed = False

    def walk(items: Any) -> Any:
        nonlocal narrowed
        out = []
        for op, av in items:
            name = op.name
            if name == "IN":
                test = _compiler.compile(_parser.SubPattern(state, [(op, av)]), flags).fullmatch
                held = [c for c in range(128) if test(chr(c))]
                if held:  # (a class that holds no ASCII character matches nothing ASCII as it is)
                    narrowed = True
                    av = _ranges(held)
            elif name in _REPEATS:
                av = (av[0], av[1], walk(av[2]))
            elif name == "SUBPATTERN":
                av = (*av[:3], walk(av[3]))
            elif name == "BRANCH":
                av = (av[0], [walk(sub) for sub in av[1]])
            elif name == "ATOMIC_GROUP":
                av = walk(av)
            out.append((op, av))
        return _parser.SubPattern(state, out)

    found = list(walk(items))
    return found if narrowed else None


def _ranges(codes: list[int]) -> list[Any]:
    """A character set's items for the ascending character codes: a range for each run, a literal alone."""
    runs: list[list[int]] = []
    for c in codes:
        if runs and runs[-1][1] == c - 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return [(sre.RANGE, (lo, hi)) if lo != hi else (sre.LITERAL, lo) for lo, hi in runs]


def _class(star: Callable[[str], Any], lo: int, hi: int | None) -> Callable[[Sequence[str]], bool]:
    if hi is None and lo == 0:

        def column(values: Sequence[str]) -> bool:
            return star("".join(values)) is not None

    elif hi is None and lo == 1:

        def column(values: Sequence[str]) -> bool:
            return all(values) and star("".join(values)) is not None

    else:

        def column(values: Sequence[str]) -> bool:
            lengths = [*map(len, values)]
            if min(lengths) < lo or (hi is not None and max(lengths) > hi):
                return False
            return star("".join(values)) is not None

    return column


# --- making a greedy repeat possessive where giving characters back could never help ------------------

_END = -1  # the end of the string, in a set of the characters that may follow


def _possessive(items: list[Any], follow: set[int] | None, state: Any, flags: int) -> list[Any]:
    """`items` with each greedy repeat of one character class made possessive when the class matches none of
    the characters that may follow it (`follow`; None: not known): backtracking into it could never find a
    match, so the engine keeps no state to try; likewise a repeated group that matches one way and starts with
    none of them (the addresses' column checks in a third of the time)."""
    out = list(items)
    for i in range(len(out) - 1, -1, -1):
        op, av = out[i]
        if op.name == "MAX_REPEAT":
            lo, hi, sub = av
            body = list(sub)
            if len(body) == 1 and body[0][0].name in _ONE_CHARACTER:
                if follow is not None and not any(_in_class(body[0], c, state, flags) for c in follow if c != _END):
                    out[i] = (sre.POSSESSIVE_REPEAT, av)
            else:
                first = _first(body)  # (a group repeated: what may follow its end is its start, or what follows it)
                inner = None if first is None or follow is None else first[0] | follow
                body = _possessive(body, inner, state, flags)
                # a group that matches one way from where it starts, never nothing, and starts with none of the
                # characters that may follow it: giving back a whole round leaves a character nothing after takes
                if follow is not None and first is not None and not first[1] and not first[0] & follow:
                    op = sre.POSSESSIVE_REPEAT if _one_way(body) else op
                out[i] = (op, (lo, hi, _parser.SubPattern(state, body)))
        elif op.name == "SUBPATTERN" and not av[1] and not av[2]:  # a group without flags of its own
            out[i] = (op, (*av[:3], _parser.SubPattern(state, _possessive(list(av[3]), follow, state, flags))))
        found = _first([out[i]])
        if found is None:
            follow = None
        elif follow is not None or not found[1]:
            follow = found[0] | follow if found[1] and follow is not None else found[0]
    return out


def _one_way(items: Any) -> bool:
    """True when the parsed sequence matches at most one way from a given start: single characters, possessive
    repeats and groups of them (no alternative, no repeat that could give characters back)."""
    for op, av in items:
        name = op.name
        if name in _ONE_CHARACTER or name == "POSSESSIVE_REPEAT":
            continue
        if name == "SUBPATTERN" and not av[1] and not av[2] and _one_way(av[3]):
            continue
        return False
    return True


def _first(items: list[Any]) -> tuple[set[int], bool] | None:
    """(the characters a match of `items` may start with, whether it may be empty); None: not known."""
    chars: set[int] = set()
    for op, av in items:
        name = op.name
        if name == "LITERAL":
            return chars | {av}, False
        if name in ("MAX_REPEAT", "POSSESSIVE_REPEAT"):
            inner = _first(list(av[2]))
            if inner is None:
                return None
            chars |= inner[0]
            if av[0] > 0 and not inner[1]:
                return chars, False
        elif name == "SUBPATTERN" and not av[1] and not av[2]:
            inner = _first(list(av[3]))
            if inner is None:
                return None
            chars |= inner[0]
            if not inner[1]:
                return chars, False
        else:
            return None
    return chars, True


def _in_class(item: Any, char: int, state: Any, flags: int) -> bool:
    """True when the one-character item (a class, a literal, `.`) matches `char`: asked of the regex engine."""
    return _compiler.compile(_parser.SubPattern(state, [item]), flags).fullmatch(chr(char)) is not None


_ONE_CHARACTER = ("IN", "LITERAL", "NOT_LITERAL", "ANY")
_REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")


def _one_class(core: list[Any]) -> tuple[int, int, Any] | None:
    """(lo, hi, the character item) when the pattern is one character class repeated lo to hi times."""
    if len(core) != 1 or core[0][0].name not in _REPEATS:
        return None
    lo, hi, sub = core[0][1]
    items = list(sub)
    if len(items) != 1 or items[0][0].name not in _ONE_CHARACTER:
        return None
    return lo, hi, items[0]


# whether a category (\d, \s, \w and their negations) holds the line break
_CATEGORY_NEWLINE = {
    "CATEGORY_DIGIT": False,
    "CATEGORY_NOT_DIGIT": True,
    "CATEGORY_SPACE": True,
    "CATEGORY_NOT_SPACE": False,
    "CATEGORY_WORD": False,
    "CATEGORY_NOT_WORD": True,
}


def _line(data: Any, dotall: bool) -> bool:
    """True when the parsed sequence can match no line break and holds no assertion (nor anything unknown)."""
    for op, av in data:
        name = op.name
        if name == "LITERAL":
            if av == 10:
                return False
        elif name == "NOT_LITERAL":
            if av != 10:
                return False
        elif name == "ANY":
            if dotall:
                return False
        elif name == "IN":
            if _set_newline(av) is not False:
                return False
        elif name in _REPEATS:
            if not _line(av[2], dotall):
                return False
        elif name == "SUBPATTERN":
            _, add, remove, sub = av
            inner = (dotall or bool(add & sre.SRE_FLAG_DOTALL)) and not remove & sre.SRE_FLAG_DOTALL
            if not _line(sub, inner):
                return False
        elif name == "ATOMIC_GROUP":
            if not _line(av, dotall):
                return False
        elif name == "BRANCH":
            if not all(_line(sub, dotall) for sub in av[1]):
                return False
        else:  # an assertion (AT, ASSERT, ASSERT_NOT), a back-reference, or what this does not know
            return False
    return True


def _set_newline(items: Any) -> bool | None:
    """Whether a character set matches the line break (None: it holds what this does not know)."""
    negate = contains = False
    for op, av in items:
        name = op.name
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            contains = contains or av == 10
        elif name == "RANGE":
            contains = contains or av[0] <= 10 <= av[1]
        elif name == "CATEGORY" and av.name in _CATEGORY_NEWLINE:
            contains = contains or _CATEGORY_NEWLINE[av.name]
        else:
            return None
    return contains != negate
