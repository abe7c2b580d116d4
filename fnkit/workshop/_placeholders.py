"""Finding the `...` a learner has still to replace: every one, each with its cell and line."""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._cells import shorten


@dataclass(frozen=True)
class Placeholder:
    """One `...` left in the code.

    The function holding it, its line (within its cell or file), the cell, the line's text.
    """

    function: str
    line: int
    cell: str | None  # "cell [5]" when the code ran in a notebook cell, None elsewhere
    code: str

    @property
    def where(self) -> str:
        """'cell [5], line 3' (or 'line 3' outside a notebook)."""
        return f"{self.cell}, line {self.line}" if self.cell else f"line {self.line}"

    def __str__(self) -> str:
        return f"{self.where} (in {self.function}): {shorten(self.code, 100)}"


def _cell_of(code: types.CodeType) -> str | None:
    """'cell [5]' for code compiled from the notebook cell run 5th in this kernel, else None."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None:
        return None
    try:
        label = shell.compile.format_code_name(code.co_filename)  # ("Cell", "In[5]") for a cell's code
    except Exception:  # noqa: BLE001 - an older IPython: say the line only
        return None
    if not label:
        return None
    prompt: str = label[1]
    return "cell " + prompt.removeprefix("In")


def _in_function(fn: Callable[..., Any]) -> list[Placeholder]:
    name = getattr(fn, "__name__", "your handler")
    code = getattr(fn, "__code__", None)
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        if code is None:
            return []
        # no source (code typed at a plain prompt): a body of only `...` still counts
        trivial = (
            set(code.co_consts) <= {None, Ellipsis, fn.__doc__} and not code.co_names and Ellipsis in code.co_consts
        )
        return [Placeholder(name, code.co_firstlineno, _cell_of(code), "...")] if trivial else []
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return []
    cell = _cell_of(code) if code is not None else None
    found: dict[int, Placeholder] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value is Ellipsis:
            line = (start or 1) + node.lineno - 1
            if line not in found:
                found[line] = Placeholder(name, line, cell, lines[node.lineno - 1].strip())
    return [found[line] for line in sorted(found)]


def _helpers_of(fn: Callable[..., Any]) -> list[Callable[..., Any]]:
    """Functions `fn` calls by name that were written in the same cell (or file) as `fn`."""
    code = getattr(fn, "__code__", None)
    space = getattr(fn, "__globals__", None)
    if code is None or not isinstance(space, dict):
        return []
    names: list[str] = []
    stack = [code]
    while stack:  # comprehensions and inner functions have code objects of their own
        current = stack.pop()
        names.extend(current.co_names)
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    out: list[Callable[..., Any]] = []
    for name in dict.fromkeys(names):
        other = space.get(name)
        other_code = getattr(other, "__code__", None)
        if (
            isinstance(other, types.FunctionType)
            and other is not fn
            and other_code is not None
            and other_code.co_filename == code.co_filename
        ):
            out.append(other)
    return out


def placeholders(fn: Any) -> list[Placeholder]:
    """Every `...` left in `fn` and in the functions it calls that were written beside it, in order."""
    if not callable(fn):
        return []
    found = _in_function(fn)
    for helper in _helpers_of(fn):
        found.extend(p for p in _in_function(helper) if p not in found)
    return found


def placeholder_line(fn: Callable[..., Any]) -> int | None:
    """The line (within its cell or file) of the first `...` left in `fn`, or None when there is none."""
    found = placeholders(fn)
    return found[0].line if found else None
