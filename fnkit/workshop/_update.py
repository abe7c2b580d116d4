"""`kit.py update` and `kit.py release`: the instructor's new and changed notebooks reach a learner's working copy.

`update` copies the notebooks the working copy lacks, and merges a changed one cell by cell
(cells match by their id): a cell the learner did not edit takes the new version, a cell
the learner edited is kept, a cell the learner added stays where it was, a new cell comes
in at its place. When the instructor changed a cell the learner also edited, nothing is
merged: the new version is written beside the learner's (NAME.updated.ipynb), never over it.
A merged notebook's previous version is kept in work/.backup/. What the learner's copy was
made from (the merge's base) is kept in work/.pristine/ (`kit.py lab` records it for a copy still
as it was made); without it, a cell counts as not edited when it is any version of that cell
the repository's history holds, and a cell the learner edited is kept unless that history shows
the instructor changing it too.

Solutions are hidden until released when notebooks/solutions/RELEASED exists: it lists the
released notebooks by name (`kit.py release 02_mail` adds one); without it, every solution
is the learner's from the start. Standard library only.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BASE_DIR = ".pristine"
BACKUP_DIR = ".backup"
RELEASED = "RELEASED"
SKIPPED = {".ipynb_checkpoints", BASE_DIR, BACKUP_DIR}
HISTORY_VERSIONS = 30


@dataclass
class Planned:
    """What `update` does (or would do) to one notebook of the working copy."""

    notebook: str
    action: str  # "copied", "merged", "side by side", "hidden"
    detail: str = ""


def notebooks_in(folder: Path) -> list[Path]:
    """The notebooks under `folder`, relative to it (checkpoints, backups and bases left out)."""
    if not folder.is_dir():
        return []
    found = [p.relative_to(folder) for p in folder.rglob("*.ipynb")]
    return sorted(p for p in found if not SKIPPED & set(p.parts))


def released(pristine: Path) -> set[str] | None:
    """The released solutions' names (stems), or None when every solution is released (no RELEASED file)."""
    listed = pristine / "solutions" / RELEASED
    if not listed.is_file():
        return None
    return {line.split("#", 1)[0].strip().removesuffix(".ipynb") for line in listed.read_text("utf-8").splitlines()} - {
        ""
    }


def is_hidden(pristine: Path, rel: Path) -> bool:
    """A solution not released yet (the learner's working copy does not get it)."""
    names = released(pristine)
    return rel.parts[0] == "solutions" and names is not None and rel.stem not in names


def release(pristine: Path, names: list[str]) -> list[str]:
    """Add solutions to RELEASED (made, hiding every other, when missing; `names` empty: every one hidden until
    released); the released names, in order."""
    available = {p.stem for p in (pristine / "solutions").glob("*.ipynb")}
    unknown = [n for n in names if n.removesuffix(".ipynb").split("/")[-1] not in available]
    if unknown:
        raise ValueError(
            f"no solution is called {', '.join(unknown)}; the solutions are: {', '.join(sorted(available))}"
        )
    now = (released(pristine) or set()) if names else set()
    now |= {n.removesuffix(".ipynb").split("/")[-1] for n in names}
    listed = pristine / "solutions" / RELEASED
    listed.write_text(
        "# the solutions learners get in work/solutions/ (python3 kit.py release NAME adds one)\n"
        + "".join(f"{name}\n" for name in sorted(now)),
        encoding="utf-8",
    )
    return sorted(now)


def _read(path: Path) -> dict[str, Any]:
    nb: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return nb


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def _history(pristine: Path, rel: Path) -> list[dict[str, Any]]:
    """Earlier versions of a pristine notebook from git (none outside a repository, or without git)."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=pristine, capture_output=True, text=True, timeout=30, check=False)
        return done.stdout if done.returncode == 0 else ""

    try:
        top = git("rev-parse", "--show-toplevel").strip()
        if not top:
            return []
        path = (pristine / rel).resolve().relative_to(Path(top).resolve()).as_posix()
        commits = git("log", f"-{HISTORY_VERSIONS}", "--format=%H", "--", path).split()
        versions = []
        for commit in commits:
            text = git("show", f"{commit}:{path}")
            if text:
                versions.append(json.loads(text))
        return versions
    except (OSError, ValueError, subprocess.SubprocessError):
        return []


def merge(
    mine: dict[str, Any], new: dict[str, Any], base: dict[str, Any] | None, history: list[dict[str, Any]]
) -> tuple[dict[str, Any] | None, list[str], int]:
    """(merged notebook or None on a conflict, the conflicting cells, how many cells changed) for one notebook."""
    before = [v for v in [base, *history] if v is not None]
    known: dict[str, set[str]] = {}
    for version in [*before, new]:
        for cell in version.get("cells", []):
            known.setdefault(str(cell.get("id")), set()).add(_source(cell))
    ids_before = {str(c.get("id")) for version in before for c in version.get("cells", [])}
    base_source = {str(c.get("id")): _source(c) for c in base.get("cells", [])} if base is not None else None
    ours = {str(c.get("id")): c for c in mine.get("cells", [])}
    theirs = {str(c.get("id")) for c in new.get("cells", [])}
    merged: list[dict[str, Any]] = []
    conflicts: list[str] = []
    changed = 0
    for cell in new.get("cells", []):
        cid = str(cell.get("id"))
        kept = ours.get(cid)
        if kept is None:
            if cid not in ids_before:  # a new cell; one the learner deleted stays deleted
                merged.append(cell)
                changed += 1
            continue
        if _source(kept) == _source(cell):
            merged.append(kept)  # the learner's, outputs and all
            continue
        edited = _source(kept) not in known.get(cid, set())
        if not edited:
            merged.append(cell)
            changed += 1
            continue
        upstream = base_source.get(cid) != _source(cell) if base_source is not None else len(known.get(cid, set())) > 1
        if upstream:
            first = (_source(cell).strip().splitlines() or [""])[0]
            conflicts.append(f"cell {cid} ({first[:50]})")
        merged.append(kept)
    # the learner's own cells (and edited ones the new version drops) stay after the cell they followed
    previous: str | None = None
    placed = {str(c.get("id")) for c in merged}
    for cid, cell in ours.items():
        if cid not in placed and (cid not in known or _source(cell) not in known.get(cid, set())):
            at = next((n + 1 for n, c in enumerate(merged) if str(c.get("id")) == previous), 0)
            merged.insert(at, cell)
            placed.add(cid)
        elif cid not in placed and cid not in theirs:
            changed += 1  # a cell the instructor removed, not edited by the learner: removed
        previous = cid if cid in placed else previous
    if conflicts:
        return None, conflicts, changed
    return {**mine, "cells": merged}, [], changed


def _write(path: Path, nb: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _beside(target: Path) -> Path:
    candidate = target.with_name(f"{target.stem}.updated.ipynb")
    n = 2
    while candidate.exists():
        candidate = target.with_name(f"{target.stem}.updated-{n}.ipynb")
        n += 1
    return candidate


def _same_cells(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return [(c.get("id"), _source(c)) for c in a.get("cells", [])] == [
        (c.get("id"), _source(c)) for c in b.get("cells", [])
    ]


def update(pristine: Path, work: Path, *, apply: bool = True) -> list[Planned]:
    """Bring the pristine notebooks' news into the working copy (`apply=False`: only say what would change)."""
    planned: list[Planned] = []
    stamp = time.strftime("%Y-%m-%d_%H%M%S")
    for rel in notebooks_in(pristine):
        source, target, base_path = pristine / rel, work / rel, work / BASE_DIR / rel
        if is_hidden(pristine, rel):
            continue
        new = _read(source)
        if not target.exists():
            planned.append(Planned(rel.as_posix(), "copied", "new"))
            if apply:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
                _write(base_path, new)
            continue
        try:
            mine = _read(target)
        except (OSError, ValueError) as exc:
            planned.append(Planned(rel.as_posix(), "side by side", f"yours could not be read ({exc})"))
            if apply:
                _write(_beside(target), new)
            continue
        base = _read(base_path) if base_path.is_file() else None
        if base is None and _same_cells(mine, new):
            _write(base_path, new)  # identical now: the base of the next update (also on --check, as `lab` runs it)
            continue
        if base is not None and _same_cells(base, new):
            continue  # nothing new since the learner's copy
        merged, conflicts, changed = merge(mine, new, base, _history(pristine, rel) if base is None else [])
        if merged is None:
            planned.append(
                Planned(rel.as_posix(), "side by side", f"you and the instructor both changed {', '.join(conflicts)}")
            )
            if apply:
                beside = _beside(target)
                _write(beside, new)
                planned[-1].detail += f": the new version is {beside.relative_to(work).as_posix()}, yours is untouched"
            continue
        if changed == 0:
            if apply:
                _write(base_path, new)
            continue
        planned.append(Planned(rel.as_posix(), "merged", f"{changed} cell(s) new or changed; your edits kept"))
        if apply:
            kept = work / BACKUP_DIR / stamp / rel
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(target, kept)
            _write(target, merged)
            _write(base_path, new)
            planned[-1].detail += f" (your previous version: {kept.relative_to(work).as_posix()})"
    return planned


def update_main(argv: list[str]) -> int:
    """`python -m fnkit.workshop update [--check] [--pristine DIR] [--work DIR]`; `release NAME...`."""
    from ._environment import find_root

    args = list(argv)
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    root = find_root() or Path.cwd()
    folders = {"--pristine": root / "notebooks", "--work": root / "work"}
    for flag in folders:
        if flag in args:
            at = args.index(flag)
            if at + 1 >= len(args):
                print("usage: python3 kit.py update [--check]")
                return 2
            folders[flag] = Path(args[at + 1])
            del args[at : at + 2]
    pristine, work = folders["--pristine"], folders["--work"]
    planned = update(pristine, work, apply=not check)
    if check:
        changed = [p for p in planned if p.action != "copied"]
        if changed:
            names = ", ".join(p.notebook for p in changed)
            print(f"== the instructor's notebooks changed since your copy ({names}): python3 kit.py update brings")
            print("   the changes in, keeping your edits (a notebook you both changed gets a copy beside yours)")
        return 0
    for p in planned:
        print(f"== work/{p.notebook}: {p.action}" + (f" - {p.detail}" if p.detail else ""))
    if not planned:
        print("== work/ is up to date with notebooks/")
    elif any(p.action == "merged" for p in planned):
        print(
            "A merged notebook that is open in JupyterLab: close its tab without saving, then open it again "
            "(should JupyterLab ask about the changed file, choose Revert)."
        )
    return 0


def release_main(argv: list[str]) -> int:
    """`python -m fnkit.workshop release [NAME...|--hide]`: release solutions (`--hide`: every one hidden until
    released; no name: say which are released)."""
    from ._environment import find_root

    root = find_root() or Path.cwd()
    pristine = root / "notebooks"
    if not argv:
        names = released(pristine)
        print(
            "every solution is released (no notebooks/solutions/RELEASED)"
            if names is None
            else f"released: {', '.join(sorted(names)) or 'none'}"
        )
        return 0
    try:
        now = release(pristine, [] if argv == ["--hide"] else argv)
    except ValueError as exc:
        print(f"kit.py release: {exc}")
        return 2
    said = ", ".join(now) or "none (every solution is hidden until released)"
    print(f"released: {said} (notebooks/solutions/{RELEASED}; commit it, then learners run kit.py update)")
    return 0
