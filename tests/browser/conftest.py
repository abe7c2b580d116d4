"""One JupyterLab and one headless Chromium for the browser tests.

JupyterLab runs on 127.0.0.1 (a free port, a token) on a working copy made the way
`python3 kit.py lab` makes `work/` (kit.py's own function, on a temporary folder), so the
browser sees exactly what a learner sees and autosave never touches the repository.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# user settings for the temporary JupyterLab: every cell in the DOM, no news, no update checks
SETTINGS = {"@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"}}


def kit_module():
    """kit.py, imported from the repository (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location("fnkit_kit_browser", ROOT / "kit.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path, timeout_s: float = 60) -> None:
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


@pytest.fixture(scope="package")
def lab(tmp_path_factory):
    """A JupyterLab on 127.0.0.1 serving a fresh working copy (`work/`, made by kit.py); stopped at the end."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"the browser test needs Chromium at {CHROMIUM}: apt-get install chromium (python3 kit.py test does it)"
        )
    home = tmp_path_factory.mktemp("lab")
    work = home / "work"
    copied = kit_module().prepare_work_copy(ROOT / "notebooks", work)  # `kit.py lab`'s own step, before the server
    assert Path("00_start_here.ipynb") in copied and Path("exercises/01_queue.ipynb") in copied
    settings = home / "settings"
    # the settings a learner's JupyterLab gets from kit.py (LAB_SETTINGS), as user settings of this one
    shipped = kit_module().LAB_SETTINGS.items()
    learner = {plugin.replace(":", "/") + ".jupyterlab-settings": values for plugin, values in shipped}
    for rel, value in {**learner, **SETTINGS}.items():
        path = settings / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    token = secrets.token_hex(16)
    port = _free_port()
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
        PYTHONUNBUFFERED="1",
    )
    log = home / "lab.log"
    argv = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--ServerApp.token={token}",
        f"--ServerApp.root_dir={work}",
        "--ServerApp.port_retries=0",
        "--LabApp.expose_app_in_browser=True",
        "--LabApp.news_url=",
        "--ServerApp.disable_check_xsrf=False",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(f"{base}/api/status?token={token}", process, log)
        yield {"base": base, "token": token, "log": log, "work": work}
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


@pytest.fixture(scope="package")
def browser():
    """One Chromium for the browser tests, closed when they end: Playwright's synchronous API runs an event
    loop on this thread while it is open, so the suite's later tests (asyncio.run) must not share it."""
    from playwright.sync_api import expect, sync_playwright

    # The tests check what the page shows with expect(...), which retries until the text is
    # there; 20 s (not Playwright's 5 s) holds on a loaded machine.
    expect.set_options(timeout=20_000)

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()
