"""validate_response and outcome read one set of rule judgements, so they agree on every response.

Both run the same rule functions over the same reading of a response (fnkit/mail/_response.py:
`unique_actions` M6, `conflicts` M7, `coverage` M5, and the shape's M4): the checks of
`validate_response` say what the rules found, and `outcome` applies what they decided. Over
generated responses (well-formed ones, wrong types, unknown actions, missing fields, recipients
not in the event, duplicates, more than 10 unique actions, conflicts), in both reporting modes
(a synchronous rule and an asynchronous one), the correspondence is:

- synchronous: the report is valid exactly when the outcome is "applied"; otherwise the outcome
  is "fallback" and every recipient gets the fallback action (M3). Either way the outcome's
  issues begin with the report's, in the same order.
- synchronous, applied: every envelope recipient has a decision, by a documented way (`via`).
  A recipient decided by M6 (covered only past the first 10 unique actions) exists only when
  the report carries M6's warning. A recipient named by counted actions with different actions
  is decided by M7 exactly when the report warns of a conflict for that recipient, and the
  decision takes the action the warning says the policy picks; the same for allRecipients.
- asynchronous: the report has no error and begins with M8's "ignored" warning; the outcome is
  "ignored" and every recipient is delivered as usual (DEFAULT, M8).
"""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fnkit import Raw, mail
from fnkit.mail._config import ACTION_TYPES, CONFLICT_POLICIES, EXTENSION_TYPES
from fnkit.mail._decision import VIAS

ENVELOPE = ["alice@example.com", "bob@example.com", "carol@example.com"]
EVENTS = {
    direction: mail.build_event(mail_from="sender@example.org", recipients=ENVELOPE, flow_direction=direction, seed=5)
    for direction in ("INBOUND", "OUTBOUND")
}

recipient = st.one_of(
    st.sampled_from(ENVELOPE),
    st.sampled_from(["ALICE@example.com", "Bob@Example.com"]),  # an envelope recipient, spelled otherwise
    st.sampled_from(["zed@example.net", "yan@example.org"]),  # not in the event: added
    st.sampled_from(["not an address", "", "Bob <bob@example.com>"]),  # matches nobody (MS3)
    st.integers(0, 3),
    st.none(),
)
action_type = st.one_of(
    st.sampled_from(ACTION_TYPES + EXTENSION_TYPES),
    st.sampled_from(["bounce", "REJECT", ""]),  # unknown actions
    st.integers(0, 2),
)
parameters = st.one_of(
    st.none(),
    st.fixed_dictionaries({}, optional={"bounceMessage": st.sampled_from(["gone", "left", 3])}),
    st.sampled_from(["text", [1]]),
)


@st.composite
def entries(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 9)) == 0:  # an entry of the wrong type, or without an action object
        return draw(st.sampled_from(["DROP", 7, None, [], {"recipients": ENVELOPE}, {"action": "DROP"}]))
    action: dict[str, Any] = {}
    if draw(st.integers(0, 14)):
        action["type"] = draw(action_type)
    found = draw(parameters)
    if found is not None:
        action["parameters"] = found
    entry: dict[str, Any] = {"action": action}
    if draw(st.booleans()):
        entry["recipients"] = draw(st.lists(recipient, max_size=4) | st.sampled_from(["bob@example.com", 5]))
    if draw(st.booleans()):
        entry["allRecipients"] = draw(st.booleans() | st.sampled_from(["yes", 1]))
    if draw(st.integers(0, 9)) == 0:
        entry["extra"] = 1
    return entry


def many_unique_actions(n: int) -> list[dict[str, Any]]:
    """`n` entries, each a unique action (a BOUNCE with its own message), naming ENVELOPE in turn."""
    return [
        {"action": {"type": "BOUNCE", "parameters": {"bounceMessage": f"m{i}"}}, "recipients": [ENVELOPE[i % 3]]}
        for i in range(n)
    ]


@st.composite
def responses(draw: st.DrawFn) -> Any:
    shape = draw(st.integers(0, 19))
    if shape == 0:
        # (text goes as Raw: a bare string is JSON text to validate_response, a returned string to outcome)
        return draw(st.sampled_from([None, [], 7, {}, {"actions": []}, {"actions": "DROP"}, Raw("{not json")]))
    actions = draw(st.lists(entries(), max_size=5))
    if shape == 1:  # past the first 10 unique actions (M6)
        actions = many_unique_actions(draw(st.integers(10, 12))) + actions
    if draw(st.booleans()):  # a duplicate entry (the same action again)
        actions += actions[:1]
    response: dict[str, Any] = {"actions": actions}
    if shape == 2:
        response["extra"] = True
    return Raw(json.dumps(response)) if shape == 3 else response


NAMED_CONFLICT = re.compile(r"^(?P<who>.+) is named by actions\[\d+\] and actions\[\d+\] with different actions")
PICKS = re.compile(r"picks actions\[(?P<at>\d+)\]")


def picked(message: str) -> int:
    """The entry a conflict's warning says the policy picks."""
    found = PICKS.search(message)
    assert found is not None, message
    return int(found["at"])


def entry(kind: str, who: Any) -> dict[str, Any]:
    return {"action": {"type": kind}, **({"allRecipients": True} if who is True else {"recipients": who})}


# the cases the correspondence is about, always tried: a conflict only past the first 10 unique actions
# (no conflict), one among counted actions, two allRecipients actions, a recipient not in the event
PAST_TEN = {
    "actions": [
        entry("DEFAULT", ["alice@example.com"]),
        *({"action": {"type": "BOUNCE", "parameters": {"bounceMessage": f"m{i}"}}, "recipients": []} for i in range(9)),
        entry("DROP", ["alice@example.com"]),
    ]
}
NAMED_TWICE = {
    "actions": [entry("DEFAULT", ["ALICE@example.com", "zed@example.net"]), entry("DROP", ["alice@example.com"])]
}
EVERYONE_TWICE = {"actions": [entry("DEFAULT", True), entry("BOUNCE", True), entry("DROP", ["bob@example.com"])]}


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@example(response=PAST_TEN, direction="INBOUND", extensions=False, policy="most-restrictive", fallback="BOUNCE")
@example(response=NAMED_TWICE, direction="INBOUND", extensions=False, policy="first", fallback="DEFAULT")
@example(response=EVERYONE_TWICE, direction="OUTBOUND", extensions=False, policy="last", fallback="DROP")
@given(
    response=responses(),
    direction=st.sampled_from(["INBOUND", "OUTBOUND"]),
    extensions=st.booleans(),
    policy=st.sampled_from(CONFLICT_POLICIES),
    fallback=st.sampled_from(ACTION_TYPES),
)
def test_validate_response_and_outcome_agree_on_a_synchronous_rule(response, direction, extensions, policy, fallback):
    keywords = {"extensions": extensions, "conflict_policy": policy}
    report = mail.validate_response(response, flow_direction=direction, **keywords)
    result = mail.outcome(EVENTS[direction], response, fallback_action=fallback, **keywords)
    assert list(result.issues)[: len(report)] == list(report)
    assert set(ENVELOPE) <= set(result.decisions)
    assert all(d.via in VIAS for d in result.decisions.values())
    if not report.ok:
        assert result.status == "fallback" and result.rule == "M3"
        assert {(d.action, d.rule) for d in result.decisions.values()} == {(fallback, "M3")}
        return
    assert result.status == "applied"
    warned = [i for i in report if i.severity == "warning"]
    if any(d.rule == "M6" for d in result.decisions.values()):
        assert any(i.rule == "M6" and i.code == "limit" for i in warned)
    actions = json.loads(response.data)["actions"] if isinstance(response, Raw) else response["actions"]
    # a conflict over one recipient: warned of exactly when decided so, and the decision is the pick
    conflicts = {}
    for issue in warned:
        found = NAMED_CONFLICT.match(issue.message) if issue.rule == "M7" else None
        if found:
            conflicts[found["who"].lower()] = picked(issue.message)
    decided_by_conflict = {
        r.lower(): d for r, d in result.decisions.items() if d.rule == "M7" and d.via == "recipients"
    }
    assert set(decided_by_conflict) == {who for who in conflicts if who in {r.lower() for r in result.decisions}}
    for who, d in decided_by_conflict.items():
        assert d.action == actions[conflicts[who]]["action"]["type"]
    # a conflict over allRecipients: the same
    everyone_warning = [i for i in warned if i.rule == "M7" and i.path.endswith(".allRecipients")]
    covered = [d for d in result.decisions.values() if d.via == "allRecipients"]
    if covered:
        assert bool(everyone_warning) == all(d.rule == "M7" for d in covered)
        if everyone_warning:
            winner = actions[picked(everyone_warning[0].message)]["action"]["type"]
            assert {d.action for d in covered} == {winner}


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(response=responses(), direction=st.sampled_from(["INBOUND", "OUTBOUND"]))
def test_validate_response_and_outcome_agree_on_an_asynchronous_rule(response, direction):
    report = mail.validate_response(response, flow_direction=direction, mode="async")
    result = mail.outcome(EVENTS[direction], response, mode="async")
    assert report.ok and (report[0].rule, report[0].code) == ("M8", "ignored")
    assert result.status == "ignored"
    assert {(d.action, d.rule) for d in result.decisions.values()} == {("DEFAULT", "M8")}
    assert list(result.decisions) == ENVELOPE
