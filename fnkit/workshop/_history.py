"""What the kernel ran: a check compares the handler it was given with the kernel's history.

A learner edits the handler's cell, then runs only the check: the check would grade the
version that last ran, without a word. Before grading, `stale_note(handler)` looks at the
cells this kernel ran after the one that defined the handler (IPython's `In`): when a later
run of a cell defining the same function failed (an `IndentationError`, a `SyntaxError`,
an exception), the earlier version is what the name still holds, and the note says so in
one sentence, naming the cell. When the notebook's file says the defining cell has changed
since it ran (the file is saved after the run), the note says that too.

`install()` (called when `fnkit.workshop` is imported in a kernel) records each cell's
time and error, and answers a check run before its handler exists (a `NameError` on the
handler's name, in a cell that calls `check` or `try_it`) with one sentence saying which
cell to run, instead of a traceback.
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys
import time
import types
from pathlib import Path
from typing import Any

_RECORD = "_fnkit_workshop_runs"  # on the shell: {execution count: (time run, error type, error line)}
_CHECK_CALL = re.compile(r"\b(?:check|try_it)\(\s*(?:[\"'](?P<label>[\w-]+)[\"']\s*,\s*)?(?P<name>[A-Za-z_]\w*)\b")


def _shell() -> Any:
    ipython = sys.modules.get("IPython")  # not imported: no kernel, and no need to import it
    return ipython.get_ipython() if ipython is not None else None


def cell_run(code: types.CodeType | None, shell: Any = None) -> int | None:
    """The execution count of the cell whose code this is (5 for `In[5]`), or None outside a cell."""
    shell = shell or _shell()
    if shell is None or code is None:
        return None
    try:
        label = shell.compile.format_code_name(code.co_filename)  # ("Cell", "In[5]")
    except Exception:  # noqa: BLE001 - an IPython without it: no history to compare
        return None
    found = re.fullmatch(r"In\[(\d+)\]", label[1]) if label else None
    return int(found[1]) if found else None


def _defines(source: str, name: str) -> bool:
    return re.search(rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{re.escape(name)}[ \t]*\(", source, re.MULTILINE) is not None


def _compile_error(shell: Any, source: str) -> tuple[str, int | None] | None:
    """(error type, line) when the cell's code does not compile, else None."""
    try:
        code = shell.transform_cell(source)
    except Exception:  # noqa: BLE001 - IPython could not read it: compile it as it is
        code = source
    try:
        ast.parse(code)
    except SyntaxError as exc:
        return type(exc).__name__, exc.lineno
    return None


def _failure(shell: Any, count: int, source: str) -> tuple[str, int | None] | None:
    """How the run `count` of a cell failed (error type, line), or None when it did not (or nobody knows)."""
    broken = _compile_error(shell, source)
    if broken is not None:
        return broken
    record = getattr(shell, _RECORD, {}).get(count)
    if record is not None and record[1] is not None:
        return record[1], record[2]
    return None


def _on_line(line: int | None) -> str:
    return f" on line {line}" if line else ""


def stale_note(handler: Any) -> str | None:
    """One sentence when the handler is not what its cell now says (the cell failed, or changed since it ran)."""
    shell = _shell()
    code = getattr(handler, "__code__", None)
    name = getattr(handler, "__name__", None)
    defined = cell_run(code, shell)
    if shell is None or defined is None or not isinstance(name, str):
        return None
    history = shell.history_manager.input_hist_raw
    for count in range(len(history) - 1, defined, -1):  # the latest run first (the check's own cell defines nothing)
        source = history[count]
        if not _defines(source, name):
            continue
        failed = _failure(shell, count, source)
        if failed is None:
            return None  # it ran and defined the name again: the handler given is some other object
        error, line = failed
        return (
            f"the cell that defines {name} failed with {error}{_on_line(line)} when it ran as cell [{count}]; "
            f"the check used the earlier version, from cell [{defined}]: fix it, run it, then this check."
        )
    return _edited_since(shell, name, history[defined] if defined < len(history) else None, defined)


def _edited_since(shell: Any, name: str, ran: str | None, count: int) -> str | None:
    """The note when the notebook's file, saved after the cell ran, holds another version of it."""
    record = getattr(shell, _RECORD, {}).get(count)
    path = Path(str(shell.user_ns.get("__session__") or os.environ.get("JPY_SESSION_NAME") or ""))
    if ran is None or record is None or path.suffix != ".ipynb":
        return None
    try:
        if path.stat().st_mtime <= record[0]:
            return None  # saved before it ran: the file cannot say what is on screen now
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return None
    sources = [_text(c.get("source", "")) for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"]
    defining = [s for s in sources if _defines(s, name)]
    if len(defining) != 1 or defining[0].strip() == ran.strip():
        return None
    return (
        f"the cell that defines {name} has changed since it ran as cell [{count}]; "
        "the check used the version that ran: run that cell, then this check."
    )


def _text(source: Any) -> str:
    return source if isinstance(source, str) else "".join(source)


# --- in a kernel: record each run, and answer a check whose handler does not exist yet --------------------


def _record(shell: Any, result: Any) -> None:
    count = getattr(result, "execution_count", None)
    if count is None:
        return
    error = getattr(result, "error_before_exec", None) or getattr(result, "error_in_exec", None)
    line = getattr(error, "lineno", None) if isinstance(error, SyntaxError) else None
    if error is not None and line is None:
        tb = error.__traceback__
        while tb is not None:  # the last line of the cell's own code that was running
            if cell_run(tb.tb_frame.f_code, shell) == count:
                line = tb.tb_lineno
            tb = tb.tb_next
    runs = getattr(shell, _RECORD)
    runs[count] = (time.time(), type(error).__name__ if error is not None else None, line)


def not_defined_sentence(source: str, missing: str) -> str | None:
    """'report_failures is not defined yet: run …' when `missing` is the handler a check or try_it call is given."""
    for call in _CHECK_CALL.finditer(source):
        if call["name"] == missing:
            return (
                f"{missing} is not defined yet: run the cell that defines it (the one with "
                f"`def {missing}(event, context):`, above this one), then this check."
            )
    return None


def _name_error(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: int | None = None) -> None:
    last = tb
    while last is not None and last.tb_next is not None:
        last = last.tb_next
    # raised by the cell's own top-level code (not in a function it called): the name it gave a check is missing
    count = (
        cell_run(last.tb_frame.f_code, shell)
        if last is not None and last.tb_frame.f_code.co_name == "<module>"
        else None
    )
    history = shell.history_manager.input_hist_raw
    source = history[count] if count is not None and count < len(history) else ""
    sentence = not_defined_sentence(source, getattr(value, "name", "") or "")
    if sentence is None:
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
        return
    from IPython.display import display

    from .._cells import panel_html

    label = next((c["label"] for c in _CHECK_CALL.finditer(source) if c["label"]), None) or "check"
    html = panel_html(f"… {label}: {sentence}", tone="mixed", css_class="fnkit-check fnkit-check-not-done-yet")
    display({"text/plain": f"{label}: {sentence}", "text/html": html}, raw=True)


def install(shell: Any = None) -> bool:
    """In an IPython kernel: record each cell's run, and answer a check before its handler (once per kernel)."""
    shell = shell or _shell()
    if shell is None or not hasattr(shell, "events"):
        return False
    if hasattr(shell, _RECORD):
        return True
    setattr(shell, _RECORD, {})
    shell.events.register("post_run_cell", lambda result: _record(shell, result))
    if not shell.custom_exceptions:  # someone else's handler stays
        shell.set_custom_exc((NameError,), _name_error)
    return True


__all__ = ["cell_run", "install", "not_defined_sentence", "stale_note"]
