"""A real HTTP front end: `serve(handler)` answers HTTP the way the load balancer would.

An ASGI app served by uvicorn on a background thread. Each request is refused before
invoking when the load balancer would (A1, A14), else turned into an event by
`_http.request_to_event`, handed to the handler on a worker thread (with its timeout),
and the response turned into HTTP by `outcome`: the same code the simulator uses.
"""

from __future__ import annotations

import importlib
import queue
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from .._config import with_settings
from .._invoke import Context, Handler, Invocation, _check_isolation, invoke
from .._optional import require
from ._config import AlbConfig
from ._http import (
    MAX_REQUEST_BODY,
    Refusal,
    health_check_event,
    refusal_for,
    request_to_event,
    trace_id,
)
from ._outcome import HttpOutcome, answered_by_balancer, outcome

if TYPE_CHECKING:  # the server's own imports wait until a server starts
    import argparse
    import concurrent.futures
    import socket

    import pandas as pd

LOOPBACK = ("127.0.0.1", "localhost", "::1")
LOG_COLUMNS = [
    "time",
    "kind",
    "method",
    "path",
    "query",
    "status",
    "reason",
    "rule",
    "invoked",
    "duration_ms",
    "handler_ms",
    "client",
    "explanation",
]
HEALTH_CHECK_TIMEOUT_S = 30.0  # the load balancer's default health check timeout for a function target
MAX_RECORDS = 10_000  # the log keeps the most recent requests: a server that runs for days stays small


class _Workers:
    """Threads that run handlers. One more starts whenever none is idle, so a hung handler never blocks others."""

    def __init__(self, idle_timeout_s: float = 30.0) -> None:
        self._tasks: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._idle_timeout_s = idle_timeout_s

    def submit(self, fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        """Run `fn` on an idle worker thread, or a new one; its future."""
        from concurrent.futures import Future

        future: Future[Any] = Future()
        with self._lock:
            if self._idle:
                self._idle -= 1  # an idle worker will take it
                start = False
            else:
                start = True
        self._tasks.put((fn, future))
        if start:
            threading.Thread(target=self._work, name="fnkit-alb-worker", daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            try:
                fn, future = self._tasks.get(timeout=self._idle_timeout_s)
            except queue.Empty:
                with self._lock:
                    if self._idle:  # nobody counts on this worker: leave
                        self._idle -= 1
                        return
                continue  # a task was promised to an idle worker: stay for it
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as exc:  # noqa: BLE001 - handed to the waiting request
                    future.set_exception(exc)
            with self._lock:
                self._idle += 1


class _App:
    """The ASGI application: one HTTP request in, the load balancer's answer out."""

    def __init__(self, server: AlbServer) -> None:
        self.server = server

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return  # uvicorn runs with ws="none": WebSocket upgrades arrive as plain HTTP requests
        await self.http(scope, receive, send)

    async def http(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        import asyncio

        srv = self.server
        started = time.perf_counter()
        method = scope["method"]
        raw_path = scope.get("raw_path") or scope["path"].encode("utf-8")
        raw_query = scope.get("query_string") or b""
        raw_headers = scope.get("headers") or []
        text_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw_headers]
        path = raw_path.decode("latin-1")
        declared = _content_length(text_headers)

        # A1, A14: answered before the body is read and before anything is invoked
        found = refusal_for(method, text_headers, declared)
        body = b""
        if found is None:
            body, over, gone = await _read_body(receive, MAX_REQUEST_BODY)
            if gone:
                return  # the client left before sending its body
            if over:
                found = Refusal(
                    413,
                    "A1",
                    f"The request body is over the 1 MB limit ({MAX_REQUEST_BODY:,} bytes): "
                    "413, the function is not invoked (reading stopped at the limit).",
                )
        if found is not None:
            result = answered_by_balancer(found, method, path, srv.multi_value)
            srv._record("request", result, started, raw_query, scope, None)  # logged before the client hears
            await _send(send, result)
            return

        client = scope.get("client") or ("127.0.0.1", 0)
        server_addr = scope.get("server") or (srv.host, srv.port)
        event = request_to_event(
            method,
            raw_path,
            raw_query,
            raw_headers,
            body,
            srv.multi_value,
            target_group_arn=srv.target_group_arn,
            dialect=srv.dialect,
            trace=trace_id(),
            client_ip=str(client[0]),
            port=int(server_addr[1] or srv.port),
            proto=scope.get("scheme", "http"),
        )
        invocation = await asyncio.wrap_future(srv._workers.submit(lambda: srv._invoke(event)))
        result = outcome(event, invocation, config=srv._target)
        srv._record("request", result, started, raw_query, scope, invocation)
        # what HTTP cannot carry (A13) is already a 502 here, so uvicorn accepts every header it is given
        await _send(send, result)


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket. Its protocol is named, so that asyncio turns Nagle off on each connection
    (else every response waits for the client's delayed ACK: 40 ms)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
    except OSError:
        sock.close()
        raise
    return sock


def _content_length(headers: list[tuple[str, str]]) -> int | None:
    for name, value in headers:
        if name.lower() == "content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _read_body(receive: Callable[..., Any], limit: int) -> tuple[bytes, bool, bool]:
    """The request body, or (b"", True, _) as soon as it is past `limit` (the rest is never read)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"", False, True
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"", True, False
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), False, False


def _header_bytes(text: str) -> bytes:
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


async def _send(send: Callable[..., Any], result: HttpOutcome) -> None:
    headers = [(_header_bytes(name), _header_bytes(value.strip(" \t"))) for name, value in result.headers]
    await send({"type": "http.response.start", "status": result.status, "headers": headers})
    await send({"type": "http.response.body", "body": result.body, "more_body": False})


class AlbServer:
    """A running load balancer in front of one handler: `.url`, `.host`, `.port`, `.log`, `.records`, `.stop()`."""

    @with_settings(AlbConfig)
    def __init__(
        self,
        handler: Handler,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        config: AlbConfig | None = None,
        target_group_arn: str | None = None,
        dialect: str = "provider",
        on_record: Callable[[dict[str, Any]], Any] | None = None,
        isolation: str = "process",
        max_records: int = MAX_RECORDS,
        **settings: Any,
    ) -> None:
        config = AlbConfig.of(config, settings, AlbServer.__init__)
        _check_isolation(isolation)
        require("uvicorn", extra="serve", feature="fnkit.alb.serve")  # an edge dependency: only the server needs it
        import uvicorn

        self.handler = handler
        self.config = config
        self.multi_value = config.multi_value_on  # the server makes the events: None is off
        self._target = config.replace(multi_value=self.multi_value)  # what every outcome is decided with
        self.timeout_s = config.timeout_s
        self.health_check_interval_s = health_check_interval_s = config.health_check_interval_s
        self.target_group_arn = target_group_arn
        self.dialect = dialect
        self.isolation = isolation
        self.records: deque[dict[str, Any]] = deque(maxlen=max_records)  # a ring buffer: the newest `max_records` rows
        self._on_record = on_record
        self._workers = _Workers()
        self._stopped = threading.Event()
        if host not in LOOPBACK:
            print(
                f"fnkit: warning: serving on {host}, so other machines can reach this handler; "
                "the default, 127.0.0.1, keeps it on this machine.",
                file=sys.stderr,
                flush=True,
            )
        self._socket = _listen(host, port)
        self.host = host
        self.port = self._socket.getsockname()[1]
        server_config = uvicorn.Config(
            _App(self),
            log_level="error",
            access_log=False,
            lifespan="off",
            ws="none",
            server_header=False,
            timeout_graceful_shutdown=1,
            timeout_keep_alive=5,
        )
        self._server = uvicorn.Server(server_config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="fnkit-alb-server", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self._socket.close()
                raise RuntimeError(f"the load balancer could not start on {host}:{port}")
            time.sleep(0.005)
        self._health_thread = None
        if health_check_interval_s:
            self._health_thread = threading.Thread(target=self._health_checks, name="fnkit-alb-health", daemon=True)
            self._health_thread.start()

    # -- what clients and notebooks use ------------------------------------------------

    @property
    def url(self) -> str:
        """`http://host:port` of the server."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def log(self) -> pd.DataFrame:
        """One row per request (and per health check), the newest `max_records`, as a DataFrame.

        Its columns: method, path, status, rule, … (`LOG_COLUMNS`).
        """
        require("pandas", extra="frames", feature="AlbServer.log")
        import pandas as pd

        return pd.DataFrame(list(self.records), columns=LOG_COLUMNS)

    def stop(self) -> None:
        """Stop serving (requests still waiting on a hung handler get no answer)."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self._server.should_exit = True
        self._thread.join(5)
        if self._health_thread is not None:
            self._health_thread.join(5)
        self._socket.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "stopped" if self._stopped.is_set() else "running"
        mode = "multi-value" if self.multi_value else "single-value"
        return f"<AlbServer {self.url} {state}, {mode} headers, {len(self.records)} request(s)>"

    # -- inside ----------------------------------------------------------------------------

    def _invoke(self, event: dict[str, Any]) -> Invocation:
        return invoke(
            self.handler,
            event,
            timeout_s=self.timeout_s,
            context=Context(timeout_s=self.timeout_s),
            isolation=self.isolation,
        )

    def _record(
        self,
        kind: str,
        result: HttpOutcome,
        started: float,
        raw_query: bytes,
        scope: dict[str, Any] | None,
        invocation: Invocation | None,
    ) -> None:
        client = (scope or {}).get("client")
        row = {
            "time": time.time(),
            "kind": kind,
            "method": result.method,
            "path": result.path,
            "query": raw_query.decode("latin-1"),
            "status": result.status,
            "reason": result.reason,
            "rule": result.rule,
            "invoked": result.invoked,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            "handler_ms": None if invocation is None else round(invocation.duration_ms, 3),
            "client": f"{client[0]}:{client[1]}" if client else None,
            "explanation": result.explanation,
        }
        self.records.append(row)
        if self._on_record is not None:
            try:
                self._on_record(row)
            except Exception:  # noqa: BLE001 - a printing callback must not break serving
                pass

    def _health_checks(self) -> None:
        """A11: the health check event every interval, logged like a request."""
        while not self._stopped.wait(self.health_check_interval_s):
            started = time.perf_counter()
            event = health_check_event(
                multi_value=self.multi_value, target_group_arn=self.target_group_arn, dialect=self.dialect
            )
            timeout = self.timeout_s if self.timeout_s is not None else HEALTH_CHECK_TIMEOUT_S
            invocation = invoke(
                self.handler, event, timeout_s=timeout, context=Context(timeout_s=timeout), isolation=self.isolation
            )
            result = outcome(event, invocation, config=self._target)
            if self._stopped.is_set():
                return
            self._record("health-check", result, started, b"", None, invocation)


@with_settings(AlbConfig)
def serve(
    handler: Handler,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    config: AlbConfig | None = None,
    target_group_arn: str | None = None,
    dialect: str = "provider",
    isolation: str = "process",
    max_records: int = MAX_RECORDS,
    **settings: Any,
) -> AlbServer:
    """Serve `handler` over HTTP as the load balancer would, on a background thread (a context manager).

    Binds 127.0.0.1 and a free port by default (`.url` says where). The target group's
    settings (`config`, an `AlbConfig`, or as keywords): `multi_value`, multi-value headers
    on; `timeout_s`, the function timeout (past it: 502); `health_check_interval_s`, send
    the health check event (A11) this often. `isolation`: where the handler runs
    ("process", the default: a worker process per request in flight, so a crash or a
    hang never reaches the server; "thread"; "none"; see `fnkit.invoke`). The newest
    `max_records` requests are in `.log` (and `.records`, a ring buffer).
    """
    return AlbServer(
        handler,
        host=host,
        port=port,
        config=AlbConfig.of(config, settings, serve),
        target_group_arn=target_group_arn,
        dialect=dialect,
        isolation=isolation,
        max_records=max_records,
    )


# --- the command line -------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of `fnkit serve-alb` (for the main command line's sub-parser)."""
    parser.add_argument("handler", metavar="MODULE:FUNCTION", help="the handler, e.g. app:handler or app.py:handler")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 picks a free one)")
    AlbConfig.add_arguments(parser)
    parser.add_argument(
        "--isolation",
        choices=("process", "thread", "none"),
        default="process",
        help="where the handler runs (default: a worker process, killed past the timeout)",
    )
    return parser


def load_handler(spec: str) -> Handler:
    """`module:function` or `path/to/file.py:function` → the function (the current directory is importable)."""
    target, _, name = spec.rpartition(":")
    if not target or not name:
        raise SystemExit(f"fnkit: give the handler as MODULE:FUNCTION, not {spec!r}")
    if target.endswith(".py"):
        path = Path(target).resolve()
        sys.path.insert(0, str(path.parent))
        target = path.stem
    else:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(target)
    except ImportError as exc:
        raise SystemExit(f"fnkit: cannot import {target!r}: {exc}") from None
    handler: Handler | None = getattr(module, name, None)
    if not callable(handler):
        raise SystemExit(f"fnkit: {target!r} has no function {name!r}")
    return handler


def _print_record(row: dict[str, Any]) -> None:
    who = "health check" if row["kind"] == "health-check" else f"{row['method']} {row['path']}"
    query = f"?{row['query']}" if row["query"] else ""
    invoked = "" if row["invoked"] else ", not invoked"
    print(
        f"{who}{query} -> {row['status']} {row['reason']} [rule {row['rule']}{invoked}] {row['duration_ms']:.1f} ms",
        flush=True,
    )


def _stop_on_sigterm() -> Callable[[], None]:
    """In the main thread, let SIGTERM stop the foreground server as Ctrl-C does; returns the undo."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)

    def undo() -> None:
        signal.signal(signal.SIGTERM, previous)

    return undo


def cli_serve(args: Any, handler: Callable[[Any, Any], Any] | None = None) -> int:
    """`fnkit serve-alb MODULE:FUNCTION [--host] [--port] [--multi-value] [--timeout S] ...`: serve in the foreground.

    `args`: the parsed options (an argparse Namespace) or the argument list. Ctrl-C stops.
    """
    import argparse

    if not isinstance(args, argparse.Namespace):
        args = add_arguments(argparse.ArgumentParser(prog="fnkit serve-alb")).parse_args(list(args))
    if handler is None:
        handler = load_handler(args.handler)
    server = AlbServer(
        handler,
        host=args.host,
        port=args.port,
        config=AlbConfig(**AlbConfig.given(args)),
        on_record=_print_record,
        isolation=getattr(args, "isolation", "process"),
    )
    mode = "on" if server.multi_value else "off"
    print(
        f"fnkit: load balancer for {args.handler} at {server.url} (multi-value headers {mode}); Ctrl-C stops",
        flush=True,
    )
    restore = _stop_on_sigterm()
    try:
        while server._thread.is_alive():
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        restore()
    print("fnkit: stopped", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run `fnkit serve-alb` with these arguments (default: sys.argv[1:])."""
    return cli_serve(sys.argv[1:] if argv is None else argv)


__all__ = ["AlbServer", "add_arguments", "cli_serve", "load_handler", "main", "serve"]


if __name__ == "__main__":
    raise SystemExit(main())
