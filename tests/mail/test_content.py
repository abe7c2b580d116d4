"""The message content API (M9): MessageStore and context.message_content (fnkit/mail/_content.py)."""

from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

import pytest

from fnkit import mail

from .helpers import ALICE, BOB, respond

DATE = "Thu, 01 Jan 2026 00:00:00 +0000"
VALID = f"From: a@example.com\r\nTo: b@example.com\r\nDate: {DATE}\r\nSubject: hi\r\n\r\nHello\r\n".encode()
ACCEPT = respond(("DEFAULT", True))


def with_attachment():
    message = EmailMessage()
    message["From"], message["To"], message["Subject"], message["Date"] = ALICE, BOB, "Report", DATE
    message.set_content("See the attachment.")
    message.add_attachment(b"%PDF-1.4 secret", maintype="application", subtype="pdf", filename="secret.pdf")
    return message


# --- what valid MIME means ------------------------------------------------------------


def test_a_plain_message_and_a_multipart_one_are_valid():
    assert mail.mime_problems(VALID) == []
    assert mail.mime_problems(with_attachment().as_bytes()) == []


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (VALID.replace(b"Hello", b"x" * 999), "998"),
        (b"From: a@example.com\r\nDate: " + DATE.encode() + b"\r\nthis line is no header\r\n\r\nbody", "empty line"),
        (b"Subject: no originator\r\n\r\nbody", "From header is missing"),
        (b"From: a@example.com\r\n\r\nbody", "Date header is missing"),
        (
            b"From: a@example.com\r\nDate: " + DATE.encode() + b"\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!!\r\n",
            "base64",
        ),
        (
            b"From: a@example.com\r\nDate: " + DATE.encode() + b"\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n"
            b"--XX\r\n\r\npart without end\r\n",
            "closing boundary",
        ),
        (b"From: caf\xe9@example.com\r\nDate: " + DATE.encode() + b"\r\n\r\nbody", "neither ASCII nor UTF-8"),
        (b"", "empty"),
        ("From: a@example.com\r\n\r\ntext", "must be bytes"),
    ],
)
def test_invalid_mime_is_explained(content, words):
    problems = mail.mime_problems(content)
    assert problems and any(words in p for p in problems), problems


def test_a_line_of_exactly_998_characters_is_allowed():
    assert mail.mime_problems(VALID.replace(b"Hello", b"x" * 998)) == []


# --- the store ------------------------------------------------------------------------


def test_the_store_keeps_messages_24_hours_of_virtual_time():
    store = mail.MessageStore()
    store.add("m1", VALID)
    assert store.get_raw_message_content("m1") == VALID
    store.advance(24 * 3600)
    assert store.get_raw_message_content("m1") == VALID
    store.advance(1)
    with pytest.raises(mail.MessageNotFoundError, match="24 h"):
        store.get_raw_message_content("m1")
    with pytest.raises(mail.MessageNotFoundError):
        store.get_raw_message_content("unknown")


def test_a_replacement_outside_an_invocation_is_refused():
    store = mail.MessageStore()
    store.add("m1", VALID)
    with pytest.raises(mail.MessageFrozenError, match="M9"):
        store.put_raw_message_content("m1", VALID.replace(b"Hello", b"Bye"))
    assert store.get_raw_message_content("m1") == VALID


def test_the_store_counts_its_bytes_and_makes_room_oldest_first_sparing_what_is_kept():
    store = mail.MessageStore()
    for name in ("m1", "m2", "m3"):
        store.add(name, VALID)
    store.add("lazy", lambda: VALID * 2)  # a function counts once it is called
    assert store.size_bytes == 3 * len(VALID)
    assert store.get_raw_message_content("lazy") == VALID * 2 and store.size_bytes == 5 * len(VALID)
    with store.invocation("m1"):  # a replacement is held beside the original
        store.put_raw_message_content("m1", VALID.replace(b"Hello", b"Hello again"))
    assert store.size_bytes == 6 * len(VALID) + len(b" again")
    store.restore("m1")
    assert store.size_bytes == 5 * len(VALID)
    assert store.make_room(5 * len(VALID)) == []  # under the cap: nothing leaves
    dropped = store.make_room(3 * len(VALID), keep={"m1"})  # m1 is in flight: m2 goes, then m3
    assert dropped == [("m2", len(VALID)), ("m3", len(VALID))] and store.size_bytes == 3 * len(VALID)
    assert "m1" in store and "lazy" in store and "m2" not in store
    store.advance(24 * 3600 + 1)
    store.add("new", VALID)
    assert sorted(store.forget_expired()) == ["lazy", "m1"] and store.size_bytes == len(VALID)
    store.forget("new")
    store.forget("new")  # nothing to forget: no error
    assert store.size_bytes == 0 and len(store) == 0


# --- handlers using context.message_content ---------------------------------------------------


def add_disclaimer(event, context):
    raw = context.message_content.get_raw_message_content(event["messageId"])
    message = BytesParser(policy=policy.SMTP).parsebytes(raw)
    body = message.get_body(("plain",))
    assert body is not None
    body.set_content(body.get_content() + "\n-- \nThis message was scanned.\n")
    context.message_content.put_raw_message_content(event["messageId"], message.as_bytes())
    return ACCEPT


def test_a_synchronous_handler_adds_a_disclaimer():
    store = mail.MessageStore()
    event = mail.build_event(mail_from=ALICE, recipients=[BOB], subject="Hi", store=store)
    result = mail.run(add_disclaimer, event, store=store, response_timeout_s=2)
    assert result.status == "applied" and result.delivered_content is not None
    assert b"This message was scanned." in result.delivered_content
    assert b"This message was scanned." not in store.original_content(event["messageId"])


def test_a_handler_removes_an_attachment():
    store = mail.MessageStore()
    event = mail.build_event(message=with_attachment(), store=store)

    def strip_attachments(event, context):
        raw = context.message_content.get_raw_message_content(messageId=event["messageId"])
        message = BytesParser(policy=policy.SMTP).parsebytes(raw)
        message.set_payload([p for p in message.iter_parts() if not p.is_attachment()])
        context.message_content.put_raw_message_content(messageId=event["messageId"], content=message.as_bytes())
        return ACCEPT

    run = mail.MailRule(response_timeout_s=2, store=store).run(strip_attachments, event)
    assert b"secret.pdf" in store.original_content(event["messageId"])
    assert run.delivered_content is not None
    assert b"secret.pdf" not in run.delivered_content and b"See the attachment." in run.delivered_content


def test_nothing_is_replaced_when_the_handler_does_not_replace(event):
    assert mail.run(lambda e, c: ACCEPT, event, response_timeout_s=2).delivered_content is None


def test_a_replacement_in_an_asynchronous_invocation_changes_nothing():
    store = mail.MessageStore()
    event = mail.build_event(mail_from=ALICE, recipients=[BOB], store=store)
    result = mail.run(add_disclaimer, event, store=store, mode="async")
    assert result.delivered_content is None
    assert [(i.code, i.rule) for i in result.issues] == [("ignored", "M8"), ("ignored", "M9")]
    assert b"scanned" not in store.get_raw_message_content(event["messageId"])


def test_an_invalid_replacement_makes_the_attempt_fail(event):
    def long_line(event, context):
        context.message_content.put_raw_message_content(event["messageId"], VALID.replace(b"Hello", b"x" * 2000))
        return ACCEPT

    result = mail.run(long_line, event, response_timeout_s=2, fallback_action="DROP")
    assert result.invocation is not None
    assert result.invocation.error is not None
    assert result.status == "fallback" and result.invocation.error.type == "InvalidContentError"
    assert "998" in result.invocation.error.message and result.delivered_content is None


def test_only_the_invocations_own_message_can_be_replaced(event):
    other = mail.build_event(mail_from=ALICE, recipients=[BOB], subject="another message")
    errors = []

    def handler(e, context):
        try:
            context.message_content.put_raw_message_content(other["messageId"], VALID)
        except mail.MessageFrozenError as exc:
            errors.append(str(exc))
        return ACCEPT

    assert mail.run(handler, event, response_timeout_s=2, isolation="thread").status == "applied"
    assert errors and "M9" in errors[0]


def test_the_content_api_closes_when_the_invocation_ends(event):
    kept = []

    def handler(e, c):
        kept.append(c.message_content)
        return ACCEPT

    mail.run(handler, event, response_timeout_s=2, isolation="thread")
    with pytest.raises(mail.MessageFrozenError, match="over"):
        kept[0].put_raw_message_content(event["messageId"], VALID)


def test_a_replacement_in_a_failed_attempt_stands_for_the_retry():
    store = mail.MessageStore()
    event = mail.build_event(mail_from=ALICE, recipients=[BOB], store=store)
    seen = []

    def handler(e, context):
        raw = context.message_content.get_raw_message_content(e["messageId"])
        seen.append(b"scanned" in raw)
        if not seen[-1]:
            add_disclaimer(e, context)
            raise RuntimeError("crash after the replacement")
        return ACCEPT

    run = mail.MailRule(rule_timeout_minutes=5, response_timeout_s=2, store=store).run(
        handler, event, isolation="thread"
    )
    assert seen == [False, True] and [a.result for a in run.attempts] == ["error", "applied"]
    assert run.delivered_content is not None and b"scanned" in run.delivered_content


def test_each_run_starts_from_the_original_message():
    store = mail.MessageStore()
    event = mail.build_event(mail_from=ALICE, recipients=[BOB], store=store)
    first = mail.run(add_disclaimer, event, store=store, response_timeout_s=2)
    second = mail.run(add_disclaimer, event, store=store, response_timeout_s=2)
    assert first.delivered_content == second.delivered_content
    assert second.delivered_content is not None
    assert second.delivered_content.count(b"scanned") == 1


def test_nothing_is_delivered_when_every_recipient_is_dropped():
    store = mail.MessageStore()
    event = mail.build_event(mail_from=ALICE, recipients=[BOB], store=store)

    def drop(e, context):
        add_disclaimer(e, context)
        return respond(("DROP", True))

    assert mail.run(drop, event, store=store, response_timeout_s=2).delivered_content is None
