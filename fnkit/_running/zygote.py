"""The process starter: on POSIX a small zygote process (started once, single threaded, fnkit preloaded)
forks each worker, so a threaded caller is never forked itself; elsewhere each worker is a new interpreter.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .worker import PR_SET_CHILD_SUBREAPER, _child_pids, _die_with_parent, _prctl, _worker_main_fd

if TYPE_CHECKING:
    pass

# --- the zygote ---------------------------------------------------------------------------------------


def _end_strays(workers: set[int], ended: dict[int, int]) -> None:
    """In the zygote: end and reap every child that is not a live worker (processes a killed worker's handler
    started, which came to the zygote as their subreaper); a worker reaped on the way keeps its status."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if not pid:
            break
        if pid in workers:
            workers.discard(pid)
            ended[pid] = status
    for pid in _child_pids():
        if pid not in workers:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
    while len(ended) > 1024:  # statuses nobody asked for
        ended.pop(next(iter(ended)))


def _zygote_main(control_fd: int) -> None:
    """Fork a worker for each socket the caller sends; reap on request; leave when the caller goes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)  # what a killed worker's handler left running comes here, to be ended
    control = socket.socket(fileno=control_fd)
    children: set[int] = set()
    ended: dict[int, int] = {}  # workers reaped while ending strays, by pid: their status, until asked
    try:
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(control, 64, 1)
            except OSError:
                break
            if not data:
                break
            if data[:1] == b"F" and fds:
                pid = os.fork()
                if pid == 0:  # the worker
                    control.close()
                    _die_with_parent()
                    try:
                        _worker_main_fd(fds[0])
                    finally:
                        os._exit(0)
                for fd in fds:
                    os.close(fd)
                children.add(pid)
                control.sendall(b"P" + pid.to_bytes(8, "little"))
            elif data[:1] == b"W":
                pid = int.from_bytes(data[1:9], "little")
                status = ended.pop(pid, -1)
                if pid in children:
                    children.discard(pid)
                    try:
                        status = os.waitpid(pid, 0)[1]
                    except ChildProcessError:
                        pass
                control.sendall(b"S" + status.to_bytes(8, "little", signed=True))
                _end_strays(children, ended)
            else:
                for fd in fds:
                    os.close(fd)
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass


class _Zygote:
    """The caller's end of the zygote: ask it for a worker, ask it to reap one."""

    def __init__(self) -> None:
        import subprocess

        mine, theirs = socket.socketpair()
        code = (
            "import sys; from fnkit._running.zygote import _zygote_preload, _zygote_main; "
            "_zygote_preload(sys.argv[2:]); _zygote_main(int(sys.argv[1]))"
        )
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # the caller's imports, from the start
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, str(theirs.fileno()), *_loaded_sources()],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
            cwd=os.getcwd(),
        )
        theirs.close()
        self.control = mine
        self.lock = threading.Lock()

    def alive(self) -> bool:
        """Whether the zygote process still runs."""
        return self.process.poll() is None

    def fork(self) -> tuple[int, socket.socket]:
        """A new worker: its pid and the caller's end of its socket."""
        mine, theirs = socket.socketpair()
        try:
            with self.lock:
                socket.send_fds(self.control, [b"F"], [theirs.fileno()])
                reply = _recv_exact(self.control, 9)
        finally:
            theirs.close()
        if reply[:1] != b"P":
            mine.close()
            raise OSError("the worker factory did not answer")
        return int.from_bytes(reply[1:], "little"), mine

    def reap(self, pid: int) -> int:
        """Wait for worker `pid` to end; its exit status (-1 when unknown)."""
        with self.lock:
            self.control.sendall(b"W" + pid.to_bytes(8, "little"))
            reply = _recv_exact(self.control, 9)
        return int.from_bytes(reply[1:], "little", signed=True)

    def close(self) -> None:
        """Close the control socket: the zygote leaves, and takes its workers with it."""
        try:
            self.control.close()
        except OSError:
            pass


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise OSError("the worker factory has gone")
        data += chunk
    return data


def _loaded_sources() -> list[str]:
    """The sources the caller has imported (the packages of fnkit that offer `build_event`): their context
    classes and services travel to the workers. Found, not named: the sources sit above this module."""
    return sorted(
        name
        for name, module in list(sys.modules.items())
        if name.startswith("fnkit.") and name.count(".") == 1 and "build_event" in getattr(module, "__dict__", {})
    )


def _zygote_preload(modules: Sequence[str] = ()) -> None:
    """What every worker needs, imported once in the zygote so that forks start warm: `modules` are the
    caller's sources (their context classes and the mail content API)."""
    import importlib
    import json  # noqa: F401
    import logging  # noqa: F401
    import multiprocessing.connection  # noqa: F401

    import cloudpickle  # noqa: F401

    for name in modules:
        importlib.import_module(name)


_zygote: _Zygote | None = None
_zygote_lock = threading.Lock()


def running_zygote(failed: _Zygote | None = None) -> _Zygote:
    """The zygote, started when none runs (or when `failed`, the one a fork just failed on, is it)."""
    global _zygote
    with _zygote_lock:
        if _zygote is None or not _zygote.alive() or _zygote is failed:
            if _zygote is not None:
                _zygote.close()
            _zygote = _Zygote()
        return _zygote


def stop_zygote() -> None:
    """Stop the zygote (and so every worker it forked that is still alive); the next worker starts it again."""
    global _zygote
    with _zygote_lock:
        zygote, _zygote = _zygote, None
    if zygote is not None:
        zygote.close()
        try:
            zygote.process.wait(5)
        except Exception:  # noqa: BLE001
            pass


def forget_zygote() -> None:
    """In a process forked from the caller: the caller's zygote is not this process's."""
    global _zygote
    if _zygote is not None:
        _zygote.close()
    _zygote = None


def _use_zygote() -> bool:
    wanted = os.environ.get("FNKIT_ISOLATION_START", "")
    if wanted == "spawn":
        return False
    return hasattr(os, "fork") and hasattr(socket, "send_fds") and sys.platform != "win32"


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when process `pid` ends (Linux 5.3+), or None."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:  # pragma: no cover - not Linux
        return None
    try:
        fd: int = opener(pid)
        return fd
    except OSError:  # pragma: no cover - an old kernel
        return None
