"""The queue simulator: what a learner sees over time (Q1-Q11), and its invariants."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fnkit
import fnkit._import
from fnkit import queue


def fail_bodies(*bad: str):
    """A handler that reports the messages whose body is in `bad`."""

    def handler(event, context):
        return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"] if r["body"] in bad]}

    return handler


def ok_handler(event, context):
    return None


def test_every_message_is_deleted_when_the_handler_succeeds():
    sim = queue.QueueSim(seed=1)
    ids = [sim.send(f"m{i}") for i in range(23)]
    run = sim.run(ok_handler)
    assert run.summary()["deleted"] == 23
    assert [len(inv.deliveries) for inv in run.invocations] == [10, 10, 3]
    assert {m.message_id for m in run.messages} == set(ids)
    assert all(m.receive_count == 1 for m in run.messages)


def test_poison_message_is_retried_until_the_dead_letter_queue():
    sim = queue.QueueSim(max_receive_count=3, visibility_timeout_s=30, seed=2)
    for i in range(5):
        sim.send("poison" if i == 2 else f"fine {i}")
    run = sim.run(fail_bodies("poison"))
    poison = next(m for m in run.messages if m.body == "poison")
    assert poison.final_state == "dead-lettered"
    assert poison.receive_count == 3  # Q5: seen at most max_receive_count times
    assert [d["time_s"] for d in run.timeline(poison.message_id)] == [0.0, 30.0, 60.0, pytest.approx(90.0, abs=0.2)]
    assert run.timeline(poison.message_id)[-1]["rule"] == "Q5"
    assert run.dead_letter_queue == [poison]
    # the record shows the receive count as a string, "1" on first delivery (Q4)
    counts = [
        inv.event["Records"][0]["attributes"]["ApproximateReceiveCount"]
        for inv in run.invocations
        if poison.message_id in inv.message_ids
    ]
    assert counts == ["1", "2", "3"]


def test_without_a_dead_letter_queue_a_poison_message_stays_queued_until_the_end():
    sim = queue.QueueSim(seed=3)
    sim.send("poison")
    run = sim.run(fail_bodies("poison"), until_s=120)
    assert run.messages[0].final_state == "queued"
    assert run.messages[0].receive_count == 5  # t = 0, 30, 60, 90, 120
    assert run.summary()["queued"] == 1


def test_a_raising_handler_returns_the_whole_batch_and_deletes_nothing():
    calls = []

    def flaky(event, context):
        calls.append(len(event["Records"]))
        if len(calls) == 1:
            raise RuntimeError("database down")
        return None

    sim = queue.QueueSim(seed=4)
    for i in range(4):
        sim.send(f"m{i}")
    run = sim.run(flaky)
    first = run.invocations[0].outcome
    assert first is not None
    assert first.kind == "failure" and first.rule == "Q6"
    assert run.invocations[1].time_s == pytest.approx(30.0)
    assert run.summary()["deleted"] == 4
    assert all(m.receive_count == 2 for m in run.messages)


def test_a_handler_past_its_virtual_timeout_fails_the_batch_without_real_waiting():
    def slow(event, context):
        context.sleep(10)  # virtual seconds
        return None

    sim = queue.QueueSim(function_timeout_s=3, visibility_timeout_s=30, max_receive_count=2, seed=5)
    sim.send("x")
    started = time.perf_counter()
    run = sim.run(slow)
    assert time.perf_counter() - started < 2
    assert [inv.outcome.rule if inv.outcome else None for inv in run.invocations] == ["Q6", "Q6"]
    assert run.messages[0].final_state == "dead-lettered"


def test_a_handler_that_really_hangs_is_cut_at_the_real_timeout():
    def hang(event, context):
        time.sleep(30)

    sim = queue.QueueSim(function_timeout_s=0.2, visibility_timeout_s=30, max_receive_count=1, seed=6)
    sim.send("x")
    started = time.perf_counter()
    run = sim.run(hang, isolation="process")  # a real cut needs a worker
    assert time.perf_counter() - started < 5
    outcome = run.invocations[0].outcome
    assert outcome is not None and outcome.invocation is not None
    assert outcome.kind == "failure"
    assert outcome.invocation.timed_out


def test_reporting_off_deletes_reported_failures_and_warns():
    sim = queue.QueueSim(report_batch_item_failures=False, seed=7)
    sim.send("bad")
    sim.send("good")
    run = sim.run(fail_bodies("bad"))
    assert run.summary()["deleted"] == 2
    outcome = run.invocations[0].outcome
    assert outcome is not None
    assert outcome.rule == "Q7" and outcome.inferred
    assert [w.rule for w in outcome.issues.warnings] == ["Q7"]
    assert run.summary()["lost-failure warnings"] == 1


def fifo_sim(**kw):
    sim = queue.QueueSim(fifo=True, seed=8, **kw)
    for g in "ab":
        for i in range(4):
            sim.send(f"{g}{i}", group_id=g, dedup_id=f"{g}{i}")
    return sim


def test_fifo_reporting_only_the_failed_message_breaks_the_group_order():
    run = fifo_sim().run(fail_bodies("a1"), until_s=100)
    first = run.invocations[0]
    assert [d.message.body for d in first.deliveries] == ["a0", "a1", "a2", "a3", "b0", "b1", "b2", "b3"]
    warnings = first.outcome.issues.warnings
    assert [w.rule for w in warnings] == ["Q10", "Q10"]  # a2 and a3 follow a1 unlisted
    assert run.summary()["ordering warnings"] >= 2
    deleted_before_a1 = [
        m.body for m in run.messages if m.deleted_s is not None and m.deleted_s < 30 and m.body.startswith("a")
    ]
    assert deleted_before_a1 == ["a0", "a2", "a3"]


def guided_fifo_handler(event, context):
    """The platform's guidance: stop at the first failure of a group, list it and everything after it."""
    failed_groups, out = set(), []
    for r in event["Records"]:
        group = r["attributes"]["MessageGroupId"]
        if group in failed_groups or (r["body"] == "a1" and r["attributes"]["ApproximateReceiveCount"] == "1"):
            failed_groups.add(group)
            out.append({"itemIdentifier": r["messageId"]})
    return {"batchItemFailures": out}


def test_fifo_guided_handler_keeps_each_group_in_order():
    run = fifo_sim().run(guided_fifo_handler)
    assert run.summary()["ordering warnings"] == 0
    order = sorted((m.deleted_s, m.index, m.body) for m in run.messages)
    a_order = [body for _, _, body in order if body.startswith("a")]
    assert a_order == ["a0", "a1", "a2", "a3"]
    second = run.invocations[1]
    assert [d.message.body for d in second.deliveries] == ["a1", "a2", "a3"]
    assert second.time_s == pytest.approx(30.0)


def test_fifo_group_waits_while_its_message_is_in_flight():
    sim = queue.QueueSim(fifo=True, batch_size=2, seed=9)
    for i in range(3):
        sim.send(f"a{i}", group_id="a", dedup_id=f"a{i}")
    sim.send("b0", group_id="b", dedup_id="b0")
    run = sim.run(guided_fifo_handler)
    batches = [[d.message.body for d in inv.deliveries] for inv in run.invocations]
    # a batch may mix groups, and group a is delivered strictly in order, one batch at a time
    assert batches[0] == ["a0", "a1"]
    assert batches[1] == ["b0"]  # group a has a1 in flight: nothing of a until it returns
    assert batches[2] == ["a1", "a2"]


def test_fifo_deduplication_window_is_five_minutes_and_survives_deletion():
    sim = queue.QueueSim(fifo=True, seed=10)
    assert sim.send("x", group_id="g", dedup_id="d1") is not None
    assert sim.send("x again", group_id="g", dedup_id="d1") is None
    sim.run(ok_handler)
    assert sim.send("x", group_id="g", dedup_id="d1") is None  # deleted, still inside the window
    sim.now = 301
    assert sim.send("x", group_id="g", dedup_id="d1") is not None
    assert sim.deduplicated == 2


def test_content_based_deduplication_uses_the_body():
    sim = queue.QueueSim(fifo=True, content_based_deduplication=True, seed=11)
    assert sim.send("same", group_id="g") is not None
    assert sim.send("same", group_id="h") is None
    assert sim.send("other", group_id="g") is not None
    run = sim.run(ok_handler)
    import hashlib

    record = run.invocations[0].event["Records"][0]
    assert record["attributes"]["MessageDeduplicationId"] == hashlib.sha256(b"same").hexdigest()


@pytest.mark.parametrize(
    ("config", "rule"),
    [
        (dict(fifo=True, batch_size=11), "Q1"),
        (dict(batch_size=10_001, batch_window_s=1), "Q1"),
        (dict(batch_size=0), "Q1"),
        (dict(batch_size=20), "Q1"),
        (dict(fifo=True, batch_window_s=2), "Q1"),
        (dict(batch_window_s=301), "Q1"),
        (dict(visibility_timeout_s=2, function_timeout_s=3), "Q2"),
        (dict(visibility_timeout_s=50_000), "Q3"),
        (dict(max_receive_count=0), "Q3"),
    ],
)
def test_configurations_the_platform_refuses_raise_with_the_rule(config, rule):
    with pytest.raises(ValueError, match=rf"\({rule}\)"):
        queue.QueueSim(**config)


def test_fifo_sends_need_group_and_dedup_ids():
    sim = queue.QueueSim(fifo=True)
    with pytest.raises(ValueError, match="group_id"):
        sim.send("x")
    with pytest.raises(ValueError, match="dedup_id"):
        sim.send("x", group_id="g")
    with pytest.raises(ValueError, match="FIFO"):
        queue.QueueSim().send("x", group_id="g")


def test_large_batches_need_a_window_and_respect_the_payload_limit():
    sim = queue.QueueSim(batch_size=100, batch_window_s=2, seed=12)
    big = "x" * 200_000
    for _ in range(50):
        sim.send(big)
    run = sim.run(ok_handler)
    sizes = [len(inv.deliveries) for inv in run.invocations]
    assert max(sizes) < 50 and sum(sizes) == 50  # 6 MB per invocation (Q1)
    assert run.invocations[0].time_s == pytest.approx(2.0)  # the poller waited for the window


def test_events_handed_to_the_handler_are_valid_and_carry_fifo_attributes():
    seen = []

    def keep(event, context):
        seen.append(event)
        return guided_fifo_handler(event, context)

    fifo_sim(dialect="aws").run(keep)
    for event in seen:
        report = queue.validate_event(event)
        assert report.ok, report
        assert report.dialect == "aws"
        assert all("MessageGroupId" in r["attributes"] for r in event["Records"])


def test_run_tables_have_one_row_per_message_and_per_invocation():
    sim = queue.QueueSim(max_receive_count=2, seed=13)
    for i in range(12):
        sim.send("poison" if i == 0 else f"m{i}")
    run = sim.run(fail_bodies("poison"))
    messages = run.to_frame()
    assert len(messages) == 12
    assert messages.set_index("body").loc["poison", "state"] == "dead-lettered"
    invocations = run.to_frame("invocations")
    assert list(invocations["records"]) == [10, 2, 1]
    assert len(fnkit.tabulate(run)) == 12


def test_same_seed_same_run():
    def make():
        sim = queue.QueueSim(max_receive_count=3, seed=42)
        for i in range(30):
            sim.send(f"m{i}" if i % 7 else "poison")
        return sim.run(fail_bodies("poison"))

    a, b = make(), make()
    assert [inv.event for inv in a.invocations] == [inv.event for inv in b.invocations]
    assert a.summary() == b.summary()


# --- invariants -----------------------------------------------------------------

scenario = st.fixed_dictionaries(
    {
        "fifo": st.booleans(),
        "n": st.integers(0, 40),
        "batch_size": st.integers(1, 10),
        "max_receive_count": st.one_of(st.none(), st.integers(1, 4)),
        "fail_rate": st.floats(0, 1),
        "crash_rate": st.floats(0, 0.3),
        "junk_rate": st.floats(0, 0.2),
        "guided": st.booleans(),
        "seed": st.integers(0, 10_000),
        "groups": st.integers(1, 4),
        "dup_rate": st.floats(0, 0.3),
    }
)


@settings(max_examples=150, deadline=None)
@given(scenario)
def test_no_message_is_lost_or_invented(s):
    import random

    rng = random.Random(s["seed"])
    sim = queue.QueueSim(
        fifo=s["fifo"], batch_size=s["batch_size"], max_receive_count=s["max_receive_count"], seed=s["seed"]
    )
    sent = []
    for i in range(s["n"]):
        body = f"m{i}"
        if s["fifo"]:
            dedup = f"d{i - 1}" if i and rng.random() < s["dup_rate"] else f"d{i}"
            mid = sim.send(body, group_id=f"g{rng.randrange(s['groups'])}", dedup_id=dedup)
        else:
            mid = sim.send(body)
        if mid is not None:
            sent.append(mid)
    handler_rng = random.Random(s["seed"] + 1)

    def handler(event, context):
        r = handler_rng.random()
        if r < s["crash_rate"]:
            raise RuntimeError("boom")
        if r < s["crash_rate"] + s["junk_rate"]:
            return handler_rng.choice([{"batchItemFailures": [{"id": "x"}]}, "junk", {"batchItemFailures": 5}, {1, 2}])
        failed, out = set(), []
        for rec in event["Records"]:
            group = rec["attributes"].get("MessageGroupId")
            fail = handler_rng.random() < s["fail_rate"]
            if s["guided"] and group in failed:
                fail = True
            if fail:
                failed.add(group)
                out.append({"itemIdentifier": rec["messageId"]})
        return {"batchItemFailures": out}

    run = sim.run(handler, until_s=3600)
    # every sent, non-deduplicated message ends exactly once, in one final state
    assert sorted(m.message_id for m in run.messages) == sorted(sent)
    assert all(m.final_state in ("deleted", "dead-lettered", "queued") for m in run.messages)
    summary = run.summary()
    assert summary["deleted"] + summary["dead-lettered"] + summary["queued"] == len(sent)
    by_id = {m.message_id: m for m in run.messages}
    delivered_ids = [mid for inv in run.invocations for mid in inv.message_ids]
    assert set(delivered_ids) <= set(sent)
    for inv in run.invocations:
        assert inv.outcome is not None
        for mid in inv.outcome.deleted_ids:
            # nothing is deleted except after a delivery whose outcome deleted it
            assert by_id[mid].final_state == "deleted"
        assert inv.outcome is not None
        assert set(inv.outcome.failed_ids) | set(inv.outcome.deleted_ids) == set(inv.message_ids)
    for m in run.messages:
        if m.final_state == "deleted":
            assert any(inv.outcome and m.message_id in inv.outcome.deleted_ids for inv in run.invocations)
        if s["max_receive_count"] is not None:
            assert m.receive_count <= s["max_receive_count"]
    # FIFO: one batch in flight per group and order kept: within a group, receives follow send
    # order as long as the handler follows the guidance and nothing is dead-lettered mid-group
    if s["fifo"] and s["guided"] and s["max_receive_count"] is None and summary["ordering warnings"] == 0:
        deleted = sorted((m.deleted_s, m.index, m) for m in run.messages if m.final_state == "deleted")
        per_group: dict[str | None, list[int]] = {}
        for _, index, m in deleted:
            per_group.setdefault(m.group_id, []).append(index)
        for indexes in per_group.values():
            assert indexes == sorted(indexes)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 1000), st.integers(1, 25))
def test_same_seed_gives_the_same_run(seed, n):
    def make():
        sim = queue.QueueSim(max_receive_count=2, seed=seed)
        for i in range(n):
            sim.send(f"m{i}")
        return sim.run(fail_bodies("m0", "m3"))

    a, b = make(), make()
    assert [inv.event for inv in a.invocations] == [inv.event for inv in b.invocations]
    assert [(m.message_id, m.final_state, m.receive_count) for m in a.messages] == [
        (m.message_id, m.final_state, m.receive_count) for m in b.messages
    ]


# --- the default bound: a wrong answer that keeps a message coming back ends the run -------------------


def _orders_sim():
    """The exercise's queue: three orders, the second one bad (qty 0), no dead-letter queue."""
    import json

    sim = queue.QueueSim(visibility_timeout_s=30, seed=2)
    for n, qty in enumerate([1, 0, 2], start=1):
        sim.send(json.dumps({"order": n, "qty": qty}))
    return sim


def give_up_compares_a_string(event, context):
    """exercise 01's give_up, with ApproximateReceiveCount compared as it comes (a string) with 3."""
    from fnkit.workshop import BadOrder, park, process_order

    failures = []
    for record in event["Records"]:
        try:
            process_order(record["body"])
        except BadOrder:
            if record["attributes"]["ApproximateReceiveCount"] >= 3:
                park(record)
            else:
                failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


def give_up_parks_and_lists(event, context):
    """exercise 01's give_up, parking the message from its 3rd receive but listing it still."""
    from fnkit.workshop import BadOrder, park, process_order

    failures = []
    for record in event["Records"]:
        try:
            process_order(record["body"])
        except BadOrder:
            if int(record["attributes"]["ApproximateReceiveCount"]) >= 3:
                park(record)
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


@pytest.mark.parametrize(
    ("handler", "left"),
    [(give_up_compares_a_string, 3), (give_up_parks_and_lists, 1)],
    ids=["str>=int", "parked+listed"],
)
def test_a_handler_that_never_lets_a_message_go_stops_at_the_default_bound_and_says_so(handler, left):
    sim = _orders_sim()
    with pytest.warns(RuntimeWarning, match="stopped at its bound") as caught:
        run = sim.run(handler, isolation="none")
    # (only the bound's warnings count: the garbage collector may report earlier tests' leftovers meanwhile)
    bound = [w for w in caught if "stopped at its bound" in str(w.message)]
    assert run.stopped is not None and len(bound) == 1 and str(bound[0].message) == run.stopped
    assert bound[0].filename == __file__  # the warning points at the user's call, not at fnkit
    assert run.end_s == pytest.approx(queue._sim.BOUND_S, abs=31)  # a virtual day
    assert f"with {left} message{'s' if left > 1 else ''} still in the queue" in run.stopped
    # what happened, counted: all three came back every time, not "one"
    assert ("(each received 2,881 times)" if left > 1 else "(received 2,881 times)") in run.stopped
    assert run.stopped.count(". ") == 0 and run.stopped.endswith(".")  # one sentence
    assert run.summary()["queued"] == left
    assert run.stopped in repr(run) and "stopped at its bound" in run._repr_html_()


def test_the_invocation_bound_ends_a_loop_that_spends_no_virtual_time():
    sim = queue.QueueSim(visibility_timeout_s=0.001, function_timeout_s=0.001, invocation_s=0.001, seed=4)
    sim.send("poison")
    with pytest.warns(RuntimeWarning, match="stopped at its bound"):
        run = sim.run(fail_bodies("poison"), isolation="none")
    bound = queue._sim.BOUND_INVOCATIONS + queue._sim.BOUND_INVOCATIONS_PER_MESSAGE
    assert len(run.invocations) == bound and run.end_s < queue._sim.BOUND_S


def test_a_run_that_ends_by_itself_or_at_the_callers_limit_says_nothing_of_a_bound(recwarn):
    sim = _orders_sim()
    finished = sim.run(fail_bodies(), isolation="none")
    assert finished.stopped is None and "bound" not in repr(finished)
    sim = _orders_sim()
    asked = sim.run(give_up_parks_and_lists, until_s=120, isolation="none")
    assert asked.stopped is None and asked.summary()["queued"] == 1
    assert not [w for w in recwarn if "bound" in str(w.message)]


def test_in_a_notebook_the_bound_is_a_line_of_the_cells_output_not_a_python_warning(monkeypatch, recwarn, capsys):
    monkeypatch.setattr(fnkit._import, "in_notebook", lambda: True)
    run = _orders_sim().run(give_up_parks_and_lists, isolation="none")
    shown = capsys.readouterr().out
    assert " ".join(shown.split()) == run.stopped and max(len(line) for line in shown.splitlines()) <= 88
    assert not [w for w in recwarn if "bound" in str(w.message)]
