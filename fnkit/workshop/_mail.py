"""The mail exercises: bounce executables (a disclaimer for the rest), drop former staff, bounce full mailboxes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..mail._response import unique_actions
from ..rules import id_of
from ..types import MailEvent
from ._helpers import FORMER_STAFF, email_message, has_disclaimer, mailbox_full
from ._registry import CASE_TIMEOUT_S, Case, Exercise, Finding, invocation_problem, kind_of, register, returned


def _mail_event(seed: int, to: list[str], **message: Any) -> MailEvent:
    from .. import mail

    return mail.build_event(message=email_message(to=to, **message), seed=seed)


def _run(handler: Callable[..., Any], case: Case) -> Any:
    from .. import mail

    return mail.run(handler, case.event, timeout_s=CASE_TIMEOUT_S, isolation="process")


def _falls_back(result: Any) -> str | None:
    """One sentence for a handler whose answer the rule cannot use, so the fallback action applies to everyone."""
    fallback = f"so the rule applies its fallback action ({result.fallback_action}) to everyone"
    problem = invocation_problem(result.invocation, consequence=fallback)
    if problem:
        return problem
    if result.status != "fallback":
        return None
    value = returned(result.invocation)
    if value is None:
        return f'your handler returns None (is a return missing?), {fallback}: return {{"actions": [...]}}.'
    if not isinstance(value, dict):
        return f'your handler returns {kind_of(value)}, not an object, {fallback}: return {{"actions": [...]}}.'
    if "actions" not in value:
        keys = ", ".join(f"'{k}'" for k in list(value)[:3]) or "nothing"
        return f"your response has no 'actions' key (it has {keys}), {fallback}."
    errors = [i for i in result.issues if i.severity == "error"]
    if errors:
        where = f" at {errors[0].path}" if errors[0].path not in ("", "$") else ""
        return f"the rule cannot use your response{where} ({errors[0].message.rstrip('.')}), {fallback}."
    return f"the rule falls back to {result.fallback_action} for everyone: {result.reason}"


# --- 1. executables bounced, a disclaimer for the rest -------------------------------------------


def _cases_executables() -> list[Case]:
    two = ["bob@example.org", "carol@example.org"]
    cases = [
        ("a plain email", two, [], False),
        ("a PDF invoice", two, ["invoice.pdf"], False),
        ("a program attached", two, ["setup.exe"], True),
        ("a name in capitals", ["bob@example.org"], ["REPORT.PDF.EXE"], True),
        ("a script among documents", two, ["notes.txt", "run.js"], True),
        (
            "three recipients and a zip",
            ["bob@example.org", "carol@example.org", "dan@example.org"],
            ["photos.zip"],
            False,
        ),
    ]
    return [
        Case(name, _mail_event(91 + n, to, subject=name, attachments=files), bounce)
        for n, (name, to, files, bounce) in enumerate(cases)
    ]


def _judge_executables(handler: Callable[..., Any], case: Case) -> str | None:
    result = _run(handler, case)
    problem = _falls_back(result)
    if problem:
        return problem
    for recipient, decision in result.decisions.items():
        if case.expect and decision.action != "BOUNCE":
            capitals = (
                " (compare the names in lower case: REPORT.PDF.EXE ends with .exe too)"
                if case.name == "a name in capitals"
                else ""
            )
            return Finding(
                f"the mail carries an executable attachment, but {recipient} gets {decision.action}: "
                f"bounce it for every recipient{capitals}.",
                f"not bounced {capitals}",
            )
        if case.expect and not decision.bounce_message:
            return "the bounce has no bounceMessage: give one, so the sender learns why the mail was refused."
        if not case.expect and decision.action != "DEFAULT":
            return Finding(
                f"the mail has no executable attachment, but {recipient} gets {decision.action}: deliver it (DEFAULT).",
                "not delivered",
            )
    if not case.expect and not has_disclaimer(result.delivered_content):
        return (
            "the delivered mail has no disclaimer: read the raw message with context.message_content."
            "get_raw_message_content(...), add the disclaimer, and put it back with put_raw_message_content(...)."
        )
    if case.expect and result.delivered_content is not None:
        return "a bounced mail is never delivered, so there is no need to change its content."
    return None


register(
    Exercise(
        "mail-executables",
        "mail",
        "Bounce executables, add a disclaimer to the rest",
        _cases_executables,
        _judge_executables,
    )
)


# --- 2. former staff dropped ---------------------------------------------------------------------


def _cases_former_staff() -> list[Case]:
    many = [f"colleague{n}@example.org" for n in range(1, 12)] + sorted(FORMER_STAFF)
    cases = [
        ("nobody has left", ["bob@example.org", "carol@example.org"]),
        ("one former colleague", ["bob@example.org", "dan.old@example.org"]),
        ("an address in capitals", ["Eve.Gone@Example.org", "carol@example.org"]),
        ("only former staff", ["dan.old@example.org", "zoe.left@example.org"]),
        ("fifteen recipients, four gone", many),
    ]
    return [Case(name, _mail_event(101 + n, to, subject=name)) for n, (name, to) in enumerate(cases)]


def _judge_former_staff(handler: Callable[..., Any], case: Case) -> str | None:
    result = _run(handler, case)
    problem = _falls_back(result)
    if problem:
        return problem
    for recipient, decision in result.decisions.items():
        gone = recipient.lower() in FORMER_STAFF
        if gone and decision.action != "DROP":
            hint = (
                " (compare addresses in lower case: Eve.Gone@Example.org is eve.gone@example.org)"
                if recipient != recipient.lower()
                else ""
            )
            return Finding(
                f"{recipient} has left the company, but gets {decision.action}: drop that copy{hint}.",
                f"not dropped {hint}",
            )
        if not gone and decision.action != "DEFAULT":
            return Finding(
                f"{recipient} still works here, but gets {decision.action} ({decision.reason.rstrip('.')}): "
                "deliver to them.",
                "staff not delivered",
            )
    return None


register(
    Exercise("mail-former-staff", "mail", "Drop the copies for former staff", _cases_former_staff, _judge_former_staff)
)


# --- 3. full mailboxes bounced ---------------------------------------------------------------------


def _cases_full() -> list[Case]:
    cases = [
        ("one full mailbox", ["bob@example.org", "full.ann@example.org", "carol@example.org"]),
        ("no full mailbox", ["bob@example.org", "carol@example.org"]),
        ("twelve full mailboxes", [f"full.{n}@example.org" for n in range(1, 13)] + ["bob@example.org"]),
        (
            "25 recipients, 11 full",
            [f"{'full' if n % 2 else 'team'}.{n}@example.org" for n in range(1, 24)]
            + ["bob@example.org", "carol@example.org"],
        ),
    ]
    return [Case(name, _mail_event(111 + n, to, subject=name)) for n, (name, to) in enumerate(cases)]


def _judge_full(handler: Callable[..., Any], case: Case) -> str | None:
    result = _run(handler, case)
    problem = _falls_back(result)
    if problem:
        return problem
    for recipient, decision in result.decisions.items():
        if mailbox_full(recipient):
            if decision.action != "BOUNCE":
                if decision.rule == id_of(unique_actions):
                    return Finding(
                        f"{recipient}'s mailbox is full, but the copy gets the fallback action "
                        f"{decision.action}, because only the first 10 unique actions count (an action's "
                        "type and parameters make it unique): use one BOUNCE action that lists every full "
                        "mailbox.",
                        id_of(unique_actions),
                    )
                return Finding(f"{recipient}'s mailbox is full, but gets {decision.action}: bounce that copy.", "full")
            if not decision.bounce_message:
                return "the bounce has no bounceMessage: say that the mailbox is full."
        elif decision.action != "DEFAULT":
            return Finding(
                f"{recipient}'s mailbox is fine, but gets {decision.action} "
                f"({decision.reason.rstrip('.')}): deliver to them.",
                "fine not delivered",
            )
    return None


register(Exercise("mail-full-mailboxes", "mail", "Bounce full mailboxes, however many", _cases_full, _judge_full))
