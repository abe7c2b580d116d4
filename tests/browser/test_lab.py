"""A real browser: JupyterLab on loopback, headless Chromium driven by Playwright.

Opens 01_queue_batch.ipynb and 03_load_balancer.ipynb from a fresh working copy (conftest.py),
runs all cells, changes a field of the event builder, presses the handler runner's button and
checks that the outcome shown changes. Screenshots of each widget go to build/screenshots/tests/browser/screenshots/,
or over the committed ones in tests/browser/screenshots/ (the README shows them) with
FNKIT_UPDATE_SCREENSHOTS=1 (see _shots.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from ._shots import screenshot_dir

pytestmark = pytest.mark.browser

COMMITTED_SHOTS = Path(__file__).resolve().parent / "screenshots"

ALL_CELLS_RAN = """() => {
    const prompts = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt')]
        .map(e => e.textContent.trim());
    return prompts.length > 0 && prompts.every(t => /^\\[\\d+\\]:?$/.test(t));
}"""

KERNEL_IDLE = (
    "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
    " && window.jupyterapp.shell.currentWidget.sessionContext"
    " && window.jupyterapp.shell.currentWidget.sessionContext.session"
    " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
    " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'"
)


def open_page(browser, lab, name: str):
    """A page with JupyterLab showing the notebook `name` of the working copy, its kernel idle."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(30_000)
    page.goto(f"{lab['base']}/lab/tree/{name}?token={lab['token']}&reset")
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", state="attached", timeout=60_000)
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)
    return page


def run_all(page: Page) -> None:
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(ALL_CELLS_RAN, timeout=90_000)


def close(page: Page) -> None:
    """Shut the kernels down (the lab is shared by the tests), then close the page."""
    try:
        page.evaluate("window.jupyterapp.serviceManager.sessions.shutdownAll()")
    finally:
        page.close()


def _open_and_run_all(browser, lab, name: str):
    page = open_page(browser, lab, name)
    run_all(page)
    return page


# The widgets change their parts one after another (the outcome, then the reason and the
# issues): every check of shown text waits for it (Playwright's expect retries until its
# timeout) instead of reading the page at one instant.
WAIT_MS = 20_000


def _expect_outcome(page: Page, runner: str, expected: str) -> None:
    expect(page.locator(f"{runner} .fnkit-outcome").first).to_have_text(expected, timeout=WAIT_MS)


def _run_and_expect(page: Page, runner: str, expected: str) -> None:
    page.locator(f"{runner} button.fnkit-run").first.click()
    _expect_outcome(page, runner, expected)


def _shot(page: Page, selector: str, name: str) -> None:
    element = page.locator(selector).first
    element.scroll_into_view_if_needed()
    element.screenshot(path=str(screenshot_dir(COMMITTED_SHOTS) / name))


def test_queue_notebook_builder_and_runner_in_a_real_browser(browser, lab):
    page = _open_and_run_all(browser, lab, "01_queue_batch.ipynb")
    try:
        builder, runner = ".fnkit-builder-queue", ".fnkit-runner-queue"
        _expect_outcome(page, runner, "success")  # the notebook ran the runner on three good orders
        cut = page.evaluate(
            """(sel) => [...document.querySelectorAll(sel + ' .widget-label')]
            .filter(e => e.offsetWidth > 0 && e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)""",
            ".fnkit-builder-queue, .fnkit-runner-queue, .fnkit-explorer-queue",
        )
        assert cut == [], f"labels cut off: {cut}"
        # a value that makes no sense is said right under its field
        counts = page.locator(f"{builder} .fnkit-field-receive-counts input").first
        counts.fill("1, x, 1")
        error = page.locator(f"{builder} .fnkit-field-error").filter(has_text="'x' is not a receive count").first
        error.wait_for(state="visible", timeout=20_000)
        field_box, error_box = counts.bounding_box(), error.bounding_box()
        assert 0 <= error_box["y"] - (field_box["y"] + field_box["height"]) < 40  # just below the field
        counts.fill("")
        error.wait_for(state="hidden", timeout=20_000)
        bodies = page.locator(f"{builder} .fnkit-field-bodies textarea").first
        bodies.fill('{"order": 1, "qty": 2}\n{"order": 2, "qty": 0}\n{"order": 3, "qty": 5}')
        _run_and_expect(page, runner, "partial")
        expect(page.locator(f"{runner} .fnkit-reason").first).to_contain_text("1 listed message", timeout=WAIT_MS)
        _shot(page, builder, "queue_event_builder.png")
        _shot(page, runner, "queue_handler_runner.png")
        bodies.fill('{"order": 1, "qty": 2}\n{"order": 3, "qty": 5}')
        _run_and_expect(page, runner, "success")
        # bad input: JSON typed into the preview shows a located issue, and the runner says why it cannot run
        page.locator(f"{builder} .fnkit-preview textarea").first.fill('{"Records": [}')
        expect(page.locator(f"{builder} .fnkit-issues").first).to_contain_text("line 1, column", timeout=WAIT_MS)
        _run_and_expect(page, runner, "no event")
        page.locator(f"{builder} button.fnkit-reset").first.click()
        _run_and_expect(page, runner, "success")
        explorer = ".fnkit-explorer-queue"
        page.locator(f"{explorer} button.fnkit-form-wrong-key-name").first.click()
        _expect_outcome(page, explorer, "failure")
        _shot(page, explorer, "queue_response_explorer.png")
    finally:
        close(page)


def test_load_balancer_notebook_runner_in_a_real_browser(browser, lab):
    page = _open_and_run_all(browser, lab, "03_load_balancer.ipynb")
    try:
        builder, runner = ".fnkit-builder-alb", ".fnkit-runner-alb"
        _expect_outcome(page, runner, "200 OK")
        path = page.locator(f"{builder} .fnkit-field-path input").first
        path.fill("/boom")
        _run_and_expect(page, runner, "502 Bad Gateway")
        expect(page.locator(f"{runner} .fnkit-issues").first).to_contain_text("raised RuntimeError", timeout=WAIT_MS)
        _shot(page, runner, "alb_handler_runner.png")
        path.fill("/hello")
        _run_and_expect(page, runner, "200 OK")
        _shot(page, builder, "alb_event_builder.png")
        _shot(page, ".fnkit-explorer-alb", "alb_response_explorer.png")
    finally:
        close(page)
