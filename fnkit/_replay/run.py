"""Replay: one handler over many events of any source, one row per record / recipient / request.

One function, `replay_partition` (fnkit/_replay/partition.py), turns a partition (events,
importer entries or unreadable lines, plus the configuration) into rows; the local engine and
the Dask engine both call it, so they cannot disagree. Here: the configuration, the inputs,
the engines, and the frames. Rows become frames with `_partition_frame` (every column an object
column: the values as the rows hold them) and frames become the result with `_finish`
(columns in one order, dtypes inferred once over the whole): the same for one partition or
many, so a Dask replay gathered into pandas is the local replay, value for value and dtype
for dtype.
"""

from __future__ import annotations

import importlib
import json
import pickle
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast, overload

from .._import import ImportStream, Unreadable, events_from_file, kind_of, unreadable
from .._optional import require
from .._running.inprocess import Handler
from .._settings.config import Config, accepted, settings_of
from .._settings.project import resolve_isolation
from .._sources import SOURCES, source_module
from .columns import ordered
from .partition import replay_partition

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pandas as pd


_COLUMNS = ["event", "source", "item", "result", "rule", "inferred", "reason"]
ENGINES = ("local", "dask")
#: the engines besides "local", each a plug-in module above this one (it imports the local engine's
#: partitions), looked up by name when a replay asks for it
_ENGINE_MODULES = {"dask": "fnkit._replay.dask"}


class _Engine(Protocol):
    """What an engine plug-in offers (fnkit/_replay/dask.py)."""

    def _distributed(self) -> object: ...

    def dask_replay(
        self,
        handler: Handler,
        items: Iterable[Any],
        config: dict[str, Any],
        *,
        client: Any,
        compute: bool,
        partition_size: int | None,
    ) -> pd.DataFrame | dd.DataFrame: ...

    def dask_partitions(
        self,
        handler: Handler,
        items: Iterable[Any],
        config: dict[str, Any],
        *,
        client: Any,
        partition_size: int | None,
        window: int | None,
    ) -> Iterator[pd.DataFrame]: ...


def _engine(name: str) -> _Engine:
    """The plug-in module of an engine other than "local"."""
    return cast("_Engine", importlib.import_module(_ENGINE_MODULES[name]))


DEFAULT_PARTITION_SIZE = 5_000


def make_config(config: dict[str, Any]) -> dict[str, Any]:
    """The replay configuration: `source` (forced), `label`, `isolation` (default "none": in this process), and
    for each source the keywords of its `run` (which its `plan_call` takes).

    Each source's settings (`report_batch_item_failures`, `mode`, `multi_value`, ... or
    `config=`: a source's `Config`, or several, one per source) become that source's
    configuration now, before any event is read: a value the platform refuses is a
    ValueError naming the rule, and a keyword that no source's `run` takes is a TypeError
    (a typo such as `timout_s` would otherwise be ignored without a word).
    """
    forced = config.pop("source", None)
    label = config.pop("label", None)
    given = config.pop("config", None)
    isolation = resolve_isolation(config.pop("isolation", None))  # a bad one is refused before any event
    if forced is not None:
        source_module(forced)  # an unknown source fails now
    configs: dict[str, Config] = {}
    for item in [] if given is None else [given] if isinstance(given, Config) else list(given):
        if not isinstance(item, Config):
            raise TypeError(
                f"config= takes a source's configuration (fnkit.queue.Config, ...), not {type(item).__name__}"
            )
        configs[item.source] = item
    runs: dict[str, dict[str, Any]] = {}
    taken: set[str] = set()
    for name in [forced] if forced else list(SOURCES):
        run = source_module(name).run
        config_class, setting_names = settings_of(run)
        if config_class is None:
            raise TypeError(f"fnkit.{name}.run declares no settings")  # every source's run does
        settings = {k: v for k, v in config.items() if k in setting_names}
        plain = accepted(run, {k: v for k, v in config.items() if k not in setting_names and k != "config"})
        runs[name] = {**plain, "config": config_class.of(configs.get(name), settings, run)}
        taken |= set(settings) | set(plain)
    unknown = sorted(set(config) - taken)
    if unknown:
        raise TypeError(f"replay got keyword(s) that no source's run takes: {', '.join(unknown)}")
    return {"source": forced, "label": label, "runs": runs, "isolation": isolation}


def open_events(path: str | Path, *, progress: bool | None = False, **options: Any) -> ImportStream:
    """The right importer for a file or folder: an access log, a queue message dump, or events.

    Here, above the sources, and not in fnkit/_import.py (the importers' shared core, which they import).

    Events are JSON Lines or a JSON list.
    """
    kind = kind_of(path)
    if kind == "access-log":
        from ..alb._access_log import events_from_access_log  # the sources' importers: replay sits above them

        return events_from_access_log(path, progress=progress, **options)
    if kind == "messages":
        from ..queue._messages import events_from_messages

        return events_from_messages(path, progress=progress, **options)
    if options:
        raise TypeError(f"{', '.join(sorted(options))}: not an option of an events file ({path})")
    return events_from_file(path, progress=progress)


def iter_events(events: Any) -> Iterable[Any]:
    """What a replay reads from `events`: a list or any iterable (a generator streams), an importer's
    stream (its unreadable lines come along as rows), or a path: a JSON Lines events file (or
    .gz, or a folder), a load balancer access log, or a queue message dump (by content)."""
    if isinstance(events, (str, Path)):
        return open_events(events).entries()
    if isinstance(events, ImportStream):
        return events.entries()
    if isinstance(events, dict):
        return [events]
    stream: Iterable[Any] = events  # a list or any iterable: read as it is
    return stream


def _partition_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows of one partition as a DataFrame of object columns (values exactly as the rows hold them)."""
    import pandas as pd

    return pd.DataFrame(rows, dtype=object)


def _order(column_lists: Iterable[Iterable[str]]) -> list[str]:
    """The result's columns in the schema's order (`fnkit.columns()`), whatever order the sources came in."""
    return ordered(c for columns in column_lists for c in columns)


def _finish(frames: list[pd.DataFrame], label: Any = None) -> pd.DataFrame:
    """The replay's DataFrame from partition frames in order: one column order, dtypes inferred over the whole."""
    import pandas as pd

    from .columns import labelled, typed

    frames = [f for f in frames if len(f.columns)]
    if not frames:
        frame = typed(pd.DataFrame({c: pd.Series(dtype=object) for c in _COLUMNS}))
    else:
        frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].reset_index(drop=True)
        frame = typed(frame[_order(f.columns for f in frames)])
    if label is not None:
        labelled(frame, label)
    return frame


def partitions(items: Iterable[Any], size: int) -> Iterator[tuple[int, list[Any]]]:
    """(number of the first item, up to `size` items) for consecutive slices of a stream; never the whole list."""
    if size < 1:
        raise ValueError(f"partition_size is at least 1, not {size}")
    iterator = iter(items)
    start = 0
    while True:
        chunk = list(islice(iterator, size))
        if not chunk:
            return
        yield start, chunk
        start += len(chunk)


def _require_engine(engine: str, feature: str) -> None:
    """The engine's packages, or the pip command that installs them, before any event is read or handler run."""
    if engine == "dask":
        _engine(engine)._distributed()  # the dask extra brings pandas too
    else:
        require("pandas", extra="frames", feature=feature)


@overload
def replay(
    handler: Callable[[Any, Any], Any],
    events: Any,
    *,
    engine: Literal["local"] = "local",
    client: None = None,
    compute: bool = False,
    partition_size: int | None = None,
    **config: Any,
) -> pd.DataFrame: ...


@overload
def replay(
    handler: Callable[[Any, Any], Any],
    events: Any,
    *,
    engine: Literal["dask"],
    client: Any = None,
    compute: Literal[True],
    partition_size: int | None = None,
    **config: Any,
) -> pd.DataFrame: ...


@overload
def replay(
    handler: Callable[[Any, Any], Any],
    events: Any,
    *,
    engine: Literal["dask"],
    client: Any = None,
    compute: Literal[False] = False,
    partition_size: int | None = None,
    **config: Any,
) -> dd.DataFrame: ...


@overload
def replay(
    handler: Callable[[Any, Any], Any],
    events: Any,
    *,
    engine: str = "local",
    client: Any = None,
    compute: bool = False,
    partition_size: int | None = None,
    **config: Any,
) -> pd.DataFrame | dd.DataFrame: ...


def replay(
    handler: Callable[[Any, Any], Any],
    events: Any,
    *,
    engine: str = "local",
    client: Any = None,
    compute: bool = False,
    partition_size: int | None = None,
    **config: Any,
) -> pd.DataFrame | dd.DataFrame:
    """Run `handler` over every event (any source) and tabulate what the platform would do.

    `events`: a list or any iterable (a generator streams), an importer's stream
    (`fnkit.alb.events_from_access_log`, `fnkit.queue.events_from_messages`: their logged
    facts become columns, their unreadable lines rows), or a path (JSON Lines events, an
    access log, a message dump). Keywords go to each source's `run` when it takes them
    (`report_batch_item_failures`, `mode`, `fallback_action`, `multi_value`, `timeout_s`, ...;
    `config=`: a source's `Config`, or one per source); a setting the platform refuses is a
    ValueError naming the rule, raised before any event is read. `source=` forces one
    source (no detection), `label=` adds a `handler` column. One row per record /
    recipient / request; an invalid event or an unreadable line is one row saying why: the
    rows `run` gives event by event.

    `isolation`: "none" (default: the handler runs in this process, on this thread, like a
    call, so doubles and breakpoints work), "thread", or "process" (worker processes, which
    survive a handler that exits or hangs). Consecutive events of one source are called in
    chunks, so a worker gets a chunk of events per round trip, not one.

    `engine="local"` (a pandas DataFrame) or `"dask"`: partitions of `partition_size` events
    stream to a `dask.distributed` cluster (`client`: a Client, a scheduler address, or None
    for the current client or a LocalCluster made once per session), the handler runs in the
    workers (in each worker's process under the default isolation), and the result is a lazy
    Dask DataFrame, same columns and dtypes, run when computed (`compute=True`: the local
    engine's pandas DataFrame, exactly). Without `partition_size`, fewer events than a default
    partition (5,000) per worker thread are split evenly over the threads, so all get work.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine is one of {', '.join(ENGINES)}, not {engine!r}")
    _require_engine(engine, "fnkit.replay")
    cfg = make_config(config)
    items = iter_events(events)
    if engine == "local":
        if client is not None:
            raise ValueError("client= goes with engine='dask'")
        rows = replay_partition(handler, items, cfg)
        return _finish([_partition_frame(rows)], cfg["label"])
    return _engine(engine).dask_replay(
        handler, items, cfg, client=client, compute=compute, partition_size=partition_size or None
    )


def replay_partitions(
    handler: Callable[[Any, Any], Any],
    events: Any,
    *,
    engine: str = "local",
    client: Any = None,
    partition_size: int | None = None,
    window: int | None = None,
    **config: Any,
) -> Iterator[pd.DataFrame]:
    """Replay as a stream: one pandas DataFrame per partition of `partition_size` events, in order.

    Memory stays bounded whatever the number of events: events are read as partitions are
    needed, and at most `window` partitions are in flight (on the Dask engine: submitted
    and not yet handed out). Same keywords as `replay`; `event` numbers run across partitions.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine is one of {', '.join(ENGINES)}, not {engine!r}")
    _require_engine(engine, "fnkit.replay_partitions")
    cfg = make_config(config)
    items = iter_events(events)
    if engine == "local":
        return (
            _finish([_partition_frame(replay_partition(handler, chunk, cfg, start))], cfg["label"])
            for start, chunk in partitions(items, partition_size or DEFAULT_PARTITION_SIZE)
        )
    return _engine(engine).dask_partitions(
        handler, items, cfg, client=client, partition_size=partition_size or None, window=window
    )


def dumps_events(events: Iterable[Any]) -> str:
    """Events as JSON Lines text."""
    return "".join(json.dumps(e, separators=(",", ":"), ensure_ascii=False) + "\n" for e in events)


def pack(chunk: list[Any], start: int) -> bytes:
    """A partition as bytes for the workers; an event pickle cannot carry becomes an `Unreadable` saying so."""
    try:
        return pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - find the culprits, one by one
        kept: list[Any] = []
        for index, item in enumerate(chunk, start):
            try:
                pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
                kept.append(item)
            except Exception as exc:  # noqa: BLE001 - whatever pickle raises, the row says it
                kept.append(
                    Unreadable(
                        unreadable(
                            f"event {index}",
                            "The event cannot be sent to the Dask workers: "
                            f"pickle cannot serialise it ({exc.__class__.__name__}: {exc}).",
                        ).issue,
                        None,
                        "not sent",
                    )
                )
        return pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL)


__all__ = [
    "ENGINES",
    "dumps_events",
    "iter_events",
    "make_config",
    "open_events",
    "pack",
    "partitions",
    "replay",
    "replay_partitions",
]
