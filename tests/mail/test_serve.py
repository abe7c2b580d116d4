"""fnkit.mail.serve and `fnkit serve-mail`: a real SMTP server, real smtplib clients over loopback.

No mocks: every test talks SMTP to a running server and reads the Maildirs it wrote.
"""

import email
import mailbox
import os
import random
import re
import signal
import smtplib
import subprocess
import sys
import threading
import time
from email import policy
from email.message import EmailMessage
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("aiosmtpd")

from fnkit import mail
from fnkit.mail._serve import event_headers

from .helpers import ALICE, BOB, CAROL, respond

REPO_ROOT = Path(__file__).resolve().parents[2]
OUTSIDER = "sender@example.org"  # not an organisation address
DAVE = "dave@example.com"


def make_message(frm=OUTSIDER, to=(ALICE,), subject="Hello", body="Hi there.\n") -> bytes:
    msg = EmailMessage()
    msg["From"] = frm
    msg["To"] = ", ".join(to)
    msg["Subject"] = subject
    msg["Date"] = "Thu, 01 Jan 2026 00:00:00 +0000"
    msg["Message-ID"] = "<test@example.org>"
    msg.set_content(body)
    return msg.as_bytes(policy=policy.SMTP)  # CRLF line ends, as SMTP clients send


class Recorder:
    """A handler that keeps every event it saw and answers with `answer(event, context)`."""

    def __init__(self, answer=None):
        self.answer = answer or (lambda event, context: respond(("DEFAULT", True)))
        self.events = []
        self.lock = threading.Lock()

    def __call__(self, event, context):
        with self.lock:
            self.events.append(event)
        return self.answer(event, context)


@pytest.fixture
def start(tmp_path):
    """start(handler, **serve_keywords) -> a running server on a free loopback port; stopped afterwards."""
    servers = []

    def _start(handler, **keywords):
        keywords.setdefault("domains", ["example.com"])
        keywords.setdefault("maildir", tmp_path / "maildir")
        keywords.setdefault("isolation", "thread")  # these tests read, here, what the handler saw
        server = mail.serve(handler, **keywords)
        servers.append(server)
        return server

    yield _start
    for server in servers:
        server.stop()


def send(server, mail_from, recipients, raw):
    """sendmail over a fresh connection; the refused-recipients dict."""
    with smtplib.SMTP(server.host, server.port, timeout=10) as client:
        return client.sendmail(mail_from, recipients, raw)


# --- the server itself ------------------------------------------------------------------


def test_binds_loopback_on_a_free_port_and_stops(start):
    server = start(Recorder())
    assert server.host == "127.0.0.1" and server.port > 0
    assert server.url == f"smtp://127.0.0.1:{server.port}"
    with smtplib.SMTP(server.host, server.port, timeout=5) as client:
        assert client.noop()[0] == 250
    server.stop()
    assert not server.running
    with pytest.raises(ConnectionRefusedError):
        smtplib.SMTP(server.host, server.port, timeout=2)


def test_context_manager_and_temporary_maildir():
    with mail.serve(Recorder(), domains="example.com") as server:
        assert send(server, OUTSIDER, [ALICE], make_message()) == {}
        assert server.maildir.is_dir() and len(server.delivered(ALICE)) == 1
    assert not server.running


def test_binding_another_host_warns(tmp_path):
    with pytest.warns(UserWarning, match="reachable from other machines"):
        server = mail.serve(Recorder(), domains=["example.com"], maildir=tmp_path, host="0.0.0.0")
    server.stop()


def test_needs_domains(tmp_path):
    with pytest.raises(ValueError, match="open relay"):
        mail.serve(Recorder(), domains=[], maildir=tmp_path)


# --- one and many recipients ---------------------------------------------------------------


def test_one_recipient_default_is_delivered_byte_for_byte(start):
    seen = []

    def read_it(event, context):  # the content API holds the whole message as it arrived (M9)
        seen.append(context.message_content.get_raw_message_content(event["messageId"]))
        return respond(("DEFAULT", True))

    handler = Recorder(read_it)
    server = start(handler)
    raw = make_message(subject="Quarterly report")
    assert send(server, OUTSIDER, [ALICE], raw) == {}
    assert seen == [raw]
    # a real Maildir, readable with the stdlib
    box = mailbox.Maildir(server.maildir / ALICE, create=False)
    [key] = box.keys()
    assert box.get_bytes(key) == raw
    assert server.delivered(ALICE) == [raw]
    # the event came from the real message and envelope (M1)
    [event] = handler.events
    assert mail.validate_event(event).ok
    assert event["subject"] == "Quarterly report"
    assert event["envelope"] == {"mailFrom": {"address": OUTSIDER}, "recipients": [{"address": ALICE}]}
    assert event["sender"] == {"address": OUTSIDER}
    assert event["flowDirection"] == "INBOUND" and event["truncated"] is False
    [row] = server.log.to_dict("records")
    assert row["recipient"] == ALICE and row["action"] == "DEFAULT" and row["via"] == "allRecipients"
    assert row["status"] == "delivered" and row["rule"] == "M5" and row["attempts"] == 1
    assert row["message_id"] == event["messageId"] and Path(row["delivered_to"]).is_file()


def test_event_takes_sender_from_header_and_cuts_the_subject(start):
    handler = Recorder()
    server = start(handler)
    send(server, "bounces@lists.example.org", [ALICE], make_message(frm="Ann <ann@example.org>", subject="x" * 300))
    [event] = handler.events
    assert event["sender"]["address"] == "ann@example.org"
    assert event["envelope"]["mailFrom"]["address"] == "bounces@lists.example.org"
    assert event["subject"] == "x" * 256


def test_mixed_dispositions_for_many_recipients(start):
    server = start(
        Recorder(
            lambda e, c: respond(("DROP", [BOB]), ("BOUNCE", [CAROL], "Carol left the company"), ("DEFAULT", True))
        )
    )
    assert send(server, DAVE, [ALICE, BOB, CAROL], make_message(frm=DAVE, to=(ALICE, BOB, CAROL))) == {}
    log = server.log.set_index("recipient")
    assert log.loc[ALICE, "status"] == "delivered" and log.loc[ALICE, "via"] == "allRecipients"
    assert log.loc[BOB, "action"] == "DROP" and log.loc[BOB, "status"] == "dropped"
    assert log.loc[CAROL, "action"] == "BOUNCE" and log.loc[CAROL, "status"] == "bounced"
    assert len(server.delivered(ALICE)) == 1
    assert server.delivered(BOB) == [] and server.delivered(CAROL) == []
    # the local sender gets the bounce, with the bounceMessage and the recipient
    [bounce] = server.delivered(DAVE)
    parsed = email.message_from_bytes(bounce, policy=policy.default)
    assert parsed["Subject"] == "Undelivered Mail Returned to Sender"
    assert "MAILER-DAEMON@example.com" in parsed["From"] and parsed["To"] == DAVE
    text = parsed.get_content()
    assert "Carol left the company" in text and CAROL in text and ALICE not in text
    assert log.loc[CAROL, "delivered_to"].startswith(str(server.maildir_for(DAVE)))
    assert "bounce delivered to" in log.loc[CAROL, "note"]


def test_bounce_to_a_remote_sender_is_recorded_not_delivered(start):
    server = start(Recorder(lambda e, c: respond(("BOUNCE", True, "No thanks"))))
    assert send(server, OUTSIDER, [ALICE, BOB], make_message(to=(ALICE, BOB))) == {}
    log = server.log
    assert list(log["status"]) == ["bounced", "bounced"]
    assert all("bounce not delivered (remote sender)" in note for note in log["note"])
    assert log["delivered_to"].isna().all()
    assert not server.maildir_for(OUTSIDER).exists()


def test_one_bounce_lists_every_bounced_recipient(start):
    server = start(Recorder(lambda e, c: respond(("BOUNCE", [ALICE], "first"), ("BOUNCE", [BOB], "second"))))
    send(server, DAVE, [ALICE, BOB], make_message(frm=DAVE, to=(ALICE, BOB)))
    [bounce] = server.delivered(DAVE)
    text = email.message_from_bytes(bounce, policy=policy.default).get_content()
    assert f"<{ALICE}>: first" in text and f"<{BOB}>: second" in text


def test_recipient_added_by_the_response(start):
    server = start(Recorder(lambda e, c: respond(("DEFAULT", True), ("DEFAULT", [CAROL, "eve@example.net"]))))
    send(server, OUTSIDER, [ALICE], make_message())
    log = server.log.set_index("recipient")
    assert log.loc[CAROL, "status"] == "delivered" and "added by the response" in log.loc[CAROL, "note"]
    assert len(server.delivered(CAROL)) == 1
    # inbound: the platform adds only the organisation's own addresses
    assert log.loc["eve@example.net", "status"] == "not delivered"
    assert (
        "not an organisation address: on inbound mail the platform adds only its own (M5)"
        in log.loc["eve@example.net", "note"]
    )
    assert not server.maildir_for("eve@example.net").exists()


def test_extension_actions_move_to_junk_and_bypass_spam_check(start):
    server = start(
        Recorder(lambda e, c: respond(("MOVE_TO_JUNK", [ALICE]), ("BYPASS_SPAM_CHECK", [BOB]))),
        rule=mail.MailRule(extensions=True),
    )
    send(server, OUTSIDER, [ALICE, BOB], make_message(to=(ALICE, BOB)))
    log = server.log.set_index("recipient")
    assert log.loc[ALICE, "status"] == "junk" and log.loc[BOB, "status"] == "delivered"
    junk = mailbox.Maildir(server.maildir_for(ALICE), create=False).get_folder("Junk")
    assert len(junk) == 1 and len(mailbox.Maildir(server.maildir_for(ALICE), create=False)) == 0
    assert len(server.delivered(BOB)) == 1


def test_repeated_recipient_is_delivered_once(start):
    handler = Recorder()
    server = start(handler)
    with smtplib.SMTP(server.host, server.port, timeout=5) as client:
        client.ehlo()
        client.mail(OUTSIDER)
        assert client.rcpt(ALICE)[0] == 250
        assert client.rcpt(ALICE.upper())[0] == 250
        assert client.data(make_message())[0] == 250
    assert len(handler.events[0]["envelope"]["recipients"]) == 1
    assert len(server.delivered(ALICE)) == 1 and len(server.log) == 1


# --- never an open relay; limits -------------------------------------------------------------


def test_relay_refused_at_rcpt(start):
    handler = Recorder()
    server = start(handler)
    with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
        send(server, OUTSIDER, ["victim@example.net"], make_message(to=("victim@example.net",)))
    assert refused.value.recipients["victim@example.net"] == (550, b"5.7.1 Relaying denied")
    # a message for one local and one remote recipient: only the local one is accepted
    assert send(server, OUTSIDER, [ALICE, "victim@example.net"], make_message()) == {
        "victim@example.net": (550, b"5.7.1 Relaying denied")
    }
    assert [r["address"] for r in handler.events[0]["envelope"]["recipients"]] == [ALICE]
    assert list(server.log["recipient"]) == [ALICE]
    assert not server.maildir_for("victim@example.net").exists()


def test_subdomains_are_not_organisation_domains(start):
    server = start(Recorder())
    with pytest.raises(smtplib.SMTPRecipientsRefused):
        send(server, OUTSIDER, ["alice@mail.example.com"], make_message())


def test_bad_addresses_refused(start):
    server = start(Recorder())
    with smtplib.SMTP(server.host, server.port, timeout=5) as client:
        client.ehlo()
        assert client.mail("not-an-address")[0] == 553
        assert client.mail(OUTSIDER)[0] == 250
        assert client.rcpt("alice@@example.com")[0] == 553
    assert len(server.log) == 0


# --- a mail server's manners (RFC 5321): lengths, all-or-nothing delivery, the null sender, a bounded store ----

LONG_DOMAIN = "d" * 177 + ".example.com"  # 189 octets: with a 64-octet local part, a path of exactly 256


def test_addresses_past_rfc_5321_lengths_are_refused_at_mail_and_rcpt_with_a_reason(start):
    server = start(Recorder(), domains=["example.com", LONG_DOMAIN])
    with smtplib.SMTP(server.host, server.port, timeout=5) as client:
        client.ehlo()
        code, text = client.mail("s" * 65 + "@example.org")
        assert code == 553 and b"5.1.7" in text and b"local part" in text and b"65 octets" in text
        assert client.mail(OUTSIDER)[0] == 250
        code, text = client.rcpt("x" * 300 + "@example.com")  # before: accepted, then 451 for the whole message
        assert code == 553 and b"5.1.3" in text and b"300 octets long; at most 64" in text
        code, text = client.rcpt("a@" + "d" * 250 + ".example.com")
        assert code == 553 and b"domain is 262 octets long; at most 255" in text
        code, text = client.rcpt("u" * 64 + "@" + "e" * 178 + ".example.com")  # 255 octets: a path of 257
        assert code == 501 and text.startswith(b"5.1.3 Path too long") and b"257" in text
        exactly = "u" * 64 + "@" + LONG_DOMAIN  # every limit met exactly
        assert client.rcpt(exactly)[0] == 250
        assert client.rcpt(ALICE)[0] == 250
        assert client.data(make_message(to=(ALICE,)))[0] == 250
    assert len(server.delivered(exactly)) == 1 and len(server.delivered(ALICE)) == 1


def test_a_non_ascii_address_of_the_longest_length_has_a_maildir(start):
    server = start(Recorder(), domains=[LONG_DOMAIN])
    address = "é" * 32 + "@" + LONG_DOMAIN  # 254 octets; its folder name, escaped, would be 382 characters
    with smtplib.SMTP(server.host, server.port, timeout=5) as client:
        assert client.sendmail(OUTSIDER, [address], make_message(to=(ALICE,)), mail_options=["SMTPUTF8"]) == {}
    assert len(server.delivered(address)) == 1 and len(server.maildir_for(address).name) <= 255


def test_a_message_is_delivered_to_all_its_recipients_or_none_so_retries_never_duplicate(start):
    server = start(Recorder())
    server.maildir_for(BOB).write_text("a file where bob's Maildir would be")  # bob's delivery fails
    raw = make_message(to=(ALICE, BOB, CAROL))
    replies = []
    for _ in range(3):  # the client retries, as it must after 451
        with smtplib.SMTP(server.host, server.port, timeout=10) as client:
            client.ehlo()
            client.mail(OUTSIDER)
            for person in (ALICE, BOB, CAROL):
                client.rcpt(person)
            replies.append(client.data(raw))
    # before: alice and carol got a copy at each attempt (three each), bob none
    assert server.delivered(ALICE) == [] and server.delivered(CAROL) == []
    for code, text in replies:
        assert code == 451 and b"Nothing was delivered" in text and BOB.encode() in text
    log = server.log
    assert len(log) == 9 and set(log["status"]) == {"deferred"} and log["delivered_to"].isna().all()
    assert all(f"delivery to {BOB} failed" in note for note in log["note"])
    server.maildir_for(BOB).unlink()  # the fault is mended: the next retry delivers once to each
    assert send(server, OUTSIDER, [ALICE, BOB, CAROL], raw) == {}
    assert [len(server.delivered(p)) for p in (ALICE, BOB, CAROL)] == [1, 1, 1]
    for person in (ALICE, BOB, CAROL):  # nothing half-written is left behind
        assert list((server.maildir_for(person) / "tmp").iterdir()) == []


def test_a_failed_bounce_defers_the_whole_message(start):
    server = start(Recorder(lambda e, c: respond(("BOUNCE", [BOB]), ("DEFAULT", [ALICE]))))
    server.maildir_for(CAROL).write_text("in the way")  # carol sends; her bounce cannot be filed
    with pytest.raises(smtplib.SMTPDataError) as deferred:
        send(server, CAROL, [ALICE, BOB], make_message(frm=CAROL, to=(ALICE, BOB)))
    assert deferred.value.smtp_code == 451
    assert server.delivered(ALICE) == [] and set(server.log["status"]) == {"deferred"}


def test_the_null_sender_is_accepted_and_never_bounced(start):
    handler = Recorder(lambda e, c: respond(("BOUNCE", True)))
    server = start(handler)
    dsn = make_message(frm="MAILER-DAEMON@example.org", subject="Undelivered Mail Returned to Sender")
    with smtplib.SMTP(server.host, server.port, timeout=5) as client:
        client.ehlo()
        assert client.mail("<>") == (250, b"OK")  # before: 553, not a valid address
        assert client.rcpt(ALICE)[0] == 250
        assert client.data(dsn)[0] == 250
    [event] = handler.events
    assert event["envelope"]["mailFrom"]["address"] == "" and event["sender"]["address"] == "MAILER-DAEMON@example.org"
    [row] = server.log.to_dict("records")
    assert row["status"] == "bounced" and "no bounce: the sender is the null sender" in row["note"]
    assert row["sender"] == "" and list(server.maildir.iterdir()) == []  # nothing filed for anyone
    # smtplib's way of saying it; a message without a From header gets a stand-in sender
    handler.answer = lambda e, c: respond(("DEFAULT", True))
    assert send(server, "", [ALICE], b"Subject: delivery report\r\n\r\nx\r\n") == {}
    assert handler.events[-1]["sender"]["address"] == "MAILER-DAEMON@fnkit.invalid"
    assert len(server.delivered(ALICE)) == 1


def test_outbound_refuses_the_null_sender_as_a_relay(start):
    server = start(Recorder(), outbound=True)
    with smtplib.SMTP(server.host, server.port, timeout=5) as client:
        client.ehlo()
        assert client.mail("<>")[0] == 250
        code, text = client.rcpt("x@example.net")
    assert code == 550 and b"null sender" in text


def test_the_message_store_is_bounded_in_bytes_dropping_the_oldest_with_a_log_line(start, caplog):
    read = []

    def reads_its_message(event, context):  # the message in flight is always there to read
        read.append(len(context.message_content.get_raw_message_content(event["messageId"])))
        return respond(("DROP", True))

    server = start(Recorder(reads_its_message), max_store_bytes=250_000)
    raws = [make_message(subject=f"m{i}", body=f"{i}" + "x" * 99_000 + "\n") for i in range(8)]
    with caplog.at_level("WARNING", logger="fnkit.mail.serve"):
        for raw in raws:
            assert send(server, OUTSIDER, [ALICE], raw) == {}
    ids = list(server.log["message_id"])
    assert read == [len(raw) for raw in raws]
    # before: all eight stayed (for 24 hours); now two fit: the newest, and the one before it
    assert server.store.size_bytes <= 250_000 and len(server.store) == 2
    assert ids[-1] in server.store and ids[-2] in server.store and ids[0] not in server.store
    lines = [r.getMessage() for r in caplog.records if r.name == "fnkit.mail.serve"]
    assert len(lines) == 6 and all("dropped the 1 oldest message(s)" in line for line in lines)
    assert "cap of 250,000 bytes" in lines[0] and ids[0] in lines[0]
    with pytest.raises(ValueError, match="max_store_bytes"):
        start(Recorder(), max_store_bytes=0)


def test_oversize_refused(start):
    handler = Recorder()
    server = start(handler, max_message_bytes=4000)
    big = make_message(body="x" * 70 + "\n" * 1 + ("y" * 70 + "\n") * 100)
    # a client that announces SIZE is refused at MAIL
    with pytest.raises(smtplib.SMTPSenderRefused) as refused:
        send(server, OUTSIDER, [ALICE], big)
    assert refused.value.smtp_code == 552
    # one that does not is refused after DATA
    with smtplib.SMTP(server.host, server.port, timeout=5) as client:
        client.ehlo()
        client.mail(OUTSIDER)
        client.rcpt(ALICE)
        code, _ = client.data(big)
    assert code == 552
    assert handler.events == [] and len(server.log) == 0 and server.delivered(ALICE) == []
    # a message under the limit still flows
    assert send(server, OUTSIDER, [ALICE], make_message()) == {}


def test_outbound_mode(start):
    handler = Recorder()
    server = start(handler, outbound=True)
    assert send(server, ALICE, ["x@example.net", BOB], make_message(frm=ALICE, to=("x@example.net", BOB))) == {}
    assert handler.events[0]["flowDirection"] == "OUTBOUND"
    assert set(server.log["status"]) == {"delivered"}
    assert len(server.delivered("x@example.net")) == 1
    # a sender outside the organisation may not send out through it
    with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
        send(server, OUTSIDER, ["x@example.net"], make_message())
    assert refused.value.recipients["x@example.net"][0] == 550


def test_outbound_takes_at_most_500_recipients(start):
    handler = Recorder(lambda e, c: respond(("DROP", True)))
    server = start(handler, outbound=True)
    recipients = [f"r{i}@example.net" for i in range(501)]
    refused = send(server, ALICE, recipients, make_message(frm=ALICE, to=("list@example.net",)))
    assert refused == {recipients[-1]: (452, b"4.5.3 Too many recipients")}
    assert len(handler.events[0]["envelope"]["recipients"]) == 500
    assert len(server.log) == 500 and set(server.log["status"]) == {"dropped"}


def test_truncated_event_recipients_cut_get_the_fallback(start):
    handler = Recorder(lambda e, c: respond(("DROP", True)))
    # addresses as long as RFC 5321 lets them be: a 64-octet local part, a domain of 185
    domain = "d" * 173 + ".example.com"
    server = start(handler, rule=mail.MailRule(fallback_action="BOUNCE"), domains=[domain])
    recipients = [f"{'u' * 60}{i:04d}@{domain}" for i in range(700)]  # ~180 KB of recipients
    assert send(server, OUTSIDER, recipients, make_message()) == {}
    [event] = handler.events
    assert event["truncated"] is True and len(event["envelope"]["recipients"]) < 700
    log = server.log
    assert len(log) == 700 and log["recipient"].is_unique
    kept = len(event["envelope"]["recipients"])
    assert set(log["status"][:kept]) == {"dropped"}
    assert set(log["action"][kept:]) == {"BOUNCE"} and set(log["rule"][kept:]) == {"M1"}


# --- the rule: fallback, retries, handlers that misbehave ------------------------------------


@pytest.mark.parametrize(
    "junk",
    [None, {}, {"actions": []}, "DEFAULT", {"actions": [{"action": {"type": "KEEP"}}]}, {1, 2}],
    ids=["null", "empty", "no-actions", "string", "unknown-type", "set"],
)
def test_fallback_after_an_invalid_response(start, junk):
    server = start(Recorder(lambda e, c: junk), rule=mail.MailRule(fallback_action="DROP"))
    assert send(server, OUTSIDER, [ALICE, BOB], make_message(to=(ALICE, BOB))) == {}
    log = server.log
    assert set(log["action"]) == {"DROP"} and set(log["via"]) == {"fallback"}
    assert set(log["outcome"]) == {"fallback"} and set(log["rule"]) == {"M3"}
    assert server.delivered(ALICE) == []


def test_fallback_after_a_timeout_does_not_keep_the_client_waiting(start):
    def hangs(event, context):
        time.sleep(3)
        return respond(("DROP", True))

    server = start(hangs, rule=mail.MailRule(fallback_action="DEFAULT", response_timeout_s=0.3))
    started = time.monotonic()
    assert send(server, OUTSIDER, [ALICE], make_message()) == {}
    assert time.monotonic() - started < 2.5
    [row] = server.log.to_dict("records")
    assert row["via"] == "fallback" and row["status"] == "delivered" and "did not answer" in row["reason"]
    assert len(server.delivered(ALICE)) == 1


def test_retries_run_on_the_virtual_clock(start):
    calls = []

    def flaky(event, context):
        calls.append(event["invocationId"])
        if len(calls) == 1:
            raise RuntimeError("cold start")
        return respond(("DROP", [ALICE]), ("DEFAULT", True))

    server = start(flaky, rule=mail.MailRule(rule_timeout_minutes=10))
    started = time.monotonic()
    send(server, OUTSIDER, [ALICE, BOB], make_message(to=(ALICE, BOB)))
    assert time.monotonic() - started < 5  # the 60 s backoff is virtual
    assert len(calls) == 2 and calls[0] == calls[1]  # same invocationId on the retry (M1)
    log = server.log.set_index("recipient")
    assert log.loc[ALICE, "status"] == "dropped" and log.loc[BOB, "status"] == "delivered"
    assert set(log["attempts"]) == {2} and set(log["outcome"]) == {"applied"}


def test_rule_timeout_zero_means_no_retry(start):
    calls = []

    def fails(event, context):
        calls.append(1)
        raise RuntimeError("down")

    server = start(fails, rule=mail.MailRule(fallback_action="BOUNCE"))
    send(server, OUTSIDER, [ALICE], make_message())
    assert calls == [1]
    assert server.log.loc[0, "status"] == "bounced" and "raised RuntimeError" in server.log.loc[0, "reason"]


def test_server_survives_handlers_that_crash_hang_or_exit(start):
    behaviours = iter(["raise", "exit", "hang", "print", "ok"])

    def unruly(event, context):
        what = next(behaviours)
        if what == "raise":
            raise ZeroDivisionError("oops")
        if what == "exit":
            sys.exit(3)
        if what == "hang":
            time.sleep(2)
        if what == "print":
            print("noise on stdout")
            return object()
        return respond(("DEFAULT", True))

    server = start(unruly, rule=mail.MailRule(fallback_action="DROP", response_timeout_s=0.3))
    for _ in range(5):
        assert send(server, OUTSIDER, [ALICE], make_message()) == {}
    assert list(server.log["via"]) == ["fallback"] * 4 + ["allRecipients"]
    assert len(server.delivered(ALICE)) == 1


def test_async_def_handler(start):
    async def handler(event, context):
        return respond(("DROP", True))

    server = start(handler)
    send(server, OUTSIDER, [ALICE], make_message())
    assert server.log.loc[0, "status"] == "dropped"


def test_asynchronous_rule_never_changes_delivery(start):
    invoked = threading.Event()

    def handler(event, context):
        raw = context.message_content.get_raw_message_content(event["messageId"])
        context.message_content.put_raw_message_content(event["messageId"], raw + b"\r\nchanged\r\n")
        invoked.set()
        return respond(("DROP", True))

    raw = make_message(to=(ALICE, BOB))
    server = start(handler, rule=mail.MailRule(mode="async"))
    assert send(server, OUTSIDER, [ALICE, BOB], raw) == {}
    assert server.drain(5)
    assert invoked.is_set()
    log = server.log
    assert set(log["action"]) == {"DEFAULT"} and set(log["rule"]) == {"M8"} and set(log["status"]) == {"delivered"}
    assert set(log["attempts"]) == {1} and set(log["outcome"]) == {"ignored"}
    assert server.delivered(ALICE) == [raw]  # the replacement did not count (M9)


# --- content: replacements, malformed MIME ------------------------------------------------------


DISCLAIMER = b"-- \r\nThis message may contain confidential information.\r\n"


def add_disclaimer(event, context):
    raw = context.message_content.get_raw_message_content(event["messageId"])
    context.message_content.put_raw_message_content(event["messageId"], raw.rstrip(b"\r\n") + b"\r\n" + DISCLAIMER)
    return respond(("DROP", [BOB]), ("DEFAULT", True))


def test_disclaimer_added_by_the_handler_is_delivered(start):
    server = start(add_disclaimer)
    raw = make_message(to=(ALICE, BOB), body="The numbers are in.\n")
    assert send(server, OUTSIDER, [ALICE, BOB], raw) == {}
    [delivered] = server.delivered(ALICE)
    assert delivered.endswith(DISCLAIMER) and b"The numbers are in." in delivered
    parsed = email.message_from_bytes(delivered, policy=policy.default)
    assert "confidential information" in parsed.get_content()
    assert server.delivered(BOB) == []
    assert server.log.set_index("recipient").loc[ALICE, "replaced"]


def test_invalid_replacement_is_refused_and_the_original_delivered(start):
    errors = []

    def breaks_lines(event, context):
        try:
            context.message_content.put_raw_message_content(
                event["messageId"], b"From: a@example.com\r\n\r\n" + b"z" * 2000 + b"\r\n"
            )
        except mail.InvalidContentError as exc:
            errors.append(exc)
        return respond(("DEFAULT", True))

    server = start(breaks_lines)
    raw = make_message()
    send(server, OUTSIDER, [ALICE], raw)
    assert len(errors) == 1 and "998" in str(errors[0])
    assert server.delivered(ALICE) == [raw]
    assert not server.log.loc[0, "replaced"]


def test_invalid_replacement_left_unhandled_falls_back_and_says_why(start):
    def careless(event, context):
        context.message_content.put_raw_message_content(event["messageId"], b"no headers at all")
        return respond(("DROP", True))

    server = start(careless)
    raw = make_message()
    send(server, OUTSIDER, [ALICE], raw)
    row = server.log.to_dict("records")[0]
    assert row["via"] == "fallback" and row["status"] == "delivered"
    assert "InvalidContentError" in row["reason"]
    assert server.delivered(ALICE) == [raw]


@pytest.mark.parametrize(
    "raw",
    [
        b"this is not a MIME message\r\nno header, no separator\r\n",
        (
            b'From: nobody\r\nSubject: broken multipart\r\nContent-Type: multipart/mixed; boundary="XX"\r\n\r\n'
            b"--XX\r\nContent-Type: text/plain\r\n\r\npart one, never closed\r\n"
        ),
        b"Subject: =?utf-8?q?half=ZZ?= encoded\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!not base64!!!\r\n",
        b"From: \xff\xfe@example.org\r\nSubject: caf\xe9 \xff\r\n\r\n8-bit headers, not UTF-8\r\n",
    ],
    ids=["no-headers", "unclosed-multipart", "bad-encodings", "8bit-headers"],
)
def test_malformed_mime_still_flows(start, raw):
    handler = Recorder()
    server = start(handler)
    assert send(server, OUTSIDER, [ALICE], raw) == {}
    [event] = handler.events
    assert mail.validate_event(event).ok
    if b"From:" not in raw:
        assert event["sender"]["address"] == OUTSIDER  # no From header: the envelope's sender
    assert server.delivered(ALICE) == [raw]  # delivered exactly as it came
    assert server.log.loc[0, "status"] == "delivered"


# --- the event comes from the message: the header adapter agrees with build_event ---------------

_HEADER_LINES = [
    b"From: Ann <ann@example.org>",
    b"From: nobody",
    b"From: a@example.org, b@example.org",
    b"FROM: x@example.org",
    b"From : y@example.org",
    b"From x@example.org Thu Jan  1 00:00:00 2026",
    b"Subject: hello",
    b"subject: again",
    b"Subject: =?utf-8?q?caf=C3=A9?=",
    b"Subject:",
    b"Subject: caf\xe9 \xff",
    b" continued",
    b"\tmore",
    b"  ",
    b"To: t@example.com",
    b"Cc: Carol <c@example.com>",
    b"Return-Path: <rp@example.org>",
    b":no name",
    b"not a header line",
    b"X-Long: " + b"y" * 120,
    b"Date: Thu, 01 Jan 2026 00:00:00 +0000",
    b"",
    b"Sender: s@example.org",
    b"Reply-To: r@example.org",
]


def _fields(raw):
    """(subject, sender) of the event build_event makes from `raw`, or the error it raises."""
    try:
        event = mail.build_event(
            message=raw, mail_from="env@example.org", recipients=[ALICE], store=mail.MessageStore()
        )
    except (ValueError, TypeError) as exc:
        return type(exc).__name__
    return event["subject"], event["sender"]["address"]


_LINE = st.tuples(
    st.one_of(st.sampled_from(_HEADER_LINES), st.binary(max_size=12)),
    st.sampled_from([b"\r\n", b"\r\n", b"\n", b"\r", b""]),
)


@pytest.mark.filterwarnings("ignore:build_event. the message has no")  # drawn messages lack Date and From
@settings(deadline=None)
@given(lines=st.lists(_LINE, max_size=12))
def test_event_headers_give_build_event_the_same_subject_and_sender(lines):
    raw = b"".join(line + newline for line, newline in lines)
    assert _fields(event_headers(raw)) == _fields(raw)


# --- every accepted recipient ends in exactly one disposition ---------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_every_accepted_recipient_gets_exactly_one_disposition(start, seed):
    rng = random.Random(seed)
    people = [f"user{i}@example.com" for i in range(8)]

    def decide(event, context):
        names = [r["address"] for r in event["envelope"]["recipients"]]
        entries: list[tuple[str, list[str] | bool]] = [
            (rng.choice(["DEFAULT", "DROP", "BOUNCE"]), [n]) for n in names if rng.random() < 0.7
        ]
        if rng.random() < 0.5:
            entries.append((rng.choice(["DEFAULT", "DROP"]), True))
        if rng.random() < 0.15:
            return "junk"
        return respond(*entries) if entries else {"actions": []}

    server = start(decide, rule=mail.MailRule(fallback_action=rng.choice(["DEFAULT", "DROP", "BOUNCE"])))
    accepted = []

    def client(k):
        with smtplib.SMTP(server.host, server.port, timeout=10) as smtp:
            for _ in range(4):
                to = rng.sample(people, rng.randint(1, 5)) + (["x@example.net"] if rng.random() < 0.3 else [])
                sender = rng.choice([OUTSIDER, people[0]])
                refused = smtp.sendmail(sender, to, make_message(frm=sender, to=to))
                accepted.append([t for t in to if t not in refused])

    threads = [threading.Thread(target=client, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log = server.log
    assert len(log) == sum(map(len, accepted)) == len(set(zip(log["message_id"], log["recipient"], strict=True)))
    assert set(log["status"]) <= {"delivered", "dropped", "bounced"}
    for person in people:  # the Maildirs hold exactly the deliveries, plus bounces to the local sender
        files = server.delivered(person)
        bounces = sum(1 for raw in files if b"Undelivered Mail Returned" in raw)
        assert len(files) - bounces == ((log["recipient"] == person) & (log["status"] == "delivered")).sum()
    for status, action in zip(log["status"], log["action"], strict=True):
        assert {"delivered": "DEFAULT", "dropped": "DROP", "bounced": "BOUNCE"}[status] == action


# --- the command line -------------------------------------------------------------------------


def test_cli_serve_mail(tmp_path):
    (tmp_path / "rulemod.py").write_text(
        "def handler(event, context):\n"
        "    return {'actions': [{'action': {'type': 'DEFAULT'}, 'allRecipients': True}]}\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen(
        [
            sys.executable,
            "-u",
            "-m",
            "fnkit",
            "serve-mail",
            "rulemod:handler",
            "--domain",
            "example.com",
            "--port",
            "0",
            "--maildir",
            str(tmp_path / "md"),
            "--max-store-bytes",
            "100",  # smaller than one message: each leaves the store once handled, with a line on stderr
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.search(r"listening on smtp://127\.0\.0\.1:(\d+)", line)
        assert process.stderr is not None
        assert found, line + process.stderr.read()
        port = int(found.group(1))
        with smtplib.SMTP("127.0.0.1", port, timeout=10) as client:
            assert client.sendmail(OUTSIDER, [ALICE], make_message()) == {}
            with pytest.raises(smtplib.SMTPRecipientsRefused):
                client.sendmail(OUTSIDER, ["x@example.net"], make_message())
        assert process.stdout is not None
        row_line = process.stdout.readline()
        assert ALICE in row_line and "DEFAULT" in row_line and "delivered" in row_line
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert "stopped after 1 message(s)" in out
    assert len(list((tmp_path / "md" / ALICE / "new").iterdir())) == 1
    assert "fnkit serve-mail: the message store passed its cap of 100 bytes: dropped the 1 oldest" in err
