"""A real HTTP front end: `serve(handler)` answers HTTP the way the load balancer would.

An asyncio server on a background thread reads requests with `_reader.Reader`, judging each
head as the load balancer's desync mitigation does (`_desync`, A16: severe → 400, ambiguous →
answered, then the connection closed), and writes answers through h11 (no framework), so that
the status line carries the function's own reason phrase (A9): an ASGI server has no way to
write one. Each request is refused before invoking when the load balancer would (A1, A14),
else turned into an event by `_http.request_to_event`, handed to the handler (with its
timeout), and the response turned into HTTP by `answered_by_function`: the same code the
simulator's `outcome` ends in. Under the default isolation the handler runs in a worker
process that the server's event loop itself watches (`fnkit._running.loop.invoke_async`: no thread
waits on it); "thread" and "none" run it on a thread of the server's, so that a slow handler
never holds the loop.
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, Unpack

from .._engine.codec import Invocation
from .._optional import require
from .._running.inprocess import Context, Handler, _check_isolation
from .._settings.config import with_settings
from .._settings.project import Dialect, resolve_dialect
from ..isolation import invoke
from ._config import AlbConfig, AlbSettings
from ._connection import GRACE_S, _Front, _listen
from ._connection import KEEP_ALIVE_S as KEEP_ALIVE_S
from ._connection import MAX_HEAD_BYTES as MAX_HEAD_BYTES
from ._connection import READ_TIMEOUT_S as READ_TIMEOUT_S
from ._desync import DEFAULT_MODE, MODES
from ._http import as_text, health_check_event
from ._outcome import HttpOutcome, outcome
from ._workers import Workers as _Workers

if TYPE_CHECKING:  # the server's own imports wait until a server starts
    import argparse

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


class AlbServer:
    """A running load balancer in front of one handler: `.url`, `.host`, `.port`, `.log`, `.records`, `.stop()`."""

    @with_settings(AlbConfig)
    def __init__(
        self,
        handler: Handler | str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        config: AlbConfig | None = None,
        target_group_arn: str | None = None,
        dialect: Dialect | None = None,
        on_record: Callable[[dict[str, Any]], Any] | None = None,
        isolation: str = "process",
        max_records: int = MAX_RECORDS,
        desync_mode: str = DEFAULT_MODE,
        **settings: Unpack[AlbSettings],
    ) -> None:
        config = AlbConfig.of(config, settings, AlbServer.__init__)
        _check_isolation(isolation)
        if desync_mode not in MODES:
            raise ValueError(f"desync_mode is one of {', '.join(MODES)}, not {desync_mode!r}")
        self.desync_mode = desync_mode  # A16: how requests whose framing is unclear are treated
        require("h11", extra="serve", feature="fnkit.alb.serve")  # an edge dependency: only the server needs it

        # an import path "module:attr" (or "file.py:attr") is resolved here, so that a wrong one is said at once;
        # `handler_spec` keeps it as "module:attr", which a worker process can import by itself
        self.handler_spec: str | None = None
        if isinstance(handler, str):
            handler, self.handler_spec = resolve_handler(handler)
        self.handler: Handler = handler
        # what invoke is given: the import path when there is one, so a worker process imports the handler (as
        # the platform does) instead of receiving a copy, which an application object such as Mangum(app) defeats
        self._call_target: Handler | str = self.handler_spec or handler
        self.config = config
        self.multi_value = config.multi_value_on  # the server makes the events: None is off
        self._target = config.replace(multi_value=self.multi_value)  # what every outcome is decided with
        self.timeout_s = config.timeout_s
        self.health_check_interval_s = health_check_interval_s = config.health_check_interval_s
        self.target_group_arn = target_group_arn
        self.dialect = resolve_dialect(dialect)
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
        self._front = _Front(self, self._socket)
        self._thread = self._front.thread
        try:
            self._front.start()
        except RuntimeError as exc:
            self._socket.close()
            raise RuntimeError(f"the load balancer could not start on {host}:{port}: {exc}") from None
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
        self._front.stop(GRACE_S)
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

    def _invoke(self, event: Mapping[str, Any]) -> Invocation:
        return invoke(
            self._call_target,
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
        client: tuple[str, int] | None,
        invocation: Invocation | None,
    ) -> None:
        row = {
            "time": time.time(),
            "kind": kind,
            "method": result.method,
            "path": result.path,
            "query": as_text(raw_query),
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
                self._call_target,
                event,
                timeout_s=timeout,
                context=Context(timeout_s=timeout),
                isolation=self.isolation,
            )
            result = outcome(event, invocation, config=self._target)
            if self._stopped.is_set():
                return
            self._record("health-check", result, started, b"", None, invocation)


@with_settings(AlbConfig)
def serve(
    handler: Handler | str,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    config: AlbConfig | None = None,
    target_group_arn: str | None = None,
    dialect: Dialect | None = None,
    isolation: str = "process",
    max_records: int = MAX_RECORDS,
    desync_mode: str = DEFAULT_MODE,
    **settings: Unpack[AlbSettings],
) -> AlbServer:
    """Serve `handler` over HTTP as the load balancer would, on a background thread (a context manager).

    `handler`: a function, or its import path "module:function" (or "file.py:function").
    The status line carries the function's statusDescription as its reason phrase (A9).
    Binds 127.0.0.1 and a free port by default (`.url` says where). The target group's
    settings (`config`, an `AlbConfig`, or as keywords): `multi_value`, multi-value headers
    on; `timeout_s`, the function timeout (past it: 502); `health_check_interval_s`, send
    the health check event (A11) this often. `isolation`: where the handler runs
    ("process", the default: a worker process per request in flight, so a crash or a
    hang never reaches the server; "thread"; "none"; see `fnkit.invoke`). The newest
    `max_records` requests are in `.log` (and `.records`, a ring buffer). `desync_mode`: how
    requests whose framing parsers may read differently are treated (A16): "defensive" (the
    default: severe ones get 400, ambiguous ones are answered and their connection closed),
    "strictest" (only compliant ones are forwarded) or "monitor" (all are forwarded).
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
        desync_mode=desync_mode,
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
    parser.add_argument(
        "--desync-mode",
        choices=MODES,
        default=DEFAULT_MODE,
        help="requests whose framing is unclear: defensive (default: severe 400, ambiguous closes the connection), "
        "strictest (compliant only), monitor (all forwarded)",
    )
    return parser


def resolve_handler(spec: str) -> tuple[Handler, str]:
    """`module:function` or `path/to/file.py:function` → (the function, "module:function"); ValueError says what
    is wrong. The current directory (or the file's own) becomes importable, as for `python -m`."""
    target, _, name = spec.rpartition(":")
    if not target or not name:
        raise ValueError(f"give the handler as MODULE:FUNCTION, not {spec!r}")
    if target.endswith(".py"):
        path = Path(target).resolve()
        folder, target = str(path.parent), path.stem
    else:
        folder = str(Path.cwd())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        module = importlib.import_module(target)
    except ImportError as exc:
        raise ValueError(f"cannot import {target!r}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - the learner's module failed as it was imported: say how
        raise ValueError(f"importing {target!r} raised {type(exc).__name__}: {exc}") from None
    handler: Handler | None = getattr(module, name, None)
    if not callable(handler):
        raise ValueError(f"{target!r} has no function {name!r}")
    return handler, f"{target}:{name}"


def load_handler(spec: str) -> Handler:
    """`module:function` or `path/to/file.py:function` → the function; a wrong one ends the command with a message."""
    try:
        return resolve_handler(spec)[0]
    except ValueError as exc:
        raise SystemExit(f"fnkit: {exc}") from None


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


def cli_serve(args: Any, handler: Handler | str | None = None) -> int:
    """`fnkit serve-alb MODULE:FUNCTION [--host] [--port] [--multi-value] [--timeout S] ...`: serve in the foreground.

    `args`: the parsed options (an argparse Namespace) or the argument list. Ctrl-C stops.
    """
    import argparse

    if not isinstance(args, argparse.Namespace):
        args = add_arguments(argparse.ArgumentParser(prog="fnkit serve-alb")).parse_args(list(args))
    if handler is None:
        handler = args.handler  # the import path: the server resolves it and keeps it
    try:
        server = AlbServer(
            handler,
            host=args.host,
            port=args.port,
            config=AlbConfig(**AlbConfig.given(args)),
            on_record=_print_record,
            isolation=getattr(args, "isolation", "process"),
            desync_mode=getattr(args, "desync_mode", DEFAULT_MODE),
        )
    except ValueError as exc:  # a handler that cannot be imported, a setting out of range: said, no traceback
        raise SystemExit(f"fnkit: {exc}") from None
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


__all__ = ["AlbServer", "add_arguments", "cli_serve", "load_handler", "main", "resolve_handler", "serve"]


if __name__ == "__main__":
    raise SystemExit(main())
