"""A real browser: JupyterLab on loopback, headless Chromium driven by Playwright.

Opens 01_queue_batch.ipynb and 03_load_balancer.ipynb (copies, in a temporary folder, so
autosave never touches the repository), runs all cells, changes a field of the event
builder, presses the handler runner's button and checks that the outcome shown changes.
Screenshots of each widget go to tests/browser/screenshots/ (the README shows them).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(__file__).resolve().parent / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
NOTEBOOKS = ["01_queue_batch.ipynb", "03_load_balancer.ipynb"]
# user settings for the temporary JupyterLab: every cell in the DOM, no news, no update checks
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
}

ALL_CELLS_RAN = """() => {
    const prompts = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt')]
        .map(e => e.textContent.trim());
    return prompts.length > 0 && prompts.every(t => /^\\[\\d+\\]:?$/.test(t));
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(url: str, process: subprocess.Popen, log: Path, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"JupyterLab was not ready within {timeout_s} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab on 127.0.0.1 (free port, a token), serving copies of the notebooks; stopped at the end."""
    if not CHROMIUM.exists():
        pytest.fail(f"the browser test needs Chromium at {CHROMIUM}: apt-get install chromium (python3 kit.py test does it)")
    home = tmp_path_factory.mktemp("lab")
    work = home / "notebooks"
    work.mkdir()
    for name in NOTEBOOKS:
        shutil.copy(ROOT / "notebooks" / name, work / name)
    settings = home / "settings"
    for rel, value in SETTINGS.items():
        path = settings / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    token = secrets.token_hex(16)
    port = _free_port()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
               PYTHONUNBUFFERED="1")
    log = home / "lab.log"
    argv = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
            f"--ServerApp.token={token}", f"--ServerApp.root_dir={work}", "--ServerApp.port_retries=0",
            "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=", "--ServerApp.disable_check_xsrf=False"]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(f"{base}/api/status?token={token}", process, log)
        yield {"base": base, "token": token, "log": log}
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


def _open_and_run_all(browser, lab, name: str):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(30_000)
    page.goto(f"{lab['base']}/lab/tree/{name}?token={lab['token']}&reset")
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", state="attached", timeout=60_000)
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                           " && window.jupyterapp.shell.currentWidget.sessionContext"
                           " && window.jupyterapp.shell.currentWidget.sessionContext.session"
                           " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
                           " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
                           timeout=60_000)
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(ALL_CELLS_RAN, timeout=90_000)
    return page


def _outcome(page, runner: str) -> str:
    return page.locator(f"{runner} .fnkit-outcome").first.inner_text().strip()


def _run_and_expect(page, runner: str, expected: str) -> None:
    page.locator(f"{runner} button.fnkit-run").first.click()
    page.wait_for_function(
        "([sel, want]) => { const e = document.querySelector(sel); return e && e.textContent.trim() === want; }",
        arg=[f"{runner} .fnkit-outcome", expected], timeout=20_000)
    assert _outcome(page, runner) == expected


def _shot(page, selector: str, name: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    element = page.locator(selector).first
    element.scroll_into_view_if_needed()
    element.screenshot(path=str(SHOTS / name))


def test_queue_notebook_builder_and_runner_in_a_real_browser(browser, lab):
    page = _open_and_run_all(browser, lab, "01_queue_batch.ipynb")
    try:
        builder, runner = ".fnkit-builder-queue", ".fnkit-runner-queue"
        assert _outcome(page, runner) == "success"  # the notebook ran the runner on three good orders
        cut = page.evaluate("""(sel) => [...document.querySelectorAll(sel + ' .widget-label')]
            .filter(e => e.offsetWidth > 0 && e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)""",
                            ".fnkit-builder-queue, .fnkit-runner-queue, .fnkit-explorer-queue")
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
        assert "1 listed message" in page.locator(f"{runner} .fnkit-reason").first.inner_text()
        _shot(page, builder, "queue_event_builder.png")
        _shot(page, runner, "queue_handler_runner.png")
        bodies.fill('{"order": 1, "qty": 2}\n{"order": 3, "qty": 5}')
        _run_and_expect(page, runner, "success")
        # bad input: JSON typed into the preview shows a located issue, and the runner says why it cannot run
        page.locator(f"{builder} .fnkit-preview textarea").first.fill('{"Records": [}')
        page.wait_for_function("(sel) => document.querySelector(sel).textContent.includes('line 1, column')",
                               arg=f"{builder} .fnkit-issues", timeout=20_000)
        _run_and_expect(page, runner, "no event")
        page.locator(f"{builder} button.fnkit-reset").first.click()
        _run_and_expect(page, runner, "success")
        explorer = ".fnkit-explorer-queue"
        page.locator(f"{explorer} button.fnkit-form-wrong-key-name").first.click()
        page.wait_for_function("(sel) => document.querySelector(sel).textContent.trim() === 'failure'",
                               arg=f"{explorer} .fnkit-outcome", timeout=20_000)
        _shot(page, explorer, "queue_response_explorer.png")
    finally:
        page.close()


def test_load_balancer_notebook_runner_in_a_real_browser(browser, lab):
    page = _open_and_run_all(browser, lab, "03_load_balancer.ipynb")
    try:
        builder, runner = ".fnkit-builder-alb", ".fnkit-runner-alb"
        assert _outcome(page, runner) == "200 OK"
        path = page.locator(f"{builder} .fnkit-field-path input").first
        path.fill("/boom")
        _run_and_expect(page, runner, "502 Bad Gateway")
        assert "raised RuntimeError" in page.locator(f"{runner} .fnkit-issues").first.inner_text()
        _shot(page, runner, "alb_handler_runner.png")
        path.fill("/hello")
        _run_and_expect(page, runner, "200 OK")
        _shot(page, builder, "alb_event_builder.png")
        _shot(page, ".fnkit-explorer-alb", "alb_response_explorer.png")
    finally:
        page.close()
