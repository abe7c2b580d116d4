"""The usual Python handler behind a load balancer, `handler = Mangum(app)` over a FastAPI app, runs unchanged:
through `fnkit.alb.run` in every isolation mode (from a plain caller and from one with a running event loop, as a
Jupyter kernel is), and behind `fnkit serve-alb app:handler` with a real HTTP client."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

import fnkit
from fnkit.types import AlbEvent

pytest.importorskip("mangum")
pytest.importorskip("fastapi")

REPO_ROOT = Path(__file__).resolve().parents[2]

APP = textwrap.dedent(
    """
    from fastapi import FastAPI, Request
    from mangum import Mangum

    app = FastAPI()


    @app.get("/hello/{name}")
    async def hello(name: str, request: Request):
        return {"hello": name, "q": request.query_params.get("q"), "trace": request.headers.get("x-test")}


    @app.post("/orders")
    async def orders(request: Request):
        body = await request.json()
        return {"received": body["id"]}


    handler = Mangum(app, lifespan="off")


    async def async_handler(event, context):
        return {"statusCode": 201, "statusDescription": "201 Created", "headers": {}, "body": "made"}
    """
)


@pytest.fixture
def app_module(tmp_path, monkeypatch):
    (tmp_path / "fnkit_asgi_app.py").write_text(APP)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    sys.modules.pop("fnkit_asgi_app", None)
    return importlib.import_module("fnkit_asgi_app")


def _get(path: str, query: dict[str, str] | None = None) -> AlbEvent:
    return fnkit.alb.build_event(
        method="GET", path=path, query=query or {}, headers={"x-test": "yes"}, dialect="aws", seed=1
    )


@pytest.mark.parametrize("isolation", ["none", "thread", "process"])
def test_mangum_over_fastapi_answers_through_alb_run(app_module, isolation):
    outcome = fnkit.alb.run(app_module.handler, _get("/hello/ada", {"q": "1"}), isolation=isolation, timeout_s=30)
    assert outcome.status == 200, outcome
    assert json.loads(outcome.text) == {"hello": "ada", "q": "1", "trace": "yes"}


def test_mangum_by_its_import_path_in_a_worker(app_module):
    outcome = fnkit.alb.run("fnkit_asgi_app:handler", _get("/hello/bo"), isolation="process", timeout_s=30)
    assert outcome.status == 200 and json.loads(outcome.text)["hello"] == "bo"


def test_mangum_runs_in_a_caller_whose_event_loop_is_running(app_module):
    # a Jupyter cell runs inside the kernel's running loop; the handler still drives its own
    async def cell():
        return fnkit.alb.run(app_module.handler, _get("/hello/jo"), timeout_s=30)

    box: list[Any] = []  # a thread of its own: the caller's loop is the cell's, whatever the test runner's thread holds
    thread = threading.Thread(target=lambda: box.append(asyncio.run(cell())))
    thread.start()
    thread.join(60)
    (outcome,) = box
    assert outcome.status == 200 and json.loads(outcome.text)["hello"] == "jo"


def test_a_post_body_reaches_the_app(app_module):
    event = fnkit.alb.build_event(
        method="POST",
        path="/orders",
        headers={"content-type": "application/json"},
        body='{"id": "o-1"}',
        dialect="aws",
        seed=2,
    )
    outcome = fnkit.alb.run(app_module.handler, event, timeout_s=30)
    assert outcome.status == 200 and json.loads(outcome.text) == {"received": "o-1"}


@pytest.mark.parametrize("isolation", ["none", "process"])
def test_an_async_handler_is_awaited(app_module, isolation):
    outcome = fnkit.alb.run(app_module.async_handler, _get("/x"), isolation=isolation, timeout_s=30)
    assert outcome.status == 201 and outcome.reason == "Created"


def test_serve_alb_runs_the_mangum_app_by_import_path(tmp_path):
    (tmp_path / "app.py").write_text(APP)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "fnkit.cli", "serve-alb", "app:handler", "--port", "0", "--timeout", "20"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        url = first.split(" at ")[1].split()[0]
        with httpx.Client(timeout=30) as client:
            answers = [client.get(url + f"/hello/n{i}", params={"q": str(i)}) for i in range(5)]
            posted = client.post(url + "/orders", json={"id": "o-9"})
        assert [a.status_code for a in answers] == [200] * 5, [a.text for a in answers]
        assert [a.json()["hello"] for a in answers] == [f"n{i}" for i in range(5)]
        assert posted.status_code == 200 and posted.json() == {"received": "o-9"}
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err


def test_mangum_still_answers_after_asyncio_run_closed_this_threads_loop(app_module):
    def on_a_thread():
        asyncio.run(asyncio.sleep(0))  # closes the loop it made and leaves the thread without one
        return fnkit.alb.run(app_module.handler, _get("/hello/after"), timeout_s=30)

    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(on_a_thread()))
    thread.start()
    thread.join(60)
    (outcome,) = box
    assert outcome.status == 200 and json.loads(outcome.text)["hello"] == "after"
