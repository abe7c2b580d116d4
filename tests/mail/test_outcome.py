"""What the mail service does with an answer: outcome and run (fnkit/mail/_outcome.py)."""

import time

import pytest

from fnkit import Raw, mail
from fnkit._engine.codec import HandlerError, Invocation
from fnkit._engine.report import ContractError

from .helpers import ALICE, BOB, CAROL, respond, rules_of


def actions(result):
    return {r: (d.action, d.via) for r, d in result.decisions.items()}


# --- resolution (M5) -------------------------------------------------------------------


def test_explicit_recipients_first_then_all_recipients(event):
    result = mail.outcome(event, respond(("BOUNCE", [BOB], "Bob left"), ("DEFAULT", True)))
    assert result.status == "applied" and result.rule == "M5" and not result.inferred
    assert actions(result) == {
        ALICE: ("DEFAULT", "allRecipients"),
        BOB: ("BOUNCE", "recipients"),
        CAROL: ("DEFAULT", "allRecipients"),
    }
    assert result.decisions[BOB].bounce_message == "Bob left"
    assert result.decisions[ALICE].bounce_message is None
    assert len(result.issues) == 0


def test_recipients_covered_by_nothing_get_the_fallback_action(event):
    result = mail.outcome(event, respond(("DROP", [ALICE])), fallback_action="BOUNCE")
    assert actions(result) == {
        ALICE: ("DROP", "recipients"),
        BOB: ("BOUNCE", "fallback"),
        CAROL: ("BOUNCE", "fallback"),
    }
    assert result.decisions[BOB].rule == "M5" and result.status == "applied"
    assert "2 recipients covered by no action get the fallback action BOUNCE" in result.reason


def test_recipient_names_match_without_regard_to_case(event):
    result = mail.outcome(event, respond(("DROP", ["ALICE@example.COM"]), ("DEFAULT", True)))
    assert result.decisions[ALICE].action == "DROP" and set(result.decisions) == {ALICE, BOB, CAROL}


def test_named_recipients_absent_from_the_envelope_are_added(event, outbound_event):
    result = mail.outcome(event, respond(("DEFAULT", ["archive@example.com"]), ("DEFAULT", True)))
    assert result.decisions["archive@example.com"] == mail.Decision(
        "DEFAULT", "recipients", None, "M5", "named by actions[0]"
    )
    assert [(i.code, i.rule) for i in result.issues] == [("added", "M5")]  # inbound: organisation only
    assert "added" in result.reason
    out = mail.outcome(outbound_event, respond(("DEFAULT", ["archive@example.com"]), ("DEFAULT", True)))
    assert "archive@example.com" in out.decisions and len(out.issues) == 0


# --- unique actions (M6) and conflicts (M7) ------------------------------------------------


def test_only_the_first_ten_unique_actions_count(event):
    entries = [("BOUNCE", [f"u{i}@example.com"], f"reason {i}") for i in range(10)]
    result = mail.outcome(
        event, respond(*entries, ("BOUNCE", [CAROL], "eleventh"), ("DROP", [ALICE])), fallback_action="DEFAULT"
    )
    carol, alice = result.decisions[CAROL], result.decisions[ALICE]
    assert (carol.action, carol.via, carol.rule) == ("DEFAULT", "fallback", "M6")
    assert (alice.action, alice.via, alice.rule) == ("DEFAULT", "fallback", "M6")
    assert result.decisions[BOB].rule == "M5" and result.decisions[BOB].via == "fallback"
    assert result.rule == "M6" and "M6" in rules_of(result.issues)
    assert "u10@example.com" not in result.decisions  # named only by counted actions up to u9
    assert "u9@example.com" in result.decisions


@pytest.mark.parametrize(
    ("policy", "expected"), [("most-restrictive", "DROP"), ("first", "DEFAULT"), ("last", "BOUNCE")]
)
def test_conflicts_follow_the_policy_and_say_they_are_inferred(event, policy, expected):
    response = respond(("DEFAULT", [ALICE]), ("DROP", [ALICE]), ("BOUNCE", [ALICE, BOB], "no"))
    result = mail.outcome(event, response, conflict_policy=policy)
    alice = result.decisions[ALICE]
    assert alice.action == expected and alice.rule == "M7" and alice.inferred
    assert result.rule == "M7" and result.inferred and "inferred" in result.reason
    assert "conflict" in result.issues.codes() and "M7" in rules_of(result.issues)
    assert result.decisions[BOB].rule == "M5"


def test_most_restrictive_order_includes_the_extensions(event):
    response = respond(
        ("BYPASS_SPAM_CHECK", [ALICE]), ("MOVE_TO_JUNK", [ALICE]), ("DEFAULT", [ALICE]), ("DEFAULT", True)
    )
    result = mail.outcome(event, response, extensions=True)
    assert result.decisions[ALICE].action == "MOVE_TO_JUNK"


# --- recipients cut from a truncated event (M1) ---------------------------------------------------

LONG_RECIPIENTS = [f"recipient.number.{i:05d}.with.a.long.name@department.example.com" for i in range(3000)]


def test_every_envelope_recipient_gets_a_decision_when_the_event_was_truncated():
    event = mail.build_event(mail_from=ALICE, recipients=LONG_RECIPIENTS)
    kept = len(event["envelope"]["recipients"])
    assert event["truncated"] is True and kept < len(LONG_RECIPIENTS)
    result = mail.outcome(
        event, respond(("DROP", True)), envelope=LONG_RECIPIENTS, fallback_action="BOUNCE", conflict_policy="first"
    )
    assert list(result.decisions) == LONG_RECIPIENTS  # the event's recipients, then the cut ones, in order
    assert {(d.action, d.rule) for d in list(result.decisions.values())[:kept]} == {("DROP", "M5")}
    cut = list(result.decisions.values())[kept:]
    assert {(d.action, d.via, d.rule) for d in cut} == {("BOUNCE", "fallback", "M1")}
    assert all("(inferred)" in d.reason for d in cut)  # fnkit's reading, though M1 itself is documented
    assert f"{len(cut)} recipients cut from the truncated event get the fallback action BOUNCE" in result.reason


def test_recipients_cut_from_the_event_get_the_fallback_after_a_failure_and_the_usual_delivery_when_async():
    event = mail.build_event(mail_from=ALICE, recipients=LONG_RECIPIENTS)
    failed = mail.outcome(event, Raw("{not json"), envelope=LONG_RECIPIENTS, fallback_action="DROP")
    assert failed.status == "fallback" and set(failed.actions.values()) == {"DROP"}
    assert len(failed.decisions) == len(LONG_RECIPIENTS)
    queued = mail.outcome(event, None, envelope=LONG_RECIPIENTS, mode="async")
    assert len(queued.decisions) == len(LONG_RECIPIENTS)
    assert {(d.action, d.rule) for d in queued.decisions.values()} == {("DEFAULT", "M8")}


def test_a_cut_recipient_the_response_names_gets_that_action_and_an_envelope_like_the_event_changes_nothing(event):
    everyone = [r["address"] for r in event["envelope"]["recipients"]]
    answer = respond(("DEFAULT", True))
    assert mail.outcome(event, answer, envelope=everyone) == mail.outcome(event, answer)
    big = mail.build_event(mail_from=ALICE, recipients=LONG_RECIPIENTS)
    named = LONG_RECIPIENTS[-1]
    result = mail.outcome(big, respond(("BOUNCE", [named], "gone"), ("DEFAULT", True)), envelope=LONG_RECIPIENTS)
    assert (result.decisions[named].action, result.decisions[named].rule) == ("BOUNCE", "M5")
    assert len(result.decisions) == len(LONG_RECIPIENTS)


def test_the_rule_m1_is_the_function_that_both_validates_and_decides_for_cut_recipients():
    from fnkit import rules
    from fnkit.mail._event import EVENT_CONTRACT, truncation

    assert rules.get("M1").implementation is truncation
    assert truncation in EVENT_CONTRACT.checks


# --- failures (M3) ---------------------------------------------------------------------


def test_an_invalid_answer_means_fallback_for_everyone(event):
    result = mail.outcome(
        event, {"actions": [{"action": {"type": "REJECT"}, "allRecipients": True}]}, fallback_action="DROP"
    )
    assert result.status == "fallback" and result.rule == "M3"
    assert actions(result) == dict.fromkeys((ALICE, BOB, CAROL), ("DROP", "fallback"))
    assert "M4" in rules_of(result.issues) and "REJECT" in result.reason


def test_a_null_answer_is_invalid_by_inference(event):
    result = mail.outcome(event, None)
    assert result.status == "fallback" and result.inferred and "(inferred)" in result.reason
    missing = mail.outcome(event, {})
    assert missing.status == "fallback" and not missing.inferred


def test_raw_text_that_is_not_json_means_fallback(event):
    result = mail.outcome(event, Raw("{'actions': []}"))
    assert result.status == "fallback" and "G0" in rules_of(result.issues)


def test_invocations_that_raise_or_time_out_fall_back(event):
    raised = Invocation(error=HandlerError("KeyError", "'x'", "Traceback..."), duration_ms=3.0)
    result = mail.outcome(event, raised)
    assert result.status == "fallback" and result.invocation is raised and "KeyError" in result.reason
    timed_out = Invocation(timed_out=True, duration_ms=15000.0, timeout_s=15.0)
    assert "did not answer within 15 s" in mail.outcome(event, timed_out).reason


def test_an_answer_after_the_response_time_limit_falls_back(event):
    late = Invocation(
        returned=respond(("DROP", True)),
        response_text='{"actions":[{"action":{"type":"DROP"},"allRecipients":true}]}',
        duration_ms=16_000.0,
    )
    result = mail.outcome(event, late)
    assert result.status == "fallback" and result.rule == "M3" and "16 s" in result.reason
    assert mail.outcome(event, late, response_timeout_s=20).actions == dict.fromkeys((ALICE, BOB, CAROL), "DROP")


def test_a_returned_value_json_cannot_encode_falls_back(event):
    result = mail.run(lambda e, c: {"actions": {1, 2}}, event, response_timeout_s=2)
    assert result.status == "fallback" and "H2" in rules_of(result.issues)


# --- asynchronous rules (M8) --------------------------------------------------------------


def test_asynchronous_rules_leave_delivery_unaffected(event):
    result = mail.outcome(event, respond(("DROP", True)), mode="async", fallback_action="BOUNCE")
    assert result.status == "ignored" and result.rule == "M8"
    assert actions(result) == dict.fromkeys((ALICE, BOB, CAROL), ("DEFAULT", "allRecipients"))
    assert [(i.code, i.rule) for i in result.issues] == [("ignored", "M8")]
    failed = mail.outcome(event, Invocation(error=HandlerError("E", "m", "")), mode="async")
    assert failed.status == "ignored" and failed.actions == dict.fromkeys((ALICE, BOB, CAROL), "DEFAULT")


# --- configuration and inputs ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keywords", "rule"),
    [
        ({"fallback_action": "BYPASS_SPAM_CHECK"}, "M2"),
        ({"fallback_action": "my_function"}, "M2"),
        ({"mode": "sometimes"}, "M2"),
        ({"conflict_policy": "random"}, "M7"),
        ({"response_timeout_s": 0}, "M3"),
    ],
)
def test_configurations_the_platform_refuses(event, keywords, rule):
    with pytest.raises(ValueError, match=rule):
        mail.outcome(event, respond(("DEFAULT", True)), **keywords)


def test_an_invalid_event_raises_contract_error(event):
    event["envelope"]["recipients"] = "everyone"
    with pytest.raises(ContractError):
        mail.outcome(event, respond(("DEFAULT", True)))


def test_rows_and_html(event):
    result = mail.outcome(event, respond(("BOUNCE", [BOB], "gone"), ("DEFAULT", True)))
    rows = result.rows()
    assert [r["recipient"] for r in rows] == [ALICE, BOB, CAROL]
    assert set(rows[0]) == {
        "source",
        "item",
        "recipient",
        "action",
        "via",
        "bounce_message",
        "status",
        "rule",
        "inferred",
        "reason",
    }
    assert rows[0]["item"] == ALICE and rows[0]["inferred"] is False
    assert rows[1]["bounce_message"] == "gone" and rows[1]["source"] == "mail"
    html = result._repr_html_()
    assert BOB in html and "BOUNCE" in html
    frame = result.to_frame()
    assert list(frame["action"]) == ["DEFAULT", "BOUNCE", "DEFAULT"]


# --- run ------------------------------------------------------------------------------------


def test_run_invokes_the_handler_and_applies_its_answer(event):
    seen = {}

    def handler(e, context):
        seen["event"], seen["request"] = e, context.aws_request_id
        print("looking at", e["subject"])
        return respond(("DROP", [CAROL]), ("DEFAULT", True))

    result = mail.run(handler, event, response_timeout_s=2, isolation="thread")  # reads what the handler saw
    assert result.status == "applied" and result.actions[CAROL] == "DROP"
    assert seen["event"] == event and seen["event"] is not event
    assert result.invocation is not None and "looking at Quarterly report" in result.invocation.logs


def test_run_gives_a_hanging_handler_only_the_response_time(event):
    mail.run(lambda e, c: None, event, isolation="process")  # a worker ready: its start is not what is timed
    start = time.perf_counter()
    result = mail.run(lambda e, c: time.sleep(3), event, response_timeout_s=0.2, isolation="process")
    assert time.perf_counter() - start < 2.5  # cut at the response time, not after the 3 s sleep
    assert result.invocation is not None
    assert result.status == "fallback" and result.invocation.timed_out
    shorter = mail.run(lambda e, c: time.sleep(3), event, timeout_s=0.1, response_timeout_s=0.3, isolation="process")
    assert shorter.invocation is not None
    assert shorter.invocation.timeout_s == pytest.approx(0.1)
    longer = mail.run(lambda e, c: time.sleep(3), event, timeout_s=9, response_timeout_s=0.1, isolation="process")
    assert longer.invocation is not None
    assert longer.invocation.timeout_s == pytest.approx(0.1)


def test_run_refuses_an_invalid_event_without_calling_the_handler(event):
    called = []
    event["subject"] = "s" * 300
    with pytest.raises(ContractError):
        mail.run(lambda e, c: called.append(e), event)
    assert called == []


def test_run_in_async_mode_still_calls_the_handler(event):
    calls = []

    def handler(e, c):
        calls.append(1)
        return respond(("DROP", True))

    result = mail.run(handler, event, mode="async", isolation="thread")
    assert calls == [1] and result.status == "ignored" and result.actions[ALICE] == "DEFAULT"


def test_a_name_that_is_no_address_is_not_added(event):
    result = mail.outcome(event, respond(("DROP", ["Bob <bob@example.com>"]), ("DEFAULT", True)))
    assert list(result.decisions) == [ALICE, BOB, CAROL] and result.actions[BOB] == "DEFAULT"
    assert "MS3" in rules_of(result.issues)


def test_a_returned_string_is_not_read_as_json_text(event):
    text = '{"actions": [{"action": {"type": "DROP"}, "allRecipients": true}]}'
    result = mail.run(lambda e, c: text, event, response_timeout_s=2)
    assert result.status == "fallback" and "got a string" in result.reason
    assert mail.outcome(event, Raw(text)).actions == dict.fromkeys((ALICE, BOB, CAROL), "DROP")
