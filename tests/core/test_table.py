"""Tables at the edge (fnkit/_table.py): `fnkit.tabulate` of reports, invocations, outcomes, dicts."""

from __future__ import annotations

import pytest

import fnkit
from fnkit import queue


@pytest.fixture
def broken_report():
    event = queue.build_event(["a", "b"])
    event["Records"][0]["md5OfBody"] = "x"
    event["Records"][1]["eventSource"] = "aws:sns"
    return queue.validate_event(event)


def test_one_report_is_one_row_per_issue(broken_report):
    frame = fnkit.tabulate(broken_report)
    assert list(frame["rule"]) == ["QS4", "Q13"]
    assert list(frame["path"]) == ["$.Records[1].eventSource", "$.Records[0].md5OfBody"]
    assert set(frame["source"]) == {"queue"}


def test_many_reports_stack(broken_report):
    assert len(fnkit.tabulate([broken_report, broken_report])) == 4


def test_a_valid_report_has_no_rows():
    assert fnkit.tabulate(queue.validate_event(queue.build_event(["a"]))).empty


def test_outcome_rows_and_invocation_rows_mix():
    event = queue.build_event(["a", "b"])
    frame = fnkit.tabulate([queue.outcome(event, None), fnkit.invoke(lambda e, c: 1, {})])
    assert len(frame) == 3
    assert list(frame["action"][:2]) == ["delete", "delete"]
    assert frame["status"].iloc[2] == "returned"


def test_plain_dicts_are_rows():
    frame = fnkit.tabulate([{"a": 1}, {"a": 2}])
    assert list(frame["a"]) == [1, 2]
    assert list(fnkit.tabulate({"a": 1})["a"]) == [1]


def test_nothing_is_an_empty_frame():
    assert fnkit.tabulate([]).empty


def test_unknown_items_are_refused_by_name():
    with pytest.raises(TypeError, match="int"):
        fnkit.tabulate([1])


# --- shown so a person can read it ------------------------------------------------------------


def test_a_table_is_a_dataframe_that_stays_one_when_sliced():
    import pandas as pd

    frame = fnkit.tabulate(queue.outcome(queue.build_event(["a", "b"], seed=1), None))
    assert isinstance(frame, pd.DataFrame)
    for part in (frame[["item", "action"]], frame.head(1), frame[frame["action"] == "delete"]):
        assert type(part) is type(frame)


def test_the_html_is_left_aligned_whole_and_says_absent_with_a_dash():
    long = "a sentence that goes on and on, well past the fifty characters pandas keeps"
    frame = fnkit.tabulate(
        [{"text": long, "n": 3, "missing": None}, {"text": "short", "n": None, "missing": float("nan")}]
    )
    html = frame._repr_html_()
    assert html is not None
    assert long in html  # never cut
    assert "text-align:left" in html and "text-align:right" in html  # text left, numbers right
    assert html.count(">—</td>") == 3 and "NaN" not in html and "None" not in html
    assert ">3</td>" in html and "3.0" not in html  # a whole number stays whole in a column with a gap


def test_a_long_table_shows_its_first_and_last_rows_and_says_how_many():
    frame = fnkit.tabulate([{"n": i} for i in range(100)])
    html = frame._repr_html_() or ""
    assert ">0</td>" in html and ">99</td>" in html and ">50</td>" not in html
    assert "100 rows × 1 columns" in html


def test_ids_are_cut_only_with_an_ellipsis_and_kept_whole_in_the_tooltip():
    from fnkit._cells import html_table, short_id, short_ids_in, shorten

    mid = "05b6e6e3-07d4-4edc-9143-1193e6c3f339"
    assert short_id(mid) == "05b6e6e3…f339" and short_id("m1") == "m1"
    html = html_table([{"item": mid}], ids={"item"})
    assert "05b6e6e3…f339" in html and f"title='{mid}'" in html
    assert short_ids_in(f"'{mid}' is not a messageId") == "'05b6e6e3…f339' is not a messageId"
    assert short_ids_in("multiValueQueryStringParameters stays whole") == "multiValueQueryStringParameters stays whole"
    assert shorten("x" * 50, 10) == "x" * 9 + "…" and shorten("a\n  b", 10) == "a b"


def test_reports_and_outcomes_show_readable_tables(broken_report):
    html = broken_report._repr_html_()
    assert "fnkit-grid" in html and "text-align:left" in html
    event = queue.build_event(["a", "b"], seed=1)
    assert "fnkit-grid" in queue.outcome(event, None)._repr_html_()


def test_a_dataframe_tabulated_is_the_same_rows_shown_readably():
    import pandas as pd

    frame = pd.DataFrame({"n": [1, None]}).rename_axis("source").rename_axis("handler", axis=1)
    table = fnkit.tabulate(frame)
    assert table.equals(frame) and type(table).__name__ == "Table"
    assert "handler / source" in (table._repr_html_() or "")


# --- the plain-text table (fnkit.testing's failure messages, where pandas may be absent) ----------


def test_a_text_table_aligns_text_left_and_numbers_right_and_shows_absent_values():
    from fnkit._cells import text_table

    rows = [{"item": "m-1", "index": 0, "action": "delete"}, {"item": "m-22", "index": 10, "note": None}]
    assert text_table(rows).splitlines() == [
        "item  index  action  note",
        "m-1       0  delete  —",
        "m-22     10  —       —",
    ]


def test_a_text_table_cuts_long_cells_with_an_ellipsis_and_keeps_the_columns_asked_for():
    from fnkit._cells import text_table

    text = text_table([{"a": "x" * 30, "b": 1, "c": 2}], ["c", "a"], width=10)
    assert text.splitlines() == ["c  a", "2  xxxxxxxxx…"]


def test_a_frame_of_numbered_rows_shows_no_index_column_but_a_named_index_stays():
    import pandas as pd

    from fnkit._cells import frame_html

    plain = frame_html(pd.DataFrame({"item": ["a", "b"], "action": ["delete", "retry"]}))
    assert plain.count("<th ") == 2  # item and action: no column of row numbers
    filtered = pd.DataFrame({"item": ["a", "b", "c"]}).iloc[[0, 2]]
    assert frame_html(filtered).count("<th ") == 1
    grouped = pd.DataFrame({"result": ["ok", "ok", "bad"]}).groupby("result").size().rename("rows").to_frame()
    assert ">result<" in frame_html(grouped) and ">bad<" in frame_html(grouped)  # the index says something


def test_a_one_word_cell_is_never_broken_in_the_middle_but_a_sentence_wraps():
    from fnkit._cells import cell_html

    assert "white-space:nowrap" in cell_html("additionalProperties")
    assert "overflow-wrap:anywhere" in cell_html("The messageId is there, but under 'id' instead.")
