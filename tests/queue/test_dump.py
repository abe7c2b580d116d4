"""A queue dump as an analyst has it: one row per message (id, receive count, line, body size), and a simulation
that starts from it."""

from __future__ import annotations

from pathlib import Path

import fnkit
from fnkit import queue
from tests.night import write_night

DATA = Path(__file__).resolve().parents[2] / "data" / "queue"


def test_a_replayed_dump_has_one_row_per_message_with_its_id_receive_count_line_and_size(tmp_path):
    night = write_night(tmp_path, requests=10, files=1, messages=400)
    frame = fnkit.replay(lambda event, context: None, queue.events_from_messages(night.dump, progress=False))
    assert len(frame) == night.messages and frame["item"].notna().all()
    assert (frame["receive_count"] == 2).sum() == night.redelivered > 0
    assert str(frame["receive_count"].dtype) == "Int16" and str(frame["line"].dtype) == "Int32"
    text = night.dump.read_text().splitlines()
    first = frame.iloc[0]
    assert text[first["line"] - 1].strip() == "{" and first["item"] in text[first["line"]]  # the object's first line
    bodies = (frame["message_bytes"] > 0).all() and frame["file"].cat.categories.tolist() == [str(night.dump)]
    assert bodies


def test_a_batch_failing_validation_is_a_row_for_each_of_its_messages_located_by_line():
    frame = fnkit.replay(lambda event, context: None, DATA / "dead-letter.jsonl")
    failed = frame[frame["result"] == "invalid event"]
    assert len(failed) == 6 and failed["item"].is_unique and failed["item"].notna().all()
    assert sorted(failed["line"].unique()) == [2, 3] and (failed["rule"] == "Q13").all()


def test_a_simulation_starts_from_a_dump_keeping_ids_and_receive_counts():
    dumped = list(queue.events_from_messages(DATA / "dead-letter.jsonl", progress=False))
    latest = {r["messageId"]: int(r["attributes"]["ApproximateReceiveCount"]) for b in dumped for r in b["Records"]}
    sim = queue.QueueSim.from_messages(DATA / "dead-letter.jsonl", max_receive_count=6)
    assert {m.message_id: m.receive_count for m in sim.messages()} == latest
    sim.run(lambda event, context: None)
    states = {m.message_id: (m.receive_count, m.final_state) for m in sim.messages()}
    for mid, count in latest.items():  # the next receive counts after the dump's; past 6 it is dead-lettered
        assert states[mid] == ((count + 1, "deleted") if count < 6 else (count, "dead-lettered"))
