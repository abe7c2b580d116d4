"""The Dask engine of `fnkit.replay`: partitions stream to a dask.distributed cluster, handlers run in the workers.

The client side reads the events a partition at a time, pickles each partition (an event
pickle cannot carry becomes a row saying so) and scatters it to a worker: the task graph
holds references to the partitions and to the handler (scattered once to every worker),
never the data, so no graph is large. A lazy replay runs nothing until it is computed: its
meta (columns and dtypes) comes from the schema (`fnkit.columns()`) and the sources seen
while the partitions were read. Each worker task calls `replay_partition`, the function the
local engine calls.
"""

from __future__ import annotations

import ast
import atexit
import hashlib
import logging
import os
import pickle
import sys
import zlib
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from pathlib import Path
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, Any

from .._engine.report import MISSING, decode_json
from .._import import Unreadable
from .._optional import require
from .._running.inprocess import Handler
from .._sources import source_of
from .columns import IMPORTED, empty_frame, kinds_of_rows, labelled, typed, unreadable_row
from .partition import replay_partition
from .run import (
    DEFAULT_PARTITION_SIZE,
    _finish,
    _partition_frame,
    pack,
    partitions,
)

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, Future

_SESSION: dict[str, Any] = {}  # the LocalCluster made for this session, and clients by scheduler address
_CLOSES_AT_EXIT = False  # whether close_session is registered to run at exit
_HANDLERS: dict[str, Handler] = {}  # in a worker: handlers already unpickled, by digest


def _distributed() -> ModuleType:
    """dask.distributed (with dask.dataframe), or a MissingDependency that says how to install them."""
    require("dask.dataframe", extra="dask", feature="replay(engine='dask')")
    return require("distributed", extra="dask", feature="replay(engine='dask')")


def get_client(client: Any = None) -> Client:
    """A dask.distributed Client: the one given, one for a scheduler address, the current one, or a session cluster.

    The session cluster is a LocalCluster made on first use.
    """
    distributed = _distributed()
    found: Client
    if isinstance(client, distributed.Client):
        found = client
        return found
    if isinstance(client, str):
        if client not in _SESSION:
            _SESSION[client] = distributed.Client(client)
            _close_at_exit()
        found = _SESSION[client]
        return found
    if client is not None and hasattr(client, "scheduler_address"):  # a cluster object
        found = distributed.Client(client)
        return found
    if client is not None:
        raise TypeError(
            f"client is a dask.distributed Client, a cluster, or a scheduler address, not {type(client).__name__}"
        )
    try:
        found = distributed.default_client()
        return found
    except ValueError:
        pass
    if "local" not in _SESSION:
        script = script_without_main_guard()
        if script is not None:
            raise RuntimeError(
                f"{script}: replay(engine='dask') starts a local Dask cluster, and its worker processes run this "
                "script again as they start (they import it): put the script's code under the main guard, "
                '`if __name__ == "__main__":`, or pass client= a Client of a cluster started elsewhere.'
            )
        workers = max(1, min(os.cpu_count() or 1, 4))
        cluster = distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            # a free loopback port: None still starts one on 8787, and a
            # second cluster then warns that the port is taken
            dashboard_address="127.0.0.1:0",
        )
        _SESSION["local"] = distributed.Client(cluster)
        _close_at_exit()
    found = _SESSION["local"]
    return found


def _main_guard(test: ast.expr) -> bool:
    """True for `__name__ == "__main__"` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s.id for s in sides if isinstance(s, ast.Name)]
    texts = [s.value for s in sides if isinstance(s, ast.Constant)]
    return names == ["__name__"] and texts == ["__main__"]


def script_without_main_guard() -> str | None:
    """The script this process runs, when its top-level code outside `if __name__ == "__main__":` made this
    call: the worker processes a local cluster starts import the script again, and would start clusters of
    their own ("Nanny failed to start"). None in a notebook, a console, `python -c`, or a guarded script."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not isinstance(path, str) or not path.endswith(".py"):
        return None
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and not (
        frame.f_code.co_name == "<module>" and frame.f_globals is vars(main) and frame.f_code.co_filename == path
    ):
        frame = frame.f_back
    if frame is None:  # not called from the script's top level
        return None
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    line = frame.f_lineno
    for node in tree.body:
        if isinstance(node, ast.If) and _main_guard(node.test) and node.lineno <= line <= (node.end_lineno or line):
            return None
    return path


def _close_at_exit() -> None:
    global _CLOSES_AT_EXIT
    if not _CLOSES_AT_EXIT:
        _CLOSES_AT_EXIT = True
        atexit.register(close_session)  # runs before distributed's own clean-up (registered at its import)


class _KillNotice(logging.Filter):
    """Drops the nanny's notice that it killed a worker process still stopping (4 s, on a busy machine)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Worker process still alive after")


def close_session() -> None:
    """Close the clients this session made, then its LocalCluster (run at exit): in that order the scheduler
    forgets the clients' tasks (those a lazy replay's frame still holds) before the workers stop, so no task is
    reported lost, and the workers are stopped without a word."""
    local = _SESSION.pop("local", None)
    clients = [*_SESSION.values(), *([local] if local is not None else [])]
    _SESSION.clear()
    for client in clients:
        client.close()
    if local is not None and local.cluster is not None:
        nanny = logging.getLogger("distributed.nanny")
        notice = _KillNotice()
        nanny.addFilter(notice)
        try:
            local.cluster.close()
        finally:
            nanny.removeFilter(notice)


def handler_blob(handler: Handler) -> bytes:
    """The handler as bytes for the workers (cloudpickle, by value when defined in a notebook or script)."""
    import cloudpickle

    name = getattr(handler, "__qualname__", None) or type(handler).__name__
    try:
        return cloudpickle.dumps(handler)
    except Exception as exc:
        raise TypeError(
            f"The handler {name!r} cannot be sent to the Dask workers: cloudpickle cannot serialise it "
            f"({exc.__class__.__name__}: {exc}). Define it at the top level of a module or a notebook cell, and "
            "keep locks, open files, sockets and clients out of what it refers to (open them inside the handler)."
        ) from exc


def _handler(blob: bytes) -> Handler:
    """In a worker: the handler `blob` holds, unpickled once per worker."""
    digest = hashlib.sha1(blob).hexdigest()
    handler = _HANDLERS.get(digest)
    if handler is None:
        try:
            handler = pickle.loads(blob)
        except Exception as exc:
            raise RuntimeError(
                f"A Dask worker could not load the handler ({exc.__class__.__name__}: {exc}); is the "
                "module that defines it importable there?"
            ) from exc
        _HANDLERS[digest] = handler
    return handler


def run_partition(handler: bytes, blob: bytes, config: dict[str, Any], start: int) -> pd.DataFrame:
    """In a worker: the object-column frame of one partition's rows."""
    frame: pd.DataFrame = _partition_frame(replay_partition(_handler(handler), _unpacked(blob), config, start))
    return frame


def _unpacked(blob: bytes) -> list[Any]:
    """In a worker: the items of a partition `_scatter` sent."""
    items: list[Any] = pickle.loads(zlib.decompress(blob))
    return items


def row_kinds(item: Any, forced: str | None) -> set[str]:
    """The kinds of row (`fnkit.columns()`'s `sources`) an input item gives, found without running anything: its
    source, whether it came from an importer (an access log, a message dump), or an unreadable line's place."""
    if isinstance(item, Unreadable):
        return {"unreadable lines"} if "file" in unreadable_row(0, item) else set()
    imported = type(item) is not dict and hasattr(item, "replay_columns")
    if type(item) is dict:
        value = item
    else:
        value, _ = decode_json(item.event if imported else item)
    source = forced or (source_of(value) if value is not MISSING else None)
    if source is None:
        return set()
    return {source, IMPORTED[source]} if imported and source in IMPORTED else {source}


def run_typed(handler: bytes, blob: bytes, config: dict[str, Any], start: int, columns: list[str]) -> pd.DataFrame:
    """In a worker: one partition's rows as a typed frame with the lazy frame's columns (categories its own)."""
    frame = typed(_partition_frame(replay_partition(_handler(handler), _unpacked(blob), config, start)))
    return _with_columns(frame, columns)


def _with_columns(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The frame with exactly these columns, in order: a missing one is NA of its schema dtype."""
    import pandas as pd

    extra = [c for c in frame.columns if c not in columns]
    if extra:  # every column a row can have is in the schema (tests/test_replay_columns.py holds it)
        raise RuntimeError(f"replay rows with columns the schema lacks: {', '.join(extra)}")
    missing = empty_frame([c for c in columns if c not in frame.columns])
    for name in missing.columns:
        frame[name] = pd.Series(pd.NA, index=frame.index).astype(missing[name].dtype)
    return frame[columns]


def shape_of(frame: pd.DataFrame) -> tuple[int, dict[str, list[Any]]]:
    """In a worker: a typed partition's length and the categories of each categorical column."""
    import pandas as pd

    cats = {c: list(frame[c].cat.categories) for c in frame.columns if isinstance(frame[c].dtype, pd.CategoricalDtype)}
    return len(frame), cats


def layout(*shapes: tuple[int, dict[str, list[Any]]]) -> tuple[list[int], dict[str, list[Any]]]:
    """Each partition's first row number, and each categorical column's categories: every partition's, sorted
    (as the local engine's frame has them)."""
    offsets, total = [], 0
    union: dict[str, set[Any]] = {}
    for length, cats in shapes:
        offsets.append(total)
        total += length
        for column, values in cats.items():
            union.setdefault(column, set()).update(values)
    return offsets, {c: sorted(v) for c, v in union.items()}


def place(frame: pd.DataFrame, plan: tuple[list[int], dict[str, list[Any]]], number: int, label: Any) -> pd.DataFrame:
    """In a worker: a typed partition as part of the whole, with the whole's categories and row numbers."""
    import pandas as pd

    offsets, cats = plan
    frame = frame.copy()
    for column, categories in cats.items():
        frame[column] = frame[column].cat.set_categories(pd.Index(categories))  # text: one dtype in every part
    frame.index = pd.RangeIndex(offsets[number], offsets[number] + len(frame))
    if label is not None:
        labelled(frame, label)
    return frame


def _scatter(client: Client, chunk: list[Any], start: int) -> Future[bytes]:
    """A partition's pickle, compressed (events are repetitive text: a fifth of the bytes or less), held by a
    worker until the partition runs: what a task graph refers to instead of carrying it."""
    [data] = client.scatter([zlib.compress(pack(chunk, start), 1)], hash=False)
    held: Future[bytes] = data
    return held


def _submit_all(
    client: Client, handler: Handler, items: Iterable[Any], config: dict[str, Any], size: int, window: int
) -> Iterator[Future[pd.DataFrame]]:
    """Futures of the partitions, in order; at most `window` unfinished at any time.

    The stream is read as they finish.
    """
    distributed = _distributed()
    shared = client.scatter(handler_blob(handler), broadcast=True, hash=False)
    unfinished: deque[Future[pd.DataFrame]] = deque()
    for start, chunk in partitions(items, size):
        future = client.submit(run_partition, shared, _scatter(client, chunk, start), config, start, pure=False)
        unfinished.append(future)
        yield future
        while len(unfinished) >= window:
            with client.as_current():
                distributed.wait(list(unfinished), return_when="FIRST_COMPLETED")
            unfinished = deque(f for f in unfinished if not f.done())


def _threads(client: Client) -> int:
    """The cluster's threads: how many partitions run at once."""
    threads: dict[str, int] = client.nthreads()
    return max(1, sum(threads.values()))


def _window(client: Client, window: int | None) -> int:
    """Partitions in flight: `window`, or twice the cluster's threads."""
    if window is not None:
        if window < 1:
            raise ValueError(f"window is at least 1, not {window}")
        return window
    return 2 * _threads(client)


def sized(items: Iterable[Any], partition_size: int | None, threads: int) -> tuple[Iterable[Any], int]:
    """(the items, the partition size): `partition_size` when given; else, when the stream ends within a
    partition per thread, as many equal partitions as there are threads (every worker gets work), and otherwise
    `DEFAULT_PARTITION_SIZE`. Only what the first partitions would hold anyway is read ahead."""
    if partition_size is not None:
        return items, partition_size
    iterator = iter(items)
    head = list(islice(iterator, threads * DEFAULT_PARTITION_SIZE))
    if len(head) < threads * DEFAULT_PARTITION_SIZE:  # the whole stream: one share per thread
        return head, max(1, -(-len(head) // threads))
    return chain(head, iterator), DEFAULT_PARTITION_SIZE


def dask_replay(
    handler: Handler,
    items: Iterable[Any],
    config: dict[str, Any],
    *,
    client: Any,
    compute: bool,
    partition_size: int | None,
) -> pd.DataFrame | dd.DataFrame:
    """`replay` on Dask: a lazy Dask DataFrame (or, with `compute`, the local engine's pandas DataFrame).

    The lazy frame runs no handler until it is computed; the partitions wait in the workers'
    memory. Its columns are those the schema gives the rows of the sources seen, in their
    dtypes (categoricals with their categories unknown until computed, then every
    partition's, sorted): computed, it is the local engine's frame.
    """
    _distributed()
    import dask
    import dask.dataframe as dd
    from dask.dataframe.utils import clear_known_categories
    from dask.delayed import delayed

    cluster = get_client(client)
    blob = handler_blob(handler)  # an unserialisable handler fails before any event is read
    items, size = sized(items, partition_size, _threads(cluster))
    label = config["label"]
    if compute:
        futures = list(_submit_all(cluster, handler, items, config, size, _window(cluster, None)))
        frame: pd.DataFrame = _finish(cluster.gather(futures), label)
        return frame
    kinds, scattered = {"all"}, []
    for start, chunk in partitions(items, size):
        for item in chunk:
            kinds |= row_kinds(item, config["source"])
        scattered.append((start, _scatter(cluster, chunk, start)))
    if not scattered:
        empty: dd.DataFrame = dd.from_pandas(_finish([], label), npartitions=1)
        return empty
    shared = cluster.scatter(blob, broadcast=True, hash=False)
    columns = kinds_of_rows(kinds)
    typed_parts = [delayed(run_typed, pure=False)(shared, data, config, start, columns) for start, data in scattered]
    plan = delayed(layout, pure=True)(*[delayed(shape_of, pure=True)(part) for part in typed_parts])
    parts = [delayed(place, pure=True)(part, plan, i, label) for i, part in enumerate(typed_parts)]
    meta = clear_known_categories(empty_frame(columns))
    if label is not None:
        labelled(meta, label)
    # text stays as the local frame holds it (object columns): never turned into Arrow strings
    with dask.config.set({"dataframe.convert-string": False}):
        lazy: dd.DataFrame = dd.from_delayed(parts, meta=meta, verify_meta=False)
        return lazy


def dask_partitions(
    handler: Handler,
    items: Iterable[Any],
    config: dict[str, Any],
    *,
    client: Any,
    partition_size: int | None,
    window: int | None,
) -> Iterator[pd.DataFrame]:
    """`replay_partitions` on Dask: pandas frames in order, at most `window` partitions in flight."""
    cluster = get_client(client)
    handler_blob(handler)  # fail now, not on first use
    limit = _window(cluster, window)

    def stream() -> Iterator[pd.DataFrame]:
        pending: deque[Future[pd.DataFrame]] = deque()
        read, size = sized(items, partition_size, _threads(cluster))
        for future in _submit_all(cluster, handler, read, config, size, limit):
            pending.append(future)
            while pending and (len(pending) >= limit or pending[0].done()):
                yield _finish([pending.popleft().result()], config["label"])
        while pending:
            yield _finish([pending.popleft().result()], config["label"])

    return stream()


__all__ = [
    "dask_partitions",
    "dask_replay",
    "get_client",
    "handler_blob",
    "row_kinds",
    "run_partition",
    "script_without_main_guard",
    "sized",
]
