"""What the queue poller does with a response (fnkit/queue/_outcome.py): Q6, Q7, Q8, Q8a-c, Q10, run."""

from __future__ import annotations

import json
import math
import time
from typing import Any

import pytest

import fnkit
from fnkit import queue


def _failures(*ids):
    return {"batchItemFailures": [{"itemIdentifier": i} for i in ids]}


def _assert_all_deleted(result, ids, rule="Q8"):
    assert result.kind == "success"
    assert result.failed_ids == ()
    assert list(result.deleted_ids) == ids
    assert result.rule == rule


def _assert_all_failed(result, ids, rule="Q8"):
    assert result.kind == "failure"
    assert list(result.failed_ids) == ids
    assert result.deleted_ids == ()
    assert result.rule == rule, (result.rule, result.reason, list(result.issues))
    assert (
        "Every message returns" in result.reason
        or "whole batch returns" in result.reason
        or "every message returns" in result.reason
    )


# --- Q8: the four complete-success forms ----------------------------------------------------------

SUCCESS_FORMS: list[dict[str, Any] | None] = [None, {}, {"batchItemFailures": None}, {"batchItemFailures": []}]
SUCCESS_IDS = ["null", "empty-object", "null-list", "empty-list"]


@pytest.mark.parametrize("response", SUCCESS_FORMS, ids=SUCCESS_IDS)
def test_q8_complete_success_forms(event, ids, response):
    result = queue.outcome(event, response)
    _assert_all_deleted(result, ids)
    assert "success" in result.reason.lower()
    assert not result.inferred
    assert len(result.issues) == 0


@pytest.mark.parametrize("response", SUCCESS_FORMS, ids=SUCCESS_IDS)
def test_q8_complete_success_forms_as_exact_text(event, ids, response):
    _assert_all_deleted(queue.outcome(event, fnkit.Raw(json.dumps(response))), ids)
    _assert_all_deleted(queue.outcome(event, fnkit.Raw(json.dumps(response).encode())), ids)


@pytest.mark.parametrize("response", SUCCESS_FORMS, ids=SUCCESS_IDS)
def test_q8_complete_success_forms_on_a_fifo_batch(fifo_event, response):
    ids = queue.correlation_ids(fifo_event)
    _assert_all_deleted(queue.outcome(fifo_event, response), ids)


# --- Q8: the five complete-failure forms ----------------------------------------------------------


@pytest.mark.parametrize(
    "text", ['{"batchItemFailures": [', "", "undefined", b"\xff", '{"batchItemFailures": [], "x": NaN}']
)
def test_q8_invalid_json_fails_the_whole_batch(event, ids, text):
    result = queue.outcome(event, fnkit.Raw(text))
    _assert_all_failed(result, ids)
    assert "not valid JSON" in result.reason
    assert [i.rule for i in result.issues.errors] == ["Q8"]


def test_q8_empty_item_identifier_fails_the_whole_batch(event, ids):
    result = queue.outcome(event, _failures(ids[0], ""))
    _assert_all_failed(result, ids)
    assert "empty string" in result.reason


def test_q8_null_item_identifier_fails_the_whole_batch(event, ids):
    result = queue.outcome(event, _failures(None))
    _assert_all_failed(result, ids)
    assert "null" in result.reason


def test_q8_wrong_key_name_fails_the_whole_batch(event, ids):
    result = queue.outcome(event, {"batchItemFailures": [{"itemIdentifer": ids[1]}]})
    _assert_all_failed(result, ids)
    assert "wrong key name" in result.reason


def test_q8_id_not_in_the_batch_fails_the_whole_batch(event, ids):
    result = queue.outcome(event, _failures(ids[1], "4b1b2c3d-0000-4000-8000-000000000000"))
    _assert_all_failed(result, ids)
    assert "not a messageId of this batch" in result.reason


def test_q8_ids_match_case_sensitively(event, ids):
    _assert_all_failed(queue.outcome(event, _failures(ids[1].upper())), ids)


def test_q8_a_set_is_not_json_so_the_whole_batch_fails(event, ids):
    result = queue.outcome(event, {"batchItemFailures": {ids[0]}})
    _assert_all_failed(result, ids)
    assert "not valid JSON" in result.reason


@pytest.mark.parametrize("value", [math.nan, {"batchItemFailures": [{"itemIdentifier": math.inf}]}, b"{}", object()])
def test_q8_other_values_json_cannot_encode(event, ids, value):
    _assert_all_failed(queue.outcome(event, value), ids)


# --- Q8: partial -----------------------------------------------------------------------------------------


def test_q8_partial_failure_returns_the_listed_and_deletes_the_rest(event, ids):
    result = queue.outcome(event, _failures(ids[2], ids[0]))
    assert result.kind == "partial" and result.rule == "Q8"
    assert set(result.failed_ids) == {ids[0], ids[2]}
    assert list(result.deleted_ids) == [ids[1]]
    assert "2 listed messages return" in result.reason and "the other one is deleted" in result.reason
    assert not result.inferred


def test_q8_failed_ids_follow_the_batch_order_whatever_the_listing_order(event, ids):
    listed = _failures(ids[2], ids[0])
    result = queue.outcome(event, listed)
    assert result.failed_ids == (ids[0], ids[2])
    assert result == queue.outcome(event, fnkit.Raw(json.dumps(listed)))  # same as reading the exact text
    assert result == queue.run(lambda e, c: listed, event)


def test_q8_listing_every_message_fails_them_all_as_partial(event, ids):
    result = queue.outcome(event, _failures(*ids))
    assert result.kind == "partial" and set(result.failed_ids) == set(ids) and result.deleted_ids == ()


def test_q8_partial_as_exact_text(event, ids):
    result = queue.outcome(event, fnkit.Raw(json.dumps(_failures(ids[1]))))
    assert result.kind == "partial" and result.failed_ids == (ids[1],)


def test_q8_partial_on_the_real_documented_event(real_event):
    result = queue.outcome(real_event, _failures("2e1424d4-f796-459a-8184-9c92662be6da"))
    assert result.kind == "partial"
    assert result.deleted_ids == ("059f36b4-87a3-44ab-83d2-661975830a7d",)


# --- Q8a / Q8b / Q8c (inferred) ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "response",
    [
        [],
        3,
        True,
        {"batchItemFailures": {}},
        {"batchItemFailures": ["id"]},
        {"batchItemFailures": [{"itemIdentifier": 1}]},
    ],
)
def test_q8a_other_shapes_fail_the_whole_batch_and_say_inferred(event, ids, response):
    result = queue.outcome(event, response)
    _assert_all_failed(result, ids, rule="Q8a")
    assert result.inferred and "(inferred)" in result.reason


def test_q8a_a_returned_string_is_a_json_string_not_an_object(event, ids):
    # the classic slip: returning json.dumps(...) sends a JSON *string*
    result = queue.outcome(event, json.dumps(_failures(ids[0])))
    _assert_all_failed(result, ids, rule="Q8a")


def test_q8b_misspelled_key_is_success_with_a_loud_warning(event, ids):
    result = queue.outcome(event, {"BatchItemFailures": [{"itemIdentifier": ids[0]}]})
    _assert_all_deleted(result, ids, rule="Q8b")
    assert result.inferred and "(inferred)" in result.reason
    [warning] = result.warnings
    assert warning.rule == "Q8b" and "lost" in warning.message


def test_q8c_duplicate_identifiers_count_once(event, ids):
    result = queue.outcome(event, _failures(ids[1], ids[1]))
    assert result.kind == "partial" and result.rule == "Q8"
    assert result.failed_ids == (ids[1],)
    assert list(result.deleted_ids) == [ids[0], ids[2]]
    assert [w.rule for w in result.warnings] == ["Q8c"]


# --- Q7: reporting off (inferred) ------------------------------------------------------------------------------


def test_q7_reporting_off_ignores_the_response_and_deletes_all(event, ids):
    result = queue.outcome(event, None, report_batch_item_failures=False)
    _assert_all_deleted(result, ids, rule="Q7")
    assert result.inferred and "(inferred)" in result.reason
    assert len(result.issues) == 0


def test_q7_returned_failures_are_lost_loudly(event, ids):
    result = queue.outcome(event, _failures(ids[0], ids[1]), report_batch_item_failures=False)
    _assert_all_deleted(result, ids, rule="Q7")
    [warning] = result.warnings
    assert warning.rule == "Q7" and "2 reported failure(s)" in warning.message and "lost" in warning.message


@pytest.mark.parametrize("response", [fnkit.Raw("{"), [], {"batchItemFailures": [{"itemIdentifier": ""}]}])
def test_q7_even_junk_is_ignored(event, ids, response):
    _assert_all_deleted(queue.outcome(event, response, report_batch_item_failures=False), ids, rule="Q7")


# --- Q10: FIFO ordering ---------------------------------------------------------------------------------------


def test_q10_a_listed_message_followed_by_an_unlisted_one_of_its_group_warns(fifo_event):
    ids = queue.correlation_ids(fifo_event)  # groups: g, g, h, g
    result = queue.outcome(fifo_event, _failures(ids[0]))
    assert result.kind == "partial" and result.failed_ids == (ids[0],)
    q10 = [w for w in result.warnings if w.rule == "Q10"]
    assert [w.path for w in q10] == ["$.Records[1]", "$.Records[3]"]
    assert "order" in q10[0].message and ids[1] in q10[0].message
    assert "group order breaks" in result.reason


def test_q10_listing_every_message_after_the_first_failure_keeps_order(fifo_event):
    ids = queue.correlation_ids(fifo_event)
    result = queue.outcome(fifo_event, _failures(ids[0], ids[1], ids[3]))
    assert result.kind == "partial" and len(result.warnings) == 0
    assert result.deleted_ids == (ids[2],)  # group h is unaffected


def test_q10_failures_in_another_group_do_not_warn(fifo_event):
    ids = queue.correlation_ids(fifo_event)
    result = queue.outcome(fifo_event, _failures(ids[2]))
    assert result.kind == "partial" and len(result.warnings) == 0


def test_q10_the_last_message_of_a_group_failing_does_not_warn(fifo_event):
    ids = queue.correlation_ids(fifo_event)
    assert len(queue.outcome(fifo_event, _failures(ids[3])).warnings) == 0


def test_q10_does_not_apply_to_standard_queues(event, ids):
    assert len(queue.outcome(event, _failures(ids[0])).warnings) == 0


def test_q10_on_the_real_documented_fifo_event(real_fifo_event):
    result = queue.outcome(real_fifo_event, _failures("11d6ee51-4cc7-4302-9e22-7cd8afdaadf5"))
    assert result.kind == "partial" and result.deleted_ids == () and len(result.warnings) == 0


# --- Q6 and the handler: run ------------------------------------------------------------------------------------


def test_q6_a_raising_handler_fails_the_whole_batch(event, ids):
    def handler(event, context):
        raise RuntimeError("database down")

    result = queue.run(handler, event)
    _assert_all_failed(result, ids, rule="Q6")
    assert "RuntimeError" in result.reason
    assert result.invocation is not None
    assert result.invocation.status == "error"
    assert [i.rule for i in result.issues.errors] == ["H3"]


def test_q6_a_timed_out_handler_fails_the_whole_batch_quickly(event, ids):
    def handler(event, context):
        time.sleep(10)
        return None

    queue.run(lambda e, c: None, event, isolation="process")  # a worker ready: its start is not what is timed
    started = time.monotonic()
    result = queue.run(handler, event, timeout_s=0.2, isolation="process")  # a real cut needs a worker
    assert time.monotonic() - started < 5.0  # cut at the timeout, not after the 10 s sleep (a loaded machine lags)
    _assert_all_failed(result, ids, rule="Q6")
    assert "timed out" in result.reason
    assert result.invocation is not None
    assert result.invocation.timed_out
    assert [i.rule for i in result.issues.errors] == ["H4"]


def test_q6_wins_over_reporting_off(event, ids):
    result = queue.run(lambda e, c: 1 / 0, event, report_batch_item_failures=False)
    _assert_all_failed(result, ids, rule="Q6")


def test_q6_from_an_invocation_given_to_outcome(event, ids):
    inv = fnkit.invoke(lambda e, c: [].pop(), event)  # the handler raises IndexError
    _assert_all_failed(queue.outcome(event, inv), ids, rule="Q6")


def test_run_partial_failure_from_a_real_handler(event, ids):
    def handler(event, context):
        failed = [r["messageId"] for r in event["Records"] if r["body"] == "second"]
        print("failed:", failed)
        return {"batchItemFailures": [{"itemIdentifier": i} for i in failed]}

    result = queue.run(handler, event)
    assert result.kind == "partial" and result.failed_ids == (ids[1],)
    assert result.invocation is not None
    assert result.invocation.status == "returned"
    assert "failed: [" in result.invocation.logs


def test_run_a_handler_returning_a_set_is_invalid_json(event, ids):
    result = queue.run(lambda e, c: {"batchItemFailures": {ids[0]}}, event)
    _assert_all_failed(result, ids)
    assert [i.rule for i in result.issues.errors] == ["H2"]


def test_run_a_handler_returning_nan(event, ids):
    _assert_all_failed(queue.run(lambda e, c: math.nan, event), ids)


def test_run_a_handler_returning_raw_text(event, ids):
    _assert_all_failed(queue.run(lambda e, c: fnkit.Raw("{oops"), event), ids)
    _assert_all_deleted(queue.run(lambda e, c: fnkit.Raw("{}"), event), ids)


def test_run_with_reporting_off_and_unencodable_value(event, ids):
    result = queue.run(lambda e, c: {1, 2}, event, report_batch_item_failures=False)
    _assert_all_deleted(result, ids, rule="Q7")
    assert [w.rule for w in result.warnings] == ["H2"]


def test_run_refuses_an_invalid_event(event):
    event["Records"][0]["md5OfBody"] = "bad"
    called = []
    with pytest.raises(fnkit.ContractError) as info:
        queue.run(lambda e, c: called.append(1), event)
    assert not called
    assert info.value.report.errors[0].rule == "Q13"


def test_run_takes_the_event_as_json_text(event, ids):
    result = queue.run(lambda e, c: None if type(e) is dict else {"batchItemFailures": "not a dict"}, json.dumps(event))
    _assert_all_deleted(result, ids)


def test_run_passes_the_context(event):
    ctx = fnkit.Context(function_name="orders-worker")
    result = queue.run(lambda e, c: None if c.function_name == "orders-worker" else [], event, context=ctx)
    assert result.kind == "success"


# --- odd events --------------------------------------------------------------------------------------------------


def test_outcome_takes_the_event_as_json_text(event, ids):
    result = queue.outcome(json.dumps(event), _failures(ids[0]))
    assert result.kind == "partial" and result.failed_ids == (ids[0],)


@pytest.mark.parametrize("bad_event", [{"Records": 5}, {"Records": "x"}, None, [], "{", {"Records": [5]}])
def test_outcome_of_a_broken_event_does_not_crash(bad_event):
    result = queue.outcome(bad_event, None)
    assert isinstance(result, queue.BatchOutcome)
    assert queue.outcome(bad_event, _failures("x")).kind == "failure"


# --- tables, equality, display -------------------------------------------------------------------------------------


def test_rows_one_per_record_in_batch_order(event, ids):
    rows = queue.outcome(event, _failures(ids[1])).rows()
    assert [r["item"] for r in rows] == ids
    assert [r["action"] for r in rows] == ["delete", "retry", "delete"]
    assert {r["rule"] for r in rows} == {"Q8"} and {r["kind"] for r in rows} == {"partial"}


def test_tabulate_outcomes(event, ids, fifo_event):
    frame = fnkit.tabulate([queue.outcome(event, _failures(ids[0])), queue.outcome(fifo_event, None)])
    assert len(frame) == 3 + 4
    assert {"item", "action", "rule", "inferred", "reason", "kind"} <= set(frame.columns)
    assert list(frame["action"][:3]) == ["retry", "delete", "delete"]
    assert set(frame["action"][3:]) == {"delete"}


def test_tabulate_one_outcome_shows_the_inferred_flag(event):
    frame = fnkit.tabulate(queue.outcome(event, None, report_batch_item_failures=False))
    assert len(frame) == 3 and frame["inferred"].all() and set(frame["rule"]) == {"Q7"}


def test_tabulate_failure_rows_are_all_retry(event):
    frame = fnkit.tabulate(queue.outcome(event, fnkit.Raw("nope")))
    assert set(frame["action"]) == {"retry"}


def test_outcomes_compare_by_decision(event, ids):
    assert queue.outcome(event, {}) == queue.outcome(event, {})
    assert queue.outcome(event, _failures(ids[0])) == queue.outcome(event, fnkit.Raw(json.dumps(_failures(ids[0]))))
    assert queue.outcome(event, _failures(ids[0])) != queue.outcome(event, _failures(ids[1]))


def test_outcome_repr_and_html(event, ids):
    result = queue.outcome(event, _failures(ids[0]))
    assert "partial" in repr(result) and ids[0] in repr(result)
    html = result._repr_html_()
    assert "partial" in html and "retry" in html and "Q8" in html
    inferred_html = queue.outcome(event, [], report_batch_item_failures=True)._repr_html_()
    assert "(inferred)" in inferred_html


def test_every_outcome_rule_is_in_the_catalogue(event, ids, fifo_event):
    responses = [None, {}, fnkit.Raw("{"), _failures(""), [], {"BatchItemFailures": []}, _failures(ids[0])]
    for response in responses:
        for reporting in (True, False):
            result = queue.outcome(event, response, report_batch_item_failures=reporting)
            fnkit.rules.get(result.rule)
            for issue in result.issues:
                assert issue.rule is not None
                fnkit.rules.get(issue.rule)


@pytest.mark.parametrize(
    ("failed", "deleted", "words"),
    [
        (1, 1, "1 listed message returns to the queue after the visibility timeout; the other one is deleted."),
        (2, 3, "2 listed messages return to the queue after the visibility timeout; the other 3 are deleted."),
        (3, 0, "3 listed messages return to the queue after the visibility timeout; no other message is deleted."),
    ],
)
def test_the_partial_sentence_counts_in_plain_english(failed, deleted, words):
    from fnkit.queue._response import partial_reason as _partial_reason

    assert _partial_reason(failed, deleted) == f"Partial failure: {words}"


def test_a_listed_receipt_handle_is_named_and_cut_short():
    event = queue.build_event(['{"order": 1, "qty": 2}', '{"order": 2, "qty": 0}'], seed=5)
    handle = event["Records"][1]["receiptHandle"]
    result = queue.outcome(event, {"batchItemFailures": [{"itemIdentifier": handle}]})
    message = next(i.message for i in result.issues if i.rule == "Q8")
    assert handle not in message and handle[:8] in message and "…" in message
    assert 'It looks like a receiptHandle: list the record\'s messageId (record["messageId"])' in message
