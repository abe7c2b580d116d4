#!/usr/bin/env python3
"""Keep the notebooks executed, deterministic and clean: run this before committing notebooks.

    .venv/bin/python tools/notebooks.py run       [NAME...]   execute, then normalise (the usual command)
    .venv/bin/python tools/notebooks.py clean     [NAME...]   normalise only, no execution
    .venv/bin/python tools/notebooks.py exercises [NAME...]   write exercises/ from solutions/ (no execution)
    .venv/bin/python tools/notebooks.py check                 exit 1 (saying why) when a notebook is not clean

NAME is a notebook path or a part of one (`01`, `exercises`); none means every notebook.

Lessons (notebooks/*.ipynb) and solutions (notebooks/solutions/) keep the outputs that teach,
with their execution counts: nbval compares them strictly (it skips cells without an
execution count). An output that would mislead a learner before anything runs is never
committed: a live widget (its text stand-in looks like a broken widget) or an output marked
as differing from machine to machine (the environment check's ✔ marks, versions, paths:
its metadata says `{"fnkit": {"varies": ...}}`). Such a cell is emptied and tagged
`nbval-ignore-output`, so nbval runs it without comparing; a tagged cell holds no output.

Exercises (notebooks/exercises/) are generated from their solution twins: in a solution,
the answer is marked, and the exercise holds `...` in its place.

    # answer: what to do                   a block, replaced by `...  # what to do`
    ...the answer's lines...               (`# answer` alone: a bare `...`)
    # end answer
    name = compute(x)  # answer            one statement: `name = ...`, `return ...` or `...`
    return value  # answer: hint           (with `  # hint` after it)

Exercises are executed too (to prove they run top to bottom), then emptied: no outputs, no
execution counts, every code cell tagged `nbval-ignore-output`.

Each executed code cell of a lesson or a solution keeps, in its metadata, a hash of the source
that made its outputs (`{"fnkit": {"source": ...}}`, written by `run`): `check` finds a cell
edited since, whose outputs nbval would compare against code that no longer makes them.

Everywhere: the widget state saved in the metadata is dropped, run timings and the Python
patch version are removed, and the kernel is `python3`. Run it with the .venv's Python, so
the outputs come from the environment the tests use.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
IGNORE_TAG = "nbval-ignore-output"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
CELL_TIMEOUT_S = 120
HASH_KEY = "fnkit"  # cell metadata: {"fnkit": {"source": <hash of the source its outputs come from>}}

# text that only this machine would show, and the text stand-ins of widgets
_MACHINE_TEXT = re.compile(r"/tmp/|/home/|/root/|/Users/|site-packages|ipykernel_\d+|fnkit-environment|0x[0-9a-f]{8,}")
_WIDGET_TEXT = re.compile(
    r"^(?:EventBuilder|HandlerRunner|ResponseExplorer)\(|"
    r"^[A-Z][A-Za-z]*\((?:value|children|description|layout|options)="
)
_BLOCK_START = re.compile(r"^(?P<indent>\s*)# answer(?::\s*(?P<hint>.*?))?\s*$")
_BLOCK_END = re.compile(r"^\s*# end answer\s*$")
_INLINE = re.compile(r"^(?P<indent>\s*)(?P<code>\S.*?)\s+# answer(?::\s*(?P<hint>.*?))?\s*$")


def all_notebooks() -> list[Path]:
    """Every notebook, lessons first, then exercises and solutions, by name."""
    found = [p for p in NOTEBOOKS.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts]
    return sorted(found, key=lambda p: (len(p.relative_to(NOTEBOOKS).parts), str(p)))


def is_exercise(path: Path) -> bool:
    """Learner versions (notebooks/exercises/): executed by nbval, never compared."""
    return path.parent.name == "exercises"


def _cell_id(path: Path, index: int, cell: dict[str, Any]) -> str:
    digest = hashlib.sha1(f"{path.name}:{index}:{cell.get('cell_type')}".encode()).hexdigest()[:8]
    return f"c{index:02d}-{digest}"


def varies(output: dict[str, Any]) -> str | None:
    """Why an output must not be committed (a live widget, or marked as machine-dependent), or None."""
    data = output.get("data")
    if isinstance(data, dict) and WIDGET_VIEW in data:
        return "a live widget"
    marked = (output.get("metadata") or {}).get("fnkit")
    if isinstance(marked, dict) and marked.get("varies"):
        return str(marked["varies"])
    return None


def _tags(cell: dict[str, Any]) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def normalise(nb: dict[str, Any], path: Path) -> dict[str, Any]:
    """The clean form of a notebook (a new dict; the input is not changed)."""
    nb = json.loads(json.dumps(nb))
    exercise = is_exercise(path)
    meta = nb.setdefault("metadata", {})
    meta.pop("widgets", None)
    meta["kernelspec"] = dict(KERNELSPEC)
    meta["language_info"] = {"name": "python", "pygments_lexer": "ipython3"}
    nb["nbformat"], nb["nbformat_minor"] = 4, 5
    seen_ids: set[str] = set()
    for index, cell in enumerate(nb.get("cells", [])):
        if not cell.get("id") or cell["id"] in seen_ids:
            cell["id"] = _cell_id(path, index, cell)
        seen_ids.add(cell["id"])
        cmeta = cell.setdefault("metadata", {})
        for key in ("execution", "scrolled", "collapsed", "jupyter"):
            cmeta.pop(key, None)
        if isinstance(cell.get("source"), list):
            cell["source"] = "".join(cell["source"])
        if cell.get("cell_type") != "code":
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
            continue
        tags = _tags(cell)
        if exercise:
            cell["execution_count"] = None
        if (exercise or any(varies(out) for out in cell.get("outputs", []))) and IGNORE_TAG not in tags:
            tags.append(IGNORE_TAG)
        if IGNORE_TAG in tags:
            # never compared, so never committed: it could only mislead; nor its count, so the cell shows
            # `[ ]:` (not run yet) and not `[1]:` over nothing
            cell["outputs"] = []
            cell["execution_count"] = None
        if tags:
            cmeta["tags"] = tags
        else:
            cmeta.pop("tags", None)
        if cell.get("execution_count") is None:  # no outputs compared: nothing to tie to its source
            cmeta.pop(HASH_KEY, None)
        cell["outputs"] = [_clean_output(out) for out in cell.get("outputs", [])]
    return nb


def source_hash(source: str) -> str:
    """The hash of a code cell's source kept beside its outputs (the first 16 hex digits of its SHA-256)."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]


def stale_cells(nb: dict[str, Any]) -> list[str]:
    """The executed code cells whose source changed since their outputs were made, and those `run` did not make."""
    changed: list[str] = []
    unhashed: list[str] = []
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code" or cell.get("execution_count") is None:
            continue
        stored = (cell.get("metadata", {}).get(HASH_KEY) or {}).get("source")
        if stored == source_hash(_source(cell)):
            continue
        first = (_source(cell).strip().splitlines() or ["(empty)"])[0]
        (changed if stored else unhashed).append(f"code cell {i} ({first[:60]})")
    out = [f"{where} changed since its outputs were made" for where in changed[:3]]
    if len(changed) > 3:
        out.append(f"{len(changed) - 3} more code cells changed since their outputs were made")
    if unhashed:
        out.append(
            f"{unhashed[0]} has outputs `run` did not make (no hash of its source)"
            if len(unhashed) == 1
            else f"{len(unhashed)} code cells ({unhashed[0]}, ...) have outputs `run` did not make "
            "(no hash of their source)"
        )
    return out


def _clean_output(out: dict[str, Any]) -> dict[str, Any]:
    data = out.get("data")
    if isinstance(data, dict):
        for mime, value in list(data.items()):
            if isinstance(value, list) and mime.startswith("text"):
                data[mime] = "".join(value)
    if out.get("output_type") == "stream" and isinstance(out.get("text"), list):
        out["text"] = "".join(out["text"])
    if out.get("output_type") in ("display_data", "execute_result"):
        out.setdefault("metadata", {})
    return out


# --- exercises from solutions --------------------------------------------------------------------


class MarkerError(ValueError):
    """An answer marker the tool cannot read (the message says where)."""


def _inline_placeholder(code: str, where: str) -> str:
    try:
        node = ast.parse(code).body[0]
    except (SyntaxError, IndexError):
        raise MarkerError(f"{where}: '# answer' marks a line that is not one whole statement: {code!r}") from None
    if isinstance(node, ast.Return):
        return "return ..."
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return " = ".join(ast.get_source_segment(code, t) or "" for t in targets) + " = ..."
    if isinstance(node, ast.AugAssign):
        return f"{ast.get_source_segment(code, node.target)} {_AUG[type(node.op)]}= ..."
    return "..."


_AUG = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.BitOr: "|", ast.BitAnd: "&"}


def strip_answers(source: str, where: str = "") -> str:
    """The exercise's code for a solution's code: each marked answer replaced by `...`."""
    out: list[str] = []
    lines = source.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        start = _BLOCK_START.match(line)
        if start:
            end = next((j for j in range(i + 1, len(lines)) if _BLOCK_END.match(lines[j])), None)
            if end is None:
                raise MarkerError(f"{where} line {i + 1}: '# answer' without its '# end answer'")
            hint = start["hint"]
            out.append(f"{start['indent']}...{'  # ' + hint if hint else ''}")
            i = end + 1
            continue
        if _BLOCK_END.match(line):
            raise MarkerError(f"{where} line {i + 1}: '# end answer' without its '# answer'")
        inline = _INLINE.match(line)
        if inline:
            hint = inline["hint"]
            placeholder = _inline_placeholder(inline["code"], f"{where} line {i + 1}")
            out.append(f"{inline['indent']}{placeholder}{'  # ' + hint if hint else ''}")
        else:
            out.append(line)
        i += 1
    return "\n".join(out)


def exercise_of(solution: dict[str, Any], path: Path) -> dict[str, Any]:
    """The exercise notebook for a solution notebook (normalised, as committed)."""
    nb = json.loads(json.dumps(solution))
    for n, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") == "code":
            cell["source"] = strip_answers(_source(cell), f"{path.name} cell {n}")
            cell["outputs"], cell["execution_count"] = [], None
    return normalise(nb, NOTEBOOKS / "exercises" / path.name)


def has_answers(solution: dict[str, Any]) -> bool:
    """True when a solution marks at least one answer."""
    return any(
        cell.get("cell_type") == "code" and strip_answers(_source(cell)) != _source(cell)
        for cell in solution.get("cells", [])
    )


def write_exercises(names: list[str] | None = None) -> list[Path]:
    """Write exercises/NAME from solutions/NAME for every solution (or those matching `names`)."""
    written = []
    (NOTEBOOKS / "exercises").mkdir(exist_ok=True)
    for solution in sorted((NOTEBOOKS / "solutions").glob("*.ipynb")):
        target = NOTEBOOKS / "exercises" / solution.name
        if names and not any(n in str(target.relative_to(ROOT)) or n in str(solution.relative_to(ROOT)) for n in names):
            continue
        _write(target, exercise_of(_read(solution), solution))
        written.append(target)
    return written


def twins() -> list[str]:
    """Every exercise is its solution twin minus the marked answers (and every solution marks some)."""
    out: list[str] = []
    ex_dir, sol_dir = NOTEBOOKS / "exercises", NOTEBOOKS / "solutions"
    ex = {p.name for p in ex_dir.glob("*.ipynb")}
    sol = {p.name for p in sol_dir.glob("*.ipynb")}
    out.extend(f"{name}: only in {'exercises' if name in ex else 'solutions'}/" for name in sorted(ex ^ sol))
    for name in sorted(ex & sol):
        solution = _read(sol_dir / name)
        if not has_answers(solution):
            out.append(f"solutions/{name}: no answer is marked (# answer ... # end answer)")
            continue
        try:
            wanted = render(exercise_of(solution, sol_dir / name))
        except MarkerError as exc:
            out.append(f"solutions/{exc}")
            continue
        if wanted != (ex_dir / name).read_text(encoding="utf-8"):
            out.append(
                f"exercises/{name} is not solutions/{name} minus its marked answers "
                f"(run: .venv/bin/python tools/notebooks.py exercises {name})"
            )
    return out


# --- reading, writing, executing ----------------------------------------------------------------


def _read(path: Path) -> dict[str, Any]:
    notebook: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return notebook


def render(nb: dict[str, Any]) -> str:
    """The notebook's text as Jupyter itself writes it (sorted keys, sources split in lines)."""
    import nbformat

    text: str = nbformat.writes(nbformat.from_dict(nb), version=4)
    return text + "\n"


def _write(path: Path, nb: dict[str, Any]) -> None:
    path.write_text(render(nb), encoding="utf-8")


def execute(path: Path) -> float:
    """Execute a notebook in place with this Python's kernel (cwd: the notebook's folder); seconds taken."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:  # a learner version is run as the learner would: from empty
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    started = time.monotonic()
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=CELL_TIMEOUT_S,
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    taken = time.monotonic() - started
    errors = [c for c in nb.cells if c.cell_type == "code" and any(o.get("output_type") == "error" for o in c.outputs)]
    if errors:
        raise SystemExit(f"{path.relative_to(ROOT)}: a cell raised:\n{errors[0].source}")
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.metadata[HASH_KEY] = {"source": source_hash(cell.source)}
    _write(path, normalise(json.loads(nbformat.writes(nb)), path))
    return taken


def problems(path: Path) -> list[str]:
    """Why a notebook is not clean ([] when it is)."""
    text = path.read_text(encoding="utf-8")
    nb = json.loads(text)
    out = []
    if render(normalise(nb, path)) != text:
        out.append("not normalised (run: .venv/bin/python tools/notebooks.py clean)")
    if not is_exercise(path):
        unrun = [
            i
            for i, c in enumerate(nb["cells"])
            if c["cell_type"] == "code"
            and c.get("execution_count") is None
            and _source(c).strip()
            and IGNORE_TAG not in c.get("metadata", {}).get("tags", [])
        ]
        if unrun:
            out.append(
                f"code cell(s) {unrun} never executed: nbval would not compare them "
                f"(run: .venv/bin/python tools/notebooks.py run {path.name})"
            )
        stale = stale_cells(nb)
        if stale:
            out.append(
                f"{'; '.join(stale)}: its outputs may not be what its code makes "
                f"(run: .venv/bin/python tools/notebooks.py run {path.name})"
            )
    for i, cell in enumerate(nb["cells"]):
        for output in cell.get("outputs", []):
            why = _misleading(output)
            if why:
                out.append(
                    f"cell {i} holds {why}: clear it and tag the cell {IGNORE_TAG} "
                    f"(run: .venv/bin/python tools/notebooks.py run {path.name})"
                )
                break
    return out


def checked(paths: list[Path]) -> str:
    """What `check` looked at, said on success."""
    exercises = [p for p in paths if is_exercise(p)]
    solutions = [p for p in paths if p.parent.name == "solutions"]
    executed = sum(
        1
        for p in paths
        if not is_exercise(p)
        for c in _read(p)["cells"]
        if c["cell_type"] == "code" and c.get("execution_count") is not None
    )
    lessons = len(paths) - len(exercises) - len(solutions)
    return (
        f"checked {len(paths)} notebooks ({lessons} lessons, {len(solutions)} solutions, {len(exercises)} exercises): "
        f"normalised; {executed} executed code cells, each with outputs made from its current source; no output "
        "that varies or shows this machine; every exercise its solution minus the marked answers. All clean."
    )


def _misleading(output: dict[str, Any]) -> str | None:
    """What in a committed output would mislead a learner before anything runs, or None."""
    why = varies(output)
    if why:
        return f"an output that varies ({why})"
    texts = []
    if output.get("output_type") == "stream":
        texts.append(str(output.get("text", "")))
    for mime, value in (output.get("data") or {}).items():
        if mime.startswith("text"):
            texts.append(value if isinstance(value, str) else "".join(value))
    for text in texts:
        if _MACHINE_TEXT.search(text):
            return "an output that shows this machine (a path, an address, the environment check)"
    plain = (output.get("data") or {}).get("text/plain", "")
    plain = plain if isinstance(plain, str) else "".join(plain)
    if output.get("output_type") in ("execute_result", "display_data") and _WIDGET_TEXT.search(plain):
        return "the text stand-in of a widget (it reads like a widget that failed to load)"
    return None


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def _select(names: list[str]) -> list[Path]:
    paths = all_notebooks()
    if not names:
        return paths
    chosen = [p for p in paths if any(n in str(p.relative_to(ROOT)) for n in names)]
    if not chosen:
        raise SystemExit(f"no notebook matches {' '.join(names)}")
    return chosen


def main(argv: list[str]) -> int:
    """`python tools/notebooks.py run|clean|check|exercises [names]` (the usage above)."""
    if not argv or argv[0] not in ("run", "clean", "check", "exercises"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    command, names = argv[0], argv[1:]
    if command == "check":
        paths = all_notebooks()
        found = [f"{p.relative_to(ROOT)}: {why}" for p in paths for why in problems(p)] + twins()
        for line in found:
            print(line)
        if not found:
            print(checked(paths))
        return 1 if found else 0
    if command in ("run", "exercises"):
        # exercises first come from their solutions, so a run executes what learners get
        for path in write_exercises(names or None):
            print(f"{path.relative_to(ROOT)}: written from solutions/{path.name}")
        if command == "exercises":
            return 0
    total = 0.0
    for path in _select(names):
        if command == "run":
            taken = execute(path)
            total += taken
            print(f"{path.relative_to(ROOT)}: executed in {taken:.1f} s", flush=True)
        else:
            _write(path, normalise(_read(path), path))
            print(f"{path.relative_to(ROOT)}: normalised")
    if command == "run":
        print(f"total {total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
