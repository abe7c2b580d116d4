"""The mail event: build, validate, parse (fnkit/mail/_event.py)."""

import copy
import json
import re
import string
import subprocess
import sys
from email.message import EmailMessage
from typing import Any

import pytest

from fnkit import mail
from fnkit._engine.report import ContractError
from fnkit.mail._event import EVENT_SIZE_LIMIT, event_size

from .helpers import ALICE, BOB, CAROL, rules_of


def issues_at(report, path):
    return [i for i in report if i.path == path]


# --- building -------------------------------------------------------------------


def test_built_event_is_valid_and_has_every_field(event):
    report = mail.validate_event(event)
    assert report.ok and len(report) == 0
    assert report.source == "mail" and report.dialect is None
    assert set(event) == {
        "summaryVersion",
        "envelope",
        "sender",
        "subject",
        "messageId",
        "invocationId",
        "flowDirection",
        "truncated",
    }
    assert event["summaryVersion"] == "2018-10-10"
    assert [r["address"] for r in event["envelope"]["recipients"]] == [ALICE, BOB, CAROL]
    assert event["sender"] == {"address": "sender@example.org"}
    assert event["flowDirection"] == "INBOUND" and event["truncated"] is False


def test_builder_is_deterministic_for_a_seed():
    args: dict[str, Any] = dict(mail_from="a@example.com", recipients=[BOB])
    assert mail.build_event(**args, seed=3) == mail.build_event(**args, seed=3)
    one, other = mail.build_event(**args, seed=3), mail.build_event(**args, seed=4)
    assert one["invocationId"] != other["invocationId"] and one["messageId"] != other["messageId"]
    assert re.fullmatch(r"[0-9a-f]{32}", one["invocationId"])
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", one["messageId"])


def test_builder_keeps_only_256_characters_of_the_subject():
    event = mail.build_event(mail_from=ALICE, recipients=[BOB], subject="x" * 300)
    assert event["subject"] == "x" * 256
    assert mail.validate_event(event).ok


def test_builder_cuts_recipients_from_the_end_over_128_kb():
    recipients = [f"recipient.number.{i:05d}.with.a.long.name@department.example.com" for i in range(3000)]
    event = mail.build_event(mail_from=ALICE, recipients=recipients)
    kept = [r["address"] for r in event["envelope"]["recipients"]]
    assert event["truncated"] is True
    assert 0 < len(kept) < len(recipients) and kept == recipients[: len(kept)]
    size = event_size(event)
    assert size is not None and EVENT_SIZE_LIMIT - 200 < size <= EVENT_SIZE_LIMIT
    assert len(mail.validate_event(event)) == 0  # not even "truncated but small"


def test_builder_takes_missing_fields_from_an_email_message():
    message = EmailMessage()
    message["From"] = "Dana Example <dana@example.org>"
    message["To"] = "Alice <alice@example.com>, bob@example.com"
    message["Cc"] = "carol@example.com"
    message["Subject"] = "Caf\u00e9 " + "y" * 300
    message["Date"] = "Thu, 01 Jan 2026 00:00:00 +0000"
    message.set_content("Hello")
    event = mail.build_event(message=message)
    assert event["sender"]["address"] == "dana@example.org"
    assert event["envelope"]["mailFrom"]["address"] == "dana@example.org"
    assert [r["address"] for r in event["envelope"]["recipients"]] == [ALICE, BOB, CAROL]
    assert event["subject"].startswith("Caf\u00e9 yy") and len(event["subject"]) == 256
    assert mail.validate_event(event).ok
    raw = mail.default_store().get_raw_message_content(event["messageId"])
    assert b"Hello" in raw and b"dana@example.org" in raw


def test_builder_reads_raw_bytes_and_prefers_given_fields():
    raw = (
        b"Return-Path: <bounces@lists.example.org>\r\nFrom: news@example.org\r\nTo: bob@example.com\r\n"
        b"Subject: Weekly news\r\nDate: Thu, 01 Jan 2026 00:00:00 +0000\r\n\r\nBody\r\n"
    )
    event = mail.build_event(message=raw, subject="Given subject", recipients=[CAROL])
    assert event["envelope"]["mailFrom"]["address"] == "bounces@lists.example.org"
    assert event["sender"]["address"] == "news@example.org"
    assert event["subject"] == "Given subject"
    assert [r["address"] for r in event["envelope"]["recipients"]] == [CAROL]
    assert mail.default_store().get_raw_message_content(event["messageId"]) == raw


def test_builder_registers_a_minimal_message_when_none_is_given(event):
    raw = mail.default_store().get_raw_message_content(event["messageId"])
    assert mail.mime_problems(raw) == []
    assert b"Subject: Quarterly report" in raw


def test_builder_refuses_what_no_platform_sends():
    with pytest.raises(ValueError, match="MS3"):
        mail.build_event(mail_from=ALICE, recipients=["Bob <bob@example.com>"])
    with pytest.raises(ValueError, match="MS2"):
        mail.build_event(mail_from=ALICE, recipients=[BOB], flow_direction="inbound")
    with pytest.raises(ValueError, match="MS4"):
        mail.build_event(
            mail_from=ALICE, recipients=[f"r{i}@example.net" for i in range(501)], flow_direction="OUTBOUND"
        )
    with pytest.raises(TypeError, match="unknown field"):
        mail.build_event(mail_from=ALICE, recipients=[BOB], invocation="x")
    with pytest.raises(ValueError, match="dialect"):
        mail.build_event(mail_from=ALICE, recipients=[BOB], dialect="azure")  # type: ignore[arg-type]


def test_builder_sets_extra_fields_by_either_name():
    event = mail.build_event(mail_from=ALICE, recipients=[BOB], invocation_id="retry-me", summaryVersion="2019-07-28")
    assert event["invocationId"] == "retry-me" and event["summaryVersion"] == "2019-07-28"
    assert mail.validate_event(event).ok


# --- validating ------------------------------------------------------------------


def test_missing_and_mistyped_fields_cite_ms1(event):
    del event["messageId"]
    event["envelope"]["recipients"][1] = {"address": 42}
    event["truncated"] = "no"
    report = mail.validate_event(event)
    assert not report.ok
    assert issues_at(report, "$.messageId")[0].code == "missing"
    assert issues_at(report, "$.messageId")[0].rule == "MS1"
    assert issues_at(report, "$.envelope.recipients[1].address")[0].code == "type"
    assert issues_at(report, "$.truncated")[0].rule == "M1"


def test_flow_direction_must_be_inbound_or_outbound(event):
    event["flowDirection"] = "Inbound"
    report = mail.validate_event(event)
    assert [(i.path, i.code, i.rule) for i in report] == [("$.flowDirection", "enum", "MS2")]


@pytest.mark.parametrize(
    "address",
    [
        "bob",
        "Bob <bob@example.com>",
        "bob@",
        "@example.com",
        "bob@@example.com",
        "bob smith@example.com",
        "bob..smith@example.com",
        ".bob@example.com",
        "bob@example..com",
        "bob@example.com.",
        "",
    ],
)
def test_addresses_must_look_like_addresses(event, address):
    event["envelope"]["recipients"][2]["address"] = address
    report = mail.validate_event(event)
    assert [(i.path, i.rule, i.severity) for i in report] == [("$.envelope.recipients[2].address", "MS3", "error")]


@pytest.mark.parametrize(
    "address",
    [
        "a@x",
        "o'brien+tag@ex-ample.co.uk",
        "user_name@sub.example.com",
        "jos\u00e9@caf\u00e9.example",
        "UPPER@EXAMPLE.COM",
    ],
)
def test_unusual_but_valid_addresses_pass(event, address):
    event["sender"]["address"] = address
    assert len(mail.validate_event(event)) == 0


def test_an_address_is_made_of_atext_as_rfc_5322_and_6532_define_it():
    from fnkit.mail._address import is_address

    atext = set(string.ascii_letters + string.digits + "!#$%&'*+/=?^_`{|}~-")
    for code in [*range(0x3100), 0xFEFF, 0xFFFD, 0x1F600, 0x10FFFF]:  # every ASCII and non-ASCII whitespace
        char = chr(code)
        if char in ".@":
            continue  # they join atoms and parts
        allowed = char in atext or (code > 0x7F and not char.isspace())
        assert is_address(f"a{char}b@x") is allowed, hex(code)
        assert is_address(f"a@x{char}") is allowed, hex(code)


def test_sender_and_envelope_sender_are_checked_too(event):
    event["sender"]["address"] = "not an address"
    event["envelope"]["mailFrom"]["address"] = "nobody"
    assert {i.path for i in mail.validate_event(event) if i.rule == "MS3"} == {
        "$.sender.address",
        "$.envelope.mailFrom.address",
    }


def test_empty_envelope_sender_is_the_bounce_null_sender(event):
    event["envelope"]["mailFrom"]["address"] = ""
    report = mail.validate_event(event)
    assert report.ok
    assert [(i.path, i.severity, i.rule) for i in report] == [("$.envelope.mailFrom.address", "warning", "MS3")]


def test_outbound_events_hold_at_most_500_recipients():
    recipients = [f"r{i}@example.net" for i in range(500)]
    event = mail.build_event(mail_from=ALICE, recipients=recipients, flow_direction="OUTBOUND")
    assert mail.validate_event(event).ok
    event["envelope"]["recipients"].append({"address": "one.more@example.net"})
    report = mail.validate_event(event)
    assert [(i.path, i.rule) for i in report.errors] == [("$.envelope.recipients", "MS4")]
    event["flowDirection"] = "INBOUND"
    assert mail.validate_event(event).ok


def test_duplicate_recipients_are_a_warning(event):
    event["envelope"]["recipients"].append({"address": "Bob@Example.com"})
    report = mail.validate_event(event)
    assert report.ok
    assert [(i.path, i.code, i.rule) for i in report] == [("$.envelope.recipients[3].address", "duplicate", "MS5")]
    assert "recipient 1" in report[0].message


def test_an_envelope_without_recipients_is_invalid(event):
    event["envelope"]["recipients"] = []
    report = mail.validate_event(event)
    assert [(i.code, i.rule) for i in report.errors] == [("limit", "MS5")]


@pytest.mark.parametrize(
    ("version", "warned"),
    [
        ("2018-10-10", False),
        ("2019-07-28", False),
        ("2031-02-03", False),
        ("v1", True),
        ("2018-13-01", True),
        ("2018-10-10T00:00", True),
    ],
)
def test_summary_version_is_an_opaque_date_style_string(event, version, warned):
    event["summaryVersion"] = version
    report = mail.validate_event(event)
    assert report.ok
    assert [(i.code, i.rule, i.severity) for i in report] == ([("format", "M1", "warning")] if warned else [])


def test_a_subject_over_256_characters_is_an_error(event):
    event["subject"] = "s" * 257
    report = mail.validate_event(event)
    assert [(i.path, i.code, i.rule) for i in report.errors] == [("$.subject", "limit", "M1")]
    event["subject"] = "s" * 256
    assert mail.validate_event(event).ok


def test_an_event_over_128_kb_must_be_truncated(event):
    event["envelope"]["recipients"] = [{"address": f"person{i:05d}.long.long.name@example.com"} for i in range(4000)]
    report = mail.validate_event(event)
    assert [(i.path, i.code, i.rule) for i in report.errors] == [("$", "limit", "M1")]
    assert "128 KB" in report.errors[0].message


def test_truncated_true_on_a_small_event_is_a_warning(event):
    event["truncated"] = True
    report = mail.validate_event(event)
    assert report.ok and [(i.path, i.rule) for i in report.warnings] == [("$.truncated", "M1")]


def test_an_empty_invocation_id_is_a_warning(event):
    event["invocationId"] = ""
    assert [(i.path, i.rule) for i in mail.validate_event(event).warnings] == [("$.invocationId", "M1")]


def test_unknown_fields_are_warnings_with_a_hint(event):
    event["FlowDirection"] = event.pop("flowDirection")
    report = mail.validate_event(event)
    unknown = [i for i in report if i.code == "unknown"]
    assert unknown and unknown[0].rule == "G1" and "flowDirection" in unknown[0].message
    assert not report.ok  # flowDirection itself is then missing


def test_json_text_and_bytes_are_decoded(event):
    text = json.dumps(event)
    assert mail.validate_event(text).ok and mail.validate_event(text.encode()).ok
    report = mail.validate_event(text[:-1])
    assert [(i.code, i.rule) for i in report] == [("format", "G0")]


def test_not_an_object():
    report = mail.validate_event([1, 2])
    assert not report.ok and report[0].rule == "MS1" and "got a list" in report[0].message


def test_validation_does_not_change_the_event(event):
    before = copy.deepcopy(event)
    mail.validate_event(event)
    event["subject"] = "s" * 300
    mail.validate_event(event)
    before["subject"] = "s" * 300
    assert event == before


# --- parsing ---------------------------------------------------------------------


def test_parse_gives_frozen_snake_case_dataclasses(event):
    parsed = mail.parse_event(json.dumps(event).encode())
    assert parsed.summary_version == "2018-10-10"
    assert parsed.envelope.mail_from.address == "sender@example.org"
    assert [r.address for r in parsed.envelope.recipients] == [ALICE, BOB, CAROL]
    assert parsed.flow_direction == "INBOUND" and parsed.invocation_id == event["invocationId"]
    with pytest.raises(AttributeError):
        parsed.subject = "changed"


def test_parse_raises_contract_error_with_the_report(event):
    event["flowDirection"] = "SIDEWAYS"
    with pytest.raises(ContractError) as caught:
        mail.parse_event(event)
    assert "MS2" in rules_of(caught.value.report)
    with pytest.raises(ContractError):
        mail.parse_event(b"\xff\xfe")


# --- detection and correlation -------------------------------------------------------


def test_correlation_id_is_the_invocation_id(event):
    assert mail.correlation_ids(event) == [event["invocationId"]]
    assert mail.correlation_ids(json.dumps(event)) == [event["invocationId"]]
    assert mail.correlation_ids({"Records": []}) == [] and mail.correlation_ids(b"\xff") == []


def test_looks_like(event):
    assert mail.looks_like(event)
    assert mail.looks_like({"envelope": {}, "invocationId": "x"})
    assert not mail.looks_like({"envelope": {}}) and not mail.looks_like({"Records": []})
    assert not mail.looks_like("envelope summaryVersion")


def test_importing_the_mail_source_stays_light():
    code = "import sys, fnkit.mail; print(sorted(m for m in sys.modules if m.split('.')[0] in ('email', 'pandas')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
