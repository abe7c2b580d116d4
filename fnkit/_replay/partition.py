"""One partition's rows: the replay loop both engines call (`replay_partition`), and nothing else.

Every item of a partition (an event, an importer's entry such as a logged request, or an
`Unreadable`) is decoded once, its source detected once and planned by its source's
`plan_call`; consecutive events of one source are called in chunks (`_Chunk`, one
`invoke_many` each), in their order; with `isolation="process"` a chunk runs in the worker
while the next is planned here (`_Ahead`). Each outcome's rows come from its `Invocation`
(the plan's `finish`), the rows `run` gives event by event. fnkit/_replay/run.py makes frames
of them; fnkit/_replay/dask.py calls the same function in its workers.
"""

from __future__ import annotations

import gc
import importlib
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

from .._engine.codec import Invocation
from .._engine.report import MISSING, ContractError, Issue, decode_json
from .._import import Unreadable
from .._running.inprocess import Context, Handler, Interrupted, capturing, handler_copy, interrupted
from .._running.plan import PlannedCall
from .._running.stop import Stopper, current_stopper
from .._sources import detect_source, source_of
from ..isolation import invoke_many
from ..rules import id_of
from .columns import RENAMING_SOURCES, replay_row, unreadable_row

if TYPE_CHECKING:
    from concurrent.futures import Future

    from .._engine.outcome import Outcome


CHUNK_SIZE = 1_000  # events called together (one invoke_many): a worker round trip per chunk, not per event


def _planners(runs: dict[str, dict[str, Any]]) -> dict[str, Callable[[Any], PlannedCall[Outcome]]]:
    """Each source's `plan_call` with the replay's keywords for it: the call its `run` would make for an event."""
    planners: dict[str, Callable[[Any], PlannedCall[Outcome]]] = {}
    for name, keywords in runs.items():
        plan_call = importlib.import_module(f"fnkit.{name}._outcome").plan_call
        planners[name] = (
            _by_config(plan_call, keywords["config"])
            if keywords.keys() == {"config"}
            else partial(plan_call, **keywords)
        )
    return planners


def _by_config(plan_call: Callable[..., PlannedCall[Outcome]], config: Any) -> Callable[[Any], PlannedCall[Outcome]]:
    """`partial(plan_call, config=config)` as a function that names the keyword in its call: a partial holding
    keywords copies them into a new dict on every call (a replay's planner is called once per event)."""

    def planned(value: Any) -> PlannedCall[Outcome]:
        return plan_call(value, config=config)

    return planned


def _handler_copies(values: list[Any]) -> list[Any]:
    """The events of a chunk as the handler gets them in this process: each its own copy (the outcome reads the
    originals, as `run`'s does). The chunk's dicts, lists and tuples are remade in one pass in C
    (`msgspec.to_builtins`, which shares the strings and numbers: they cannot change), and the copy is compared
    with the originals; anything that does not come back equal (a set, bytes, a date, an object of a class of
    its own) is copied event by event."""
    try:
        copies: list[Any] = (_to_builtins or _load_to_builtins())(values)
        if copies == values:
            return copies
    except Exception:  # noqa: BLE001 - not plain values all through: copied one by one below
        pass
    return [_handler_copy(v) for v in values]


_to_builtins: Callable[[Any], Any] | None = None


def _load_to_builtins() -> Callable[[Any], Any]:
    global _to_builtins
    import msgspec

    _to_builtins = msgspec.to_builtins
    return _to_builtins


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
        if row.get("source") in RENAMING_SOURCES:  # one meaning per column, whatever the source
            replay_row(row)
        if extra is not None:
            row.update(extra(row))
    return rows


class _Chunk:
    """Consecutive events of one source, planned, waiting to be called together (`invoke_many`)."""

    __slots__ = ("calls", "keys", "parts", "places", "source", "timeout_s")

    def __init__(self, parts: list[Sequence[dict[str, Any]]]) -> None:
        self.parts = parts  # the partition's rows, item by item: a call's rows go at its place there
        self.clear()

    def clear(self) -> None:
        self.source: str | None = None
        self.timeout_s: float | None = None
        self.calls: list[PlannedCall[Outcome]] = []
        # each call's event number, its entry's extra columns, and where its rows go in `parts`
        self.places: list[tuple[int, Callable[[dict[str, Any]], dict[str, Any]] | None, int]] = []
        self.keys: set[Any] = set()

    def add(self, source: str, call: PlannedCall[Outcome], index: int, extra: Any, at: int) -> bool:
        """Add the call when it can join (same source and timeout, no shared key, room left): False when it
        cannot, and the chunk is left as it was. `at`: where its rows go in `parts`."""
        calls = self.calls
        exclusive = call.exclusive
        if not calls:
            self.source, self.timeout_s = source, call.timeout_s
        elif not (
            source == self.source
            and call.timeout_s == self.timeout_s
            and len(calls) < CHUNK_SIZE
            and (not exclusive or self.keys.isdisjoint(exclusive))
        ):
            return False
        calls.append(call)
        self.places.append((index, extra, at))
        if exclusive:
            self.keys.update(exclusive)
        return True

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
        """Each event's rows from its invocation (the plan's `finish`), at its place; the chunk is emptied."""
        parts = self.parts
        for call, invocation, (index, extra, at) in zip(self.calls, invocations, self.places, strict=True):
            parts[at] = _outcome_rows(index, call.finish(invocation), extra)
        self.clear()

    def handed_over(self) -> _Chunk:
        """A chunk holding this one's calls, and this one emptied for the next calls."""
        other = _Chunk(self.parts)
        other.source, other.timeout_s, other.calls = self.source, self.timeout_s, self.calls
        other.places, other.keys = self.places, self.keys
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

    The youngest generation is collected after `YOUNG_THRESHOLD` new objects rather than
    Python's 700 (unless the caller set more), and the thresholds are put back after: each
    collection walks the objects a chunk holds alive (its events' copies, contexts and
    calls), again and again with Python's threshold: a 1-record queue event costs 5.0k
    instructions fewer of about 190k (cachegrind). Cycles made in the meantime are still
    collected, some thousands of objects later.
    """
    if gc.get_freeze_count() or not gc.isenabled():
        yield
        return
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(thresholds[0], YOUNG_THRESHOLD), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


#: new objects between two collections of the youngest generation while a partition is replayed
YOUNG_THRESHOLD = 20_000


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
    # each item's rows, in order (a call's are put at its place when its chunk has run)
    parts: list[Sequence[dict[str, Any]]] = []
    chunk, no_issues = _Chunk(parts), list[Issue]()  # (a dict's issues of decoding: none, never added to)
    with capturing(), _older_objects_set_aside():
        for index, item in enumerate(items, start):
            if type(item) is dict:  # an event as most inputs give it: nothing to decode, no logged columns
                extra, value, issues, known = None, item, no_issues, forced
            elif isinstance(item, Unreadable):
                parts.append([unreadable_row(index, item)])
                continue
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
            at = len(parts)
            parts.append(())  # (its rows, once its chunk has run)
            if not chunk.add(source, call, index, extra, at):  # it cannot join: the chunk is called first
                chunk.run(handler, isolation, ahead)
                chunk.add(source, call, index, extra, at)
        chunk.run(handler, isolation, ahead)
        if ahead is not None:
            ahead.wait()
    return [row for part in parts for row in part]


__all__ = ["CHUNK_SIZE", "replay_partition"]
