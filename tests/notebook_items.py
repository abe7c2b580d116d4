"""What the suite adds to nbval's items (the notebooks' cells): the `workshop` marker, and failures that point
at the notebook's cell and the command that re-runs it. A plugin (tests/conftest.py registers it): its hooks see
every item of the run, notebooks/ included."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

# the notebooks of the exercises: `-k workshop` and `-m workshop` select their cells with tests/workshop/
WORKSHOP_FOLDERS = ("exercises", "solutions")


def is_notebook_cell(item: pytest.Item) -> bool:
    """An nbval item: one code cell of a notebook."""
    return hasattr(item, "cell_num") and hasattr(item, "cell") and str(item.path).endswith(".ipynb")


def notebook_name(path: Path) -> str:
    """The NAME tools/notebooks.py takes: the path under notebooks/, without .ipynb (else the file's stem)."""
    parts = path.with_suffix("").parts
    if "notebooks" in parts:
        return "/".join(parts[len(parts) - parts[::-1].index("notebooks") :])
    return path.stem


def where(item: Any) -> str:
    """'notebooks/x.ipynb, cell 9 (code cell 3): its first line', and the command that re-runs the notebook."""
    cells = list(getattr(item.parent, "nb", {}).get("cells", []))
    index = next((n for n, cell in enumerate(cells) if cell is item.cell), None)
    lines = str(item.cell.source).strip().splitlines()
    first = lines[0] if lines else "(empty)"
    place = f"cell {index}" if index is not None else "a cell"
    name = notebook_name(item.path)
    return (
        f"{item.path.name}, {place} of the notebook (its code cell {item.cell_num}, nbval's 'Cell {item.cell_num}'): "
        f"{first}\n"
        f"nbval's finding is below. When the change is meant, re-run the notebook and commit it: "
        f".venv/bin/python tools/notebooks.py run {name}   (then `git diff notebooks/{name}.ipynb` shows what moved)"
    )


def pytest_configure(config: pytest.Config) -> None:
    """The `workshop` marker, known to `--strict-markers`."""
    config.addinivalue_line(
        "markers", "workshop: the exercises: tests/workshop, and the cells of notebooks/exercises and solutions (nbval)"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The exercises' notebook cells and tests/workshop/ are marked `workshop` (before -k and -m select)."""
    for item in items:
        notebook = is_notebook_cell(item) and item.path.parent.name in WORKSHOP_FOLDERS
        if notebook or (item.path.parent.name == "workshop" and item.path.parent.parent.name == "tests"):
            item.add_marker(pytest.mark.workshop)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """A notebook cell's failure starts with where it is and the command that re-runs its notebook."""
    report = yield
    if report.failed and call.when == "call" and is_notebook_cell(item):
        report.longrepr = f"{where(item)}\n\n{report.longrepr}"
    return report
