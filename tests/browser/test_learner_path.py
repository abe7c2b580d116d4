"""A learner's first ten minutes, end to end, in a real browser on a fresh working copy.

1. open 00_start_here from the working copy (made as `kit.py lab` makes work/), run it, and
   see the environment check's ✔ marks, from this machine (nothing was there before it ran);
2. open the first exercise, write a wrong answer into its cell, run the check: the feedback;
3. write the right answer: the check passes;
4. the poison-message exercise with the two likeliest wrong answers (the receive count, a string,
   compared with an int; a parked message still listed): the check says in one sentence what the
   handler did, the simulated queue below it stops at its bound and says so, each cell ends, and
   nothing shows a traceback or a line of fnkit's own code;
5. run a handler that never returns (it swallows every exception) in a handler runner: the
   kernel answers while it runs; press Stop: the runner says "stopped", and the kernel answers.

Screenshots of the steps go to build/screenshots/docs/learner-path/, or over the committed ones in
docs/learner-path/ (the README shows them) with FNKIT_UPDATE_SCREENSHOTS=1 (see _shots.py); the
path's wall time is printed.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from ._shots import screenshot_dir
from .test_lab import KERNEL_IDLE, close, open_page, run_all

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
COMMITTED_DOCS = ROOT / "docs" / "learner-path"
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"

WRONG = """def report_failures(event, context):
    failures = []
    for record in event["Records"]:
        try:
            process_order(record["body"])
        except BadOrder:
            failures.append({"itemIdentifier": record["receiptHandle"]})
    return {"batchItemFailures": failures}"""

RIGHT = WRONG.replace('record["receiptHandle"]', 'record["messageId"]')

# Exercise 3 (give_up), wrong as learners get it wrong: ApproximateReceiveCount is a string, so `>=` with an
# int raises TypeError on every bad order; and a message parked, then listed anyway, comes back for ever.
GIVE_UP_STRING_COUNT = """def give_up(event, context):
    failures = []
    for record in event["Records"]:
        try:
            process_order(record["body"])
        except BadOrder:
            if record["attributes"]["ApproximateReceiveCount"] >= 3:
                park(record)
            else:
                failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}"""

GIVE_UP_PARKED_AND_LISTED = """def give_up(event, context):
    failures = []
    for record in event["Records"]:
        try:
            process_order(record["body"])
        except BadOrder:
            if int(record["attributes"]["ApproximateReceiveCount"]) >= 3:
                park(record)
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}"""

# What a learner must never see in a cell's output: a traceback, or a line of the kit's own code
# (a frame or a warning's location in fnkit/...), however the cell went wrong.
KIT_INTERNALS = re.compile(r"Traceback|File \"|fnkit[/\\]\w+\.py|site-packages")
# where one sentence ends and another begins
SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z])")

STUCK = """import time

from fnkit.widgets import EventBuilder, HandlerRunner


def stuck(event, context):
    while True:
        try:
            time.sleep(1)
        except BaseException:  # swallows everything, even a KeyboardInterrupt
            pass


HandlerRunner(builder=EventBuilder("queue"), handler=stuck, timeout_s=30)"""


def cells(page: Page) -> Locator:
    return page.locator(f"{PANEL} .jp-Notebook .jp-Cell")


def source_of(page: Page, index: int) -> str:
    source: str = page.evaluate(
        f"window.jupyterapp.shell.currentWidget.content.widgets[{index}].model.sharedModel.getSource()"
    )
    return source


def write_cell(page: Page, index: int, text: str) -> None:
    """Replace a cell's code the way a learner does: click into it, select everything, type."""
    editor = cells(page).nth(index).locator(".cm-content").first
    editor.scroll_into_view_if_needed()
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(text)
    page.wait_for_function(
        "([i, want]) => "
        "window.jupyterapp.shell.currentWidget.content.widgets[i].model.sharedModel.getSource() === want",
        arg=[index, text],
        timeout=10_000,
    )


def run_cell(page: Page, index: int, timeout_ms: float = 60_000) -> float:
    """Run one cell (as Shift+Enter does) and wait until its prompt shows a new number; the seconds it took.

    The run is not awaited in the page (its promise ends only when the cell does): a cell that hangs
    fails the test here, after `timeout_ms`, with the page still usable.
    """
    prompt = cells(page).nth(index).locator(".jp-InputPrompt").first
    before = prompt.inner_text().strip()
    started = time.monotonic()
    page.evaluate(
        f"(() => {{ const nb = window.jupyterapp.shell.currentWidget.content; nb.activeCellIndex = {index};"
        " void window.jupyterapp.commands.execute('notebook:run-cell'); })()"
    )
    page.wait_for_function(
        "([e, before]) => { const t = e.textContent.trim(); return /^\\[\\d+\\]:?$/.test(t) && t !== before; }",
        arg=[prompt.element_handle(), before],
        timeout=timeout_ms,
    )
    return time.monotonic() - started


def add_cell(page: Page, text: str) -> int:
    """A new cell at the end of the notebook holding `text`; its index."""
    index: int = page.evaluate(
        "(() => { const nb = window.jupyterapp.shell.currentWidget.content;"
        " nb.activeCellIndex = nb.widgets.length - 1;"
        " return window.jupyterapp.commands.execute('notebook:insert-cell-below')"
        ".then(() => nb.activeCellIndex); })()"
    )
    write_cell(page, index, text)
    return index


def output(page: Page, index: int) -> Locator:
    """A cell's output area: check its text with `expect(...)`, which waits for the output to arrive."""
    return cells(page).nth(index).locator(".jp-OutputArea").first


def shot(page: Page, first: int, last: int, name: str) -> None:
    """A screenshot of cells first..last (code and output), as the learner sees them."""
    top_cell, bottom_cell = cells(page).nth(first), cells(page).nth(last)
    top_cell.evaluate("e => e.scrollIntoView({block: 'start'})")
    top, bottom = top_cell.bounding_box(), bottom_cell.bounding_box()
    visible = page.locator(f"{PANEL} .jp-Notebook").first.bounding_box()  # the notebook's scrolling area
    assert top is not None and bottom is not None and visible is not None  # all three are on the page
    height = min(bottom["y"] + bottom["height"], visible["y"] + visible["height"]) - top["y"]
    page.screenshot(
        path=str(screenshot_dir(COMMITTED_DOCS) / name),
        clip={"x": top["x"], "y": top["y"], "width": top["width"], "height": height},
    )


def test_a_learner_goes_from_the_working_copy_to_a_passing_exercise_and_stops_a_stuck_handler(browser, lab, capsys):
    started = time.monotonic()
    page = open_page(browser, lab, "00_start_here.ipynb")
    page.set_viewport_size({"width": 1200, "height": 1500})
    try:
        # 1. 00 from the working copy: the environment check shows nothing until it runs here
        check_cell = next(i for i in range(cells(page).count()) if "check_environment()" in source_of(page, i))
        assert cells(page).nth(check_cell).locator(".jp-OutputArea-output").count() == 0
        run_all(page)
        report = page.locator(f"{PANEL} .fnkit-environment").first
        expect(report).to_contain_text("All checks pass")  # waits: the report is drawn after the cell ran
        text = report.inner_text()
        here = ".".join(map(str, sys.version_info[:3]))
        assert text.startswith("✔ All checks pass")
        assert re.search(rf"✔\tpython\t[^\n]*\t{re.escape(here)}\t", text), text  # this machine's Python
        from fnkit.workshop import check_environment

        rows = len(check_environment(ROOT).checks)  # the same checks, from this process: one ✔ each
        assert "✘" not in text and text.count("✔") >= 1 + rows >= 10
        assert re.search(r"✔\twidgets\t[^\n]*\tready in this kernel", text), text  # a front end that draws them
        expect(page.locator(f"{PANEL} .widget-slider").first).to_be_attached()  # ... and a slider is drawn
        shot(page, check_cell - 1, check_cell, "1-start-here-environment-check.png")

        # the file browser shows every notebook's whole name (none cut with "...")
        page.evaluate("window.jupyterapp.commands.execute('filebrowser:activate')")
        items = page.locator(".jp-FileBrowser .jp-DirListing-item .jp-DirListing-itemText")
        expect(items.filter(has_text="03_load_balancer.ipynb")).to_be_visible()
        names = items.evaluate_all("els => els.map(e => [e.textContent, e.scrollWidth - e.clientWidth])")
        assert {name for name, _ in names} >= {"00_start_here.ipynb", "03_load_balancer.ipynb", "exercises"}, names
        assert [name for name, hidden in names if hidden > 0] == [], names

        # 2. the first exercise: not done yet, then a wrong answer and its feedback
        page.evaluate("window.jupyterapp.commands.execute('docmanager:open', {path: 'exercises/01_queue.ipynb'})")
        page.wait_for_function(
            "() => window.jupyterapp.shell.currentWidget.context.path === 'exercises/01_queue.ipynb'"
        )
        page.wait_for_function(KERNEL_IDLE, timeout=60_000)
        run_all(page)
        handler_cell = next(
            i for i in range(cells(page).count()) if source_of(page, i).startswith("def report_failures")
        )
        check = handler_cell + 1
        expect(output(page, check)).to_contain_text("defined it) still holds 2 placeholders (...)")
        write_cell(page, handler_cell, WRONG)
        run_cell(page, handler_cell)
        run_cell(page, check)
        feedback = cells(page).nth(check).locator(".fnkit-check-failed").first
        expect(feedback).to_contain_text("5 of 6 hidden cases fail")
        said = feedback.inner_text()
        assert "5 of 6 hidden cases fail" in said and "you listed the receiptHandle of message 2" in said
        assert 'list record["messageId"] instead' in said
        shot(page, handler_cell, check, "2-exercise-wrong-answer.png")

        # 3. the right answer passes
        write_cell(page, handler_cell, RIGHT)
        run_cell(page, handler_cell)
        run_cell(page, check)
        passed = cells(page).nth(check).locator(".fnkit-check-passed").first
        expect(passed).to_contain_text("done: all 6 hidden cases pass.")
        shot(page, handler_cell, check, "3-exercise-passes.png")

        # 4. the poison message, wrong in the two likeliest ways: what the check says, and the simulated queue
        #    under it, which keeps the message coming back until its bound, ends with one sentence too
        give_up = next(i for i in range(cells(page).count()) if source_of(page, i).startswith("def give_up"))
        poison_check = give_up + 1
        simulation = next(
            i for i in range(cells(page).count()) if source_of(page, i).startswith("sim = queue.QueueSim(")
        )
        for wrong, what_it_did in (
            (
                GIVE_UP_STRING_COUNT,
                (
                    "your handler raised TypeError: '>=' not supported between instances of 'str' and 'int' "
                    '(in give_up, line 7: if record["attributes"]["ApproximateReceiveCount"] >= 3:)'
                ),
            ),
            (GIVE_UP_PARKED_AND_LISTED, "was parked but is still listed, so it comes back again and again"),
        ):
            write_cell(page, give_up, wrong)
            run_cell(page, give_up)
            checked_in = run_cell(page, poison_check, timeout_ms=60_000)  # the check ends: no case hangs it
            feedback = cells(page).nth(poison_check).locator(".fnkit-check-failed").first
            expect(feedback).to_contain_text(what_it_did)
            findings = feedback.locator("li").all_inner_texts()
            assert len(findings) == 1 and what_it_did in findings[0], findings
            assert not SENTENCE_END.search(findings[0]), f"more than one sentence: {findings[0]}"
            shown = output(page, poison_check).inner_text()
            assert not KIT_INTERNALS.search(shown), shown
            # the simulation under it: a wrong answer keeps the bad order coming back, and the run stops
            # at its bound (a virtual day), saying so in one sentence, instead of running for ever
            simulated_in = run_cell(page, simulation, timeout_ms=90_000)
            expect(output(page, simulation)).to_contain_text("The simulation stopped at its bound")
            shown = output(page, simulation).inner_text()
            assert not KIT_INTERNALS.search(shown), shown
            # the sentence, broken between words into lines (the output pane would break it anywhere)
            bound = shown[shown.index("The simulation stopped at its bound") :]
            sentence = " ".join(bound[: bound.index("redelivering it.") + len("redelivering it.")].split())
            assert sentence.endswith(".") and not SENTENCE_END.search(sentence), sentence
            assert "queued" in shown  # the table under it: the bad order is still in the queue
            with capsys.disabled():
                print(f"\nwrong give_up: the check ended in {checked_in:.1f} s, the simulation in {simulated_in:.1f} s")
        # run again as it is (a learner does, to look once more): the same sentence, not just the table
        run_cell(page, simulation, timeout_ms=90_000)
        expect(output(page, simulation)).to_contain_text("The simulation stopped at its bound")
        shot(page, give_up, simulation, "4-poison-wrong-answer.png")

        # 5. a handler that never returns, in a runner: Run gives the kernel back, Stop stops it
        runner_cell = add_cell(page, STUCK)
        run_cell(page, runner_cell)
        runner = cells(page).nth(runner_cell).locator(".fnkit-runner").first
        runner.locator("button.fnkit-run").click()
        page.wait_for_function("(e) => e.classList.contains('fnkit-running')", arg=runner.element_handle())
        clock = runner.locator(".fnkit-clock").first
        page.wait_for_function(
            "(e) => /running… [1-9]\\d*\\.\\d s/.test(e.textContent)", arg=clock.element_handle(), timeout=20_000
        )
        meanwhile = add_cell(page, 'print("the kernel answers while the handler runs:", 6 * 7)')
        run_cell(page, meanwhile)
        expect(output(page, meanwhile)).to_contain_text("the kernel answers while the handler runs: 42")
        assert "fnkit-running" in (runner.get_attribute("class") or "")  # still running: nothing waited for it
        shot(page, runner_cell, meanwhile, "5-handler-running.png")
        stop_pressed = time.monotonic()
        runner.locator("button.fnkit-stop").click()
        expect(runner.locator(".fnkit-outcome").first).to_have_text("stopped", timeout=20_000)
        stopped_after = time.monotonic() - stop_pressed
        # the reason is written after the outcome: wait for it, then read it whole
        expect(runner.locator(".fnkit-reason").first).to_contain_text("You stopped the handler after ")
        reason = runner.locator(".fnkit-reason").first.inner_text()
        assert reason.startswith("You stopped the handler after ") and "the kernel is free" in reason
        assert "the whole batch returns" in reason and "Q6" in reason  # what the platform would have done
        expect(runner.locator("button.fnkit-stop").first).to_be_hidden()
        after = add_cell(page, 'print("the kernel answers after Stop:", 6 * 7)')
        run_cell(page, after)
        expect(output(page, after)).to_contain_text("the kernel answers after Stop: 42")
        answered_after = time.monotonic() - stop_pressed
        shot(page, runner_cell, after, "6-handler-stopped.png")
        wall = time.monotonic() - started
    finally:
        close(page)
    with capsys.disabled():
        print(
            f"\nlearner path: {wall:.1f} s from opening 00 to the kernel answering after Stop "
            f"(stopped shown {stopped_after:.2f} s after the click, "
            f"the kernel answered {answered_after:.2f} s after it)"
        )
