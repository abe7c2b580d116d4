"""The mail-flow rule simulator: attempts, retries, fallback (fnkit/mail/_rule.py)."""

import time

import pytest

from fnkit import mail
from fnkit._engine.report import ContractError

from .helpers import ALICE, BOB, CAROL, respond

ACCEPT = respond(("DEFAULT", True))


def failing(error=RuntimeError):
    def handler(event, context):
        raise error("not today")

    return handler


class succeeding_on:  # noqa: N801 - used as a function: succeeding_on(3) is a handler
    """A handler that raises until its `attempt`-th call, then answers; `calls` holds each call's invocationId."""

    def __init__(self, attempt, answer=ACCEPT):
        self.attempt, self.answer, self.calls = attempt, answer, []

    def __call__(self, event, context):
        self.calls.append(event["invocationId"])
        if len(self.calls) < self.attempt:
            raise RuntimeError(f"attempt {len(self.calls)} fails")
        return self.answer


@pytest.mark.parametrize(
    "keywords",
    [
        {"rule_timeout_minutes": 241},
        {"rule_timeout_minutes": -1},
        {"rule_timeout_minutes": "5"},
        {"fallback_action": "LAMBDA"},
        {"mode": "batch"},
    ],
)
def test_configurations_the_platform_refuses_name_m2(keywords):
    with pytest.raises(ValueError, match="M2"):
        mail.MailRule(**keywords)


def test_rule_timeout_0_means_no_retries(event):
    run = mail.MailRule(rule_timeout_minutes=0, fallback_action="BOUNCE", response_timeout_s=1).run(failing(), event)
    assert [(a.number, a.time_s, a.result) for a in run.attempts] == [(1, 0.0, "error")]
    assert run.outcome.status == "fallback" and run.outcome.rule == "M3"
    assert run.outcome.actions == dict.fromkeys((ALICE, BOB, CAROL), "BOUNCE")
    assert "no retries" in run.outcome.reason and "RuntimeError: not today" in run.outcome.reason


def test_failed_attempts_are_retried_with_exponential_backoff_until_the_rule_timeout(event):
    run = mail.MailRule(rule_timeout_minutes=10, response_timeout_s=1).run(failing(), event)
    assert [a.time_s for a in run.attempts] == pytest.approx([0, 60, 180, 420], abs=0.05)
    assert {a.invocation_id for a in run.attempts} == {event["invocationId"]}
    assert all(a.result == "error" for a in run.attempts)
    assert run.outcome.status == "fallback" and "4 attempts failed" in run.outcome.reason
    assert "rule timeout of 10 min" in run.outcome.reason


def test_timeouts_use_the_whole_response_window_on_the_virtual_clock(event):
    rule = mail.MailRule(rule_timeout_minutes=5, response_timeout_s=0.1)
    start = time.perf_counter()
    run = rule.run(lambda e, c: time.sleep(2), event, isolation="process")  # real cuts need a worker
    # three real cuts at 0.1 s, no real backoff: well under the 6 s of three uncut sleeps (or 180 s of backoff),
    # with room for three worker starts on a loaded machine
    assert time.perf_counter() - start < 5.0
    assert [(a.time_s, a.result, a.duration_s) for a in run.attempts] == [
        (0.0, "timeout", 0.1),
        (60.1, "timeout", 0.1),
        (180.2, "timeout", 0.1),
    ]
    assert rule.schedule() == [0.0, 60.1, 180.2]


def test_a_retry_that_succeeds_is_applied(event):
    handler = succeeding_on(3, respond(("DROP", [BOB]), ("DEFAULT", True)))
    run = mail.MailRule(rule_timeout_minutes=30, response_timeout_s=1).run(handler, event, isolation="thread")
    assert [a.result for a in run.attempts] == ["error", "error", "applied"]
    assert handler.calls == [event["invocationId"]] * 3  # the same invocationId on every retry (M1)
    assert run.outcome.status == "applied" and run.outcome.actions[BOB] == "DROP"
    assert "After 2 failed attempts" in run.outcome.reason


def test_an_invalid_answer_is_a_failed_attempt(event):
    run = mail.MailRule(rule_timeout_minutes=2, response_timeout_s=1).run(lambda e, c: {"actions": []}, event)
    assert [a.result for a in run.attempts] == ["invalid", "invalid"]
    assert run.attempts[0].issues.rules() == ["M4"]
    assert run.outcome.status == "fallback" and "M4" in run.outcome.issues.rules()


def test_custom_backoff(event):
    rule = mail.MailRule(
        rule_timeout_minutes=3, response_timeout_s=1, backoff_initial_s=10, backoff_factor=3, backoff_max_s=45
    )
    run = rule.run(failing(), event)
    assert [a.time_s for a in run.attempts] == pytest.approx([0, 10, 40, 85, 130, 175], abs=0.05)
    assert rule.schedule() == pytest.approx([0, 11, 42, 88, 134], abs=0.01)  # when each attempt times out


def test_an_asynchronous_rule_invokes_once_and_ignores_the_answer(event):
    run = mail.MailRule(mode="async", rule_timeout_minutes=60, fallback_action="DROP").run(failing(), event)
    assert [a.result for a in run.attempts] == ["error"]
    assert run.outcome.status == "ignored" and run.outcome.actions == dict.fromkeys((ALICE, BOB, CAROL), "DEFAULT")
    quiet = mail.MailRule(mode="async").run(lambda e, c: respond(("DROP", True)), event)
    assert [a.result for a in quiet.attempts] == ["ignored"] and quiet.outcome.rule == "M8"


def test_an_invalid_event_raises_before_any_attempt(event):
    del event["invocationId"]
    with pytest.raises(ContractError):
        mail.MailRule().run(failing(), event)


def test_tables(event):
    run = mail.MailRule(rule_timeout_minutes=2, response_timeout_s=1).run(succeeding_on(2), event)
    rows = run.rows()
    assert [r["recipient"] for r in rows] == [ALICE, BOB, CAROL] and {r["attempts"] for r in rows} == {2}
    assert [r["result"] for r in run.attempt_rows()] == ["error", "applied"]
    assert list(run.attempts_frame()["attempt"]) == [1, 2]
    assert list(run.to_frame()["action"]) == ["DEFAULT"] * 3
    assert "applied" in run._repr_html_() and run.invocation_id == event["invocationId"]


def test_a_run_stops_at_its_bound_on_attempts_and_says_so(event):
    rule = mail.MailRule(rule_timeout_minutes=240, backoff_initial_s=1, backoff_max_s=1, response_timeout_s=1)
    with pytest.warns(RuntimeWarning, match="stopped at its bound of 25 attempts") as caught:
        run = rule.run(failing(), event, isolation="none")
    bound = [w for w in caught if "stopped at its bound" in str(w.message)]  # (not a collected leftover's)
    assert len(run.attempts) == 25 and len(bound) == 1 and run.stopped == str(bound[0].message)
    assert bound[0].filename == __file__  # the warning points at the user's call, not at fnkit
    assert run.stopped.count(". ") == 0 and "would retry until its timeout (240 min)" in run.stopped
    assert run.outcome.status == "fallback" and "rule timeout of 240 min leaves no time" not in run.outcome.reason
    assert run.stopped in repr(run)
    with pytest.warns(RuntimeWarning, match="bound of 3 attempts"):
        few = rule.run(failing(), event, max_attempts=3, isolation="none")
    assert len(few.attempts) == 3 and few.stopped is not None


def test_a_run_the_rule_timeout_ends_says_nothing_of_a_bound(event, recwarn):
    run = mail.MailRule(rule_timeout_minutes=10, response_timeout_s=1).run(failing(), event, isolation="none")
    assert run.stopped is None and not [w for w in recwarn if "bound" in str(w.message)]
