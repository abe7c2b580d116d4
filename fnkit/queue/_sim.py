"""The queue poller over time, on a virtual clock (Q1-Q11): QueueSim and QueueRun."""

from __future__ import annotations

import hashlib
import heapq

try:  # the builtin MD5 is faster than OpenSSL's for short bodies (as in ._event)
    from _md5 import md5 as _md5
except ImportError:  # pragma: no cover
    from hashlib import md5 as _md5
import json
import random
from collections import deque
from collections.abc import Callable, Iterator
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Unpack

from .._engine.codec import Invocation
from .._import import say
from .._optional import require
from .._running.calls import _call
from .._running.inprocess import Context, stops_in_one_sentence
from .._settings.config import with_settings
from .._settings.project import Dialect, Isolation, resolve_dialect, resolve_isolation
from ..rules import id_of, rule
from ._batches import EPOCH_MS, Message, SimInvocation, _records
from ._build import queue_arn
from ._config import DEDUPLICATION, QueueConfig, QueueSettings
from ._contents import (
    MAX_MESSAGE_BYTES,
    MAX_PAYLOAD_BYTES,
    check_message_size,
    md5_of_message_attributes,
    message_size,
    normalize_message_attributes,
)
from ._event import EVENT_SOURCE
from ._fifo import GroupQueue, group_order, send_refusal
from ._outcome import decide
from ._response import misspelled_keys, reporting_off

if TYPE_CHECKING:
    import pandas as pd

MAX_PAYLOAD = MAX_PAYLOAD_BYTES  # Q17
DEDUP_WINDOW_S = 300.0
_ENVELOPE = len('{"Records":[]}')
# QueueSim.run's bound when the caller sets none, so that a handler that keeps a message coming back
# (it raises, or lists the message it has dealt with) ends: a virtual day, and a number of invocations
# that no run can need without such a loop (each message received ten times, over a base)
BOUND_S = 86_400.0
BOUND_INVOCATIONS = 10_000
BOUND_INVOCATIONS_PER_MESSAGE = 10
_GROUP = attrgetter("group_id")  # a FIFO message's group (Q9)


class SimContext(Context):
    """The handler's context inside a simulation: `sleep(s)` spends virtual time, no real waiting.

    It holds plain values only (no reference to the simulator), so it travels to a worker
    process as it is; what `sleep` spent there comes back with the result.
    """

    def __init__(self, sim: QueueSim, **kwargs: Any) -> None:
        # cheaper than Context.__init__: a simulation makes one per batch, millions of times
        self.function_timeout_s = sim.function_timeout_s
        self.now_s = sim.now
        self.slept_s = 0.0
        self.timeout_s = sim.function_timeout_s
        self._deadline = None
        self._kwargs = kwargs

    def __getattr__(self, name: str) -> Any:
        # names, ARNs and the request id are made on first use only
        if name.startswith("__") or name in ("function_timeout_s", "now_s", "slept_s", "_kwargs"):
            raise AttributeError(name)
        now = self.now_s
        full = Context(timeout_s=self.function_timeout_s, clock=lambda: now, **self._kwargs)
        for key, value in vars(full).items():
            if key not in ("timeout_s", "_deadline", "_clock"):
                object.__setattr__(self, key, value)
        return object.__getattribute__(self, name)

    def _start(self) -> None:
        return None

    def sleep(self, seconds: float) -> None:
        """Spend `seconds` of virtual time (a slow handler, without a real wait)."""
        self.slept_s += max(0.0, float(seconds))

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.function_timeout_s - self.slept_s) * 1000))


def _record_size(body: str) -> int:
    """A conservative estimate of a record's JSON size without message attributes, for Q17's 6 MB."""
    return 700 + (len(body) if body.isascii() else 2 * len(body.encode("utf-8", "surrogatepass")))


class QueueRun:
    """The result of `QueueSim.run`: every invocation and every message's life.

    `stopped`: None when the run ended by itself (or at the caller's `until_s`/`max_invocations`),
    else the sentence saying that it stopped at QueueSim.run's default bound, with messages left.
    """

    def __init__(
        self, sim: QueueSim, invocations: list[SimInvocation], end_s: float, stopped: str | None = None
    ) -> None:
        self.sim = sim
        self.invocations = invocations
        self.messages: list[Message] = list(sim._messages)
        self.end_s = end_s
        self.stopped = stopped

    @property
    def dead_letter_queue(self) -> list[Message]:
        """The messages moved to the dead-letter queue, in the order they moved."""
        return list(self.sim._dlq)

    def summary(self) -> dict[str, Any]:
        """Counts: deleted, dead-lettered, still queued, invocations, receives per message, ordering warnings."""
        states = {"deleted": 0, "dead-lettered": 0, "queued": 0}
        receives = 0
        most = 0
        for m in self.messages:
            states[m.final_state] += 1
            receives += m.receive_count
            most = max(most, m.receive_count)
        breaks = id_of(group_order)
        lost_by = (id_of(reporting_off), id_of(misspelled_keys))  # the failures a response reported, lost
        ordering = sum(
            1
            for inv in self.invocations
            if inv.outcome is not None
            for w in inv.outcome.issues.warnings
            if w.rule == breaks
        )
        lost = sum(
            1
            for inv in self.invocations
            if inv.outcome is not None
            for w in inv.outcome.issues.warnings
            if w.rule in lost_by
        )
        return {
            "sent": len(self.messages),
            "deduplicated": self.sim.deduplicated,
            "deleted": states["deleted"],
            "dead-lettered": states["dead-lettered"],
            "queued": states["queued"],
            "invocations": len(self.invocations),
            "receives": receives,
            "receives per message": round(receives / len(self.messages), 3) if self.messages else 0.0,
            "max receives": most,
            "ordering warnings": ordering,
            "lost-failure warnings": lost,
            "virtual time s": round(self.end_s, 3),
        }

    def rows(self) -> list[dict[str, Any]]:
        """One row per message (for `fnkit.tabulate`)."""
        return [dict(source="queue", **m.row()) for m in self.messages]

    def to_frame(self, what: str = "messages") -> pd.DataFrame:
        """A DataFrame: one row per message (`what="messages"`) or per invocation (`"invocations"`)."""
        require("pandas", extra="frames", feature="QueueRun.to_frame()")
        import pandas as pd

        if what == "invocations":
            return pd.DataFrame([inv.row() for inv in self.invocations])
        if what == "messages":
            return pd.DataFrame([m.row() for m in self.messages])
        raise ValueError("what is 'messages' or 'invocations'")

    def timeline(self, message_id: str) -> list[dict[str, Any]]:
        """What happened to one message: each receive with its invocation's outcome."""
        out = []
        for m in self.messages:
            if m.message_id != message_id:
                continue
            receipts = [inv.index for inv in self.invocations if any(x is m for x in inv._messages)]
            for idx in receipts:
                inv = self.invocations[idx]
                failed = inv.outcome is not None and message_id in inv.outcome.failed_ids
                out.append(
                    {
                        "invocation": idx,
                        "time_s": inv.time_s,
                        "kind": inv.outcome.kind if inv.outcome else None,
                        "result": "returned to queue" if failed else "deleted",
                        "rule": inv.outcome.rule if inv.outcome else None,
                    }
                )
            if m.state == "dead-lettered":
                out.append(
                    {
                        "invocation": None,
                        "time_s": m.deleted_s,
                        "kind": None,
                        "result": "moved to dead-letter queue",
                        "rule": id_of(QueueSim._dead_letter),
                    }
                )
        return out

    def __repr__(self) -> str:
        s = self.summary()
        text = (
            f"QueueRun(invocations={s['invocations']}, deleted={s['deleted']}, dead-lettered={s['dead-lettered']}, "
            f"queued={s['queued']}, ordering warnings={s['ordering warnings']})"
        )
        return text if self.stopped is None else f"{text}\n{self.stopped}"

    def _repr_html_(self) -> str:
        from .._cells import panel_html

        counts = [{"": name, "count": value} for name, value in self.summary().items()]
        return panel_html(
            "QueueRun",
            tone="mixed" if self.stopped else None,
            sentence=self.stopped or "",
            rows=counts,
            columns=["", "count"],
        )


class QueueSim:
    """A queue and its poller on a virtual clock: send messages, run a handler, read what happened.

    Deterministic for a seed; nothing sleeps for real. The queue's settings are a
    `QueueConfig` (`config=`, or its fields as keywords); a configuration the platform would
    refuse raises ValueError naming the rule (Q1, Q2, Q3).
    """

    @with_settings(QueueConfig)
    def __init__(
        self,
        *,
        config: QueueConfig | None = None,
        invocation_s: float = 0.05,
        real_timeout_s: float | None = None,
        region: str = "us-east-1",
        queue_name: str | None = None,
        dialect: Dialect | None = None,
        seed: int = 0,
        **settings: Unpack[QueueSettings],
    ) -> None:
        config = QueueConfig.of(config, settings, QueueSim.__init__)
        dialect = resolve_dialect(dialect)
        self.config = config
        # the settings the poller reads on every batch, as plain attributes
        self.fifo = fifo = config.fifo
        self.visibility_timeout_s = config.visibility_timeout_s
        self.max_receive_count = config.max_receive_count
        self.batch_size = config.batch_size
        self.batch_window_s = config.batch_window_s
        self.report_batch_item_failures = config.report_batch_item_failures
        self.function_timeout_s = config.function_timeout_s
        self.content_based_deduplication = config.content_based_deduplication
        self.invocation_s = float(invocation_s)
        self.real_timeout_s = real_timeout_s if real_timeout_s is not None else max(self.function_timeout_s, 0.001)
        self.dialect = dialect
        self._event_source = EVENT_SOURCE[dialect]
        self.region = region
        self.arn = queue_arn(fifo=fifo, region=region, name=queue_name, dialect=dialect)
        self.seed = seed
        self._rng = random.Random(seed)
        self._id_prefix = f"{self._rng.getrandbits(32):08x}"
        stem = self._rng.getrandbits(48)
        self._id_stem = (
            f"{self._id_prefix}-{stem >> 32:04x}-4{(stem >> 20) & 0xFFF:03x}-{0x8000 | (stem & 0x3FFF):04x}-"
        )
        self._id_salt = self._rng.getrandbits(48)
        self.now = 0.0
        self._messages: list[Message] = []
        self._ready: deque[Message] = deque()  # visible, in send order (standard) / per group (FIFO)
        self._hidden: list[tuple[float, int, Message]] = []  # (visible again at, index, message)
        self._groups: GroupQueue[Message] = GroupQueue(_GROUP)  # FIFO only, where every message has a group (Q9)
        self._dedup: dict[str, float] = {}
        self._dlq: list[Message] = []
        self._sequence = 18_000_000_000_000_000_000 + self._rng.randrange(10**17)
        self.deduplicated = 0
        self._sender_id = "AIDA" + "".join(self._rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(17))
        self._texts = (self._event_source, self.arn, self.region, self._sender_id)  # what every record repeats
        self._invocations: list[SimInvocation] = []

    # -- sending ------------------------------------------------------------
    @DEDUPLICATION
    def send(
        self,
        body: Any,
        *,
        group_id: str | None = None,
        dedup_id: str | None = None,
        message_attributes: dict[str, Any] | None = None,
    ) -> str | None:
        """Put a message in the queue now (virtual time); its id, or None when deduplicated (Q11).

        A message over the queue's maximum size (body and attributes over 1 MiB) is refused: ValueError (Q16).
        """
        if not isinstance(body, str):
            body = body.decode("utf-8") if isinstance(body, bytes) else json.dumps(body)
        if 4 * len(body) > MAX_MESSAGE_BYTES or message_attributes:
            size = message_size(body, message_attributes)
            if size > MAX_MESSAGE_BYTES:
                raise ValueError(
                    f"the queue refuses a message of {size:,} bytes (body and message attributes): at most "
                    f"{MAX_MESSAGE_BYTES:,} (1 MiB) ({id_of(check_message_size)})"
                )
        refused = send_refusal(self.fifo, group_id, dedup_id)
        if refused is not None:
            raise ValueError(refused)
        if self.fifo:
            if dedup_id is None:
                if not self.content_based_deduplication:
                    raise ValueError(
                        f"a FIFO queue without content-based deduplication needs a dedup_id ({DEDUPLICATION.id})"
                    )
                dedup_id = hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()
            seen_at = self._dedup.get(dedup_id)
            if seen_at is not None and self.now - seen_at < DEDUP_WINDOW_S:
                self.deduplicated += 1
                return None
            self._dedup[dedup_id] = self.now
        index = len(self._messages)
        # ids are seeded and unique: a per-queue random stem and a scrambled counter
        mid = f"{self._id_stem}{(index * 0x9E3779B97F4A7C15 + self._id_salt) & 0xFFFFFFFFFFFF:012x}"
        msg = Message(
            mid,
            body,
            index,
            EPOCH_MS + int(self.now * 1000),
            _md5(body.encode("utf-8", "surrogatepass")).digest(),
            _record_size(body),
        )
        if message_attributes:
            attrs = normalize_message_attributes(message_attributes)
            msg.message_attributes = attrs
            msg.md5_attributes = md5_of_message_attributes(attrs)
            msg._size += len(json.dumps(attrs))
        if self.fifo:
            msg.group_id = group_id
            msg.dedup_id = dedup_id
            self._sequence += 1 + self._rng.randrange(1000)
            msg.sequence_number = str(self._sequence)
            self._groups.push(msg)
        else:
            self._ready.append(msg)
        self._messages.append(msg)
        return mid

    @classmethod
    def from_messages(cls, messages: Any, **settings: Any) -> QueueSim:
        """A simulation whose queue holds a dump's messages (what `events_from_messages` reads), each once with
        its id and receive count (its latest receive); `settings`: this class's keywords."""
        from ._messages import sim_from_messages

        return sim_from_messages(cls, messages, **settings)

    def send_many(self, bodies: Any, **kwargs: Any) -> list[str | None]:
        """Send each body in turn (same keywords for all)."""
        return [self.send(b, **kwargs) for b in bodies]

    # -- the event --------------------------------------------------------------
    def _event(self, deliveries: list[tuple[Message, int]], time_s: float) -> dict[str, Any]:
        messages, counts = zip(*deliveries, strict=True) if deliveries else ((), ())
        return {"Records": _records(self._texts, messages, counts, time_s)}

    # -- the poller -------------------------------------------------------------
    def _wake(self) -> None:
        """Messages whose visibility timeout has passed become visible again (standard queues)."""
        hidden = self._hidden
        while hidden and hidden[0][0] <= self.now:
            _, _, m = heapq.heappop(hidden)
            if m.state != "in-flight":
                continue
            m.state = "queued"
            if m.group_id is not None:
                self._groups.done(m)
            else:
                self._ready.append(m)

    def _take(self) -> list[Message]:
        """The next batch, as the poller assembles it (dead-letter moves on the way, Q5; by group when FIFO, Q9)."""
        batch: list[Message] = []
        size = 0
        limit = self.batch_size
        if self.fifo:

            def admit(m: Message) -> bool | None:
                nonlocal size
                if m.state != "queued" or self._dead_letter(m):
                    return False
                if size and size + m._size > MAX_PAYLOAD:
                    return None
                size += m._size
                return True

            return self._groups.take(limit, admit)
        ready = self._ready
        while ready and len(batch) < limit:
            m = ready[0]
            if m.state != "queued":
                ready.popleft()
                continue
            if self._dead_letter(m):
                ready.popleft()
                continue
            size += m._size
            if batch and size > MAX_PAYLOAD:
                break
            batch.append(ready.popleft())
        return batch

    @rule(
        "Q5",
        "queue",
        "doc",
        "A message whose next receive would exceed maxReceiveCount moves to the dead-letter queue instead.",
        severity="behaviour",
    )
    def _dead_letter(self, m: Message) -> bool:
        """Q5: a receive that would exceed max_receive_count moves the message to the dead-letter queue."""
        if self.max_receive_count is not None and m.receive_count + 1 > self.max_receive_count:
            m.state = "dead-lettered"
            m.deleted_s = self.now
            self._dlq.append(m)
            return True
        return False

    def _next_visible_time(self) -> float | None:
        times = []
        if self._hidden:
            times.append(self._hidden[0][0])
        return min(times) if times else None

    def _pending(self) -> bool:
        if self.fifo:
            return self._groups.waiting() or bool(self._hidden)
        return bool(self._ready) or bool(self._hidden)

    @stops_in_one_sentence("the simulation")
    def run(
        self,
        handler: Callable[[Any, Any], Any] | str,
        *,
        until_s: float | None = None,
        max_invocations: int | None = None,
        isolation: Isolation | None = None,
    ) -> QueueRun:
        """Poll and invoke `handler` until the queue is empty (or `until_s` virtual seconds pass).

        Without `until_s` and `max_invocations`, the run is bounded all the same: it stops after a
        virtual day (BOUND_S) or 10,000 invocations plus ten per message sent, whichever comes first,
        and says so in `QueueRun.stopped` (and in a line under the cell, or a RuntimeWarning): a handler
        that never lets a message go ends there instead of running for ever. `until_s=math.inf` lifts it.
        `isolation`: where the handler runs ("none", the default: in this process, like a call;
        "process" or "thread", see `fnkit.invoke`).
        Each batch's handler gets its own copy of the event; the poller decides from its own.
        """
        where = resolve_isolation(isolation)
        invocations = self._invocations
        bounded = until_s is None and max_invocations is None
        if bounded:
            until_s = self.now + BOUND_S
            max_invocations = len(invocations) + BOUND_INVOCATIONS + BOUND_INVOCATIONS_PER_MESSAGE * len(self._messages)
        started = len(invocations)
        while True:
            if max_invocations is not None and len(invocations) >= max_invocations:
                break
            self._wake()
            if self.batch_window_s and self._available() < self.batch_size:
                # the poller gathers records for up to the batching window (Q1)
                self.now += self.batch_window_s
                self._wake()
            if until_s is not None and self.now > until_s:
                break
            batch = self._take()
            if not batch:
                nxt = self._next_visible_time()
                if nxt is None:
                    break
                self.now = max(self.now, nxt)
                if until_s is not None and self.now > until_s:
                    break
                continue
            self._invoke(handler, batch, where)
        stopped = self._bound_sentence(len(invocations) - started) if bounded and self._pending() else None
        if stopped is not None:
            say(stopped, stacklevel=3)  # in a notebook, the kit's own line under the cell; else a RuntimeWarning
        return QueueRun(self, list(invocations), self.now, stopped)

    def _bound_sentence(self, made: int) -> str:
        """The one sentence a run that stopped at the default bound carries."""
        counts = sorted(m.receive_count for m in self._messages if m.state in ("queued", "in-flight")) or [0]
        n, low, high = len(counts), f"{counts[0]:,}", f"{counts[-1]:,}"
        return (
            f"The simulation stopped at its bound ({made:,} invocations, {self.now:,.0f} virtual seconds) with "
            f"{n} message{'s' if n != 1 else ''} still in the queue ({'each ' if n > 1 and low == high else ''}"
            f"received {low if low == high else f'{low} to {high}'} times): the handler "
            "keeps a message coming back (it raises, or lists a message it has dealt with), and the queue would "
            "go on redelivering it."
        )

    def _available(self) -> int:
        if self.fifo:
            return self._groups.available()
        return len(self._ready)

    def _invoke(self, handler: Callable[[Any, Any], Any] | str, batch: list[Message], isolation: str) -> None:
        now = self.now
        groups = self._groups
        counts: list[int] = []
        for m in batch:
            m.receive_count = count = m.receive_count + 1
            counts.append(count)
            if m.first_receive_s is None:
                m.first_receive_s = now
            m.state = "in-flight"
            if m.group_id is not None:
                groups.in_flight(m)
        messages = tuple(batch)
        receive_counts = tuple(counts)
        inv = SimInvocation(len(self._invocations), now, messages, receive_counts, self._texts)
        self._invocations.append(inv)
        # the handler's event is made for it alone, so it is handed over without a copy; the poller reads
        # its own records only where its decision looks at them: the group order of a FIFO batch (Q10)
        event = {"Records": _records(self._texts, messages, receive_counts, now)}
        own = {"Records": _records(self._texts, messages, receive_counts, now)} if self.fifo else None
        ctx = SimContext(self)
        invocation = _call(handler, event, self.real_timeout_s, ctx, isolation)  # no copy: nobody else holds it
        duration = self.invocation_s + ctx.slept_s
        if ctx.slept_s > self.function_timeout_s and not invocation.timed_out:
            # the handler spent more virtual time than the function timeout allows (Q6)
            invocation = Invocation(
                timed_out=True,
                duration_ms=invocation.duration_ms,
                logs=invocation.logs,
                timeout_s=self.function_timeout_s,
            )
        if invocation.timed_out:
            duration = self.function_timeout_s
        ids = tuple([m.message_id for m in messages])
        result = decide(own, ids, invocation, self.report_batch_item_failures)
        inv.outcome = result
        inv.duration_s = duration
        self.now = end = now + duration
        failed = set(result.failed_ids)
        hidden = self._hidden
        visible_at = now + self.visibility_timeout_s
        for m in batch:
            if failed and m.message_id in failed:
                # stays hidden until the visibility timeout passes, counted from the receive (Q4, Q6)
                heapq.heappush(hidden, (visible_at, m.index, m))
            else:
                m.state = "deleted"
                m.deleted_s = end
                if m.group_id is not None:
                    groups.done(m)
        if self.fifo and failed:
            groups.requeue([m for m in batch if m.message_id in failed])

    def messages(self) -> Iterator[Message]:
        """Every message sent so far (deduplicated sends excluded)."""
        return iter(self._messages)
