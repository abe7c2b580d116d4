"""A mail-flow function written the way the provider's "update email" templates are.

It knows nothing of fnkit: its clients are made when the module is imported, it reads the
message in flight with `get_raw_message_content`, writes the updated message to the bucket
named by UPDATED_EMAIL_S3_BUCKET, points `put_raw_message_content` at that object, and
returns its actions. A redirected message that cannot be updated (MessageFrozen) is
delivered as it is; any other refusal is logged and raised. tests/interop/test_workmail.py
runs it under fnkit unchanged.
"""

import email
import logging
import os
import uuid
from email import policy
from typing import Any

import boto3  # type: ignore[import-untyped, unused-ignore]
from botocore.exceptions import ClientError  # type: ignore[import-untyped, unused-ignore]

logger = logging.getLogger(__name__)  # the templates use the root logger; a test suite shares it
logger.setLevel(logging.INFO)

workmail_message_flow = boto3.client("workmailmessageflow")
s3 = boto3.client("s3")


def download_email(message_id: str) -> email.message.EmailMessage:
    """The message in flight, parsed."""
    response = workmail_message_flow.get_raw_message_content(messageId=message_id)
    parsed: email.message.EmailMessage = email.message_from_bytes(
        response["messageContent"].read(), policy=policy.default
    )
    return parsed


def update_workmail_message(message_id: str, content: bytes) -> None:
    """Store `content` in the bucket and replace the message in flight with it."""
    bucket = os.environ["UPDATED_EMAIL_S3_BUCKET"]
    key = f"{message_id}/{uuid.uuid4()}.eml"
    s3.put_object(Body=content, Bucket=bucket, Key=key)
    workmail_message_flow.put_raw_message_content(
        messageId=message_id, content={"s3Reference": {"bucket": bucket, "key": key}}
    )


def update_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Tag the subject of every message the rule passes on."""
    message_id = event["messageId"]
    tag = os.environ.get("SUBJECT_TAG", "[EXTERNAL]")
    try:
        message = download_email(message_id)
        subject = message["Subject"] or ""
        del message["Subject"]
        message["Subject"] = f"{tag} {subject}"
        update_workmail_message(message_id, message.as_bytes())
        logger.info("Updated the subject of message %s", message_id)
    except ClientError as error:
        code = error.response["Error"]["Code"]
        if code == "MessageFrozen":
            logger.info("Message %s is not eligible for update (a redirected message, usually)", message_id)
        else:
            logger.error("%s: %s", code, error.response["Error"]["Message"])
            raise
    return {"actions": [{"allRecipients": True, "action": {"type": "DEFAULT"}}]}


def bounce_confidential(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Read the body through the message flow API; bounce what is marked confidential, deliver the rest."""
    body = download_email(event["messageId"]).get_body(("plain",))
    text = body.get_content() if body is not None else ""
    if "CONFIDENTIAL" in text:
        return {
            "actions": [
                {
                    "allRecipients": True,
                    "action": {"type": "BOUNCE", "parameters": {"bounceMessage": "Confidential mail stays inside."}},
                }
            ]
        }
    return {"actions": [{"allRecipients": True, "action": {"type": "DEFAULT"}}]}
