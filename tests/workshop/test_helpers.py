"""What the exercises' handlers call (fnkit/workshop/_helpers.py)."""

from __future__ import annotations

import pytest

import fnkit
from fnkit import workshop
from fnkit.workshop import EXECUTABLE_EXTENSIONS, BadOrder, add_disclaimer, attachment_names, park, process_order
from fnkit.workshop._helpers import Watched


def test_process_order_and_park():
    assert process_order('{"order": 1, "qty": 2}')["qty"] == 2
    for bad in ["", "[]", '{"qty": 0}', '{"qty": true}', '{"qty": "2"}']:
        with pytest.raises(BadOrder):
            process_order(bad)
    assert workshop.is_good_order('{"qty": 1}') and not workshop.is_good_order("[]")


def processes_then_parks(event, context):
    for record in event["Records"]:
        try:
            process_order(record["body"])
        except BadOrder:
            park(record)
    return {"batchItemFailures": []}


@pytest.mark.parametrize("isolation", ["process", "thread", "none"])
def test_a_check_reads_what_a_handler_processed_and_parked_wherever_it_ran(isolation):
    event = fnkit.queue.build_event(['{"qty": 1}', '{"qty": 0}'], seed=3)
    invocation = fnkit.invoke(processes_then_parks, event, timeout_s=5, isolation=isolation)
    seen = Watched.of(invocation)
    assert seen.processed == ['{"qty": 1}', '{"qty": 0}']
    assert seen.parked == [event["Records"][1]["messageId"]]
    assert invocation.logs == f"parked message {event['Records'][1]['messageId']}\n"  # what the learner sees


def test_outside_a_handler_park_only_says_so(capsys):
    park({"messageId": "m2"})
    assert capsys.readouterr().out == "parked message m2\n"
    assert Watched.of(None) == Watched()


def test_email_helpers_are_deterministic_and_round_trip():
    a = workshop.email_message(attachments=["a.pdf", "Setup.EXE"]).as_bytes()
    assert a == workshop.email_message(attachments=["a.pdf", "Setup.EXE"]).as_bytes()
    assert attachment_names(a) == ["a.pdf", "Setup.EXE"]
    assert "Setup.EXE".lower().endswith(EXECUTABLE_EXTENSIONS)
    changed = add_disclaimer(a)
    assert workshop.has_disclaimer(changed) and not workshop.has_disclaimer(a)
    assert attachment_names(changed) == ["a.pdf", "Setup.EXE"]
    assert workshop.DISCLAIMER in workshop.body_text(changed)
    from fnkit.mail import mime_problems

    assert mime_problems(changed) == []
