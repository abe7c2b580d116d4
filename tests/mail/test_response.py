"""The mail response: validate_response (fnkit/mail/_response.py)."""

import json

import pytest

from fnkit import Raw, mail

from .helpers import ALICE, BOB, respond

GOOD = respond(("BOUNCE", [ALICE], "Not here"), ("DEFAULT", True))


def only(report, severity="error"):
    return [(i.path, i.code, i.rule) for i in report if i.severity == severity]


def test_a_valid_response():
    report = mail.validate_response(GOOD)
    assert report.ok and len(report) == 0
    assert report.source == "mail" and report.subject == "response"


def test_text_bytes_and_raw_are_read_as_json():
    text = json.dumps(GOOD)
    for value in (text, text.encode(), Raw(text), Raw(text.encode())):
        assert len(mail.validate_response(value)) == 0


def test_invalid_json_is_an_error():
    report = mail.validate_response(Raw('{"actions": ['))
    assert [(i.code, i.rule) for i in report] == [("format", "G0")]
    assert not mail.validate_response(Raw(b"\xff")).ok


@pytest.mark.parametrize(
    ("value", "got"), [(None, "null"), ([], "a list"), ('"DROP"', "a string"), (3, "a number"), ("null", "null")]
)
def test_not_an_object_is_invalid(value, got):
    report = mail.validate_response(value)
    assert [(i.path, i.code, i.rule) for i in report] == [("$", "type", "M4")]
    assert got in report[0].message


def test_actions_are_required_and_not_empty():
    assert only(mail.validate_response({})) == [("$.actions", "missing", "M4")]
    assert only(mail.validate_response({"actions": []})) == [("$.actions", "limit", "M4")]


def test_unknown_action_types_are_invalid():
    report = mail.validate_response(respond(("REJECT", True)))
    assert only(report) == [("$.actions[0].action.type", "enum", "M4")]


@pytest.mark.parametrize("kind", ["BYPASS_SPAM_CHECK", "MOVE_TO_JUNK"])
def test_platform_extensions_need_opting_in_and_inbound_mail(kind):
    response = respond((kind, True))
    off = mail.validate_response(response)
    assert only(off) == [("$.actions[0].action.type", "enum", "M4")] and "extensions=True" in off[0].message
    assert len(mail.validate_response(response, extensions=True, flow_direction="INBOUND")) == 0
    outbound = mail.validate_response(response, extensions=True, flow_direction="OUTBOUND")
    assert only(outbound) == [("$.actions[0].action.type", "enum", "M4")] and "inbound" in outbound[0].message


def test_bounce_message_belongs_to_bounce_and_is_a_string():
    report = mail.validate_response(respond(("DROP", [ALICE], "bye")))
    assert only(report) == [("$.actions[0].action.parameters.bounceMessage", "bounce-message", "M4")]
    report = mail.validate_response(
        {"actions": [{"action": {"type": "BOUNCE", "parameters": {"bounceMessage": 5}}, "allRecipients": True}]}
    )
    assert only(report) == [("$.actions[0].action.parameters.bounceMessage", "type", "M4")]


def test_recipients_and_all_recipients_have_their_types():
    report = mail.validate_response(
        {
            "actions": [
                {"action": {"type": "DROP"}, "recipients": ALICE},
                {"action": {"type": "DROP"}, "recipients": [ALICE, 7]},
                {"action": {"type": "DROP"}, "allRecipients": "true"},
            ]
        }
    )
    assert only(report) == [
        ("$.actions[0].recipients", "type", "M4"),
        ("$.actions[1].recipients[1]", "type", "M4"),
        ("$.actions[2].allRecipients", "type", "M4"),
    ]


def test_an_action_that_covers_nobody_is_a_warning():
    report = mail.validate_response(
        {
            "actions": [
                {"action": {"type": "DROP"}},
                {"action": {"type": "DROP"}, "recipients": [], "allRecipients": False},
                {"action": {"type": "DEFAULT"}, "allRecipients": True},
            ]
        }
    )
    assert report.ok
    assert only(report, "warning") == [("$.actions[0]", "covers-nobody", "M5"), ("$.actions[1]", "covers-nobody", "M5")]


def test_a_response_over_256_kb_is_invalid():
    big = respond(("DEFAULT", [f"user{i}@example.com" for i in range(15000)]))
    report = mail.validate_response(big)
    assert only(report) == [("$", "limit", "M4")] and "256 KB" in report.errors[0].message
    assert not mail.validate_response(json.dumps(big)).ok


def test_more_than_ten_unique_actions_are_subject_to_fallback():
    entries = [("BOUNCE", [f"u{i}@example.com"], f"reason {i}") for i in range(11)]
    report = mail.validate_response(respond(*entries))
    assert report.ok and only(report, "warning") == [("$.actions[10]", "limit", "M6")]
    # the same action repeated is one unique action
    same = [("BOUNCE", [f"u{i}@example.com"], "same") for i in range(11)]
    assert len(mail.validate_response(respond(*same))) == 0


def test_outbound_responses_name_at_most_500_recipients():
    response = respond(("DEFAULT", [f"r{i}@example.net" for i in range(501)]))
    report = mail.validate_response(response, flow_direction="OUTBOUND")
    assert only(report) == [("$.actions", "limit", "M6")] and "inferred" in report.errors[0].message
    assert mail.validate_response(response, flow_direction="INBOUND").ok
    assert mail.validate_response(response, flow_direction="OUTBOUND", recipients_limit=600).ok


def test_a_recipient_in_two_different_actions_is_a_conflict():
    report = mail.validate_response(respond(("DEFAULT", [ALICE, BOB]), ("DROP", ["Alice@Example.com"])))
    assert report.ok and only(report, "warning") == [("$.actions[1].recipients", "conflict", "M7")]
    assert len(mail.validate_response(respond(("DROP", [ALICE]), ("DROP", [ALICE])))) == 0


def test_two_different_all_recipients_actions_conflict():
    report = mail.validate_response(respond(("DEFAULT", True), ("DROP", True)))
    assert only(report, "warning") == [("$.actions[1].allRecipients", "conflict", "M7")]


def test_recipients_that_are_not_addresses_are_a_warning():
    report = mail.validate_response(respond(("DROP", ["Bob <bob@example.com>"])))
    assert report.ok and only(report, "warning") == [("$.actions[0].recipients[0]", "format", "MS3")]


def test_a_value_json_cannot_encode_is_invalid():
    report = mail.validate_response(
        {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}], "note": {1, 2}}
    )
    assert ("$", "type", "H2") in only(report)
    assert not mail.validate_response({"actions": {ALICE}}).ok


def test_unknown_keys_are_warnings():
    report = mail.validate_response({"actions": [{"action": {"type": "DROP"}, "allrecipients": True}]})
    assert any(i.code == "unknown" and "allRecipients" in i.message for i in report)


def test_an_invocation_is_read_as_the_json_it_returned():
    from fnkit import invoke

    assert mail.validate_response(invoke(lambda e, c: GOOD, {})).ok
    assert not mail.validate_response(invoke(lambda e, c: json.dumps(GOOD), {})).ok  # a string, not an object
    assert [i.rule for i in mail.validate_response(invoke(lambda e, c: {"actions": {1}}, {}))] == ["H2"]


# --- asynchronous rules (M8) ------------------------------------------------------------------


def test_async_says_the_response_is_ignored_and_still_lists_what_is_invalid_as_warnings():
    report = mail.validate_response({"actions": [{"action": {"type": "REJECT"}, "allRecipients": True}]}, mode="async")
    assert report.ok
    assert [(i.path, i.severity, i.rule) for i in report] == [
        ("$", "warning", "M8"),
        ("$.actions[0].action.type", "warning", "M4"),
    ]
    assert "asynchronous" in report[0].message and "ignores the response" in report[0].message
    sync = mail.validate_response({"actions": [{"action": {"type": "REJECT"}, "allRecipients": True}]})
    assert [(i.path, i.message) for i in report[1:]] == [(i.path, i.message) for i in sync]


@pytest.mark.parametrize("response", [None, Raw("null"), Raw(b" null\n"), GOOD])
def test_async_with_nothing_wrong_only_says_it_is_ignored(response):
    report = mail.validate_response(response, mode="async")
    assert [(i.severity, i.rule) for i in report] == [("warning", "M8")]
    assert "follows" not in report[0].message


def test_async_invalid_json_is_a_warning_too():
    report = mail.validate_response(Raw("{nope"), mode="async")
    assert report.ok and [i.rule for i in report] == ["M8", "G0"]


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="M2"):
        mail.validate_response(GOOD, mode="later")  # type: ignore[arg-type]


# --- where a rule's problems are found (`fnkit rules ID`) -------------------------------------------------


def test_fnkit_rules_names_every_mail_function_that_finds_a_rules_problems():
    """The mail rules return findings and the engine stamps the id: each rule's findings come from the one function
    that decides it, which the checks and the outcome ask (`fnkit rules MS3` lists it alone)."""
    from fnkit import rules
    from fnkit.mail import _event, _outcome, _response

    def issuers(rule_id):
        return [where.rsplit(": ", 1)[-1] for where in rules.issued_by(rule_id)]

    # the response's form beyond its declared shape (the shape's walk names M4 too): one check decides
    assert issuers("M4") == ["check_response_form"] and rules.of(_response.check_response_form).id == "M4"
    # the event's null sender and an action's recipient that is no address: both decided by address_form
    assert issuers("MS3") == ["address_form"] and rules.of(_event.address_form).id == "MS3"
    # an asynchronous rule's answer: the note of its validation and of its outcome, said by ignored_answer
    assert issuers("M8") == ["ignored_answer"] and rules.of(_response.ignored_answer).id == "M8"
    # a failed call's fallback: its issue said by fallback_outcome itself
    assert issuers("M3") == ["fallback_outcome"] and rules.of(_outcome.fallback_outcome).id == "M3"
    # a value JSON cannot encode: each reading words it, cannot_encode issues it
    assert issuers("H2") == ["cannot_encode"]
