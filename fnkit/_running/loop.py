"""The exchange on an event loop (a server's): the steps of fnkit._running.exchange, driven without a
thread waiting on them (`call_soon`, `invoke_soon`).
"""

from __future__ import annotations

import os
import struct
import sys
import time
from collections import deque
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from .._engine.codec import Invocation
from .exchange import _SEND, _TAKE, _WAIT, Step, _Item, _next_call_id, _one, _run_steps, _unpack, call
from .inprocess import (
    Context,
    Handler,
    _internal_error,
    _prepare,
    check_memory_limit,
)
from .pool import _pool, _Worker, memory_limit_mb
from .wire import ENDED, Message

if TYPE_CHECKING:
    import asyncio

# --- the exchange on an event loop ----------------------------------------------------------------

_READ_SIZE = 1 << 18
_FRAME_HEAD = struct.Struct("!i")  # multiprocessing.connection's framing: a signed length, big-endian,
_FRAME_LONG = struct.Struct("!iQ")  # or -1 and a 64-bit length for a message over 2 GiB


class _Channel:
    """A worker's socket watched by an event loop: no thread waits for the worker.

    The loop reads whatever arrives (the socket is non-blocking meanwhile) and cuts it into
    whole messages with the framing of `multiprocessing.connection`, which the worker writes;
    the worker's pidfd tells the loop when its process ends. Writing waits for room in the
    socket, with a deadline. The watch stays while the worker is idle between the loop's
    calls (what it would say then, or its end, marks it as not to be used); `close` (when it
    is reaped, or the loop stops: `release_loop`) hands the socket back as the synchronous
    path knows it: blocking, and nothing half read.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, worker: _Worker) -> None:
        self.loop = loop
        self.worker = worker
        self.fd = worker.conn.fileno()
        self.pidfd = worker.pidfd
        self.buffer = bytearray()
        self.frames: deque[bytes] = deque()
        self.ended = False  # end of file, a broken framing, or the process has ended
        self.listener: Callable[[], None] | None = None  # called when something happens on the channel
        os.set_blocking(self.fd, False)
        loop.add_reader(self.fd, self._readable)
        if self.pidfd is not None:
            loop.add_reader(self.pidfd, self._exited)
        self.watched = True
        worker.channel = self

    def close(self) -> None:
        """Stop watching (on the loop's thread); the socket is blocking again."""
        if self.worker.channel is self:
            self._unwatch()
            self.forget()

    def forget(self) -> None:
        """Leave the worker as the blocking path knows it, without a word to the loop (closed, or not running).
        A worker that said more than it was asked is not used again."""
        worker = self.worker
        if worker.channel is not self:
            return
        worker.channel = None
        try:
            os.set_blocking(self.fd, True)
        except OSError:
            pass
        if self.buffer or self.frames:
            worker.stray = True

    def on_its_loop(self) -> bool:
        """Whether this thread runs the loop that watches the channel."""
        import asyncio

        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    def said_more(self) -> bool:
        """While idle: the worker said something nobody asked for, or ended (seen by the loop)."""
        return self.ended or bool(self.buffer) or bool(self.frames)

    def _unwatch(self) -> None:
        if self.watched:
            self.watched = False
            self.loop.remove_reader(self.fd)
            if self.pidfd is not None:
                self.loop.remove_reader(self.pidfd)

    def _readable(self) -> None:
        try:
            chunk = os.read(self.fd, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            self.buffer += chunk
            self._cut()
        else:
            self._end()
        self._wake()

    def _exited(self) -> None:
        """Its process has ended: what it wrote before is still read, then the channel ends."""
        for _ in range(64):  # (bounded: a process its handler started might hold the socket and write on)
            try:
                chunk = os.read(self.fd, _READ_SIZE)
            except OSError:
                break
            if not chunk:
                break
            self.buffer += chunk
        self._cut()
        self._end()
        self._wake()

    def _end(self) -> None:
        self.ended = True
        self._unwatch()  # (an ended socket or process is readable for ever)

    def _cut(self) -> None:
        """Whole messages out of what was read."""
        buffer, frames = self.buffer, self.frames
        pos, end = 0, len(buffer)
        while end - pos >= 4:
            (size,) = _FRAME_HEAD.unpack_from(buffer, pos)
            head = 4
            if size < 0:
                if size != -1:  # not the framing: the worker is not trusted further
                    self._end()
                    break
                if end - pos < _FRAME_LONG.size:
                    break
                size = _FRAME_LONG.unpack_from(buffer, pos)[1]
                head = _FRAME_LONG.size
            if end - pos - head < size:
                break
            frames.append(bytes(buffer[pos + head : pos + head + size]))
            pos += head + size
        if pos:
            del buffer[:pos]

    def _wake(self) -> None:
        listener = self.listener
        if listener is not None:
            listener()

    def next_message(self) -> Message | None:
        """The worker's next message if it has come (`ENDED` once it has ended), else None. Never waits."""
        worker = self.worker
        try:
            if worker.backlog:
                return _one(worker.backlog.pop())
            if self.frames:
                return _unpack(worker, self.frames.popleft())
        except Exception:  # noqa: BLE001 - an answer this process cannot read: the worker is not trusted further
            return ENDED
        return ENDED if self.ended else None

    def write(self, view: memoryview) -> memoryview | None:
        """Write what the socket takes now; what is left (empty: all of it), or None when the worker is gone."""
        try:
            return view[os.write(self.fd, view) :]
        except BlockingIOError:
            return view
        except OSError:
            return None


class _Driver:
    """Runs an exchange on an event loop by callbacks: each step goes as far as it can at once, then waits for
    the worker's socket, its end, room to write or a deadline; then `done(value, error)`, on the loop.

    No task and no future per call: the worker's answer is read, the exchange finished and `done` called in
    the one callback that read it. `cancel()` kills the worker in use (the exchange sees CancelledError).
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        steps: Generator[Step, Any, Any],
        done: Callable[[Any, BaseException | None], None],
    ) -> None:
        self.loop = loop
        self.steps = steps
        self.done = done
        self.over = False
        self.channel: _Channel | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.writing = False
        self.step: Step = ()
        self.view = memoryview(b"")

    def start(self) -> None:
        self._advance(None, None)

    def cancel(self) -> None:
        """Stop now: the worker in use is killed."""
        if not self.over:
            import asyncio

            self._unwait()
            self._advance(None, asyncio.CancelledError())

    def _advance(self, answer: Any, error: BaseException | None) -> None:
        while True:
            try:
                step = self.steps.send(answer) if error is None else self.steps.throw(error)
            except StopIteration as stop:
                self._conclude(stop.value, None)
                return
            except BaseException as exc:  # noqa: BLE001 - handed to `done`
                self._conclude(None, exc)
                return
            answer, error = None, None
            self.step = step
            try:
                op = step[0]
                if op == _TAKE:
                    worker = _pool.take(step[1], start=False, loop=self.loop)
                    if worker is None:  # a new worker process: started on a thread, so the loop goes on
                        self.loop.run_in_executor(None, _Worker).add_done_callback(self._made)
                        return
                    answer = worker
                    continue
                worker = step[1]
                self.channel = worker.channel if worker.channel is not None else _Channel(self.loop, worker)
                if op == _SEND:
                    data = step[2]
                    n = len(data)
                    head = _FRAME_HEAD.pack(n) if n <= 0x7FFFFFFF else _FRAME_LONG.pack(-1, n)
                    self.view = memoryview(head + data)
                    ready, answer = self._try_send()
                else:
                    ready, answer = self._try_wait()
                if not ready:
                    self._arm()
                    return
            except BaseException as exc:  # noqa: BLE001 - raised in the exchange, which kills its worker first
                error = exc

    def _try_wait(self) -> tuple[bool, Any]:
        """(True, the next message or None past the deadline), or (False, None) to wait on."""
        assert self.channel is not None
        message = self.channel.next_message()
        if message is not None:
            return True, message
        deadline = self.step[2]
        if deadline is not None and time.monotonic() >= deadline:
            return True, None
        return False, None

    def _try_send(self) -> tuple[bool, bool | None]:
        """(True, sent: True, gone: False, past the deadline: None), or (False, None) to wait for room."""
        assert self.channel is not None
        view = self.channel.write(self.view)
        if view is None:
            return True, False
        self.view = view
        if not view:
            return True, True
        if self.channel.ended:
            return True, False
        deadline = self.step[3]
        if deadline is not None and time.monotonic() >= deadline:
            return True, None
        return False, None

    def _arm(self) -> None:
        """Wait for the channel (and room to write), or the deadline."""
        channel = self.channel
        assert channel is not None
        channel.listener = self._resume
        deadline = self.step[2] if self.step[0] == _WAIT else self.step[3]
        if deadline is not None:
            self.timer = self.loop.call_later(max(0.0, deadline - time.monotonic()), self._resume)
        if self.step[0] == _SEND:
            self.writing = True
            self.loop.add_writer(channel.fd, self._resume)

    def _unwait(self) -> None:
        channel = self.channel
        if channel is not None:
            channel.listener = None
            if self.writing:
                self.writing = False
                self.loop.remove_writer(channel.fd)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _resume(self) -> None:
        if self.over:
            return
        self._unwait()
        try:
            ready, answer = self._try_send() if self.step[0] == _SEND else self._try_wait()
        except BaseException as exc:  # noqa: BLE001
            self._advance(None, exc)
            return
        if ready:
            self._advance(answer, None)
        else:
            self._arm()

    def _made(self, future: asyncio.Future[_Worker]) -> None:
        """A new worker process is there (on the loop)."""
        if future.cancelled():
            return
        error = future.exception()
        if self.over:  # cancelled meanwhile: the new worker waits in the pool
            if error is None:
                _pool.give_back(future.result())
            return
        if error is not None:
            self._advance(None, error)
        else:
            self._advance(future.result(), None)

    def _conclude(self, value: Any, error: BaseException | None) -> None:
        self.over = True
        self._unwait()
        self.done(value, error)


def release_loop(loop: asyncio.AbstractEventLoop) -> None:
    """On the thread of `loop`, before it closes: the idle workers it watches go back to every caller."""
    _pool.release(loop)


def call_soon(
    handler: Handler | str,
    event: Any,
    context: Context,
    timeout_s: float | None,
    done: Callable[[Invocation | None, BaseException | None], None],
    memory_mb: int | None = None,
    bound: tuple[int, Callable[[str, int], Any] | None] | None = None,
) -> _Driver:
    """`call` for the running event loop's thread: it starts the call and returns; `done(invocation, None)` (or
    `done(None, error)` for a bug of fnkit's) comes on the loop when it is over. The loop watches the worker's
    socket and process: no thread waits. The same exchange as `call`, with the same guarantees (the hard stop
    past the timeout, the memory limit, results as data); `.cancel()` on what it returns kills the worker."""
    import asyncio

    item = _Item(_next_call_id(), event, context, timeout_s, bound)
    steps = _run_steps(handler, [item], memory_limit_mb() if memory_mb is None else memory_mb)

    def concluded(value: Any, error: BaseException | None) -> None:
        done(item.result if error is None else None, error)

    driver = _Driver(asyncio.get_running_loop(), steps, concluded)
    driver.start()
    return driver


async def call_async(
    handler: Handler | str, event: Any, context: Context, timeout_s: float | None, memory_mb: int | None = None
) -> Invocation:
    """`call_soon`, awaited: cancelling the task kills the worker it was using."""
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future[Invocation] = loop.create_future()

    def done(invocation: Invocation | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            assert invocation is not None
            future.set_result(invocation)

    if sys.platform == "win32":  # pragma: no cover - a pipe, not a socket, that a loop can watch: on a thread
        return await loop.run_in_executor(None, call, handler, event, context, timeout_s, memory_mb)
    driver = call_soon(handler, event, context, timeout_s, done, memory_mb)
    try:
        return await future
    except asyncio.CancelledError:
        driver.cancel()
        raise


def invoke_soon(
    handler: Handler | str,
    event: Any,
    done: Callable[[Invocation], None],
    *,
    timeout_s: float | None = None,
    context: Context | None = None,
    memory_limit_mb: int | None = None,
    bound: tuple[int, Callable[[str, int], Any] | None] | None = None,
) -> _Driver | None:
    """`fnkit.invoke(handler, event, isolation="process", ...)` started on the running loop (the servers use it):
    `done(invocation)` on the loop when it is over; never an error (a bug of fnkit's is the invocation's
    error). `.cancel()` on what it returns kills the worker. ValueError at once for a wrong `memory_limit_mb`."""
    memory_mb = check_memory_limit(memory_limit_mb)
    context = _prepare(context, timeout_s)

    def concluded(invocation: Invocation | None, error: BaseException | None) -> None:
        if invocation is None:
            import asyncio

            if isinstance(error, asyncio.CancelledError):
                return  # cancelled: nobody waits
            invocation = _internal_error(error or RuntimeError("no result"), timeout_s)
        done(invocation)

    try:
        return call_soon(handler, event, context, timeout_s, concluded, memory_mb, bound)
    except Exception as exc:  # noqa: BLE001 - a bug of fnkit's must not look like the caller's
        import asyncio

        asyncio.get_running_loop().call_soon(done, _internal_error(exc, timeout_s))
        return None


async def invoke_async(
    handler: Handler | str,
    event: Any,
    *,
    timeout_s: float | None = None,
    context: Context | None = None,
    memory_limit_mb: int | None = None,
) -> Invocation:
    """`fnkit.invoke(handler, event, isolation="process", ...)` awaited on an event loop (the servers use it).

    The handler runs in a worker process, as with `invoke`; the loop goes on serving while it
    runs. Never raises (but ValueError for a wrong `memory_limit_mb`, as `invoke`).
    """
    memory_mb = check_memory_limit(memory_limit_mb)
    context = _prepare(context, timeout_s)
    try:
        return await call_async(handler, event, context, timeout_s, memory_mb)
    except Exception as exc:  # noqa: BLE001 - a bug of fnkit's must not look like the caller's
        return _internal_error(exc, timeout_s)
