"""Mail-flow functions written from the provider's templates run unchanged under fnkit.

The template (tests/interop/workmail_update_subject.py) reads the message in flight with
`boto3.client("workmailmessageflow").get_raw_message_content`, writes its update to S3 and
points `put_raw_message_content` at it. Under `fnkit.mail.run` and `MailRule` those two calls
are answered from fnkit's message store (fnkit/mail/_workmail.py), S3 is moto's, and the
outcome shows the replaced message. Refusals come back as the service's own errors.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import subprocess
import sys
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3  # type: ignore[import-untyped, unused-ignore]
import pytest
from botocore.awsrequest import AWSResponse  # type: ignore[import-untyped, unused-ignore]
from moto import mock_aws

from fnkit import HandlerError, Invocation, mail, queue
from fnkit.testing import assert_outcome

BUCKET = "fnkit-updated-mail"
DELIVER = {"actions": [{"allRecipients": True, "action": {"type": "DEFAULT"}}]}
REPO_ROOT = Path(__file__).resolve().parents[2]
# no call may reach a real account: fake credentials, no instance metadata, no config files
OFFLINE = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}
# where a message flow call goes when fnkit does not answer it: nowhere (a refused connection here)
NOWHERE = {"AWS_ENDPOINT_URL_WORKMAILMESSAGEFLOW": "http://127.0.0.1:9", "AWS_MAX_ATTEMPTS": "1"}


@pytest.fixture
def aws(monkeypatch):
    """The template's configuration, offline."""
    for name, value in {**OFFLINE, "UPDATED_EMAIL_S3_BUCKET": BUCKET}.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def s3(aws):
    """moto's S3, with the template's bucket."""
    with mock_aws():
        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        yield client


def fresh_template() -> ModuleType:
    """The template module imported afresh: its clients are made now, as at a cold start."""
    module = importlib.import_module("tests.interop.workmail_update_subject")
    return importlib.reload(module)


@pytest.fixture
def template(s3) -> ModuleType:
    return fresh_template()


def quarterly(body: str = "The numbers are attached.\n") -> EmailMessage:
    message = EmailMessage()
    message["From"] = "alice@example.org"
    message["To"] = "bob@example.com"
    message["Subject"] = "Quarterly report"
    message["Date"] = "Thu, 01 Jan 2026 09:00:00 +0000"
    message.set_content(body)
    return message


def subject(raw: bytes | None) -> str:
    assert raw is not None
    return str(BytesParser(policy=policy.default).parsebytes(raw)["Subject"])


def ran(result: Any) -> Invocation:
    """The invocation behind an outcome (every run has one)."""
    assert result.invocation is not None
    invocation: Invocation = result.invocation
    return invocation


def raised(result: Any) -> HandlerError:
    """What the handler raised."""
    error = ran(result).error
    assert error is not None, ran(result).returned
    return error


def put_reference(template: ModuleType, key: str) -> Any:
    """A handler that points the replacement at `key` in the bucket, with the template's own client."""

    def handler(event, context):
        template.workmail_message_flow.put_raw_message_content(
            messageId=event["messageId"], content={"s3Reference": {"bucket": BUCKET, "key": key}}
        )
        return DELIVER

    return handler


# --- the template, unchanged ----------------------------------------------------------------------------


def test_the_template_runs_unchanged_under_mail_run(template, s3):
    store = mail.MessageStore()
    event = mail.build_event(message=quarterly(), store=store)
    result = mail.run(template.update_handler, event, store=store)
    assert result.status == "applied", result.reason
    assert subject(result.delivered_content) == "[EXTERNAL] Quarterly report"
    assert b"The numbers are attached." in (result.delivered_content or b"")
    assert subject(store.original_content(event["messageId"])) == "Quarterly report"
    # what was delivered is the object the template wrote to (moto's) S3
    (stored,) = s3.list_objects_v2(Bucket=BUCKET, Prefix=event["messageId"] + "/")["Contents"]
    assert s3.get_object(Bucket=BUCKET, Key=stored["Key"])["Body"].read() == result.delivered_content
    assert "Updated the subject" in ran(result).logs


def test_the_template_runs_unchanged_under_a_mail_rule(template, monkeypatch):
    monkeypatch.setenv("SUBJECT_TAG", "[checked]")
    store = mail.MessageStore()
    event = mail.build_event(message=quarterly(), store=store)
    run = mail.MailRule(store=store).run(template.update_handler, event)
    assert [a.result for a in run.attempts] == ["applied"]
    assert subject(run.delivered_content) == "[checked] Quarterly report"


def test_the_template_passes_assert_outcome(template):
    store = mail.MessageStore()
    event = mail.build_event(message=quarterly(), store=store)
    result = assert_outcome(
        template.update_handler, event, status="applied", actions="DEFAULT", store=store, source="mail"
    )
    assert subject(result.delivered_content) == "[EXTERNAL] Quarterly report"


def test_a_replacement_made_by_an_asynchronous_rule_changes_nothing(template):
    store = mail.MessageStore()
    event = mail.build_event(message=quarterly(), store=store)
    result = mail.run(template.update_handler, event, store=store, mode="async")
    assert result.status == "ignored" and result.delivered_content is None
    assert ("ignored", "M9") in [(i.code, i.rule) for i in result.issues]
    assert subject(store.get_raw_message_content(event["messageId"])) == "Quarterly report"


# --- refusals, as the service's errors --------------------------------------------------------------------


def test_a_reference_to_a_missing_object_is_invalid_content_location(template):
    store = mail.MessageStore()
    event = mail.build_event(message=quarterly(), store=store)
    result = mail.run(put_reference(template, "missing.eml"), event, store=store)
    assert result.status == "fallback"
    error = raised(result)
    assert error.type == "InvalidContentLocation"
    assert f"s3://{BUCKET}/missing.eml" in error.message and "NoSuchKey" in error.message
    assert result.delivered_content is None


def test_an_object_that_is_not_valid_mime_is_message_rejected(template, s3):
    s3.put_object(Bucket=BUCKET, Key="no-date.eml", Body=b"From: alice@example.org\r\nSubject: Hi\r\n\r\nHello\r\n")
    store = mail.MessageStore()
    event = mail.build_event(message=quarterly(), store=store)
    result = mail.run(put_reference(template, "no-date.eml"), event, store=store)
    error = raised(result)
    assert error.type == "MessageRejected"
    assert f"s3://{BUCKET}/no-date.eml" in error.message and "the Date header is missing" in error.message
    assert subject(store.get_raw_message_content(event["messageId"])) == "Quarterly report"


def test_a_message_not_in_flight_is_resource_not_found(template):
    store = mail.MessageStore()
    event = mail.build_event(message=quarterly(), store=store)

    def update_another(event, context):
        return template.update_handler({**event, "messageId": "no-such-message"}, context)

    result = mail.run(update_another, event, store=store)
    error = raised(result)
    assert error.type == "ResourceNotFoundException"
    assert "No message 'no-such-message' is in flight" in error.message
    assert "ResourceNotFoundException" in ran(result).logs  # the template logged it, then raised


def test_replacing_another_message_is_message_frozen_and_the_template_delivers_as_is(template):
    store = mail.MessageStore()
    event = mail.build_event(message=quarterly(), store=store)
    other = mail.build_event(message=quarterly(), store=store, seed=1)

    def update_the_other(event, context):
        try:
            template.update_workmail_message(other["messageId"], store.original_content(other["messageId"]))
        except template.ClientError as error:
            return {"caught": error.response["Error"]["Code"], "message": error.response["Error"]["Message"]}
        return DELIVER

    invocation = ran(mail.run(update_the_other, event, store=store))
    assert invocation.returned["caught"] == "MessageFrozen"
    assert event["messageId"] in invocation.returned["message"] and other["messageId"] in invocation.returned["message"]


# --- only during a mail invocation ---------------------------------------------------------------------


def test_outside_a_mail_invocation_the_call_goes_on_to_the_service(aws):
    flow = boto3.client("workmailmessageflow")
    sent: list[str] = []

    def service(request, **_):  # stands for the real service, at the last step before the network
        sent.append(request.url)
        return AWSResponse(request.url, 200, {"content-length": "16"}, io.BytesIO(b"from the service"))

    flow.meta.events.register("before-send.workmailmessageflow", service)

    def read(message_id: str) -> str:
        raw: bytes = flow.get_raw_message_content(messageId=message_id)["messageContent"].read()
        return subject(raw) if raw.startswith(b"From") else raw.decode()

    store = mail.MessageStore()
    event = mail.build_event(message=quarterly(), store=store)
    result = mail.run(lambda event, context: {"read": read(event["messageId"])}, event, store=store)
    assert ran(result).returned == {"read": "Quarterly report"}
    assert sent == []
    assert read("m-1") == "from the service"
    # a handler of another source, calling the same client: the service answers
    batch = queue.build_event(["m-2"])
    batch_result = queue.run(lambda event, context: {"read": read(event["Records"][0]["body"])}, batch)
    assert ran(batch_result).returned == {"read": "from the service"}
    assert [url.rsplit("/", 1)[-1] for url in sent] == ["m-1", "m-2"]


@pytest.mark.parametrize("isolation", ["none", "thread", "process"])
def test_the_message_flow_api_answers_in_every_isolation_mode(aws, monkeypatch, isolation):
    for name, value in NOWHERE.items():
        monkeypatch.setenv(name, value)
    template = fresh_template()
    store = mail.MessageStore()
    secret = mail.build_event(message=quarterly("CONFIDENTIAL: the merger.\n"), store=store)
    plain = mail.build_event(message=quarterly(), store=store, seed=1)
    bounced = mail.run(template.bounce_confidential, secret, store=store, isolation=isolation)
    assert bounced.actions == {"bob@example.com": "BOUNCE"}, bounced.reason
    assert mail.run(template.bounce_confidential, plain, store=store, isolation=isolation).actions == {
        "bob@example.com": "DEFAULT"
    }


def test_the_message_flow_api_answers_when_the_project_setting_chooses_the_worker(aws, monkeypatch):
    for name, value in NOWHERE.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("FNKIT_ISOLATION", "process")  # no isolation= below: the setting decides
    template = fresh_template()
    store = mail.MessageStore()
    secret = mail.build_event(message=quarterly("CONFIDENTIAL: the merger.\n"), store=store)
    bounced = mail.run(template.bounce_confidential, secret, store=store)
    assert bounced.actions == {"bob@example.com": "BOUNCE"}, bounced.reason
    assert bounced.invocation is not None and bounced.invocation.error is None


# --- clients made early, and no boto3 at all -----------------------------------------------------------------


def run_python(code: str, **env: str) -> dict[str, Any]:
    """Run `code` in a fresh interpreter (this checkout first on its path); the JSON it printed last."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env, "PYTHONPATH": str(REPO_ROOT)},
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


HANDLER_SETUP = """
import json, sys
from fnkit import mail
store = mail.MessageStore()
event = mail.build_event(mail_from="alice@example.org", recipients=["bob@example.com"], subject="Hi", store=store)
"""


def test_clients_and_sessions_made_before_fnkit_is_imported_are_answered():
    code = (
        "import boto3\n"
        "flow = boto3.client('workmailmessageflow')\n"
        "session = boto3.Session()\n"
        + HANDLER_SETUP
        + """
def handler(event, context):
    early = flow.get_raw_message_content(messageId=event["messageId"])["messageContent"].read()
    late = session.client("workmailmessageflow").get_raw_message_content(messageId=event["messageId"])
    return {"early": b"Subject: Hi" in early, "late": b"Subject: Hi" in late["messageContent"].read()}

result = mail.run(handler, event, store=store, isolation="none")
print(json.dumps(result.invocation.returned or str(result.invocation.error)))
"""
    )
    assert run_python(code, **OFFLINE, **NOWHERE) == {"early": True, "late": True}


def test_fnkit_imports_no_botocore_and_a_client_made_during_the_call_is_answered():
    code = (
        HANDLER_SETUP
        + """
def plain(event, context):
    return {"actions": [{"allRecipients": True, "action": {"type": "DEFAULT"}}]}

mail.run(plain, event, store=store, isolation="none")
before = "botocore" in sys.modules

def reads_with_boto3(event, context):
    import boto3
    raw = boto3.client("workmailmessageflow").get_raw_message_content(messageId=event["messageId"])
    return {"read": b"Subject: Hi" in raw["messageContent"].read()}

result = mail.run(reads_with_boto3, event, store=store, isolation="none")
print(json.dumps({"loaded before": before, "returned": result.invocation.returned or str(result.invocation.error)}))
"""
    )
    assert run_python(code, **OFFLINE, **NOWHERE) == {"loaded before": False, "returned": {"read": True}}


def test_without_boto3_mail_run_works_and_imports_nothing_of_it():
    code = (
        "import sys\n"
        "sys.modules['boto3'] = None\n"
        "sys.modules['botocore'] = None\n"
        + HANDLER_SETUP
        + """
def tag(event, context):
    raw = context.message_content.get_raw_message_content(event["messageId"])
    context.message_content.put_raw_message_content(event["messageId"], raw.replace(b"Subject: Hi", b"Subject: [x] Hi"))
    return {"actions": [{"allRecipients": True, "action": {"type": "DEFAULT"}}]}

result = mail.run(tag, event, store=store)
rule = mail.MailRule(store=store).run(tag, event)
loaded = sorted(n for n, m in sys.modules.items() if n.split(".")[0] in ("boto3", "botocore") and m is not None)
print(json.dumps({"status": result.status, "tagged": b"Subject: [x] Hi" in (result.delivered_content or b""),
                  "rule": rule.outcome.status, "loaded": loaded}))
"""
    )
    assert run_python(code) == {"status": "applied", "tagged": True, "rule": "applied", "loaded": []}
