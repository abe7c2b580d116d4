"""What the exercises' handlers call (fnkit/workshop/_helpers.py)."""

from __future__ import annotations

import pytest

from fnkit import workshop
from fnkit.workshop import EXECUTABLE_EXTENSIONS, BadOrder, add_disclaimer, attachment_names, park, process_order
from fnkit.workshop._helpers import watching


def test_process_order_and_park():
    assert process_order('{"order": 1, "qty": 2}')["qty"] == 2
    for bad in ["", "[]", '{"qty": 0}', '{"qty": true}', '{"qty": "2"}']:
        with pytest.raises(BadOrder):
            process_order(bad)
    assert workshop.is_good_order('{"qty": 1}') and not workshop.is_good_order("[]")


def test_a_check_watches_what_handlers_process_and_park(capsys):
    with watching() as seen:
        process_order('{"qty": 1}')
        park({"messageId": "m1"})
    assert seen.processed == ['{"qty": 1}'] and seen.parked == ["m1"]
    park({"messageId": "m2"})  # outside a check: said, not recorded
    assert capsys.readouterr().out == "parked message m2\n" and seen.parked == ["m1"]


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
