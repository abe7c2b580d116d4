"""The queue exercises: partial failures, a FIFO group kept in order, a poison message given up on."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from .._cells import short_id, shorten
from ..queue._response import misspelled_keys
from ..rules import id_of
from ..types import QueueEvent
from ._helpers import Watched, is_good_order
from ._registry import CASE_TIMEOUT_S, Case, Exercise, Finding, invocation_problem, kind_of, register, returned

_KEY = "batchItemFailures"


def _order(n: int, qty: Any) -> str:
    return json.dumps({"order": n, "qty": qty})


def _queue_event(bodies: list[str], seed: int, **kwargs: Any) -> QueueEvent:
    from .. import queue

    return queue.build_event(bodies, seed=seed, **kwargs)


def _run(handler: Callable[..., Any], case: Case) -> tuple[Any, Watched]:
    """Run a queue case in a worker process; (outcome, what the handler processed and parked, as it reported)."""
    from .. import queue

    result = queue.run(handler, case.event, timeout_s=CASE_TIMEOUT_S, isolation="process", **case.config)
    return result, Watched.of(result.invocation)


def _describe(event: Mapping[str, Any], mid: str) -> str:
    """'message 2 of 3 (body {"order": 2, "qty": 0})'."""
    recs = event["Records"]
    for i, r in enumerate(recs):
        if r["messageId"] == mid:
            return f"message {i + 1} of {len(recs)} (body {shorten(r['body'], 40)})"
    return f"'{short_id(mid)}'"


def _record_holding(event: Mapping[str, Any], value: Any) -> tuple[int, str] | None:
    """(index, field) of the record whose receiptHandle or body is `value`, if any."""
    for i, r in enumerate(event["Records"]):
        for name in ("receiptHandle", "body", "md5OfBody"):
            if r.get(name) == value:
                return i, name
    return None


def _response_problem(case: Case, result: Any) -> str | None:
    """A sentence for a response the platform cannot use as meant: not an object, the key misspelled, a bad item."""
    value = returned(result.invocation)
    lost = "so the platform deletes every message and the failures you meant to report are lost"
    whole = "so the platform reads a complete failure and every message comes back, the good ones too"
    if isinstance(value, str):
        return (
            f"your handler returns text ({shorten(value, 40)}), not an object, {whole}: return the dict itself "
            "and the platform encodes it as JSON."
        )
    if isinstance(value, list):
        return f'your handler returns a list, {whole}: return an object, {{"{_KEY}": [...]}}.'
    if value is not None and not isinstance(value, dict):
        return f'your handler returns {kind_of(value)}, {whole}: return an object, {{"{_KEY}": [...]}}.'
    if isinstance(value, dict) and _KEY not in value:
        near = [k for k in value if isinstance(k, str) and k.lower() == _KEY.lower()]
        if near:
            return f"your response has no '{_KEY}' key ('{near[0]}' is another name: names are case-sensitive), {lost}."
        others = ", ".join(f"'{k}'" for k in list(value)[:3])
        has = f" (it has {others})" if others else ""
        return f"your response has no '{_KEY}' key{has}, {lost}."
    items = value.get(_KEY) if isinstance(value, dict) else None
    if isinstance(items, list):
        for item in items:
            if isinstance(item, str):
                return f'each failure must be an object {{"itemIdentifier": <messageId>}}, not a bare string, {whole}.'
            if isinstance(item, dict) and "itemIdentifier" not in item:
                keys = ", ".join(f"'{k}'" for k in item) or "no key at all"
                return (
                    f"each failure must name its message under the key 'itemIdentifier', but yours has {keys}, {whole}."
                )
            if isinstance(item, dict):
                held = _record_holding(case.event, item["itemIdentifier"])
                if held is not None:
                    i, name = held
                    return Finding(
                        f"you listed the {name} of message {i + 1} ('{short_id(item['itemIdentifier'])}'), "
                        f"but the platform matches itemIdentifier against messageId, {whole}: list "
                        'record["messageId"] instead.',
                        f"listed {name}",
                    )
    if result.kind == "failure":
        errors = [i for i in result.issues if i.severity == "error"]
        cause = errors[0].message if errors else result.reason
        return Finding(
            f"the platform reads your response as a complete failure, and every message comes back: {cause}",
            "complete failure",
        )
    return None


def _returned_nothing(result: Any, expected: list[str], event: Mapping[str, Any]) -> str | None:
    if expected and returned(result.invocation) is None:
        return Finding(
            f"your handler returns None (is a return missing?), which the platform reads as complete "
            f"success: {_describe(event, expected[0])} is deleted and its order is lost.",
            "returns None",
        )
    return None


_RECORD_KEYS = "messageId, receiptHandle, body, attributes, messageAttributes, md5OfBody"


def _raised(result: Any, catch: str) -> str | None:
    """One sentence for a handler that raised: the whole batch comes back; how to avoid it."""
    error = getattr(result.invocation, "error", None)
    if error is None:
        return invocation_problem(result.invocation)  # a hang stops the check; a return is no problem
    from ._registry import _where

    where = _where(error)
    if error.type == "BadOrder":
        hint = catch
    elif "raise " in where:
        hint = "report the failed message in batchItemFailures instead of raising"
    elif error.type == "KeyError":
        hint = f"a record's keys are {_RECORD_KEYS} (names are case-sensitive)"
    else:
        hint = ""
    return invocation_problem(
        result.invocation, hint, "so the whole batch fails and every message comes back, the good ones too"
    )


def _body_of(event: Mapping[str, Any], mid: str) -> str | None:
    return next((r["body"] for r in event["Records"] if r["messageId"] == mid), None)


def _what_it_did(result: Any, seen: Watched, catch: str) -> str | None:
    """What the handler's own calls show first: process_order given something else than the body text, a
    raise, or no call of process_order at all (each said from what happened, not from what was meant)."""
    call = seen.not_text()
    if call is not None:
        wrong = sum(1 for c in seen.calls if c.got != "a str")
        what = "every call" if wrong == len(seen.calls) else f"{wrong} of {len(seen.calls)} calls"
        raised = "raised BadOrder" if call.raised else "was given it"
        return Finding(
            f"your handler gave process_order {call.got} instead of the body text ({what}), and process_order "
            f'{raised}, bad order or not: pass record["body"] as it is (process_order reads the JSON itself).',
            "not text",
        )
    problem = _raised(result, catch)
    if problem:
        return problem
    if not seen.calls:
        return Finding(
            "your handler never called process_order, so no order was processed, whatever your response says: "
            'call process_order(record["body"]) for each record.',
            "never called",
        )
    return None


def _lost(event: Mapping[str, Any], mid: str, seen: Watched) -> Finding:
    body = _body_of(event, mid)
    if body is not None and seen.call_for(body) is None:
        return Finding(
            f"your handler never passed {_describe(event, mid)} to process_order and does not list it, so the "
            "platform deletes it and that order is lost.",
            "lost unprocessed",
        )
    return Finding(
        f"{_describe(event, mid)} failed (process_order raised BadOrder), but your response does not list it, "
        "so the platform deletes it and that order is lost.",
        "lost",
    )


def _twice(event: Mapping[str, Any], mid: str, seen: Watched) -> Finding:
    body = _body_of(event, mid)
    if body is not None and seen.call_for(body) is None:
        return Finding(
            f"your response lists {_describe(event, mid)}, which your handler never passed to process_order, so "
            "it comes back although nothing failed.",
            "listed unprocessed",
        )
    return Finding(
        f"{_describe(event, mid)} was processed fine (process_order returned), but your response lists it, so "
        "it comes back and is processed twice.",
        "twice",
    )


_CATCH = "catch BadOrder around each record and list that record, so one bad order fails only its own message."


# --- 0. the first answer (lesson 01's first task): list the bad orders ---------------------------


def _cases_first() -> list[Case]:
    cases = [
        ("one bad order in the middle", [_order(1, 2), _order(2, 0), _order(3, 5)]),
        ("no bad order", [_order(1, 1), _order(2, 3)]),
        ("two bad orders, one below zero", [_order(1, 0), _order(2, 4), _order(3, -1)]),
        ("one message, bad", [_order(1, 0)]),
    ]
    out = []
    for seed, (name, bodies) in enumerate(cases, start=1):
        event = _queue_event(bodies, seed)
        out.append(Case(name, event, [r["messageId"] for r in event["Records"] if json.loads(r["body"])["qty"] <= 0]))
    return out


def _judge_first(handler: Callable[..., Any], case: Case) -> str | None:
    from .. import queue

    result = queue.run(handler, case.event, timeout_s=CASE_TIMEOUT_S, isolation="process")
    expected = list(case.expect)
    problem = _raised(result, "") or _returned_nothing(result, expected, case.event)
    if problem or (not expected and result.kind == "success"):
        return problem
    problem = _response_problem(case, result)
    if problem:
        return problem
    for mid in expected:
        if mid not in result.failed_ids:
            return Finding(
                f"{_describe(case.event, mid)} is a bad order (qty 0 or less), but your response does not list "
                "it, so the platform deletes it and that order is lost.",
                "bad not listed",
            )
    for mid in result.failed_ids:
        if mid not in expected:
            return Finding(
                f"your response lists {_describe(case.event, mid)}, a good order, so it comes back and is "
                "processed again: list only the orders whose qty is 0 or less.",
                "good listed",
            )
    return None


register(Exercise("queue-first", "queue", "List the bad orders (lesson 01's first task)", _cases_first, _judge_first))


# --- 1. partial failures ----------------------------------------------------------------------


def _cases_partial() -> list[Case]:
    cases = [
        ("three good orders", [_order(1, 2), _order(2, 1), _order(3, 5)]),
        ("one bad order in the middle", [_order(1, 2), _order(2, 0), _order(3, 5)]),
        ("every order bad", [_order(1, -1), "not json", _order(3, "two")]),
        ("a body that is not JSON", ["hello", _order(2, 3)]),
        ("one message, bad", [_order(1, 0)]),
        ("ten messages, two bad", [_order(i, 0 if i in (4, 9) else i) for i in range(1, 11)]),
    ]
    out = []
    for seed, (name, bodies) in enumerate(cases, start=11):
        event = _queue_event(bodies, seed)
        bad = [r["messageId"] for r in event["Records"] if not is_good_order(r["body"])]
        out.append(Case(name, event, bad))
    return out


def _judge_partial(handler: Callable[..., Any], case: Case) -> str | None:
    result, seen = _run(handler, case)
    problem = _what_it_did(result, seen, _CATCH)
    if problem:
        return problem
    expected = list(case.expect)
    if not expected and result.kind == "success":
        return None
    problem = _returned_nothing(result, expected, case.event) or _response_problem(case, result)
    if problem:
        return problem
    failed = set(result.failed_ids)
    for mid in expected:
        if mid not in failed:
            return _lost(case.event, mid, seen)
    for mid in result.failed_ids:
        if mid not in expected:
            return _twice(case.event, mid, seen)
    return None


register(Exercise("queue-partial", "queue", "Report partial batch failures", _cases_partial, _judge_partial))


# --- 2. a FIFO group kept in order ------------------------------------------------------------


def _cases_fifo() -> list[Case]:
    cases = [
        ("one customer, all good", [_order(1, 1), _order(2, 2), _order(3, 3)], ["a", "a", "a"]),
        (
            "one customer, second order bad",
            [_order(1, 1), _order(2, 0), _order(3, 3), _order(4, 1)],
            ["a", "a", "a", "a"],
        ),
        (
            "two customers, a's first order bad",
            [_order(1, 0), _order(2, 2), _order(3, 3), _order(4, 4)],
            ["a", "b", "a", "b"],
        ),
        (
            "three customers, b goes bad last",
            [_order(1, 1), _order(2, 2), _order(3, 3), _order(4, 4), _order(5, 0)],
            ["a", "b", "c", "a", "b"],
        ),
        ("every order bad", ["x", "y"], ["a", "b"]),
    ]
    return [
        Case(name, _queue_event(bodies, seed, fifo=True, group_ids=groups))
        for seed, (name, bodies, groups) in enumerate(cases, start=31)
    ]


def _judge_fifo(handler: Callable[..., Any], case: Case) -> str | None:
    result, seen = _run(handler, case)
    problem = _what_it_did(
        result,
        seen,
        "catch BadOrder: a bad order fails its own message and the later ones of its group, not the whole batch.",
    )
    if problem:
        return problem
    recs = case.event["Records"]
    groups = [r["attributes"]["MessageGroupId"] for r in recs]
    good = [is_good_order(r["body"]) for r in recs]
    required: list[str] = []  # failed, or after a failure of the same group
    stopped: set[str] = set()
    first_bad = next((i for i, g in enumerate(good) if not g), len(recs))
    for i, r in enumerate(recs):
        if groups[i] in stopped or not good[i]:
            stopped.add(groups[i])
            required.append(r["messageId"])
    if not required and result.kind == "success":
        return None
    problem = _returned_nothing(result, required, case.event) or _response_problem(case, result)
    if problem:
        return problem
    failed = set(result.failed_ids)
    for i, r in enumerate(recs):
        mid = r["messageId"]
        if mid in required and mid not in failed:
            if good[i]:
                return Finding(
                    f"{_describe(case.event, mid)} of customer '{groups[i]}' comes after that customer's "
                    "failed order but is not listed, so it is deleted and the customer's orders are processed "
                    "out of order: once a message of a group fails, list every later message of that group.",
                    "fifo order",
                )
            return _lost(case.event, mid, seen)
        if mid not in required and mid in failed and i < first_bad:
            if seen.call_for(r["body"]) is None:
                return _twice(case.event, mid, seen)
            return Finding(
                f"{_describe(case.event, mid)} came before any failure and was fine, but your response "
                "lists it, so it comes back and is processed twice.",
                "twice",
            )
    # a message processed after a failure of its group breaks the order even when listed
    for i, r in enumerate(recs):
        if r["messageId"] in required and good[i] and r["body"] in seen.processed:
            before = [j for j in range(i) if groups[j] == groups[i] and not good[j]]
            if before:
                return Finding(
                    f"your handler processed {_describe(case.event, r['messageId'])} of customer "
                    f"'{groups[i]}' after that customer's earlier order failed: stop a group at its first "
                    "failure, and list the rest.",
                    "fifo processed",
                )
    return None


register(Exercise("queue-fifo", "queue", "Keep a FIFO group in order after a failure", _cases_fifo, _judge_fifo))


# --- 3. a poison message given up on ------------------------------------------------------------

PARK_FROM = 3


def _cases_poison() -> list[Case]:
    cases = [
        ("first delivery, one bad order", [_order(1, 1), _order(2, 0)], [1, 1]),
        ("a bad order received for the 3rd time", [_order(1, 1), _order(2, 0), _order(3, 2)], [1, 3, 1]),
        ("a bad order received twice", [_order(1, 0), _order(2, 2)], [2, 1]),
        ("a good order received 5 times", [_order(1, 4)], [5]),
        ("mixed", [_order(1, 0), _order(2, 0), _order(3, 0), _order(4, 1)], [1, 4, 2, 3]),
        ("a bad order received for the 12th time", [_order(1, 0), _order(2, 3)], [12, 1]),
    ]
    return [
        Case(name, _queue_event(bodies, seed, receive_counts=counts))
        for seed, (name, bodies, counts) in enumerate(cases, start=51)
    ]


def _judge_poison(handler: Callable[..., Any], case: Case) -> str | None:
    result, seen = _run(handler, case)
    parked = seen.parked
    problem = _what_it_did(
        result, seen, f"catch BadOrder: park the message from its {PARK_FROM}rd receive on, list it before."
    )
    if problem:
        return problem
    recs = case.event["Records"]
    to_list: list[str] = []
    to_park: list[str] = []
    for r in recs:
        if is_good_order(r["body"]):
            continue
        (to_park if int(r["attributes"]["ApproximateReceiveCount"]) >= PARK_FROM else to_list).append(r["messageId"])
    problem = _returned_nothing(result, to_list, case.event)
    if problem is None and (to_list or result.kind == "failure" or result.rule == id_of(misspelled_keys)):
        problem = _response_problem(case, result)
    if problem:
        return problem
    failed = set(result.failed_ids)
    for r in recs:
        mid, count = r["messageId"], r["attributes"]["ApproximateReceiveCount"]
        if mid in to_park and mid not in parked:
            return _not_parked(handler, case, mid, count)
        if mid in to_park and mid in failed:
            return Finding(
                f"{_describe(case.event, mid)} was parked but is still listed, so it comes back again and "
                "again: leave parked messages out of batchItemFailures.",
                "parked and listed",
            )
        if mid in to_list and mid in parked:
            return Finding(
                f"{_describe(case.event, mid)} failed on receive {count}, too early to give up: list it so "
                f"it is tried again, and park only from the {PARK_FROM}rd receive on.",
                "parked early",
            )
        if mid in to_list and mid not in failed:
            if seen.call_for(r["body"]) is None:
                return _lost(case.event, mid, seen)
            return Finding(
                f"{_describe(case.event, mid)} failed on receive {count} but is not listed, so it is "
                "deleted and that order is lost.",
                "lost",
            )
        if mid not in to_list and mid not in to_park and (mid in failed or mid in parked):
            done = "parked" if mid in parked else "listed"
            if seen.call_for(r["body"]) is None:
                return Finding(
                    f"your handler {done} {_describe(case.event, mid)} without passing it to process_order.",
                    f"{done} unprocessed",
                )
            return Finding(
                f"{_describe(case.event, mid)} was processed fine (process_order returned), but your handler "
                f"{done} it.",
                f"good {done}",
            )
    return None


def _not_parked(handler: Callable[..., Any], case: Case, mid: str, count: str) -> Finding:
    """Why a message due to be parked was not: no park call, a text comparison, a test that never holds, or too late."""
    said = f"{_describe(case.event, mid)} has been received {count} times and failed again"
    if not _calls_park(handler):
        return Finding(
            f"{said}, but your handler never calls park: call park(record) from the 3rd receive on.", "no park"
        )
    if int(count) >= 10:
        hint = "compare numbers, not texts (as text, '12' comes before '3'): use int(...)"
        return Finding(f"{said}, but your handler did not park it: {hint}.", "not parked, text")
    probe = Case("probe", _queue_event([_order(1, 0), _order(2, 0), _order(3, 0)], 97, receive_counts=[4, 7, 12]))
    if not _run(handler, probe)[1].parked:
        return Finding(
            f"{said}; your handler calls park, but the test before it never holds (it parks no bad order, "
            f"whatever its receive count): the count is a string, so compare int(...) with {PARK_FROM}.",
            "park never runs",
        )
    return Finding(
        f"{said}, but your handler did not park it: call park(record) from the {PARK_FROM}rd receive on.", "not parked"
    )


def _calls_park(handler: Callable[..., Any]) -> bool:
    """Whether `park` is a name the handler's code (or a function written beside it) uses."""
    from ._placeholders import _helpers_of

    stack = [getattr(f, "__code__", None) for f in (handler, *_helpers_of(handler))]
    while stack:
        code = stack.pop()
        if code is None:
            continue
        if "park" in code.co_names:
            return True
        stack.extend(c for c in code.co_consts if hasattr(c, "co_names"))
    return False


register(
    Exercise("queue-poison", "queue", "Give up on a poison message after 3 receives", _cases_poison, _judge_poison)
)
