"""The HTTP side of `fnkit.alb.serve`: an asyncio loop on its own thread, each client connection read with
`_reader.Reader`, judged as the load balancer's desync mitigation judges it (A16), answered through h11.

`_Front` owns the loop: it accepts connections, times out idle ones, hands requests to the
handler (in a worker process watched by the loop itself, or on a server thread) and stops
gracefully. `_Connection` is one client: refused at once when the load balancer would refuse
(A1, A14), else turned into an event and invoked once its body is whole, keep-alive and
pipelining as HTTP/1.1 has them. What the server is and how it starts: `fnkit.alb._serve`.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .._engine.codec import Invocation
from .._running.inprocess import Context, Handler
from .._settings.project import Dialect
from ._config import BAD_GATEWAY
from ._desync import Head as _Head
from ._desync import body_framing, decide, judge_head
from ._http import (
    BAD_HEADER_VALUE,
    Refusal,
    as_text,
    error_page,
    header_values,
    never_forwarded,
    reason_phrase,
    refusal_for,
    request_to_event,
    trace_id,
)
from ._outcome import HttpOutcome, answered_by_balancer, answered_by_function, bad_gateway, bound_of
from ._reader import Reader
from ._workers import Workers as _Workers

if TYPE_CHECKING:  # the server's own imports wait until a server starts
    import asyncio
    import socket

MAX_HEAD_BYTES = 16 * 1024  # the request line and headers together; past it the client gets 431
KEEP_ALIVE_S = 5.0  # an idle keep-alive connection is closed after this long
READ_TIMEOUT_S = 60.0  # a client silent this long in the middle of its request is disconnected
GRACE_S = 1.0  # on stop, answers in flight get this long before their connections are closed

_log = logging.getLogger("fnkit.alb.serve")


class _Server(Protocol):
    """What the connections read of the server (`AlbServer`), and the calls they make on it."""

    desync_mode: str
    dialect: Dialect
    isolation: str
    multi_value: bool
    port: int
    target_group_arn: str | None
    timeout_s: float | None
    _call_target: Handler | str
    _workers: _Workers

    def _invoke(self, event: Mapping[str, Any]) -> Invocation: ...

    def _record(
        self,
        kind: str,
        result: HttpOutcome,
        started: float,
        raw_query: bytes,
        client: tuple[str, int] | None,
        invocation: Invocation | None,
    ) -> None: ...


_ANSWERING = b"GET / HTTP/1.1\r\nhost: a\r\n\r\n"  # what h11 is told it answers (but for HEAD)


def _wire(text: str) -> bytes:
    """A header value or reason phrase as bytes on the wire: Latin-1 when it fits, else UTF-8 (obs-text)."""
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


_date: tuple[int, bytes] = (0, b"")  # the Date header of the current second, and that second


def _http_date() -> bytes:
    """Now as an HTTP Date header value (IMF-fixdate), made once a second."""
    global _date
    now = int(time.time())
    if _date[0] != now:
        from email.utils import formatdate

        _date = (now, formatdate(now, usegmt=True).encode("ascii"))
    return _date[1]


class _Request:
    """The request a connection is reading or answering."""

    __slots__ = ("body", "header_pairs", "method", "path", "raw_path", "raw_query", "size", "started")

    def __init__(self, started: float, head: _Head) -> None:
        self.started = started
        self.method = head.method
        self.raw_path, _, self.raw_query = head.path.partition(b"?")
        self.path = as_text(self.raw_path) or "/"
        pairs = head.header_pairs
        if head.host is not None:  # A17: an absolute-form target names the host; a Host header is ignored
            pairs = [(b"host", head.host)] + [(k, v) for k, v in pairs if k.lower() != b"host"]
        self.header_pairs = pairs
        self.body: list[bytes] = []
        self.size = 0


class _Connection:
    """One client connection (an asyncio protocol): requests in through `Reader`, judged as the load balancer
    judges their framing (A16), answers out through h11.

    A request is answered at once when the load balancer refuses it (the rest of its body is
    read and dropped, so the connection stays usable), else invoked once its body is whole;
    keep-alive follows the request's version and Connection header, pipelined requests wait their turn.
    """

    def __init__(self, front: _Front) -> None:
        self.front = front
        self.server = front.server
        self.reader = Reader(MAX_HEAD_BYTES)
        self.transport: asyncio.Transport | None = None
        self.client: tuple[str, int] | None = None
        self.request: _Request | None = None
        self.answered = False  # the current request was answered early (refused): its body is dropped
        self.busy = False  # the handler is answering the current request
        self.keep = True  # the connection persists after the current request's answer
        self.paused = False
        self.eof = False
        self.last_io = 0.0

    # -- asyncio's calls ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment] # a stream transport: create_server makes only these
        peer = transport.get_extra_info("peername")
        self.client = (str(peer[0]), int(peer[1])) if isinstance(peer, tuple) else None
        self.last_io = self.front.loop.time()
        self.front.connections.add(self)

    def data_received(self, data: bytes) -> None:
        self.last_io = self.front.loop.time()
        self.reader.feed(data)
        if self.busy:  # a pipelined request: it waits, and so does reading, until this one is answered
            self._pause()
            return
        self._process()

    def eof_received(self) -> bool:
        self.eof = True
        if not self.busy:
            self._process()
        return True  # this side closes, once any answer in flight is written

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.front.connections.discard(self)

    def pause_writing(self) -> None:
        pass  # an answer is at most about 1 MB: the transport buffers it

    def resume_writing(self) -> None:
        pass

    # -- reading ----------------------------------------------------------------------------

    def _process(self) -> None:
        """Handle what the reader has whole, until it needs more bytes or a handler is answering."""
        reader = self.reader
        while self.transport is not None and not self.busy:
            kind, value = reader.next()
            if kind == "data":
                self._on_body(value)  # type: ignore[arg-type]
            elif kind == "head":
                self._on_request(value)  # type: ignore[arg-type]
            elif kind == "end":
                self._on_end()
            elif kind == "error":
                self._malformed(value)  # type: ignore[arg-type]
                return
            else:  # "need" more bytes, or "done": the answer to a request read whole is on its way
                if self.eof and (kind == "need" or not self.answered):
                    self._close()
                return

    def _on_request(self, raw_head: bytes) -> None:
        head = judge_head(raw_head)  # A16, A17
        request = self.request = _Request(time.perf_counter(), head)
        self.answered = False
        text_headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in request.header_pairs]
        tokens = {t.strip().lower() for v in header_values(text_headers, "connection") for t in v.split(",")}
        close, refused = decide(head, self.server.desync_mode)
        self.keep = head.http11 and "close" not in tokens and not close
        if refused is not None:  # nothing after these bytes can be trusted to start a request: the connection ends
            self._refuse(refused, close=True)
            return
        framing, length = body_framing(head)
        self.reader.expect(framing, length)
        if framing == "chunked":  # RFC 9112 6.3: Transfer-Encoding frames it, a Content-Length beside is dropped
            request.header_pairs = [(k, v) for k, v in request.header_pairs if k.lower() != b"content-length"]
        # A1, A14: answered before the body is read and before anything is invoked
        found = refusal_for(request.method, text_headers, length if framing == "length" else None)
        waiting = (
            head.http11
            and framing != "none"
            and not self.reader.body_started
            and any(v.strip().lower() == "100-continue" for v in header_values(text_headers, "expect"))
        )
        if found is not None:
            # a client waiting for "100 Continue" sends no body: the connection closes after the answer
            self._refuse(found, close=waiting)
        elif waiting:
            self._write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def _on_body(self, data: bytes) -> None:
        request = self.request
        if self.answered or request is None:
            return  # the body of a request already answered: read and dropped
        request.size += len(data)
        refused = never_forwarded(None, request.size, body_complete=False)  # A1, as the body arrives
        if refused:
            request.body.clear()
            self._refuse(refused[0])
            return
        request.body.append(data)

    def _on_end(self) -> None:
        if self.answered:
            self._next_cycle()  # the body of a request answered early, read and dropped
            return
        request = self.request
        assert request is not None  # the reader ends no body without a head
        srv = self.server
        event = request_to_event(
            request.method,
            request.raw_path,
            request.raw_query,
            request.header_pairs,
            b"".join(request.body),
            srv.multi_value,
            target_group_arn=srv.target_group_arn,
            dialect=srv.dialect,
            trace=trace_id(),
            client_ip=self.client[0] if self.client else "127.0.0.1",
            port=srv.port,
            proto="http",
        )
        request.body = []
        self.busy = True
        if srv.isolation == "process":  # a worker process, watched by this loop: no thread waits for it
            self.front.invoke_soon(event, self._invoked_soon)
        else:  # in this process: on a thread of its own, so that a slow handler never holds the loop
            srv._workers.submit(lambda: srv._invoke(event), self._invoked)

    # -- answering ---------------------------------------------------------------------------

    def _invoked(self, invocation: Invocation | None, error: BaseException | None) -> None:
        """On the worker thread: hand the invocation back to the event loop."""
        self.front.call_soon_threadsafe(self._answer, invocation, error)

    def _invoked_soon(self, invocation: Invocation) -> None:
        """On the loop: the worker process answered."""
        self._answer(invocation, None)

    def _answer(self, invocation: Invocation | None, error: BaseException | None) -> None:
        request = self.request
        assert request is not None
        srv = self.server
        try:
            if error is not None:
                raise error
            result = answered_by_function(invocation, request.method, request.path, srv.multi_value)
        except Exception as exc:  # noqa: BLE001 - a bug of fnkit's: the client gets a 502 and the log says why
            _log.error("fnkit could not answer %s %s", request.method, request.path, exc_info=exc)
            result = bad_gateway(
                BAD_GATEWAY.id,
                f"fnkit itself failed ({type(exc).__name__}: {exc}); the server's log has the traceback.",
                method=request.method,
                path=request.path,
                multi_value=srv.multi_value,
                invocation=invocation,
            )
        srv._record("request", result, request.started, request.raw_query, self.client, invocation)
        self.busy = False
        if self.transport is None:
            return  # the client left
        self._respond(result, close=self.front.closing or self.eof)
        self._process()  # a pipelined request, or the end of the connection

    def _refuse(self, found: Refusal, close: bool = False) -> None:
        request = self.request
        assert request is not None
        srv = self.server
        result = answered_by_balancer(found, request.method, request.path, srv.multi_value)
        srv._record("request", result, request.started, request.raw_query, self.client, None)
        self.answered = True
        self._respond(result, close=close or self.front.closing)

    def _respond(self, result: HttpOutcome, close: bool = False) -> None:
        """Write `result` with its own reason phrase (A9); then the next request, or the end of the connection."""
        import h11

        close = close or not self.keep
        headers = [(_wire(name), _wire(value.strip(" \t"))) for name, value in result.headers]
        if not any(name.lower() == b"date" for name, _ in headers):
            headers.append((b"date", _http_date()))  # as the load balancer (and the uvicorn before) adds it
        if close:
            headers.append((b"connection", b"close"))
        reason = result.reason
        if BAD_HEADER_VALUE.search(reason):  # never: A13 makes such a description a 502
            reason = reason_phrase(result.status)
        # h11 writes the answer (and refuses what HTTP cannot carry); the request it answers is read here, judged
        conn = h11.Connection(h11.SERVER)
        conn.receive_data(b"HEAD / HTTP/1.1\r\nhost: a\r\n\r\n" if result.method == "HEAD" else _ANSWERING)
        conn.next_event()
        try:
            data = conn.send(h11.Response(status_code=result.status, headers=headers, reason=_wire(reason)))
            if result.body:
                data += conn.send(h11.Data(data=result.body))
            data += conn.send(h11.EndOfMessage())
        except h11.LocalProtocolError as exc:  # never: what HTTP cannot carry (A13) is a 502 already
            _log.error("fnkit could not write its answer to %s %s", result.method, result.path, exc_info=exc)
            self._close()
            return
        self._write(data)
        self.last_io = self.front.loop.time()
        if close:
            self._close()
        elif self.reader.done:
            self._next_cycle()
        # else: the client is still sending the body of a request answered early; it is read and dropped

    def _next_cycle(self) -> None:
        self.reader.next_cycle()
        self.request = None
        self.answered = False
        if self.paused and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()

    def _malformed(self, status: int) -> None:
        """What is not HTTP/1.1 gets the load balancer's error page (400, or 431 for an oversized head), then the
        connection closes. Written by hand: nothing of the request can be trusted to shape it."""
        page_headers, body = error_page(status)
        head = f"HTTP/1.1 {status} {reason_phrase(status)}\r\n".encode("ascii")
        head += b"".join(name.encode("ascii") + b": " + value.encode("ascii") + b"\r\n" for name, value in page_headers)
        self._write(head + b"connection: close\r\n\r\n" + body)
        self._close()

    def _write(self, data: bytes) -> None:
        if self.transport is not None:
            self.transport.write(data)

    def _pause(self) -> None:
        if not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.close()  # after what is written has gone
            self.transport = None
            self.front.connections.discard(self)

    # -- the server's calls ----------------------------------------------------------------------

    def expire(self, now: float) -> None:
        """Close the connection if its client has been silent too long: between requests, or within one."""
        if self.busy or self.transport is None:
            return
        between = self.reader.idle
        if now - self.last_io > (KEEP_ALIVE_S if between else READ_TIMEOUT_S):
            self._close()

    def shutdown(self) -> None:
        """The server is stopping: close now unless an answer is on its way (then close after it)."""
        if not self.busy:
            self._close()

    def abort(self) -> None:
        """The grace period is over: drop the connection, answered or not."""
        transport = self.transport
        self.transport = None
        if transport is not None:
            transport.abort()


class _Front:
    """The event loop on its own thread: accepts connections, times out idle ones, stops gracefully."""

    def __init__(self, server: _Server, sock: socket.socket) -> None:
        import asyncio

        self.server = server
        self.sock = sock
        self.loop = asyncio.new_event_loop()
        self.connections: set[_Connection] = set()
        self.calls: set[Any] = set()  # invocations in worker processes, watched by this loop
        self.closing = False
        self._listener: asyncio.Server | None = None
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._deadline = 0.0
        self.thread = threading.Thread(target=self._run, name="fnkit-alb-server", daemon=True)

    def start(self) -> None:
        """Start serving; raises when the loop cannot."""
        self.thread.start()
        if not self._ready.wait(10) or self._failed is not None:
            raise RuntimeError(f"the load balancer could not start: {self._failed or 'no answer in 10 s'}")

    def _run(self) -> None:
        import asyncio

        asyncio.set_event_loop(self.loop)
        try:
            # _Connection has every method of asyncio.Protocol without subclassing it: importing fnkit.alb does
            # not import asyncio
            self._listener = self.loop.run_until_complete(
                self.loop.create_server(lambda: _Connection(self), sock=self.sock, backlog=1024)  # type: ignore[arg-type,return-value]
            )
        except BaseException as exc:  # noqa: BLE001 - said by start()
            self._failed = exc
            self._ready.set()
            self.loop.close()
            return
        self.loop.call_later(1.0, self._sweep)
        self._ready.set()
        try:
            self.loop.run_forever()
        finally:
            for connection in list(self.connections):
                connection.abort()
            for call in list(self.calls):
                call.cancel()  # a handler still running past the grace: its worker process is killed
            self.loop.run_until_complete(asyncio.sleep(0))  # the aborted transports close their sockets
            if "fnkit._running.loop" in sys.modules:  # idle workers this loop watched go back to the other callers
                sys.modules["fnkit._running.loop"].release_loop(self.loop)
            self.loop.close()

    def invoke_soon(self, event: Mapping[str, Any], done: Callable[[Invocation], None]) -> None:
        """On the loop: start invoking the handler in a worker process; `done(invocation)` on the loop."""
        from .._running.loop import invoke_soon

        srv, call = self.server, None
        bound, seconds = bound_of(srv.multi_value), srv.timeout_s  # past the limit: the verdict, not the response

        def finished(invocation: Invocation) -> None:
            self.calls.discard(call)
            done(invocation)

        call = invoke_soon(
            srv._call_target, event, finished, timeout_s=seconds, context=Context(timeout_s=seconds), bound=bound
        )
        if call is not None and not call.over:
            self.calls.add(call)

    def call_soon_threadsafe(self, fn: Callable[..., Any], *args: Any) -> None:
        """`fn(*args)` on the loop, from any thread; nothing once the server has stopped."""
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:
            pass  # the loop is closed: the answer has nobody to go to

    def _sweep(self) -> None:
        now = self.loop.time()
        for connection in list(self.connections):
            connection.expire(now)
        if not self.closing:
            self.loop.call_later(1.0, self._sweep)

    def stop(self, grace_s: float = GRACE_S) -> None:
        """Stop accepting, close idle connections, give answers in flight `grace_s`, then close everything."""
        if self.thread.is_alive():
            self.call_soon_threadsafe(self._begin_stop, grace_s)
            self.thread.join(grace_s + 5)

    def _begin_stop(self, grace_s: float) -> None:
        self.closing = True
        if self._listener is not None:
            self._listener.close()  # no new connections: the port refuses them from now on
        for connection in list(self.connections):
            connection.shutdown()
        self._deadline = self.loop.time() + grace_s
        self._stop_when_answered()

    def _stop_when_answered(self) -> None:
        if any(c.busy for c in self.connections) and self.loop.time() < self._deadline:
            self.loop.call_later(0.02, self._stop_when_answered)
        else:
            self.loop.stop()


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
