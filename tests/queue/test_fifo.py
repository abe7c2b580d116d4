"""One answer to "is this batch FIFO" (fnkit/queue/_fifo.py): the checks, outcome, importer and QueueSim agree."""

from __future__ import annotations

import pytest

from fnkit import queue
from fnkit.types import QueueEvent

from .test_messages import message

PLAIN_ARN = "arn:aws:sqs:us-east-1:123456789012:orders"


def _fifo_batch(arn: str | None = None) -> QueueEvent:
    event = queue.build_event(["a", "b", "c"], fifo=True, group_ids=["g", "g", "h"], seed=4)
    for record in event["Records"]:
        record["eventSourceARN"] = arn or record["eventSourceARN"]
    return event


def _q10(event: QueueEvent) -> list[str]:
    ids = queue.correlation_ids(event)
    result = queue.outcome(event, {"batchItemFailures": [{"itemIdentifier": ids[0]}]})
    return [w.path for w in result.warnings if w.rule == "Q10"]


@pytest.mark.parametrize("arn", [None, PLAIN_ARN], ids=["fifo-arn", "placeholder-arn"])
def test_a_fifo_batch_is_fifo_to_the_checks_and_to_the_outcome(arn):
    event = _fifo_batch(arn)
    assert queue.is_fifo(event)
    assert queue.validate_event(event).ok  # QS5 holds; a placeholder ARN is a Q15 warning
    assert _q10(event) == ["$.Records[1]"]  # b follows failed a in group g, unlisted: the order breaks


def test_a_stray_group_id_under_a_standard_arn_is_not_fifo_anywhere():
    # the outcome used to take the first record's MessageGroupId alone as FIFO and warn Q10
    event = queue.build_event(["a", "b", "c"], seed=4)
    for record in event["Records"]:
        record["attributes"]["MessageGroupId"] = "g"
    assert not queue.is_fifo(event)
    assert {i.rule for i in queue.validate_event(event).errors} == {"QS5"}
    assert _q10(event) == []


def test_the_importer_reads_the_queue_kind_as_the_checks_do():
    fifo_attrs = {"MessageGroupId": "g1", "MessageDeduplicationId": "d", "SequenceNumber": "18000000000000000001"}
    fifo = [message(n, Attributes={**message(n)["Attributes"], **fifo_attrs}) for n in range(12)]
    # a standard queue's name given, but the messages carry a group and a sequence number: FIFO (Q15), so ten a batch
    events = list(queue.events_from_messages({"Messages": fifo}, queue_arn=PLAIN_ARN, batch_size=50))
    assert [len(e["Records"]) for e in events] == [10, 2]
    assert all(queue.is_fifo(e) for e in events)
    assert [i.rule for i in queue.validate_event(events[0])] == ["Q15"]


def test_queuesim_events_are_fifo_exactly_when_the_queue_is():
    for fifo in (False, True):
        sim = queue.QueueSim(fifo=fifo, seed=1)
        for n in range(3):
            if fifo:
                sim.send(f"m{n}", group_id="g", dedup_id=f"d{n}")
            else:
                sim.send(f"m{n}")
        seen: list[bool] = []

        def handler(event: object, context: object, seen: list[bool] = seen) -> None:
            seen.append(queue.is_fifo(event))

        sim.run(handler)
        assert seen and set(seen) == {fifo}
