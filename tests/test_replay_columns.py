"""The replay frame's columns: one meaning each, one dtype each, whatever sources a replay mixes (fnkit.columns())."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import fnkit
from fnkit import alb, mail, queue
from fnkit._replay.columns import kinds_of_rows


def handler(event: dict[str, Any], context: object) -> Any:
    if "Records" in event:
        return None
    if "envelope" in event:
        return {"actions": [{"action": {"type": "BOUNCE"}, "allRecipients": True}]}
    if event["path"] == "/broken":
        return {"statusCode": "200"}  # a string status: a 502
    return {"statusCode": 200, "body": "ok"}


def mixed() -> list[Any]:
    return [
        mail.build_event(mail_from="s@example.org", recipients=["a@example.com", "b@example.com"], seed=1),
        alb.build_event("GET", "/broken", seed=2),
        queue.build_event(["x", "y"], seed=3),
        alb.build_event("GET", "/fine", seed=4),
    ]


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return fnkit.replay(handler, mixed())


def test_a_mixed_replay_keeps_every_column_in_its_documented_dtype(frame):
    schema = fnkit.columns().set_index("name")["dtype"]
    typed = [c for c in frame.columns if schema[c] != "object"]
    wrong = {c: str(frame[c].dtype) for c in typed if str(frame[c].dtype) != schema[c]}
    assert not wrong  # before: status was an object column (502 on a request, "applied" on a recipient)
    assert list(frame.columns) == [c for c in schema.index if c in frame.columns]  # the schema's order
    assert list(frame["status"].dropna()) == [502, 200]
    assert list(frame["mail_status"].dropna()) == ["applied", "applied"]


def test_reason_is_a_sentence_on_every_row_and_the_phrase_has_its_own_column(frame):
    requests = frame[frame["source"] == "alb"]
    assert list(requests["reason_phrase"]) == ["Bad Gateway", "OK"]
    broken = requests["reason"].iloc[0]
    assert broken.startswith("502 Bad Gateway") and "statusCode" in broken, broken  # the sentence, not the phrase
    assert frame["reason"].str.len().gt(20).all()  # a sentence on every row, whatever the source
    assert "explanation" not in frame.columns  # reason holds it


@pytest.mark.parametrize("source", ["queue", "mail", "alb"])
def test_the_schema_says_which_columns_each_source_gives(frame, source):
    alone = fnkit.replay(handler, [e for e in mixed() if fnkit.detect_source(e) == source])
    assert list(alone.columns) == kinds_of_rows({"all", source})


def repeated_strings(frame: pd.DataFrame) -> dict[str, str]:
    """Object columns whose strings repeat on the rows (rows / distinct): what a categorical would hold once."""
    out = {}
    for name in frame.columns:
        values = frame[name].dropna()
        if frame[name].dtype == object and all(isinstance(v, str) for v in values) and values.nunique() < len(values):
            out[name] = f"{len(values)} rows, {values.nunique()} distinct"
    return out


def test_a_replay_repeats_no_string_on_its_rows_text_is_categorical():
    events = (
        mixed() * 3
        + [alb.build_event("GET", "/fine", seed=5)]
        + [mail.build_event(mail_from="s@x.org", recipients=["a@x.org"])] * 2
    )
    frame = fnkit.replay(handler, events, label="v42")
    assert not repeated_strings(frame)  # before: item, reason, path, warnings, recipient held a string per row
    schema = fnkit.columns().set_index("name")["dtype"]
    assert "object" not in set(schema)  # every text column is categorical
    for name in ("handler", "item", "reason", "path", "warnings", "recipient", "bounce_message"):
        assert isinstance(frame[name].dtype, pd.CategoricalDtype), name
    # what an analyst writes still works on a categorical: .str, comparison, counting
    assert frame["warnings"].str.contains("ignored", na=False).dtype == bool
    assert (frame["path"] == "/fine").sum() == 4 and frame["item"].value_counts().max() >= 3


def test_a_label_that_cannot_be_a_category_is_kept_as_it_is():
    label = {"version": 42}  # unhashable: no category, an object column
    frame = fnkit.replay(handler, mixed(), label=label)
    assert frame["handler"].dtype == object and frame["handler"].iloc[0] == label
