"""Small builders the mail tests share."""

from typing import Any

ALICE, BOB, CAROL = "alice@example.com", "bob@example.com", "carol@example.com"


def respond(*entries):
    """A response from (type, recipients or True for allRecipients[, bounce message]) tuples."""
    actions = []
    for kind, who, *rest in entries:
        action = {"type": kind}
        if rest and rest[0] is not None:
            action["parameters"] = {"bounceMessage": rest[0]}
        entry: dict[str, Any] = {"action": action}
        if who is True:
            entry["allRecipients"] = True
        else:
            entry["recipients"] = list(who)
        actions.append(entry)
    return {"actions": actions}


def rules_of(report):
    """The rule ids a report cites."""
    return {issue.rule for issue in report}
