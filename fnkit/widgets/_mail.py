"""The mail-flow source as the widgets see it: form, example handlers, response forms."""

from __future__ import annotations

import json
import time
from typing import Any

from ..mail._config import MailConfig
from ._adapter import Form, SourceAdapter
from ._fields import Field, FieldError, setting_field

FIELDS = [
    Field(
        "mail_from",
        "From",
        "text",
        "ada@example.com",
        "The sender's address (envelope and From header).",
        example="ada@example.com",
    ),
    Field(
        "recipients", "Recipients", "lines", ["bob@example.org", "carol@example.org"], "One address per line.", rows=3
    ),
    Field(
        "subject",
        "Subject",
        "text",
        "Invoice 2026-001",
        "The subject (the event keeps its first 256 characters).",
        example="Invoice 2026-001",
    ),
    Field(
        "flow_direction",
        "Direction",
        "choice",
        "INBOUND",
        "Inbound (mail arriving) or outbound (mail leaving).",
        ("INBOUND", "OUTBOUND"),
    ),
    Field("body", "Body", "longtext", "Hello,\nplease find the invoice attached.\n", "The text of the email.", rows=2),
    Field(
        "attachments",
        "Attachments",
        "csv",
        ["invoice.pdf"],
        "File names, separated by commas, e.g. invoice.pdf, setup.exe.",
    ),
]


def _field(name: str) -> Field:
    return next(f for f in FIELDS if f.name == name)


def to_kwargs(values: dict[str, Any]) -> dict[str, Any]:
    """Form values -> `fnkit.mail.build_event` keywords (with a real email built from them)."""
    from .._learner.emails import email_message
    from ..mail._address import is_address

    sender = str(values["mail_from"]).strip()
    if not is_address(sender):
        raise FieldError(_field("mail_from"), f"{sender!r} does not look like an email address (name@domain).")
    recipients = [r.strip() for r in values["recipients"]]
    if not recipients:
        raise FieldError(_field("recipients"), "Write at least one recipient address (one per line).")
    for n, r in enumerate(recipients, 1):
        if not is_address(r):
            raise FieldError(
                _field("recipients"), f"Line {n} ({r!r}) does not look like an email address (name@domain)."
            )
    message = email_message(
        mail_from=sender,
        to=recipients,
        subject=str(values["subject"]),
        body=str(values["body"]),
        attachments=values.get("attachments") or (),
    )
    return {
        "mail_from": sender,
        "recipients": recipients,
        "subject": str(values["subject"]),
        "flow_direction": values["flow_direction"],
        "message": message,
        "dialect": values["dialect"],
        "seed": int(values["seed"]),
    }


# --- example handlers --------------------------------------------------------------------


def _all(action: str, **parameters: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"action": {"type": action}, "allRecipients": True}
    if parameters:
        entry["action"]["parameters"] = parameters
    return {"actions": [entry]}


def deliver_to_everyone(event, context):
    """Deliver the message to every recipient."""
    return _all("DEFAULT")


def bounce_executables(event, context):
    """Bounce mail with an executable attachment; add a disclaimer to the rest."""
    from .._learner.emails import EXECUTABLE_EXTENSIONS, add_disclaimer, attachment_names

    raw = context.message_content.get_raw_message_content(event["messageId"])
    names = [n.lower() for n in attachment_names(raw)]
    bad = [n for n in names if n.endswith(EXECUTABLE_EXTENSIONS)]
    if bad:
        return _all("BOUNCE", bounceMessage=f"Attachments such as {bad[0]} are not accepted.")
    context.message_content.put_raw_message_content(event["messageId"], add_disclaimer(raw))
    return _all("DEFAULT")


def drop_the_first(event, context):
    """Drop the copy for the first recipient; deliver to the others."""
    first = event["envelope"]["recipients"][0]["address"]
    return {
        "actions": [
            {"action": {"type": "DROP"}, "recipients": [first]},
            {"action": {"type": "DEFAULT"}, "allRecipients": True},
        ]
    }


def one_bounce_per_recipient(event, context):
    """One BOUNCE action per recipient, each with its own message: past 10, the fallback applies."""
    return {
        "actions": [
            {
                "action": {"type": "BOUNCE", "parameters": {"bounceMessage": f"No mail for {r['address']}."}},
                "recipients": [r["address"]],
            }
            for r in event["envelope"]["recipients"]
        ]
    }


def empty_actions(event, context):
    """Answers an empty action list: not a valid response."""
    return {"actions": []}


def raise_an_error(event, context):
    """Raises: the attempt fails."""
    raise TimeoutError("the virus scanner did not answer")


def hang(event, context):
    """Never returns (the runner's timeout stops it)."""
    while True:
        time.sleep(0.05)


def return_junk(event, context):
    """Returns an object JSON cannot encode."""
    return {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True, "when": time}]}


EXAMPLES = {
    "deliver to everyone": deliver_to_everyone,
    "bounce executables, disclaimer on the rest": bounce_executables,
    "drop the first recipient": drop_the_first,
    "one bounce message per recipient": one_bounce_per_recipient,
    "empty action list": empty_actions,
    "raise an error": raise_an_error,
    "hang (never returns)": hang,
    "return junk (a module)": return_junk,
}

# --- response forms ---------------------------------------------------------------------


def _recipients(event: dict[str, Any]) -> list[str]:
    try:
        return [r["address"] for r in event["envelope"]["recipients"]] or ["bob@example.org"]
    except (KeyError, TypeError):
        return ["bob@example.org"]


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2)


def _first_and_rest(first: str, rest: str) -> Any:
    return lambda e: _dump(
        {
            "actions": [
                {"action": {"type": first}, "recipients": [_recipients(e)[0]]},
                {"action": {"type": rest}, "allRecipients": True},
            ]
        }
    )


FORMS = [
    Form("applied", "all delivered", lambda e: _dump(_all("DEFAULT")), key="deliver to all"),
    Form(
        "applied", "all bounced", lambda e: _dump(_all("BOUNCE", bounceMessage="Not accepted here.")), key="bounce all"
    ),
    Form("applied", "all dropped", lambda e: _dump(_all("DROP")), key="drop all"),
    Form(
        "applied", "first dropped, rest delivered", _first_and_rest("DROP", "DEFAULT"), key="drop first, deliver rest"
    ),
    Form(
        "applied",
        "rest get the fallback · first covered only",
        lambda e: _dump({"actions": [{"action": {"type": "DEFAULT"}, "recipients": [_recipients(e)[0]]}]}),
        "The others are covered by nothing: they get the fallback action.",
        key="first covered only",
    ),
    Form(
        "applied",
        "an outside address delivered too",
        lambda e: _dump(
            {
                "actions": [
                    {"action": {"type": "DEFAULT"}, "recipients": ["auditor@example.net"]},
                    {"action": {"type": "DEFAULT"}, "allRecipients": True},
                ]
            }
        ),
        key="add an outside address",
    ),
    Form(
        "applied",
        "stricter action wins · one recipient twice",
        lambda e: _dump(
            {
                "actions": [
                    {"action": {"type": "DEFAULT"}, "recipients": [_recipients(e)[0]]},
                    {"action": {"type": "DROP"}, "recipients": [_recipients(e)[0]]},
                    {"action": {"type": "DEFAULT"}, "allRecipients": True},
                ]
            }
        ),
        "One recipient in two actions (M7, inferred).",
        key="conflict",
    ),
    Form("fallback", "fallback for all · no actions", lambda e: _dump({"actions": []}), key="no actions"),
    Form("fallback", "fallback for all · unknown type", lambda e: _dump(_all("REJECT")), key="unknown type"),
    Form(
        "fallback",
        "fallback for all · bounceMessage on DROP",
        lambda e: _dump(_all("DROP", bounceMessage="gone")),
        key="bounceMessage on DROP",
    ),
    Form(
        "fallback",
        "fallback for all · recipients not a list",
        lambda e: _dump({"actions": [{"action": {"type": "DEFAULT"}, "recipients": _recipients(e)[0]}]}),
        key="recipients not a list",
    ),
    Form("fallback", "fallback for all · null", lambda e: "null", key="null"),
    Form(
        "fallback",
        "fallback for all · invalid JSON",
        lambda e: '{"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": true}',
        key="invalid JSON",
    ),
]


def describe_event(event: Any) -> str:
    if not isinstance(event, dict):
        return ""
    recipients = event.get("envelope", {}).get("recipients") if isinstance(event.get("envelope"), dict) else None
    n = len(recipients) if isinstance(recipients, list) else 0
    return f"{event.get('flowDirection', '?')}, {n} recipient(s)"


ADAPTER = SourceAdapter(
    source="mail",
    title="Mail-flow event",
    fields=FIELDS,
    examples=EXAMPLES,
    default_example="deliver to everyone",
    config=[setting_field(MailConfig, "mode"), setting_field(MailConfig, "fallback_action")],
    forms=FORMS,
    default_response=lambda e: _dump(_all("DEFAULT")),
    to_kwargs=to_kwargs,
    columns=["recipient", "action", "via", "bounce_message", "rule", "reason"],
    describe_event=describe_event,
)
