"""Process helpers shared by the worker tests: whether a process runs, and killing the pool's idle workers."""

from __future__ import annotations

import os
import signal
import time


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie has ended: its sockets are closed)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_idle_workers(timeout_s: float = 10.0) -> list[int]:
    """SIGKILL every idle worker of fnkit's pool and wait until each is dead, not only signalled (a loaded machine
    takes its time); the pids killed."""
    from fnkit._running import pool as _isolate

    killed = [worker.pid for worker in list(_isolate._pool.idle) if alive(worker.pid)]
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout_s
    while any(alive(pid) for pid in killed) and time.monotonic() < deadline:
        time.sleep(0.02)
    return killed
