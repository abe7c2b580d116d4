#!/usr/bin/env python3
"""The lessons as slides and as one PDF handout: run it before the day, hand out build/.

    .venv/bin/python tools/slides.py [NAME...] [--out DIR]     (default: every lesson, into build/)

Slides (DIR/slides/NAME.slides.html, reveal.js, nbconvert's slides exporter): each cell
tagged `slide` starts a slide (`subslide`, `fragment`, `skip` and `notes` likewise, as
nbconvert reads them), or, in a lesson without such tags, each `##` heading starts one and a
long section continues on sub-slides (a code cell with its output each). The committed
notebooks are not changed: the tags go on an in-memory copy. The handout (DIR/handout.pdf)
is every chosen lesson in order, with its committed outputs, printed by the installed
Chromium (/usr/bin/chromium, headless): nbconvert's own `--to webpdf` looks for a Chromium
of its own and does not find Debian's.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
SLIDE_TYPES = ("slide", "subslide", "fragment", "skip", "notes", "-")
PRINT_TIMEOUT_S = 180


def lessons(names: list[str]) -> list[Path]:
    """The lessons (notebooks/NN_*.ipynb) whose path holds one of `names` (all when none)."""
    found = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    chosen = [p for p in found if not names or any(n in p.name for n in names)]
    if not chosen:
        raise SystemExit(f"no lesson matches {' '.join(names)}; the lessons: {', '.join(p.stem for p in found)}")
    return chosen


def _tags(cell: Any) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def with_slide_types(nb: Any) -> Any:
    """A copy of `nb` whose cells say how they show as slides: from their tags, else from the `##` headings."""
    nb = copy.deepcopy(nb)
    tagged = any(set(_tags(c)) & set(SLIDE_TYPES) for c in nb.cells)
    for n, cell in enumerate(nb.cells):
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        if tagged:
            kind = next((t for t in _tags(cell) if t in SLIDE_TYPES), "-")
        elif n == 0 or (cell.cell_type == "markdown" and source.lstrip().startswith("## ")):
            kind = "slide"
        elif cell.cell_type == "code" and nb.cells[n - 1].cell_type == "code":
            kind = "subslide"  # a run of code cells: one each
        else:
            kind = "-"
        cell.metadata["slideshow"] = {"slide_type": kind}
    return nb


def make_slides(path: Path, out: Path) -> Path:
    """DIR/slides/NAME.slides.html for one lesson."""
    import nbformat
    from nbconvert import SlidesExporter

    nb = with_slide_types(nbformat.read(str(path), as_version=4))
    exporter = SlidesExporter()  # type: ignore[no-untyped-call]  # nbconvert leaves its constructors unannotated
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
    target = out / "slides" / f"{path.stem}.slides.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(body, encoding="utf-8")
    return target


def handout_notebook(paths: list[Path]) -> Any:
    """One notebook holding every lesson's cells in order (each cell id prefixed by its lesson's place)."""
    import nbformat

    merged = nbformat.v4.new_notebook()
    for n, path in enumerate(paths):
        nb = nbformat.read(str(path), as_version=4)
        merged.metadata = merged.metadata or nb.metadata
        for cell in nb.cells:
            cell.id = f"l{n}-{cell.id}"[:64]
            merged.cells.append(cell)
    return merged


def chromium() -> str:
    """The installed Chromium, or SystemExit saying how to install it."""
    for candidate in CHROMIUM_PATHS:
        if Path(candidate).is_file():
            return candidate
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    raise SystemExit("the handout is printed by Chromium, which is missing: sudo apt-get install chromium")


def print_pdf(html: Path, pdf: Path) -> None:
    """`html` printed to `pdf` by headless Chromium (no header or footer)."""
    argv = [
        chromium(),
        "--headless",
        "--no-sandbox",  # as root (a container, CI) Chromium refuses its sandbox
        "--disable-gpu",
        "--no-pdf-header-footer",
        f"--print-to-pdf={pdf}",
        html.resolve().as_uri(),
    ]
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [*argv, f"--user-data-dir={profile}"],
            capture_output=True,
            text=True,
            timeout=PRINT_TIMEOUT_S,
            check=False,
        )
    if not pdf.is_file() or pdf.stat().st_size == 0:
        raise SystemExit(f"Chromium did not print {html.name} (exit code {done.returncode}): {done.stderr[-500:]}")


def make_handout(paths: list[Path], out: Path) -> Path:
    """DIR/handout.pdf: the lessons in order, printed from nbconvert's HTML by Chromium."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter()  # type: ignore[no-untyped-call]  # nbconvert leaves its constructors unannotated
    body, _ = exporter.from_notebook_node(handout_notebook(paths))
    out.mkdir(parents=True, exist_ok=True)
    html = out / "handout.html"
    html.write_text(body, encoding="utf-8")
    pdf = out / "handout.pdf"
    pdf.unlink(missing_ok=True)
    print_pdf(html, pdf)
    return pdf


def main(argv: list[str]) -> int:
    """`tools/slides.py [NAME...] [--out DIR]`: the slides of each lesson, then the handout."""
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__.split("\n\n")[1])
        return 0
    out = ROOT / "build"
    if "--out" in argv:
        at = argv.index("--out")
        if at + 1 >= len(argv):
            print(__doc__.split("\n\n")[1], file=sys.stderr)
            return 2
        out = Path(argv[at + 1])
        argv = argv[:at] + argv[at + 2 :]
    paths = lessons(argv)
    for path in paths:
        target = make_slides(path, out)
        print(f"{target}: slides of {path.name}")
    started = time.monotonic()
    pdf = make_handout(paths, out)
    pages = pdf.read_bytes().count(b"/Type /Page") - pdf.read_bytes().count(b"/Type /Pages")
    print(f"{pdf}: the handout, {len(paths)} lesson(s), {pages} pages ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
