"""Replay: one handler over many events of any source, one row per record / recipient / request.

One function, `replay_partition`, turns a partition (events, importer entries or unreadable
lines, plus the configuration) into rows; the local engine and the Dask engine both call it,
so they cannot disagree. Rows become frames with `_partition_frame` (every column an object
column: the values as the rows hold them) and frames become the result with `_finish`
(columns in one order, dtypes inferred once over the whole): the same for one partition or
many, so a Dask replay gathered into pandas is the local replay, value for value and dtype
for dtype.
"""

from __future__ import annotations

import gc
import importlib
import json
import pickle
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast, overload

from .._engine.codec import Invocation
from .._engine.report import MISSING, ContractError, Issue, decode_json
from .._import import ImportStream, Unreadable, events_from_file, kind_of, unreadable
from .._optional import require
from .._running.inprocess import Context, Handler, Interrupted, capturing, handler_copy, interrupted
from .._running.plan import PlannedCall
from .._running.stop import Stopper, current_stopper
from .._settings.config import Config, accepted, settings_of
from .._settings.project import resolve_isolation
from .._sources import SOURCES, detect_source, source_module, source_of
from ..isolation import invoke_many
from ..rules import id_of
from .columns import ordered, replay_row, unreadable_row

if TYPE_CHECKING:
    from concurrent.futures import Future

    import dask.dataframe as dd
    import pandas as pd

    from .._engine.outcome import Outcome

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
CHUNK_SIZE = 1_000  # events called together (one invoke_many): a worker round trip per chunk, not per event


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


def _planners(runs: dict[str, dict[str, Any]]) -> dict[str, Callable[[Any], PlannedCall[Outcome]]]:
    """Each source's `plan_call` with the replay's keywords for it: the call its `run` would make for an event."""
    planners: dict[str, Callable[[Any], PlannedCall[Outcome]]] = {}
    for name, keywords in runs.items():
        plan_call = importlib.import_module(f"fnkit.{name}._outcome").plan_call
        planners[name] = partial(plan_call, **keywords)
    return planners


def _handler_copies(values: list[Any]) -> list[Any]:
    """The events of a chunk as the handler gets them in this process: each its own copy (the outcome reads the
    originals, as `run`'s does). JSON values are copied in one pass through their JSON text (as the platform
    makes them: plain dicts and lists), and the copy is compared with the originals; anything that does not come
    back equal (a tuple, a number JSON cannot hold, a lone surrogate) is copied event by event."""
    try:
        encode, decode = _json_codec or _load_json_codec()
        copies: list[Any] = decode(encode(values))
        if copies == values:
            return copies
    except Exception:  # noqa: BLE001 - not JSON all through: copied one by one below
        pass
    return [_handler_copy(v) for v in values]


_json_codec: tuple[Callable[[Any], bytes], Callable[[bytes], Any]] | None = None


def _load_json_codec() -> tuple[Callable[[Any], bytes], Callable[[bytes], Any]]:
    global _json_codec
    import msgspec

    _json_codec = (msgspec.json.Encoder().encode, msgspec.json.Decoder().decode)
    return _json_codec


def _handler_copy(value: Any) -> Any:
    """The event as the handler gets it in this process: its own copy (the outcome reads the original, as `run`'s
    does). A JSON value (dicts, lists, strings, numbers) is copied as a tree, much faster than a pickle."""
    try:
        return _json_tree(value)
    except _NotJson:
        return handler_copy(value)


class _NotJson(Exception):
    """A value that is not a plain JSON tree (a tuple, a custom object): copied by `handler_copy` instead."""


_JSON_LEAVES = frozenset((str, int, float, bool, type(None)))


def _json_tree(value: Any) -> Any:
    kind = type(value)
    if kind is dict:  # keys are strings (or other immutable values): shared, as a copy may
        return {k: v if type(v) in _JSON_LEAVES else _json_tree(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _JSON_LEAVES else _json_tree(v) for v in value]
    if kind in _JSON_LEAVES:
        return value
    raise _NotJson


def _outcome_rows(
    index: int, result: Outcome, extra: Callable[[dict[str, Any]], dict[str, Any]] | None
) -> list[dict[str, Any]]:
    said = result.result_column  # the column that says what happened to each item
    rows = result.rows()
    for row in rows:
        row["event"] = index
        if "result" not in row:
            value = row.get(said)
            row["result"] = str(value) if isinstance(value, int) else value  # a word: "502", "delete"
        replay_row(row)  # one meaning per column, whatever the source
        if extra is not None:
            row.update(extra(row))
    return rows


class _Chunk:
    """Consecutive events of one source, planned, waiting to be called together (`invoke_many`)."""

    __slots__ = ("calls", "extras", "indexes", "keys", "slots", "source", "timeout_s")

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.source: str | None = None
        self.timeout_s: float | None = None
        self.calls: list[PlannedCall[Outcome]] = []
        self.indexes: list[int] = []
        self.extras: list[Callable[[dict[str, Any]], dict[str, Any]] | None] = []
        self.slots: list[list[dict[str, Any]]] = []  # where each event's rows go, in the partition's order
        self.keys: set[Any] = set()

    def takes(self, source: str, call: PlannedCall[Outcome]) -> bool:
        """True when the call can join: same source and timeout, no shared key, room left."""
        if not self.calls:
            return True
        return (
            source == self.source
            and call.timeout_s == self.timeout_s
            and len(self.calls) < CHUNK_SIZE
            and self.keys.isdisjoint(call.exclusive)
        )

    def add(self, source: str, call: PlannedCall[Outcome], index: int, extra: Any, slot: list[dict[str, Any]]) -> None:
        self.source, self.timeout_s = source, call.timeout_s
        self.calls.append(call)
        self.indexes.append(index)
        self.extras.append(extra)
        self.slots.append(slot)
        if call.exclusive:
            self.keys.update(call.exclusive)

    def run(self, handler: Handler, isolation: str, ahead: _Ahead | None = None) -> None:
        """Call the handler on every event (one `invoke_many`), fill each event's rows, and empty the chunk.

        `ahead` (process isolation): the chunk is handed to it, to be called while this thread
        plans the next one; its rows are filled when `ahead` next waits."""
        calls = self.calls
        if not calls:
            return
        if isolation == "process":  # the events travel to the worker: a copy of their own there
            events = [c.event for c in calls]
        else:
            events = _handler_copies([c.event for c in calls])
        timeout = self.timeout_s
        contexts = None
        if any(c.context is not None for c in calls):
            contexts = [c.context if c.context is not None else Context(timeout_s=timeout) for c in calls]
        if ahead is not None and all(c.session is None for c in calls):
            ahead.start(self.handed_over(), events, contexts)
            return
        if ahead is not None:  # calls with a session (the mail content API) are served from this thread
            ahead.wait()
        with ExitStack() as opened:
            for c in calls:
                if c.session is not None:
                    opened.enter_context(c.session(isolation))
            invocations = invoke_many(
                handler, events, timeout_s=timeout, contexts=contexts, isolation=isolation, copy=False
            )
        self.fill(invocations)

    def fill(self, invocations: list[Invocation]) -> None:
        """Each event's rows from its invocation (the plan's `finish`), in its slot; the chunk is emptied."""
        for call, invocation, index, extra, slot in zip(
            self.calls, invocations, self.indexes, self.extras, self.slots, strict=True
        ):
            slot.extend(_outcome_rows(index, call.finish(invocation), extra))
        self.clear()

    def handed_over(self) -> _Chunk:
        """A chunk holding this one's calls, and this one emptied for the next calls."""
        other = _Chunk()
        other.source, other.timeout_s, other.calls = self.source, self.timeout_s, self.calls
        other.indexes, other.extras, other.slots, other.keys = self.indexes, self.extras, self.slots, self.keys
        self.clear()
        return other


class _Ahead:
    """With `isolation="process"`, a chunk's calls run in the worker while this thread validates and plans the
    next chunk: a helper thread sends the chunk and waits for its results (data, as always), one chunk at a
    time, so the handler still sees the events in their order. The helper's calls are made under a `Stopper`
    of its own: when this thread is interrupted (Ctrl-C), the worker is killed at once."""

    def __init__(self, handler: Handler) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.handler = handler
        self.stopper = Stopper()
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="fnkit-replay")
        self.running: tuple[_Chunk, Future[list[Invocation]]] | None = None

    def _call(self, events: list[Any], contexts: list[Any] | None, timeout: float | None) -> list[Invocation]:
        with self.stopper:
            return invoke_many(
                self.handler, events, timeout_s=timeout, contexts=contexts, isolation="process", copy=False
            )

    def start(self, chunk: _Chunk, events: list[Any], contexts: list[Any] | None) -> None:
        """The chunk's calls start once the previous chunk's are over and its rows filled."""
        self.wait()
        self.running = chunk, self.pool.submit(self._call, events, contexts, chunk.timeout_s)

    def wait(self) -> None:
        """The running chunk's rows, once its calls are over (nothing when none runs)."""
        if self.running is not None:
            chunk, future = self.running
            self.running = None
            chunk.fill(future.result())

    def close(self, interrupted: bool) -> None:
        """The helper thread ends; an interrupted replay's running calls are stopped first (their worker killed)."""
        if interrupted:
            self.stopper.stop()
        self.pool.shutdown(wait=True)


@contextmanager
def _older_objects_set_aside() -> Iterator[None]:
    """While a partition is replayed, the objects that were alive before it (the events given, the caller's own
    data) are left out of the garbage collector's full passes (`gc.freeze`), and put back after (`gc.unfreeze`).

    A full pass walks every live object; a replay makes many, so passes come often, and over a
    large input they took a fifth of its time. Nothing is lost: garbage made before the replay
    is collected after it. When the caller has frozen objects itself, or turned the collector
    off, nothing is changed.
    """
    if gc.get_freeze_count() or not gc.isenabled():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def replay_partition(
    handler: Callable[[Any, Any], Any], items: Iterable[Any], config: dict[str, Any], start: int = 0
) -> list[dict[str, Any]]:
    """The rows of one partition: every item (an event, an importer's entry such as a logged
    request, or an `Unreadable`) numbered from `start`; both engines call this and nothing else.

    Each event is decoded once, its source detected once (unless `source=` names it), and
    planned by its source's `plan_call` (the call that source's `run` makes); consecutive
    events of one source are then called in chunks, through `invoke_many`, in their order,
    and each outcome is made from its `Invocation` by the plan's `finish`: the rows are those
    of `run` called per event. With `isolation="process"` a chunk runs in the worker while
    the next is planned here (`_Ahead`).
    """
    forced = config["source"]
    isolation = config["isolation"]
    # process isolation, unless the calls are made under a caller's Stopper (it must reach them): pipelined
    ahead = _Ahead(handler) if isolation == "process" and current_stopper() is None else None
    started = time.perf_counter()
    finished = False
    try:
        rows = _replay_items(handler, items, forced, isolation, _planners(config["runs"]), start, ahead)
        finished = True
    except KeyboardInterrupt as exc:  # Ctrl-C: the person reads one sentence
        if isinstance(exc, Interrupted):
            raise
        raise interrupted(started, "the replay") from None
    finally:
        if ahead is not None:  # a replay that did not finish stops the calls running ahead (their worker killed)
            ahead.close(interrupted=not finished)
    return rows


def _replay_items(
    handler: Handler,
    items: Iterable[Any],
    forced: str | None,
    isolation: str,
    planners: dict[str, Callable[[Any], PlannedCall[Outcome]]],
    start: int,
    ahead: _Ahead | None,
) -> list[dict[str, Any]]:
    parts: list[list[dict[str, Any]]] = []  # each item's rows, in order (a chunk fills its slots when it runs)
    chunk, no_issues = _Chunk(), list[Issue]()  # (a dict's issues of decoding: none, never added to)
    with capturing(), _older_objects_set_aside():
        for index, item in enumerate(items, start):
            if isinstance(item, Unreadable):
                parts.append([unreadable_row(index, item)])
                continue
            if type(item) is dict:  # an event as most inputs give it: nothing to decode, no logged columns
                extra, value, issues = None, item, no_issues
            else:  # an importer's entry, which may say its source (a logged request: not detected again)
                extra = getattr(item, "replay_columns", None)
                value, issues = decode_json(item.event if extra is not None else item)
            known = forced or getattr(item, "event_source", None)
            source = known or (source_of(value) if value is not MISSING else None)
            if source is None:
                message = issues[0].message if issues else "not an event of a known source"
                parts.append(
                    [
                        {
                            "event": index,
                            "source": None,
                            "item": None,
                            "result": "invalid event",
                            "rule": id_of(decode_json if issues else detect_source),
                            "inferred": True,
                            "reason": message,
                        }
                    ]
                )
                continue
            try:
                call = planners[source](value)
            except ContractError as exc:
                first = exc.report.errors[0]
                row = {
                    "event": index,
                    "source": source,
                    "item": None,
                    "result": "invalid event",
                    "rule": first.rule,
                    "inferred": False,
                    "reason": f"{first.path}: {first.message}",
                }
                split = getattr(item, "message_rows", None)  # a dump's batch: one row per message, located
                parts.append(split(row) if split is not None else [row | extra(row)] if extra is not None else [row])
                continue
            if call.decided is not None:  # answered without calling the handler: nothing to wait for
                parts.append(_outcome_rows(index, call.decided, extra))
                continue
            if not chunk.takes(source, call):
                chunk.run(handler, isolation, ahead)
            slot: list[dict[str, Any]] = []
            parts.append(slot)
            chunk.add(source, call, index, extra, slot)
        chunk.run(handler, isolation, ahead)
        if ahead is not None:
            ahead.wait()
    return [row for part in parts for row in part]


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
    "replay_partition",
    "replay_partitions",
]
