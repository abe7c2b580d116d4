"""00_start_here says true things a learner needs before the first exercise, and says them briefly."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START = ROOT / "notebooks" / "00_start_here.ipynb"


def _cells() -> list[dict[str, str]]:
    cells = json.loads(START.read_text(encoding="utf-8"))["cells"]
    return [{"type": c["cell_type"], "text": " ".join("".join(c["source"]).split())} for c in cells]


def test_00_says_where_handlers_run_and_what_a_swallowing_loop_needs():
    text = " ".join(c["text"] for c in _cells() if c["type"] == "markdown")
    assert "so none can freeze the kernel" not in text  # untrue: queue.run and fnkit.invoke run in the kernel
    assert "run in the kernel by default" in text and "except BaseException: pass" in text
    assert "Restart Kernel* ends it" in text


def test_00_lists_a_saved_widgets_model_not_found_and_how_to_reload_after_a_reset():
    text = " ".join(c["text"] for c in _cells() if c["type"] == "markdown")
    assert '"Error displaying widget: model not found"' in text and "Run its cell again" in text
    assert "*File → Reload Notebook from Disk*" in text


def test_00_explains_the_visibility_timeout_and_rule_codes_where_they_first_show():
    cells = _cells()
    first_timeout = next(i for i, c in enumerate(cells) if "visibility timeout" in c["text"])
    assert (
        cells[first_timeout]["type"] == "markdown"
        and "the time a received message stays hidden" in (cells[first_timeout]["text"])
    )
    first_rule = next(i for i, c in enumerate(cells) if "Q13" in c["text"])
    assert (
        cells[first_rule]["type"] == "markdown" and "the rule of the contract that says so" in cells[first_rule]["text"]
    )
