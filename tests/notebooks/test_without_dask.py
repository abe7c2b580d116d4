"""Notebook 05 runs to its end where Dask is not installed, as `python3 kit.py lab` leaves it out.

The kernel is started with Dask made unimportable (its names are set to None in
`sys.modules` before the first cell, so `import distributed` raises ModuleNotFoundError,
as it does when the package is missing); the notebook is then run top to bottom, as
*Run All* does, and no cell may end in an error.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
LESSON = ROOT / "notebooks" / "05_real_logs.ipynb"
NO_DASK = "import sys; sys.modules.update(dict.fromkeys(['dask', 'distributed', 'dask_expr']))"


def test_notebook_05_runs_to_its_end_without_dask_and_says_how_to_add_it():
    nb = nbformat.read(str(LESSON), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=120,
        allow_errors=True,  # every cell runs, so an error anywhere is seen, not only the first
        extra_arguments=[f"--IPKernelApp.exec_lines={NO_DASK}"],
        resources={"metadata": {"path": str(LESSON.parent)}},
    )
    client.execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [(c.source.splitlines()[0], o) for c in code for o in c.outputs if o.output_type == "error"]
    assert errors == []
    stderr = [o.text for c in code for o in c.outputs if o.output_type == "stream" and o.name == "stderr"]
    assert not any("Traceback" in text or "Error" in text for text in stderr), stderr
    assert all(c.execution_count for c in code if c.source.strip()), "a cell did not run"
    said = "".join(o.get("text", "") for c in code for o in c.outputs if o.output_type == "stream")
    # one line, at the Dask part, says how to add it
    assert said.count("python3 kit.py lab --with dask") == 1, said
    # and the parts after Dask ran: the dead-letter dump was read
    assert "queue messages: read 9 messages" in said
    assert "dask DataFrame" not in said and "identical:" not in said


def test_notebook_05_shows_why_each_reported_line_was_reported_in_full():
    nb = nbformat.read(str(LESSON), as_version=4)
    table = next(c for c in nb.cells if c.cell_type == "code" and '"why"' in c.source)
    shown = "".join(o.get("data", {}).get("text/html", "") for o in table.outputs)
    # the column the cell exists to show, not cut at pandas' 50 characters with "..."
    assert "without a target), so there is nothing to replay." in shown
    assert "an access-log entry has at least 18 (type … trace_id)." in shown
