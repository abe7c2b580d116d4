"""Replay and the corpus: one handler over many events of any source."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import fnkit
from fnkit import corpus, queue


def failing_on_poison(event, context):
    if "Records" in event:
        return {
            "batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"] if r["body"] == "poison"]
        }
    if "envelope" in event:
        return {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}]}
    return {"statusCode": 200, "body": "ok"}


def test_replay_gives_one_row_per_record_with_the_deciding_rule():
    events = [queue.build_event(["a", "poison", "c"], seed=1), queue.build_event(["d"], seed=2)]
    frame = fnkit.replay(failing_on_poison, events)
    assert len(frame) == 4
    assert list(frame["event"]) == [0, 0, 0, 1]
    assert list(frame["result"]) == ["delete", "retry", "delete", "delete"]
    assert set(frame["rule"]) == {"Q8"}


def test_replay_passes_source_options_and_reports_invalid_events():
    good = queue.build_event(["poison"], seed=3)
    broken = queue.build_event(["x"], seed=4)
    broken["Records"][0]["md5OfBody"] = "0" * 32
    frame = fnkit.replay(failing_on_poison, [good, broken, {"hello": 1}, "{not json"], report_batch_item_failures=False)
    assert list(frame["result"]) == ["delete", "invalid event", "invalid event", "invalid event"]
    assert list(frame["rule"]) == ["Q7", "Q13", "G3", "G0"]


def test_replay_survives_handlers_that_raise_or_return_junk():
    def bad(event, context):
        raise ValueError("nope")

    frame = fnkit.replay(bad, [queue.build_event(["a", "b"], seed=5)])
    assert list(frame["result"]) == ["retry", "retry"] and set(frame["rule"]) == {"Q6"}
    frame = fnkit.replay(lambda e, c: {1, 2}, [queue.build_event(["a"], seed=6)])
    assert list(frame["kind"]) == ["failure"]


def test_the_committed_corpus_is_what_the_generator_makes(tmp_path):
    fresh = corpus.write(tmp_path / "c.jsonl.gz")
    assert fresh.read_bytes() == corpus.DEFAULT_PATH.read_bytes(), (
        "fnkit/data/corpus.jsonl.gz is stale: run `python -m fnkit.corpus` and commit it"
    )


def test_the_bundled_corpus_is_package_data_named_by_corpus_path():
    package = Path(fnkit.__file__).resolve().parent
    assert fnkit.corpus is corpus  # reachable after a plain `import fnkit`
    assert corpus.path() == package / "data" / "corpus.jsonl.gz" == corpus.DEFAULT_PATH
    assert corpus.load() == corpus.load(corpus.path())


def test_the_corpus_covers_every_source_and_some_awkward_cases():
    events = corpus.load()
    assert len(events) >= 2000
    sources = [fnkit.detect_source(e) for e in events]
    assert {s: sources.count(s) > 200 for s in ("queue", "mail", "alb")} == {"queue": True, "mail": True, "alb": True}
    reports = [fnkit.validate(e) for e in events]
    assert any(not r.ok for r in reports)  # corrupted records are part of it
    assert any(queue.is_fifo(e) for e, s in zip(events, sources, strict=True) if s == "queue")
    assert any(r.dialect == "aws" for r in reports) and any(r.dialect == "provider" for r in reports)


def test_load_reads_plain_and_compressed_json_lines_and_json_lists(tmp_path):
    events = [queue.build_event(["a"], seed=7), queue.build_event(["b"], seed=8)]
    plain = tmp_path / "e.jsonl"
    plain.write_text("".join(json.dumps(e) + "\n" for e in events))
    packed = tmp_path / "e.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    listed = tmp_path / "e.json"
    listed.write_text(json.dumps(events))
    assert corpus.load(plain) == corpus.load(packed) == corpus.load(listed) == events
    assert len(fnkit.replay(failing_on_poison, str(packed))) == 2
