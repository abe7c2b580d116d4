"""The first exercise early, and a check that knows what ran, in a real browser on a fresh working copy.

1. 00_start_here, as a learner reads and runs it: its reading time (words / 200 per minute, plus
   half a minute per code cell run) is at most 4 minutes, and every cell runs without an error;
2. lesson 01 up to its first hands-on task (a `workshop.check` cell): at most 6 minutes by the
   same count. The cells before the task run in order; the check run before the handler's cell
   says which cell to run (not a NameError traceback); the handler's cell with its `...` gets
   "not done yet ... run the handler's cell, then this check";
3. the handler's cell edited into an IndentationError and run, then the check: one sentence says
   the cell failed, on which line, and that the check used the earlier version;
4. the right answer, run, then the check: it passes.

The minutes are printed (the README's learner timings are these).
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .test_lab import KERNEL_IDLE, close, open_page, run_all
from .test_learner_path import KIT_INTERNALS, PANEL, cells, output, run_cell, source_of, write_cell

pytestmark = pytest.mark.browser

WORDS_PER_MINUTE = 200
MINUTES_PER_CODE_CELL = 0.5

RIGHT = """def report_bad_orders(event, context):
    failures = []
    for record in event["Records"]:
        order = json.loads(record["body"])
        if order["qty"] <= 0:
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}"""
# the learner's first try: the append not indented under its `if`
INDENTED_WRONG = RIGHT.replace("            failures.append", "        failures.append")


def reading_minutes(page: Page, last: int | None = None) -> tuple[float, int, int]:
    """(minutes, markdown words, code cells) of the open notebook's cells 0..last (all: None)."""
    kinds_and_sources: list[list[str]] = page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.content.widgets"
        ".map(w => [w.model.type, w.model.sharedModel.getSource()])"
    )
    chosen = kinds_and_sources if last is None else kinds_and_sources[: last + 1]
    words = sum(len(source.split()) for kind, source in chosen if kind == "markdown")
    code = sum(1 for kind, source in chosen if kind == "code" and source.strip())
    return words / WORDS_PER_MINUTE + code * MINUTES_PER_CODE_CELL, words, code


def errors_shown(page: Page) -> list[str]:
    shown: list[str] = page.locator(f"{PANEL} .jp-OutputArea-output[data-mime-type*='error']").all_inner_texts()
    return shown


def test_00_then_01s_first_task_early_with_a_check_that_knows_what_ran(browser, lab, capsys):
    page = open_page(browser, lab, "00_start_here.ipynb")
    page.set_viewport_size({"width": 1200, "height": 1500})
    try:
        # 1. 00: read and run in at most 4 minutes, every cell without an error
        minutes_00, words_00, code_00 = reading_minutes(page)
        run_all(page)
        expect(page.locator(f"{PANEL} .fnkit-environment").first).to_contain_text("All checks pass")
        assert errors_shown(page) == []
        expect(page.locator(f"{PANEL} .jp-RenderedMarkdown").filter(has_text="model not found").first).to_be_visible()

        # 2. lesson 01 up to its first task: at most 6 minutes; its cells before the task run in order
        page.evaluate("window.jupyterapp.commands.execute('docmanager:open', {path: '01_queue_batch.ipynb'})")
        page.wait_for_function("() => window.jupyterapp.shell.currentWidget.context.path === '01_queue_batch.ipynb'")
        page.wait_for_function(KERNEL_IDLE, timeout=60_000)
        count = cells(page).count()
        handler = next(i for i in range(count) if source_of(page, i).startswith("def report_bad_orders"))
        check = handler + 1
        assert source_of(page, check) == 'workshop.check("queue-first", report_bad_orders)'
        minutes_01, words_01, code_01 = reading_minutes(page, check)
        kinds: list[str] = page.evaluate(
            "() => window.jupyterapp.shell.currentWidget.content.widgets.map(w => w.model.type)"
        )
        # as committed, its cells show the prompts of the run that made their outputs: clear them, so each
        # run here shows a new number (a learner's first run gives the same numbers)
        page.evaluate("window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
        for i in range(handler):
            if kinds[i] == "code":
                run_cell(page, i)
        # the check before its handler's cell ran: which cell to run, in one sentence, no traceback
        run_cell(page, check)
        expect(output(page, check)).to_contain_text(
            "report_bad_orders is not defined yet: run the cell that defines it (the one with "
            "`def report_bad_orders(event, context):`, above this one), then this check."
        )
        assert not KIT_INTERNALS.search(output(page, check).inner_text())
        # the handler with its `...`, then the check: not done yet, and what to run
        run_cell(page, handler)
        placeholder_run = re.fullmatch(
            r"\[(\d+)\]:?", cells(page).nth(handler).locator(".jp-InputPrompt").first.inner_text().strip()
        )
        assert placeholder_run is not None
        run_cell(page, check)
        expect(output(page, check)).to_contain_text(
            f"not done yet: report_bad_orders (as cell [{placeholder_run[1]}] defined it) still holds a placeholder "
            "(...); replace it with your code, run the handler's cell, then this check."
        )

        # 3. the cell edited into an IndentationError and run, then only the check: it says what ran
        write_cell(page, handler, INDENTED_WRONG)
        run_cell(page, handler)
        expect(output(page, handler)).to_contain_text("IndentationError")
        failed_run = cells(page).nth(handler).locator(".jp-InputPrompt").first.inner_text().strip().strip("[]:")
        run_cell(page, check)
        stale = (
            f"the cell that defines report_bad_orders failed with IndentationError on line 6 when it ran as cell "
            f"[{failed_run}]; the check used the earlier version, from cell [{placeholder_run[1]}]: fix it, run it, "
            "then this check."
        )
        expect(output(page, check)).to_contain_text(stale)
        assert not KIT_INTERNALS.search(output(page, check).inner_text())

        # 4. the right answer passes
        write_cell(page, handler, RIGHT)
        run_cell(page, handler)
        run_cell(page, check)
        expect(cells(page).nth(check).locator(".fnkit-check-passed").first).to_contain_text(
            "done: all 4 hidden cases pass."
        )
    finally:
        close(page)
    with capsys.disabled():
        print(
            f"\nreading minutes: 00 {minutes_00:.1f} ({words_00} words, {code_00} code cells); "
            f"01 up to its first task {minutes_01:.1f} ({words_01} words, {code_01} code cells)"
        )
    assert minutes_00 <= 4, f"00 takes {minutes_00:.1f} minutes to read and run"
    assert minutes_01 <= 6, f"01 takes {minutes_01:.1f} minutes to its first task"
