"""The caller's handles on its worker processes (`_Worker`) and the pool of idle ones (`_Pool`)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from .inprocess import (
    DEFAULT_MEMORY_LIMIT_MB,
)
from .wire import _UNSET, IDLE_WINDOW_S, MAX_IDLE_WORKERS, STATS, Exit, _ended_by_alarm, _exit_text, to_worker
from .worker import _leader_ended, _worker_main_conn, open_stat
from .zygote import _pidfd, _use_zygote, _Zygote, forget_zygote, running_zygote, stop_zygote

if TYPE_CHECKING:
    import asyncio


def memory_limit_mb() -> int:
    """The memory limit of each worker process in MB (`FNKIT_MEMORY_LIMIT_MB`, default 1024)."""
    try:
        value = int(os.environ.get("FNKIT_MEMORY_LIMIT_MB", DEFAULT_MEMORY_LIMIT_MB))
    except ValueError:
        return DEFAULT_MEMORY_LIMIT_MB
    return value if value > 0 else DEFAULT_MEMORY_LIMIT_MB


class _Worker:
    """The caller's handle on one worker process."""

    def __init__(self) -> None:
        from multiprocessing.connection import Connection

        self.process: Any = None
        self.pid = 0
        self.zygote: _Zygote | None = None
        if _use_zygote():
            zygote = running_zygote()
            try:
                self.pid, sock = zygote.fork()
            except OSError:  # a dead zygote: one fresh try
                zygote = running_zygote(failed=zygote)
                self.pid, sock = zygote.fork()
            self.zygote = zygote
            self.conn = Connection(sock.detach())
        else:  # pragma: no cover - exercised with FNKIT_ISOLATION_START=spawn
            import multiprocessing

            mp = multiprocessing.get_context("spawn")
            mine, theirs = mp.Pipe()
            self.process = mp.Process(target=_worker_main_conn, args=(theirs,), daemon=True)
            self.process.start()
            theirs.close()
            self.pid = self.process.pid
            self.conn = mine
        STATS["workers_started"] += 1
        self.pool = _pool
        self.pool.counted(1)
        self.pidfd = _pidfd(self.pid)  # readable once the worker has ended, whoever holds its socket
        self.stat = open_stat(self.pid)  # what says its main thread has ended (`has_ended`)
        import select

        self.poller = select.poll()
        self.poller.register(self.conn.fileno(), select.POLLIN)
        if self.pidfd is not None:
            self.poller.register(self.pidfd, select.POLLIN)
        self.memory_mb: int | object | None = _UNSET  # its limit, set with its first call, for its life
        self.handlers: OrderedDict[bytes, None] = OrderedDict()
        self.synced: dict[str, Any] = {}
        self.backlog: list[bytes] = []
        # an event loop watching its socket during an exchange (a fnkit._running.loop._Channel, the room above)
        self.channel: Any = None
        self.stray = False  # it said more than it was asked: never handed another call
        self.dead = False
        self.status: int | None = None
        self.stopped = False  # killed by a Stopper from another thread; the thread using it cleans up
        self.state_lock = threading.Lock()  # `dead` is set under it, so a stop never signals a reaped pid

    def _mark_dead(self) -> bool:
        """Mark it dead; False when it was already."""
        with self.state_lock:
            if self.dead:
                return False
            self.dead = True
        self.pool.counted(-1)
        return True

    def has_ended(self) -> bool:
        """Whether its process has ended (or its socket says something while idle): never hand it a call."""
        if self.dead or self.stray or (self.channel is not None and self.channel.said_more()):
            return True
        try:  # its process has ended, or its socket says something (an idle worker says nothing): one poll
            if self.poller.poll(0):
                return True
        except (OSError, RuntimeError):
            return True
        # its main thread has ended while another thread of it lives on (a zombie leader, whose socket stays open
        # and whose pidfd says nothing until the last thread ends): ended all the same
        return _leader_ended(self.pid, self.stat)

    def _signal(self) -> None:
        """SIGKILL to it and to its process group (what its handler started and left running)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except (OSError, AttributeError):
            pass

    def stop_from_outside(self) -> None:
        """Kill it now, from another thread (a Stopper); the thread waiting on it sees it end and reaps it."""
        with self.state_lock:
            if self.dead:
                return
            self.stopped = True
            self._signal()

    def send(self, message: Exit) -> None:
        """Send one message to the worker."""
        self.conn.send_bytes(to_worker(message))

    def kill(self) -> None:
        """Stop it now (SIGKILL) and collect its exit status."""
        if not self._mark_dead():
            return
        STATS["workers_killed"] += 1
        self._signal()
        self._reap()

    def ended(self) -> str:
        """After its socket closed by itself: why it ended, in words."""
        if self._mark_dead():
            self._signal()  # it may only have closed its socket: make sure it is gone before waiting for it
            self._reap()
            # (its own alarm past a handler's timeout is the hard stop the caller would have made: a kill)
            STATS["workers_killed" if _ended_by_alarm(self.status) else "worker_crashes"] += 1
        return _exit_text(self.status if self.status is not None else -1)

    def _reap(self) -> None:
        if self.channel is not None:  # the loop stops watching before the descriptors close
            self.channel.close()
        try:
            self.conn.close()
        except OSError:
            pass
        self._close_descriptors()
        try:
            if self.zygote is not None:
                self.status = self.zygote.reap(self.pid)
            elif self.process is not None:  # pragma: no cover - spawn
                self.process.join(5)
                code = self.process.exitcode
                self.status = -1 if code is None else (((-code) & 0x7F) if code < 0 else (code << 8))
        except OSError:
            self.status = -1

    def _close_descriptors(self) -> None:
        """Close what watches its process (its pidfd, its /proc stat)."""
        for name in ("pidfd", "stat"):
            fd = getattr(self, name)
            if fd is not None:
                setattr(self, name, None)
                try:
                    os.close(fd)
                except OSError:
                    pass

    def retire(self) -> None:
        """Let it go quietly (it exits when its socket closes)."""
        if not self._mark_dead():
            return
        if self.channel is not None:
            self.channel.close()
        try:
            self.send(Exit())
            self.conn.poll(1.0)  # it leaves at once; a worker that does not is killed
        except OSError:
            pass
        self._signal()
        self._reap()


class _Pool:
    """Idle workers, ready for the next call."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """No worker at all (a process forked from the caller starts so: the caller's workers are not its own)."""
        self.idle: list[_Worker] = []
        self.live = 0  # workers alive, idle or busy
        self.peak = 0  # the most busy at once lately, and since when
        self.peak_at = 0.0
        self.lock = threading.Lock()

    def take(
        self, memory_mb: int | None, start: bool = True, loop: asyncio.AbstractEventLoop | None = None
    ) -> _Worker | None:
        """An idle worker with that memory limit (or none yet), or a new one (None with `start=False`); never one
        that has ended. `loop`: the running loop of the caller (an idle worker another loop watches is that loop's)."""
        ended: list[_Worker] = []
        chosen: _Worker | None = None
        with self.lock:
            while chosen is None:
                best = self._best(memory_mb, loop)
                if best is None:
                    break
                worker = self.idle.pop(best)
                if worker.has_ended():
                    ended.append(worker)
                else:
                    chosen = worker
        for worker in ended:  # (a zygote that was killed took its idle workers with it)
            worker.ended()
        if chosen is None and start:
            chosen = _Worker()
        return chosen

    def _best(self, memory_mb: int | None, loop: asyncio.AbstractEventLoop | None) -> int | None:
        """The index of the idle worker to take: the newest with that memory limit (or none yet), and on a loop
        the newest that loop watches already. Under the lock."""
        best = None
        for index in range(len(self.idle) - 1, -1, -1):
            worker = self.idle[index]
            channel = worker.channel
            if channel is not None and channel.loop is not loop:
                if not channel.loop.is_closed():
                    continue  # another loop's
                channel.forget()  # its loop is closed: nothing watches it any more
                channel = None
            if worker.memory_mb is not _UNSET and worker.memory_mb != memory_mb:
                continue
            if channel is not None or loop is None:
                return index
            if best is None:
                best = index
        return best

    def give_back(self, worker: _Worker) -> None:
        """Keep a worker for the next call (or retire it when enough are idle, or reap it when stopped).

        A worker an event loop watches stays watched while idle (on the loop's thread, the next call there
        takes it as it is; another thread leaves it to that loop).
        """
        if worker.stopped:  # a Stopper killed it just as its call ended: reap it, never hand it out again
            worker.kill()
        if worker.dead:
            return
        with self.lock:
            # idle: MAX_IDLE_WORKERS more than were busy at once lately (the most in the last IDLE_WINDOW_S): a
            # steady load of many calls at once, or several servers taking turns, keeps its workers, where a new
            # one for each call would be a fork each; after it they go, one a call
            busy, now = self.live - len(self.idle), time.monotonic()  # (the one given back still counts as busy)
            if busy >= self.peak or now - self.peak_at > IDLE_WINDOW_S:
                self.peak, self.peak_at = busy, now
            self.idle.append(worker)
            if len(self.idle) <= MAX_IDLE_WORKERS + self.peak:
                return
            oldest = self.idle.pop(0)  # the newest is the likeliest to be asked for again
        _let_go(oldest)

    def counted(self, change: int) -> None:
        """A worker started (1) or ended (-1)."""
        with self.lock:
            self.live = max(0, self.live + change)

    def shutdown(self) -> None:
        """Retire every idle worker."""
        with self.lock:
            workers, self.idle = self.idle, []
        for worker in workers:
            _let_go(worker)

    def release(self, loop: asyncio.AbstractEventLoop) -> None:
        """On `loop`'s thread, as it stops: the idle workers it watches are watched no more (any thread may take
        them)."""
        with self.lock:
            watched = [w.channel for w in self.idle if w.channel is not None and w.channel.loop is loop]
        for channel in watched:
            channel.close()


def _let_go(worker: _Worker) -> None:
    """Retire an idle worker; one an event loop watches is retired on that loop's thread."""
    channel = worker.channel
    if channel is not None and not channel.on_its_loop():
        if not channel.loop.is_closed() and channel.loop.is_running():
            try:
                channel.loop.call_soon_threadsafe(worker.retire)
                return
            except RuntimeError:  # closed just now
                pass
        channel.forget()  # nothing runs that loop: nobody else touches its watch
    worker.retire()


_pool = _Pool()


def shutdown() -> None:
    """Stop every idle worker and the zygote (the next call starts them again)."""
    _pool.shutdown()
    stop_zygote()


def _after_fork_in_child() -> None:
    """A process forked from the caller must not share its workers or its zygote."""
    for worker in _pool.idle:
        try:
            worker.conn.close()
        except OSError:
            pass
        worker._close_descriptors()
    forget_zygote()
    _pool.reset()  # afresh in place: every room holding it sees the new state


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


import atexit  # noqa: E402

atexit.register(shutdown)
