"""Threads that run handlers for the load balancer's server (isolation "thread" and "none")."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any


class Workers:
    """Threads that run handlers. One more starts whenever none is idle, so a hung handler never blocks others."""

    def __init__(self, idle_timeout_s: float = 30.0) -> None:
        self._tasks: queue.SimpleQueue[tuple[Callable[[], Any], Callable[[Any, BaseException | None], None]]] = (
            queue.SimpleQueue()
        )
        self._lock = threading.Lock()
        self._idle = 0
        self._idle_timeout_s = idle_timeout_s

    def submit(self, fn: Callable[[], Any], done: Callable[[Any, BaseException | None], None]) -> None:
        """Run `fn` on an idle worker thread, or a new one; then `done(result, None)` or `done(None, error)` there."""
        with self._lock:
            if self._idle:
                self._idle -= 1  # an idle worker will take it
                start = False
            else:
                start = True
        self._tasks.put((fn, done))
        if start:
            threading.Thread(target=self._work, name="fnkit-alb-worker", daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                fn, done = self._tasks.get(timeout=self._idle_timeout_s)
            except queue.Empty:
                with self._lock:
                    if self._idle:  # nobody counts on this worker: leave
                        self._idle -= 1
                        return
                continue  # a task was promised to an idle worker: stay for it
            try:
                result = fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting request
                done(None, exc)
            else:
                done(result, None)
            with self._lock:
                self._idle += 1


__all__ = ["Workers"]
