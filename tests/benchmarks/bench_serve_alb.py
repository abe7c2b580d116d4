"""Benchmark: requests per second through fnkit.alb.serve vs a bare uvicorn ASGI app (run by hand).

    .venv/bin/python tests/benchmarks/bench_serve_alb.py [--quick] [--clients-process]

Both servers run in this process on loopback, each on its own thread, and are driven the
same way: 8 concurrent clients on keep-alive connections, the same request. The clients run
on threads of this process (`--clients-process`: in a process of their own, as real clients
do, where they do not compete with the servers for the interpreter lock). The rounds alternate (bare, fnkit, bare,
fnkit, ...) and each figure is the median of its rounds, so a burst of load from other
work on the machine falls on both sides alike; the load average is printed with the
figures. fnkit runs the handler in a worker process (the default, isolation="process"),
given as a function and, as `fnkit serve-alb` gives it, by its import path; a last row
serves it in-process (isolation="none") to show what the front end itself costs. Target
(issue "Real front ends"): fnkit.alb.serve / bare uvicorn >= 0.5.
"""

from __future__ import annotations

import http.client
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from urllib.parse import urlsplit

import uvicorn

from fnkit import alb, isolation

CLIENTS = 8
REQUESTS = 400 if "--quick" in sys.argv else 1000
ROUNDS = 1 if "--quick" in sys.argv else 7


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


def load(url: str) -> tuple[float, float]:
    """Requests per second for CLIENTS keep-alive clients sending REQUESTS requests in all, and the CPU time this
    process spent per request (clients and server alike, in µs)."""
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
    t0, cpu0 = time.perf_counter(), time.process_time()
    for t in threads:
        t.join()
    took, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    if errors:
        raise SystemExit(f"unexpected responses: {errors[:3]}")
    return per_client * CLIENTS / took, cpu / (per_client * CLIENTS) * 1e6


class Clients:
    """The clients in a process of their own: `load(url)` as above, with this process's CPU time (the servers')."""

    def __init__(self) -> None:
        args = [sys.executable, __file__, "--client", *(["--quick"] if "--quick" in sys.argv else [])]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self.process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def load(self, url: str) -> tuple[float, float]:
        assert self.process.stdin is not None and self.process.stdout is not None
        cpu0 = time.process_time()
        self.process.stdin.write(url + "\n")
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        if not reply:
            raise SystemExit("the client process ended")
        rps = float(reply.split()[0])
        return rps, (time.process_time() - cpu0) / (REQUESTS // CLIENTS * CLIENTS) * 1e6

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(10)


def client_main() -> None:
    """`--client`: load each URL read from stdin; print requests per second and CPU µs per request."""
    for line in sys.stdin:
        rps, cpu = load(line.strip())
        print(f"{rps} {cpu}", flush=True)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    loads = [load_average()]
    bare = BareServer()
    fnkit_server = alb.serve(handler)
    path_server = alb.serve(f"{__file__}:handler")  # as `fnkit serve-alb bench_serve_alb.py:handler` serves it
    inline_server = alb.serve(handler, isolation="none")
    servers = {"bare": bare.url, "fnkit": fnkit_server.url, "path": path_server.url, "inline": inline_server.url}
    rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
    in_process = "--clients-process" not in sys.argv
    clients = None if in_process else Clients()
    drive = load if clients is None else clients.load
    try:
        for url in servers.values():
            drive(url)  # warm-up: connections, the worker process, the first import of everything
        for _ in range(ROUNDS):
            for name, url in servers.items():
                rounds[name].append(drive(url))
    finally:
        if clients is not None:
            clients.close()
        bare.stop()
        fnkit_server.stop()
        path_server.stop()
        inline_server.stop()
    loads.append(load_average())
    rps = {name: statistics.median(r for r, _ in rows) for name, rows in rounds.items()}
    cpu = {name: statistics.median(c for _, c in rows) for name, rows in rounds.items()}
    # each round's fnkit figure over the bare figure measured just before it: load that comes and goes cancels out
    paired = statistics.median(f[0] / b[0] for f, b in zip(rounds["fnkit"], rounds["bare"], strict=True))
    ratio = rps["fnkit"] / rps["bare"]
    path_ratio = rps["path"] / rps["bare"]
    where = "on threads of this process" if in_process else "in a process of their own"
    print(
        f"== HTTP: {REQUESTS} requests, {CLIENTS} keep-alive clients at once ({where}), loopback; "
        f"median of {ROUNDS} round(s)"
    )
    print(f"   load average before: {loads[0]}; after: {loads[1]}")
    print(f"   bare uvicorn ASGI app              : {rps['bare']:,.0f} req/s, {cpu['bare']:,.0f} µs CPU/request")
    print(f"   fnkit.alb.serve (worker process)   : {rps['fnkit']:,.0f} req/s, {cpu['fnkit']:,.0f} µs CPU/request")
    print(f"     the handler by its import path   : {rps['path']:,.0f} req/s, {cpu['path']:,.0f} µs CPU/request")
    print(f"   fnkit.alb.serve (isolation='none') : {rps['inline']:,.0f} req/s, {cpu['inline']:,.0f} µs CPU/request")
    print(f"   ratio {ratio:.2f}, paired by round {paired:.2f} (target >= 0.5): {'PASS' if ratio >= 0.5 else 'MISS'}")
    print(f"   ratio with the handler by its import path (the command line's way) {path_ratio:.2f}")
    started = isolation.stats()["workers_started"]
    print(f"   worker processes started: {started} (for {CLIENTS} requests at once to each of 2 servers)")
    counted = "clients included" if in_process else "the servers"
    print(f"   (CPU: this process, {counted}; the worker processes' own time is not counted)")


if __name__ == "__main__":
    if "--client" in sys.argv:
        client_main()
    else:
        main()
