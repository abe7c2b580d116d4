"""Properties of the mail source, checked on generated inputs (hypothesis)."""

import copy
import math
import warnings
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fnkit import Raw, mail, rules
from fnkit.mail._config import ACTION_TYPES, EXTENSION_TYPES
from fnkit.mail._decision import VIAS
from fnkit.mail._event import EVENT_CONTRACT
from fnkit.mail._rule import BOUND_ATTEMPTS

RULE_IDS = rules.ids()

# --- strategies ------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
odd_leaves = st.one_of(
    st.sets(st.integers(), max_size=3),
    st.frozensets(st.text(max_size=3), max_size=3),
    st.builds(object),
    st.complex_numbers(),
    st.binary(max_size=8),
    st.builds(bytearray, st.binary(max_size=8)),
    st.sampled_from([math.nan, math.inf, Ellipsis, type, print, b"\xff", Raw(b"\xfe{"), Raw("[]")]),
)
anything = st.recursive(
    odd_leaves | json_values,
    lambda children: (
        st.lists(children, max_size=3)
        | st.tuples(children, children)
        | st.dictionaries(st.integers() | st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)
texts = st.text(max_size=40) | st.binary(max_size=40)

ATOM = st.text(alphabet="abcXYZ09.!#+-_'\u00e9", min_size=0, max_size=6)
address_like = st.one_of(
    st.builds(lambda a, b: f"{a}@{b}", ATOM, ATOM),
    st.sampled_from(["a@x", "bob@example.com", "Bob <bob@example.com>", "bob", "a b@x", "a@b@c", "", "a\n@b"]),
)
_LOCAL = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8)
good_address = st.builds(
    lambda local, tag, domain: f"{local}{tag}@{domain}",
    _LOCAL,
    st.sampled_from(["", ".x", "+tag", "_1", "-o'k"]),
    st.sampled_from(["example.com", "x", "mail.example.co.uk", "ex-ample.org", "caf\u00e9.fr"]),
)

EVENT_PATHS = [
    ("summaryVersion",),
    ("envelope",),
    ("envelope", "mailFrom"),
    ("envelope", "mailFrom", "address"),
    ("envelope", "recipients"),
    ("envelope", "recipients", 0),
    ("envelope", "recipients", 0, "address"),
    ("envelope", "recipients", 1, "address"),
    ("sender", "address"),
    ("subject",),
    ("messageId",),
    ("invocationId",),
    ("flowDirection",),
    ("truncated",),
    ("extra",),
    ("envelope", "extra"),
    ("envelope", "recipients", 0, "extra"),
]
plausible = st.one_of(
    address_like,
    st.text(max_size=300),
    st.booleans(),
    st.none(),
    st.sampled_from(["INBOUND", "OUTBOUND", "2019-07-28", "v2", "", "BOB@EXAMPLE.COM"]),
    st.lists(st.fixed_dictionaries({"address": address_like}), max_size=4),
)


def base_event(seed=0, n=3):
    return mail.build_event(
        mail_from="sender@example.org",
        recipients=[f"user{i}@example.com" for i in range(n)],
        subject="Hello",
        seed=seed,
    )


@st.composite
def mutated_events(draw, values=anything):
    event = base_event(n=draw(st.integers(1, 4)))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(EVENT_PATHS))
        target = event
        for key in path[:-1]:
            try:
                target = target[key]
            except (KeyError, IndexError, TypeError):
                break
        else:
            if isinstance(target, (dict, list)):
                key = path[-1]
                if isinstance(target, list) and not (isinstance(key, int) and key < len(target)):
                    continue
                if isinstance(target, dict) and draw(st.booleans()) and draw(st.booleans()):
                    target.pop(key, None)
                else:
                    target[key] = draw(values)
    return event


# --- validators never raise ----------------------------------------------------------------


@given(st.one_of(json_values, anything, texts, mutated_events()))
def test_validate_event_never_raises(value):
    report = mail.validate_event(value)
    assert report.source == "mail"
    assert all(i.severity in ("error", "warning") and i.rule in RULE_IDS for i in report)


@given(
    st.one_of(
        json_values,
        anything,
        texts,
        st.builds(lambda a: {"actions": a}, anything),
        st.builds(
            lambda e: {"actions": [e]},
            st.dictionaries(st.sampled_from(["action", "recipients", "allRecipients", "x"]), anything, max_size=3),
        ),
        st.builds(
            lambda t, p: {"actions": [{"action": {"type": t, "parameters": p}, "allRecipients": True}]},
            st.sampled_from(ACTION_TYPES + EXTENSION_TYPES) | anything,
            anything,
        ),
    ),
    st.sampled_from([None, "INBOUND", "OUTBOUND"]),
    st.booleans(),
)
def test_validate_response_never_raises(value, direction, extensions):
    report = mail.validate_response(value, flow_direction=direction, extensions=extensions)
    assert report.subject == "response"
    assert all(i.rule in RULE_IDS for i in report)


def test_deep_nesting_is_reported_not_raised():
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    for report in (
        mail.validate_event(deep),
        mail.validate_event({"envelope": deep, "summaryVersion": "x"}),
        mail.validate_response({"actions": deep}),
        mail.validate_event("[" * 100_000 + "]" * 100_000),
    ):
        assert not report.ok


# --- the compiled check says exactly what the located way says ----------------------------------------


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(mutated_events(values=plausible))
def test_the_compiled_check_agrees_with_the_located_validation(event):
    located = EVENT_CONTRACT.located(event)
    report = mail.validate_event(event)
    assert (list(report), report.dialect) == (list(located), located.dialect)


# --- the builder's events are valid ----------------------------------------------------------------


@given(
    seed=st.integers(0, 2**32),
    recipients=st.lists(good_address, min_size=1, max_size=6, unique_by=str.lower),
    sender=good_address,
    subject=st.text(max_size=300),
    direction=st.sampled_from(["INBOUND", "OUTBOUND"]),
)
def test_built_events_are_valid_for_any_seed(seed, recipients, sender, subject, direction):
    event = mail.build_event(
        mail_from=sender, recipients=recipients, subject=subject, flow_direction=direction, seed=seed
    )
    report = mail.validate_event(event)
    assert report.ok and len(report) == 0, report
    assert event == mail.build_event(
        mail_from=sender, recipients=recipients, subject=subject, flow_direction=direction, seed=seed
    )


# --- every recipient gets exactly one decision ---------------------------------------------------

POOL = ["a@example.com", "b@example.com", "c@example.com", "d@example.com", "extra@example.net", "E@EXAMPLE.COM"]
entries = st.builds(
    lambda kind, who, everyone, message: {
        "action": {
            "type": kind,
            **({"parameters": {"bounceMessage": message}} if message and kind == "BOUNCE" else {}),
        },
        **({"recipients": who} if who is not None else {}),
        **({"allRecipients": everyone} if everyone is not None else {}),
    },
    st.sampled_from(ACTION_TYPES + EXTENSION_TYPES),
    st.none() | st.lists(st.sampled_from(POOL), max_size=4),
    st.none() | st.booleans(),
    st.none() | st.sampled_from(["m1", "m2", "m3"]),
)


@given(
    envelope=st.lists(st.sampled_from(POOL[:4]), min_size=1, max_size=4, unique=True),
    response=st.one_of(st.builds(lambda e: {"actions": e}, st.lists(entries, max_size=14)), anything),
    fallback=st.sampled_from(ACTION_TYPES),
    policy=st.sampled_from(["most-restrictive", "first", "last"]),
    extensions=st.booleans(),
    mode=st.sampled_from(["sync", "sync", "async"]),
)
def test_every_recipient_gets_exactly_one_decision(envelope, response, fallback, policy, extensions, mode):
    event = mail.build_event(mail_from="s@example.org", recipients=envelope)
    result = mail.outcome(
        event, response, fallback_action=fallback, conflict_policy=policy, extensions=extensions, mode=mode
    )
    decided = list(result.decisions)
    assert decided[: len(envelope)] == envelope
    assert len({r.lower() for r in decided}) == len(decided)
    assert all(d.via in VIAS and d.action in ACTION_TYPES + EXTENSION_TYPES for d in result.decisions.values())
    assert {result.rule, *(d.rule for d in result.decisions.values()), *(i.rule for i in result.issues)} <= RULE_IDS
    assert result.status in ("applied", "fallback", "ignored")
    if result.status == "fallback":
        assert decided == envelope and all(d.action == fallback for d in result.decisions.values())
    if result.status == "ignored":
        assert all(d.action == "DEFAULT" for d in result.decisions.values())
    assert len(result.rows()) == len(decided)


# --- a rule's attempts stay within the rule timeout and share one invocationId ------------------------


@settings(max_examples=40, deadline=None)
@given(
    minutes=st.integers(0, 240),
    initial=st.floats(30, 600),
    factor=st.floats(1.5, 3),
    cap_over=st.floats(0, 3600),
    response_s=st.floats(0.05, 15),
    seed=st.integers(0, 100),
    jitter=st.sampled_from([0.0, 0.3]),
)
def test_attempts_never_pass_the_rule_timeout_and_share_one_invocation_id(
    minutes, initial, factor, cap_over, response_s, seed, jitter
):
    rule = mail.MailRule(
        rule_timeout_minutes=minutes,
        response_timeout_s=response_s,
        backoff_initial_s=initial,
        backoff_factor=factor,
        backoff_max_s=initial + cap_over,
        jitter=jitter,
        seed=seed,
    )
    event = base_event(seed)

    def handler(e, context):
        raise RuntimeError("always")

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        run = rule.run(handler, event)
    # a schedule longer than the run's bound stops there, and says so once (run.stopped, and a RuntimeWarning)
    assert [str(w.message) for w in said if w.category is RuntimeWarning] == ([run.stopped] if run.stopped else [])
    assert run.stopped is None or len(run.attempts) == BOUND_ATTEMPTS
    assert {a.invocation_id for a in run.attempts} == {event["invocationId"]}
    times = [a.time_s for a in run.attempts]
    assert times[0] == 0 and times == sorted(times)
    assert all(t + response_s <= minutes * 60 + 1e-6 for t in times[1:])
    if minutes == 0:
        assert len(run.attempts) == 1
    assert run.outcome.status == "fallback" and len(run.outcome.decisions) == 3
    schedule = rule.schedule()
    assert all(t + response_s <= minutes * 60 + 1e-6 for t in schedule[1:])


@given(
    envelope=st.lists(st.sampled_from(POOL[:4]), min_size=1, max_size=4, unique=True),
    response=st.builds(lambda e: {"actions": e}, st.lists(entries, min_size=1, max_size=5)),
)
def test_outcome_does_not_change_its_inputs(envelope, response):
    event = mail.build_event(mail_from="s@example.org", recipients=envelope)
    before = copy.deepcopy((event, response))
    mail.outcome(event, response, extensions=True)
    assert (event, response) == before
