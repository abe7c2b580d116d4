"""The context a handler gets: its names, its request id (deterministic within a process run) and its clock."""

from __future__ import annotations

import itertools
import time
import zlib
from collections.abc import Callable
from typing import Any

_counter = itertools.count(1)


_TAGS: dict[str, str] = {}  # each function name's CRC-32 in hex: the first group of its request ids
# each function name's last block of 256 call numbers, and what its request ids there start with
_BLOCKS: dict[str, tuple[int, str]] = {}
_BYTES = tuple(f"{i:02x}" for i in range(256))  # the last two digits of an id


def _request_id(function_name: str) -> str:
    # deterministic within a process run, so notebooks compare equal under nbval: the call number's bits in a
    # UUID's groups (48-63 unused, 32-47, 20-31, 8-19, 0-47); the ids of 256 consecutive calls differ only in
    # their last two digits, so the rest is formatted once per block
    n = next(_counter)
    block = (n & 0xFFFFFFFFFFFF) >> 8
    known = _BLOCKS.get(function_name)
    if known is None or known[0] != block:
        tag = _TAGS.get(function_name)
        if tag is None:
            tag = _TAGS[function_name] = f"{zlib.crc32(function_name.encode()) & 0xFFFFFFFF:08x}"
        low = f"{block:010x}"  # the groups are its digits: 47-32, 31-20, 19-8 (one format, not four)
        known = _BLOCKS[function_name] = (block, f"{tag}-{low[:4]}-4{low[4:7]}-8{low[7:10]}-{low}")
    return known[1] + _BYTES[n & 0xFF]


_NAMES: dict[tuple[str, str, str, str], tuple[str, str, str]] = {}  # a context's names, made once per function


def _names(function_name: str, function_version: str, region: str, account_id: str) -> tuple[str, str, str]:
    """(function ARN, log group, log stream) of a function's contexts."""
    names = (
        f"arn:aws:lambda:{region}:{account_id}:function:{function_name}",
        f"/aws/lambda/{function_name}",
        f"2026/01/01/[{function_version}]fnkit",
    )
    if len(_NAMES) < 256:
        _NAMES[(function_name, function_version, region, account_id)] = names
    return names


class Context:
    """The context object handed to handlers: names, request id, remaining time."""

    def __init__(
        self,
        *,
        function_name: str = "fnkit-handler",
        function_version: str = "$LATEST",
        memory_limit_in_mb: int = 128,
        region: str = "us-east-1",
        account_id: str = "123456789012",
        aws_request_id: str | None = None,
        timeout_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        names = _NAMES.get((function_name, function_version, region, account_id))
        if names is None:
            names = _names(function_name, function_version, region, account_id)
        self._set(
            function_name,
            function_version,
            memory_limit_in_mb,
            names,
            aws_request_id or _request_id(function_name),
            timeout_s,
            clock,
        )

    def _set(
        self,
        function_name: str,
        function_version: str,
        memory_limit_in_mb: int,
        names: tuple[str, str, str],
        aws_request_id: str,
        timeout_s: float | None,
        clock: Callable[[], float],
    ) -> None:
        """Every attribute, in order (`__init__`; `_fresh` writes the same out, in the same order, and a test holds
        the two equal)."""
        self.function_name = function_name
        self.function_version = function_version
        self.memory_limit_in_mb = memory_limit_in_mb
        self.invoked_function_arn = names[0]
        self.aws_request_id = aws_request_id
        self.log_group_name = names[1]
        self.log_stream_name = names[2]
        self.timeout_s = timeout_s
        self._clock = clock
        self._deadline: float | None = None

    #: attributes that stay in the caller's process when the handler runs in a worker
    _local_only: tuple[str, ...] = ()
    #: the mail source's message content API, set for each invocation (fnkit.mail); other sources set none
    message_content: Any

    def _start(self) -> None:
        if self.timeout_s is not None:
            self._deadline = self._clock() + self.timeout_s

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the timeout (a large number when there is none)."""
        if self._deadline is None:
            return 900_000
        return max(0, int((self._deadline - self._clock()) * 1000))

    def __repr__(self) -> str:
        return f"Context(function_name={self.function_name!r}, aws_request_id={self.aws_request_id!r})"


# what `Context()` holds but its request id and timeout, read from the first context `_fresh` made (see there)
_DEFAULTS: list[tuple[str, str, int, tuple[str, str, str], Callable[[], float]]] = []


def _fresh(timeout_s: float | None, start: bool = True) -> Context:
    """`Context(timeout_s=timeout_s)` (started: its clock runs), made from the first one's names with its own request
    id: a replay makes one per event. No dict is copied: the attributes are set one by one, in `_set`'s order
    (written out here: a call fewer per event), and Python keeps them in the object until its `__dict__` is asked
    for."""
    if _DEFAULTS:
        name, version, memory, names, clock = _DEFAULTS[0]
        context = _new(Context)
        context.function_name = name  # (`_set`, written out, in its order)
        context.function_version = version
        context.memory_limit_in_mb = memory
        context.invoked_function_arn = names[0]
        context.aws_request_id = _request_id(name)
        context.log_group_name = names[1]
        context.log_stream_name = names[2]
        context.timeout_s = timeout_s
        context._clock = clock
        # `_start`, written out: a Context's own, started here
        context._deadline = clock() + timeout_s if start and timeout_s is not None else None
        return context
    context = Context(timeout_s=timeout_s)
    names = (context.invoked_function_arn, context.log_group_name, context.log_stream_name)
    _DEFAULTS.append(
        (context.function_name, context.function_version, context.memory_limit_in_mb, names, context._clock)
    )
    if start and timeout_s is not None:  # (no timeout: no clock to start, `_start` does nothing)
        context._start()
    return context


_new = object.__new__
