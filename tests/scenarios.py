"""Random simulator scenarios and their invariants, shared by tests/test_scenarios.py (a few dozen)
and tests/benchmarks/bench_scenarios.py (the soak: 1,000 of each).

Queue: standard and FIFO, a dead-letter queue or none, random failures, raised errors, virtual
timeouts, malformed responses. Every sent message ends deleted, dead-lettered or queued, none is
lost or delivered after it was deleted, and FIFO groups are received in send order.
Mail: random recipients, modes, fallbacks, retries and answers. Every recipient of the envelope
gets exactly one disposition.
"""

from __future__ import annotations

import random
from typing import Any

import fnkit
from fnkit import mail, queue
from fnkit.types import Isolation

BEHAVIOURS = [
    "ok",
    "fail-some",
    "raise",
    "virtual-timeout",
    "not-json",
    "wrong-key",
    "unknown-id",
    "not-a-dict",
    "none",
]


def queue_handler(event: dict[str, Any], context: Any) -> Any:
    """Behaves as the scenario says (in the event's bodies): deterministic, and movable to a worker."""
    records = event["Records"]
    rng = random.Random(records[0]["messageId"] + records[0]["attributes"]["ApproximateReceiveCount"])
    behaviour = rng.choice(BEHAVIOURS)
    if behaviour == "raise":
        raise RuntimeError("the handler failed")
    if behaviour == "virtual-timeout":
        context.sleep(context.get_remaining_time_in_millis() / 1000 + 1)
        return {"batchItemFailures": []}
    if behaviour == "not-json":
        return fnkit.Raw('{"batchItemFailures": [')
    if behaviour == "wrong-key":
        return {"BatchItemFailures": []}
    if behaviour == "unknown-id":
        return {"batchItemFailures": [{"itemIdentifier": "no-such-id"}]}
    if behaviour == "not-a-dict":
        return ["batchItemFailures"]
    if behaviour == "none":
        return None
    failing = [r["messageId"] for r in records if behaviour == "fail-some" and rng.random() < 0.4]
    return {"batchItemFailures": [{"itemIdentifier": i} for i in failing]}


def queue_scenario(seed: int, isolation: Isolation) -> dict[str, Any]:
    """Run one random QueueSim scenario; check its invariants (AssertionError says which); its summary."""
    rng = random.Random(seed)
    fifo = rng.random() < 0.5
    function_timeout = rng.choice([1, 3, 10])
    sim = queue.QueueSim(
        fifo=fifo,
        visibility_timeout_s=function_timeout * rng.choice([1, 2, 6]),
        max_receive_count=rng.choice([None, 1, 2, 3, 5]),
        batch_size=rng.randint(1, 10),
        report_batch_item_failures=rng.random() < 0.8,
        function_timeout_s=function_timeout,
        content_based_deduplication=fifo and rng.random() < 0.5,
        seed=seed,
    )
    sent: list[str] = []
    groups = [f"g{i}" for i in range(rng.randint(1, 4))]
    for n in range(rng.randint(1, 30)):
        body = f"message {n % max(1, rng.randint(5, 40))}"
        if fifo:
            dedup = None if sim.content_based_deduplication else f"d{rng.randint(0, 25)}"
            mid = sim.send(body, group_id=rng.choice(groups), dedup_id=dedup)
        else:
            mid = sim.send(body)
        if mid is not None:
            sent.append(mid)
    run = sim.run(queue_handler, until_s=3600, isolation=isolation)
    check_queue_run(run, sent, fifo)
    return run.summary()


def check_queue_run(run: Any, sent: list[str], fifo: bool) -> None:
    messages = {m.message_id: m for m in run.messages}
    assert sorted(messages) == sorted(sent), "a sent message is missing from the run, or one appeared"
    summary = run.summary()
    assert summary["deleted"] + summary["dead-lettered"] + summary["queued"] == len(sent), "a message was lost"
    for m in run.messages:
        assert m.final_state in ("deleted", "dead-lettered", "queued")
        if m.final_state == "deleted":
            assert m.receive_count >= 1, f"{m.message_id} deleted without being received"
    dlq_ids = [m.message_id for m in run.dead_letter_queue]
    assert len(dlq_ids) == len(set(dlq_ids)) == summary["dead-lettered"], "a message dead-lettered twice"
    deleted_at: dict[str, float] = {}
    first_receive: dict[str, float] = {}
    for inv in run.invocations:
        ids = inv.message_ids
        assert len(ids) == len(set(ids)), "a message twice in one batch"
        for mid in ids:
            assert mid not in deleted_at, f"{mid} delivered again after it was deleted"
            first_receive.setdefault(mid, inv.time_s)
        for mid in inv.outcome.deleted_ids:
            deleted_at[mid] = inv.time_s
        assert set(inv.outcome.failed_ids) | set(inv.outcome.deleted_ids) == set(ids), "a record without a fate"
    if fifo:
        by_group: dict[str | None, list[Any]] = {}
        for m in run.messages:  # in send order
            by_group.setdefault(m.group_id, []).append(m)
        for group, members in by_group.items():
            times = [first_receive[m.message_id] for m in members if m.message_id in first_receive]
            received = [m for m in members if m.message_id in first_receive]
            assert received == members[: len(received)], f"group {group}: a later message was received first"
            assert times == sorted(times), f"group {group}: first receives out of send order"
        for inv in run.invocations:
            seen: dict[str, int] = {}
            for d in inv.deliveries:
                m = d.message
                assert seen.get(m.group_id, -1) < m.index, f"group {m.group_id}: out of order within a batch"
                seen[m.group_id] = m.index


# --- mail ---------------------------------------------------------------------------------------------

ACTIONS = ["DEFAULT", "DROP", "BOUNCE", "MOVE_TO_JUNK", "BYPASS_SPAM_CHECK"]
MAIL_BEHAVIOURS = ["per-recipient", "all", "raise", "invalid", "empty", "unknown-recipient", "not-json", "mixed"]


def mail_handler(event: dict[str, Any], context: Any) -> Any:
    rng = random.Random(event["invocationId"] + context.aws_request_id)
    behaviour = rng.choice(MAIL_BEHAVIOURS)
    recipients = [r["address"] for r in event["envelope"]["recipients"]]
    if behaviour == "raise":
        raise ValueError("the rule's function failed")
    if behaviour == "invalid":
        return {"actions": [{"action": {"type": "EXPLODE"}, "allRecipients": True}]}
    if behaviour == "empty":
        return {"actions": []}
    if behaviour == "not-json":
        return fnkit.Raw("{actions")
    if behaviour == "all":
        return {"actions": [{"action": {"type": rng.choice(ACTIONS)}, "allRecipients": True}]}
    actions: list[dict[str, Any]] = [
        {"action": {"type": rng.choice(ACTIONS)}, "recipients": [address]}
        for address in recipients
        if rng.random() < 0.7
    ]
    if behaviour == "unknown-recipient":
        actions.append({"action": {"type": "DEFAULT"}, "recipients": ["stranger@example.net"]})
    if behaviour == "mixed":
        actions.append({"action": {"type": rng.choice(ACTIONS)}, "allRecipients": True})
    return {"actions": actions}


def mail_scenario(seed: int, isolation: Isolation) -> dict[str, Any]:
    """Run one random MailRule; every recipient must get exactly one disposition."""
    rng = random.Random(seed)
    outbound = rng.random() < 0.3
    recipients = [f"user{i}@{'example.net' if outbound else 'example.com'}" for i in range(rng.randint(1, 12))]
    event = mail.build_event(
        mail_from="someone@example.com" if outbound else "someone@example.org",
        recipients=recipients,
        flow_direction="OUTBOUND" if outbound else "INBOUND",
        subject=f"case {seed}",
        seed=seed,
    )
    rule = mail.MailRule(
        mode=rng.choice(["sync", "sync", "async"]),
        fallback_action=rng.choice(["DEFAULT", "DROP", "BOUNCE"]),
        rule_timeout_minutes=rng.choice([0, 0, 5, 30]),
        response_timeout_s=5,
        seed=seed,
        store=mail.MessageStore(),
    )
    run = rule.run(mail_handler, event, isolation=isolation)
    decisions = run.outcome.decisions
    lowered = [k.lower() for k in decisions]
    assert len(lowered) == len(set(lowered)), "a recipient has two dispositions"
    for address in recipients:
        assert address in decisions, f"{address} got no disposition"
        assert decisions[address].action in ACTIONS, decisions[address]
    assert run.outcome.status in ("applied", "fallback", "ignored")
    assert len(run.attempts) >= 1 and len({a.invocation_id for a in run.attempts}) == 1
    return {"status": run.outcome.status, "attempts": len(run.attempts)}
