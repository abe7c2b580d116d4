#!/usr/bin/env python3
"""Keep the notebooks executed, deterministic and clean: run this before committing notebooks.

    .venv/bin/python tools/notebooks.py run   [NAME...]   execute, then normalise (the usual command)
    .venv/bin/python tools/notebooks.py clean [NAME...]   normalise only, no execution
    .venv/bin/python tools/notebooks.py check             exit 1 (saying why) when a notebook is not clean

NAME is a notebook path or a part of one (`01`, `exercises`); none means every notebook.

Lessons (notebooks/*.ipynb) and solutions (notebooks/solutions/) keep their outputs and
execution counts: nbval compares them strictly (it skips cells without an execution count).
Learner versions (notebooks/exercises/) are executed too, to prove they run top to bottom,
and then emptied: no outputs, no execution counts, every code cell tagged
`nbval-ignore-output`, so nbval executes them without comparing.

Everywhere: the widget state saved in the metadata is dropped, widget views
(`application/vnd.jupyter.widget-view+json`, random model ids) are taken out of the
outputs (their deterministic text/plain stays), run timings and the Python patch version
are removed, and the kernel is `python3`. Run it with the .venv's Python, so the outputs
come from the environment the tests use.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
IGNORE_TAG = "nbval-ignore-output"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
CELL_TIMEOUT_S = 120


def all_notebooks() -> list[Path]:
    """Every notebook, lessons first, then exercises and solutions, by name."""
    found = [p for p in NOTEBOOKS.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts]
    return sorted(found, key=lambda p: (len(p.relative_to(NOTEBOOKS).parts), str(p)))


def is_exercise(path: Path) -> bool:
    """Learner versions: executed by nbval, never compared."""
    return "exercises" in path.relative_to(NOTEBOOKS).parts


def _cell_id(path: Path, index: int, cell: dict) -> str:
    digest = hashlib.sha1(f"{path.name}:{index}:{cell.get('cell_type')}".encode()).hexdigest()[:8]
    return f"c{index:02d}-{digest}"


def normalise(nb: dict, path: Path) -> dict:
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
        tags = list(cmeta.get("tags", []))
        if exercise:
            cell["outputs"] = []
            cell["execution_count"] = None
            if IGNORE_TAG not in tags:
                tags.append(IGNORE_TAG)
        if tags:
            cmeta["tags"] = tags
        else:
            cmeta.pop("tags", None)
        outputs = []
        for out in cell.get("outputs", []):
            data = out.get("data")
            if isinstance(data, dict):
                data.pop(WIDGET_VIEW, None)
                if not data:
                    continue
                for mime, value in list(data.items()):
                    if isinstance(value, list) and mime.startswith("text"):
                        data[mime] = "".join(value)
            if out.get("output_type") == "stream" and isinstance(out.get("text"), list):
                out["text"] = "".join(out["text"])
            if out.get("output_type") in ("display_data", "execute_result"):
                out.setdefault("metadata", {})
            outputs.append(out)
        cell["outputs"] = outputs
    return nb


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def render(nb: dict) -> str:
    """The notebook's text as Jupyter itself writes it (sorted keys, sources split in lines)."""
    import nbformat

    return nbformat.writes(nbformat.from_dict(nb), version=4) + "\n"


def _write(path: Path, nb: dict) -> None:
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
    client = NotebookClient(nb, kernel_name="python3", timeout=CELL_TIMEOUT_S, record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    taken = time.monotonic() - started
    errors = [c for c in nb.cells if c.cell_type == "code" and any(o.get("output_type") == "error" for o in c.outputs)]
    if errors:
        raise SystemExit(f"{path.relative_to(ROOT)}: a cell raised:\n{errors[0].source}")
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
        unrun = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code" and c.get("execution_count") is None
                 and _source(c).strip()]
        if unrun:
            out.append(f"code cell(s) {unrun} never executed: nbval would not compare them (run: .venv/bin/python tools/notebooks.py run {path.name})")
    return out


def twins() -> list[str]:
    """Every exercise notebook has a solution twin with the same text cells and the same check cells."""
    out = []
    ex_dir, sol_dir = NOTEBOOKS / "exercises", NOTEBOOKS / "solutions"
    ex = {p.name for p in ex_dir.glob("*.ipynb")}
    sol = {p.name for p in sol_dir.glob("*.ipynb")}
    for name in sorted(ex ^ sol):
        out.append(f"{name}: only in {'exercises' if name in ex else 'solutions'}/")
    for name in sorted(ex & sol):
        a, b = _read(ex_dir / name)["cells"], _read(sol_dir / name)["cells"]
        if len(a) != len(b):
            out.append(f"{name}: {len(a)} cells in exercises/, {len(b)} in solutions/")
            continue
        for i, (x, y) in enumerate(zip(a, b)):
            if x["cell_type"] != y["cell_type"]:
                out.append(f"{name}: cell {i} is {x['cell_type']} in exercises/, {y['cell_type']} in solutions/")
            elif x["cell_type"] == "markdown" and _source(x) != _source(y):
                out.append(f"{name}: markdown cell {i} differs between exercises/ and solutions/")
            elif "workshop.check(" in _source(x) and _source(x) != _source(y):
                out.append(f"{name}: check cell {i} differs between exercises/ and solutions/")
    return out


def _source(cell: dict) -> str:
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
    if not argv or argv[0] not in ("run", "clean", "check"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    command, names = argv[0], argv[1:]
    if command == "check":
        found = [f"{p.relative_to(ROOT)}: {why}" for p in all_notebooks() for why in problems(p)] + twins()
        for line in found:
            print(line)
        return 1 if found else 0
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
