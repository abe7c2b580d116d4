"""Benchmark: requests per second through fnkit.alb.serve vs a bare uvicorn ASGI app (run by hand).

Both servers run in this process on loopback, each in its own uvicorn thread, and are
driven the same way: 8 concurrent clients on keep-alive connections, the same request.
Target (issue "Real front ends"): fnkit.alb.serve / bare uvicorn >= 0.5.
"""

from __future__ import annotations

import http.client
import socket
import sys
import threading
import time
from urllib.parse import urlsplit

import uvicorn

from fnkit import alb

CLIENTS = 8
REQUESTS = 400 if "--quick" in sys.argv else 2000


def handler(event, context):
    return {
        "statusCode": 200,
        "statusDescription": "200 OK",
        "headers": {"content-type": "text/plain"},
        "body": "hello",
        "isBase64Encoded": False,
    }


async def bare_app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    while True:
        message = await receive()
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"hello"})


class BareServer:
    def __init__(self) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        config = uvicorn.Config(bare_app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.time() + 10
        while not self.server.started and time.time() < deadline:
            time.sleep(0.01)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(5)


def load(url: str) -> float:
    """Requests per second for CLIENTS keep-alive clients sending REQUESTS requests in all."""
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    per_client = REQUESTS // CLIENTS
    errors: list[str] = []
    start_gate = threading.Barrier(CLIENTS + 1)

    def client() -> None:
        conn = http.client.HTTPConnection(host, parts.port, timeout=10)
        start_gate.wait()
        for _ in range(per_client):
            conn.request("GET", "/hello?x=1", headers={"user-agent": "bench"})
            response = conn.getresponse()
            body = response.read()
            if response.status != 200 or body != b"hello":
                errors.append(f"{response.status} {body[:40]!r}")
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    start_gate.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    took = time.perf_counter() - t0
    if errors:
        raise SystemExit(f"unexpected responses: {errors[:3]}")
    return per_client * CLIENTS / took


def main() -> None:
    bare = BareServer()
    try:
        load(bare.url)  # warm-up
        bare_rps = load(bare.url)
    finally:
        bare.stop()
    with alb.serve(handler) as server:
        load(server.url)
        fnkit_rps = load(server.url)
    ratio = fnkit_rps / bare_rps
    print(f"== HTTP: {REQUESTS} requests, {CLIENTS} concurrent keep-alive clients, loopback")
    print(f"   bare uvicorn ASGI app: {bare_rps:,.0f} req/s")
    print(f"   fnkit.alb.serve      : {fnkit_rps:,.0f} req/s")
    print(f"   ratio {ratio:.2f} (target >= 0.5): {'PASS' if ratio >= 0.5 else 'MISS'}")


if __name__ == "__main__":
    main()
