"""The fixtures queue_event, mail_event, alb_event: valid events, a new seed per call, the same on every run."""

from __future__ import annotations

import pytest

import fnkit
from fnkit import alb, mail, queue
from fnkit.testing import event_factory


def test_each_fixture_builds_a_valid_event_of_its_source_by_default(queue_event, mail_event, alb_event):
    for factory, source in ((queue_event, "queue"), (mail_event, "mail"), (alb_event, "alb")):
        report = fnkit.validate(factory())
        assert report.ok and list(report) == [] and report.source == source


def test_the_defaults_are_the_smallest_useful_events(queue_event, mail_event, alb_event):
    assert [r["body"] for r in queue_event()["Records"]] == ["message 1"]
    event = mail_event()
    assert [r["address"] for r in event["envelope"]["recipients"]] == ["recipient@example.com"]
    assert event["subject"] == "Hello"
    assert (alb_event()["httpMethod"], alb_event()["path"]) == ("GET", "/")


def test_arguments_are_build_event_s_own(queue_event, mail_event, alb_event):
    event = queue_event(["a", "b"], fifo=True, group_ids=["g", "g"], dialect="aws", seed=5)
    assert event == queue.build_event(["a", "b"], fifo=True, group_ids=["g", "g"], dialect="aws", seed=5)
    assert queue_event("one body")["Records"][0]["body"] == "one body"
    assert mail_event(subject="Hi", flow_direction="OUTBOUND")["flowDirection"] == "OUTBOUND"
    assert "multiValueHeaders" in alb_event("POST", "/x", body=b"{}", multi_value=True)


def test_each_call_gets_the_next_seed_so_ids_differ_but_runs_repeat(queue_event, mail_event):
    first, second = queue_event(), queue_event()
    assert queue.correlation_ids(first) != queue.correlation_ids(second)
    assert first == queue.build_event(["message 1"], seed=0) and second == queue.build_event(["message 1"], seed=1)
    fresh = event_factory("queue")
    assert (fresh(), fresh()) == (first, second)
    assert mail_event()["invocationId"] != mail_event()["invocationId"]


def test_a_fresh_factory_per_test(alb_event):
    # the fixture is function-scoped: this test's first event has seed 0 again
    assert alb_event() == alb.build_event(seed=0)
    assert repr(alb_event) == "<fnkit.testing.EventFactory 'alb': fnkit.alb.build_event, 1 built>"


def test_an_unknown_source_is_refused():
    with pytest.raises(ValueError, match="unknown source 'sns'"):
        event_factory("sns")
    assert event_factory("mail")() == mail.build_event(
        mail_from="sender@example.org", recipients=["recipient@example.com"], subject="Hello", seed=0
    )


def test_mail_event_with_a_message_takes_its_envelope_and_subject_from_the_message(mail_event):
    from email.message import EmailMessage

    message = EmailMessage()
    message["From"] = "alice@example.org"
    message["To"] = "orders@example.com, billing@example.com"
    message["Subject"] = "Invoice 42"
    message["Date"] = "Thu, 01 Jan 2026 00:00:00 +0000"
    message.set_content("Hello")
    event = mail_event(message=message)
    assert [r["address"] for r in event["envelope"]["recipients"]] == ["orders@example.com", "billing@example.com"]
    assert event["subject"] == "Invoice 42"
    assert event["sender"]["address"] == event["envelope"]["mailFrom"]["address"] == "alice@example.org"
    assert mail_event(message=message, subject="Re: given")["subject"] == "Re: given"  # what is given still wins


def test_a_message_without_the_headers_the_content_api_requires_is_taken_with_a_warning():
    undated = b"From: alice@example.org\r\nTo: bob@example.com\r\nSubject: hi\r\n\r\nbody\r\n"
    with pytest.warns(UserWarning, match="no Date header") as caught:
        event = mail.build_event(message=undated)
    assert event["subject"] == "hi" and "context.message_content" in str(caught[0].message)
    dated = undated.replace(b"Subject", b"Date: Thu, 01 Jan 2026 00:00:00 +0000\r\nSubject")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mail.build_event(message=dated)["subject"] == "hi"
