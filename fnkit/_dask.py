"""The Dask engine of `fnkit.replay`: partitions stream to a dask.distributed cluster, handlers run in the workers.

The client side reads the events a partition at a time, pickles each partition (an event
pickle cannot carry becomes a row saying so), and keeps at most a window of partitions in
flight, so a generator of any length is never held whole. Each worker task calls
`replay_partition`, the function the local engine calls.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import pickle
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ._optional import require
from ._replay import (
    DEFAULT_PARTITION_SIZE,
    _finish,
    _order,
    _partition_frame,
    pack,
    partitions,
    replay_partition,
)
from ._replay_columns import dtype_of
from ._running.inprocess import Handler

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
    frame: pd.DataFrame = _partition_frame(replay_partition(_handler(handler), pickle.loads(blob), config, start))
    return frame


def describe(frame: pd.DataFrame) -> tuple[list[str], dict[str, Any], int]:
    """In a worker: a partition's columns, inferred dtypes ("null" for a column with no value) and length."""
    import pandas as pd

    from ._replay_columns import typed

    inferred = typed(frame.copy())  # the schema's columns in their dtypes, as the whole frame will have them
    dtypes: dict[str, Any] = {}
    for c in inferred.columns:
        column = inferred[c]
        if isinstance(column.dtype, pd.api.extensions.ExtensionDtype) and dtype_of(c) not in (None, "object"):
            dtypes[c] = column.dtype  # a schema dtype: NA is part of it
        elif column.isna().all():  # no value: only None (stays object) or some NaN (float64)
            dtypes[c] = "null" if column.dtype == object else "nan"
        else:
            dtypes[c] = column.dtype
    return list(inferred.columns), dtypes, len(inferred)


def common_dtype(found: list[Any]) -> Any:
    """The dtype pandas infers for a column over all partitions, from each one's.

    Each partition's entry is its inferred dtype, None when it lacks the column, "null" when
    it holds only None, "nan" when it holds no value but some NaN.
    """
    import numpy as np
    import pandas as pd

    known = [d for d in found if not isinstance(d, str) and d is not None]
    gaps = len(known) < len(found)
    if known and all(isinstance(d, pd.CategoricalDtype) for d in known):  # every value of every partition, sorted
        return pd.CategoricalDtype(sorted({v for d in known for v in d.categories}))
    if known and all(d == known[0] and isinstance(d, pd.api.extensions.ExtensionDtype) for d in known):
        return known[0]  # nullable: a partition without the column holds NA
    if not known:  # no value anywhere: object when every partition holds only None, else NaN's float64
        return np.dtype(object) if all(isinstance(d, str) and d == "null" for d in found) else np.dtype("float64")
    first = known[0]
    if all(d == first for d in known):
        if not gaps:
            return first
        if pd.api.types.is_bool_dtype(first):
            return np.dtype(object)
        if pd.api.types.is_integer_dtype(first):
            return np.dtype("float64")
        return first
    if all(pd.api.types.is_numeric_dtype(d) and not pd.api.types.is_bool_dtype(d) for d in known):
        return np.dtype("float64")
    return np.dtype(object)


def conform(frame: pd.DataFrame, columns: list[str], dtypes: dict[str, Any], offset: int, label: Any) -> pd.DataFrame:
    """A partition with the result's columns, dtypes and row numbers."""
    import pandas as pd

    from ._replay_columns import typed

    frame = typed(frame)
    for column in columns:
        if column not in frame.columns:
            frame[column] = pd.Series([None] * len(frame), index=frame.index, dtype=object)
    frame = frame[columns]
    for column, dtype in dtypes.items():
        if isinstance(dtype, pd.CategoricalDtype):
            frame[column] = frame[column].astype("category").cat.set_categories(dtype.categories)
        elif frame[column].dtype != dtype:
            frame[column] = frame[column].astype(dtype)
    frame.index = pd.RangeIndex(offset, offset + len(frame))
    if label is not None:
        frame.insert(0, "handler", label)
    return frame


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
        future = client.submit(run_partition, shared, pack(chunk, start), config, start, pure=False)
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
    """`replay` on Dask: a Dask DataFrame (or, with `compute`, the local engine's pandas DataFrame)."""
    _distributed()
    import dask
    import dask.dataframe as dd
    import pandas as pd
    from dask.delayed import delayed

    cluster = get_client(client)
    handler_blob(handler)  # an unserialisable handler fails before any event is read
    items, size = sized(items, partition_size, _threads(cluster))
    futures = list(_submit_all(cluster, handler, items, config, size, _window(cluster, None)))
    label = config["label"]
    if compute:
        frame: pd.DataFrame = _finish(cluster.gather(futures), label)
        return frame
    if not futures:
        empty: dd.DataFrame = dd.from_pandas(_finish([], label), npartitions=1)
        return empty
    infos = cluster.gather(cluster.map(describe, futures, pure=False))
    columns = _order(info[0] for info in infos)
    dtypes = {c: common_dtype([info[1].get(c) for info in infos]) for c in columns}
    parts, offset = [], 0
    for future, (_, _, length) in zip(futures, infos, strict=True):
        parts.append(delayed(conform)(future, columns, dtypes, offset, label))
        offset += length
    meta = pd.DataFrame({c: pd.Series(dtype=dtypes[c]) for c in columns})
    if label is not None:
        meta.insert(0, "handler", pd.DataFrame({"handler": [label]})["handler"].iloc[:0])
    # the rows hold mixed values (a status is a number, a queue action a word): never turn them into strings
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


__all__ = ["common_dtype", "dask_partitions", "dask_replay", "get_client", "handler_blob", "run_partition", "sized"]
