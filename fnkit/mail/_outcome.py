"""What the mail service does with a function's answer: one decision per recipient.

Resolution (M5, M6, M7), for a synchronous rule whose function answered validly, is the
rules' own (fnkit/mail/_response.py: `coverage`, `unique_actions`, `conflicts`); the outcome
applies the judgements they made while the answer was validated:
1. only the first 10 unique actions (type and parameters) count; a recipient that only
   later actions cover gets the fallback action (M6);
2. a recipient an action names explicitly gets that action (`via="recipients"`);
3. every other recipient gets the action of an entry with `allRecipients: true`
   (`via="allRecipients"`);
4. a recipient nothing covers gets the fallback action (`via="fallback"`);
5. a recipient named by two different actions is a conflict the platform leaves
   undefined (M7, inferred): `conflict_policy` decides, by default the most restrictive
   action (DROP > BOUNCE > MOVE_TO_JUNK > DEFAULT > BYPASS_SPAM_CHECK), else the
   `"first"` or `"last"` entry naming it;
6. recipients named but absent from the envelope are added (inbound, the platform adds
   only the organisation's own addresses, as BCC; fnkit cannot know the organisation, so
   it adds them and warns).

A failed attempt (raised, no answer within `response_timeout_s`, invalid answer) gives
every recipient the fallback action (M3). An asynchronous rule never changes delivery
(M8): every recipient gets DEFAULT with `via="allRecipients"`, as if the function had
answered `{"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": true}]}`, and
`rule="M8"`; `via` keeps its three documented values.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Unpack, cast

from .. import rules as _rules
from .._engine.codec import Invocation, encode_response
from .._engine.findings import ROOT, caution, place, problem
from .._engine.outcome import Display, Grid, outcome_html, outcome_row, what_it_did
from .._engine.report import Issue, Report, decode_json
from .._engine.validate import Seen
from .._optional import require
from .._running.inprocess import Context
from .._running.plan import PlannedCall
from .._settings.config import with_settings
from .._settings.project import resolve_isolation
from ..isolation import invoke
from ..rules import id_of
from ..types import Isolation, MailKind
from ._config import ASYNCHRONOUS, FALLBACK, MailAttemptSettings, MailConfig
from ._content import MESSAGE_CONTENT
from ._decision import Decision
from ._event import decode_event, parse_event, truncation

if TYPE_CHECKING:
    import pandas as pd

    from ._content import MessageContent

from ._response import (
    UNIQUE_ACTIONS_LIMIT,
    Coverage,
    as_returned,
    conflicts,
    coverage,
    ignored_answer,
    judge_response,
    unique_actions,
)

SOURCE = "mail"
DELIVERED = ("DEFAULT", "BYPASS_SPAM_CHECK", "MOVE_TO_JUNK")


@dataclass(frozen=True)
class MailOutcome:
    """What the mail service does with one invocation's answer, recipient by recipient."""

    status: str  # "applied" | "fallback" | "ignored"
    decisions: dict[str, Decision]
    rule: str
    reason: str
    issues: Report
    invocation: Invocation | None = None
    delivered_content: bytes | None = None  # the replaced raw message that is delivered (M9)
    mode: str = "sync"
    fallback_action: str = "DEFAULT"
    inferred_reading: bool = field(default=False, repr=False)
    cause: str = field(default="", repr=False)  # a fallback's cause, as a sentence without the consequence
    event_issues: Report | None = field(default=None, compare=False)  # the event's report, when `run` validated it

    source: ClassVar[str] = SOURCE
    result_column: ClassVar[str] = "action"  # what each recipient gets

    @property
    def inferred(self) -> bool:
        """True when the deciding rule's evidence is inferred (the reason then says so)."""
        return self.inferred_reading or _rules.is_inferred(self.rule)

    @property
    def kind(self) -> MailKind:
        """What happened, in a word (the `status`): "applied", "fallback" or "ignored"."""
        return cast("MailKind", self.status)

    @property
    def ok(self) -> bool:
        """True when the function's answer was applied, or an asynchronous rule's function finished (M8)."""
        if self.status == "applied":
            return True
        failed = self.invocation is not None and (self.invocation.timed_out or self.invocation.error is not None)
        return self.status == "ignored" and not failed

    @property
    def actions(self) -> dict[str, str]:
        """Recipient -> action, the short view."""
        return {r: d.action for r, d in self.decisions.items()}

    def recipients(self, action: str) -> list[str]:
        """The recipients that get `action`."""
        return [r for r, d in self.decisions.items() if d.action == action]

    def rows(self) -> list[dict[str, Any]]:
        """One dict per recipient: source, item (= recipient), action, via, bounce_message, status, rule, inferred,
        reason."""
        return [
            {
                "source": SOURCE,
                "item": r,
                "recipient": r,
                "action": d.action,
                "via": d.via,
                "bounce_message": d.bounce_message,
                "status": self.status,
                "rule": d.rule,
                "inferred": d.inferred or self.inferred_reading,
                "reason": d.reason or self.reason,
            }
            for r, d in self.decisions.items()
        ]

    def to_frame(self) -> pd.DataFrame:
        """The rows as a pandas DataFrame."""
        require("pandas", extra="frames", feature="MailOutcome.to_frame()")
        import pandas as pd

        return pd.DataFrame(
            self.rows(),
            columns=[
                "source",
                "item",
                "recipient",
                "action",
                "via",
                "bounce_message",
                "status",
                "rule",
                "inferred",
                "reason",
            ],
        )

    def __repr__(self) -> str:
        counts = ", ".join(f"{n} {a}" for a, n in Counter(d.action for d in self.decisions.values()).items())
        return f"<MailOutcome {self.status} [{self.rule}] {counts}: {self.reason}>"

    # -- the Outcome protocol ---------------------------------------------------------------

    @property
    def explanation(self) -> str:
        """The reason, and what is delivered when the function replaced the message (M9)."""
        if self.delivered_content:
            return f"{self.reason} The replaced message (the content API, {MESSAGE_CONTENT.id}) is what is delivered."
        return self.reason

    @property
    def headline(self) -> str:
        """The status and the actions counted: "applied: 2 BOUNCE", "fallback: 3 DEFAULT"."""
        counts = Counter(d.action for d in self.decisions.values())
        detail = ", ".join(f"{n} {a}" for a, n in sorted(counts.items()))
        return f"{self.status}: {detail}" if detail else self.status

    @property
    def tone(self) -> str:
        """good (applied), mixed (applied, some recipients got the fallback), bad (fallback), none (ignored)."""
        if self.status == "applied":
            return "mixed" if any(d.via == "fallback" for d in self.decisions.values()) else "good"
        return {"fallback": "bad"}.get(self.status, "none")

    def _display(self) -> Display:
        rows = [
            {
                "recipient": r,
                "action": d.action,
                "via": d.via,
                "bounce message": d.bounce_message,
                "rule": d.rule,
                "why": d.reason,
            }
            for r, d in self.decisions.items()
        ]
        return Display([Grid(rows, ["recipient", "action", "via", "bounce message", "rule", "why"])])

    to_row = outcome_row
    _repr_html_ = outcome_html


# --- the envelope -------------------------------------------------------------------


def envelope_recipients(event: dict[str, Any]) -> list[str]:
    """The envelope's recipient addresses, in order, each once (compared without regard to case)."""
    out, seen = [], set()
    for r in event["envelope"]["recipients"]:
        key = r["address"].lower()
        if key not in seen:
            seen.add(key)
            out.append(r["address"])
    return out


# --- the outcome ---------------------------------------------------------------------


def _n(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


@FALLBACK
def fallback_outcome(
    recipients: list[str],
    fallback_action: str,
    why: str,
    issues: list[Issue],
    *,
    inferred: bool = False,
    invocation: Invocation | None = None,
    failure: str | None = None,
) -> MailOutcome:
    """Every recipient gets the fallback action (M3); `why` is the sentence that says what failed, `issues` what
    validating the answer found; `failure` ("timeout", "error"): the call failed before its answer could be read,
    which the outcome's one issue says."""
    if failure is not None:
        issues = [*issues, *place([problem(failure, f"{why}.")], by=fallback_outcome)]
    cause = why + (" (inferred)" if inferred and "(inferred)" not in why else "")
    reason = (
        f"{cause}, so the fallback action {fallback_action} applies to all {_n(len(recipients), 'recipient')} "
        f"({FALLBACK.id})."
    )
    decisions = {r: Decision(fallback_action, "fallback", None, FALLBACK.id, f"fallback: {cause}") for r in recipients}
    return MailOutcome(
        "fallback",
        decisions,
        FALLBACK.id,
        reason,
        Report(issues, SOURCE, None, "response"),
        invocation=invocation,
        fallback_action=fallback_action,
        inferred_reading=inferred,
        cause=cause,
    )


def async_outcome(
    recipients: list[str],
    issues: list[Issue],
    *,
    invocation: Invocation | None = None,
    fallback_action: str = "DEFAULT",
) -> MailOutcome:
    """M8: an asynchronous rule leaves delivery as it was (`ignored_answer` says so of the function's answer)."""
    decisions = {
        r: Decision("DEFAULT", "allRecipients", None, ASYNCHRONOUS.id, "asynchronous rule: delivered as usual")
        for r in recipients
    }
    reason = (
        f"The rule is asynchronous: the function's answer is ignored and delivery is unaffected ({ASYNCHRONOUS.id}); "
        f"all {_n(len(recipients), 'recipient')} get the normal delivery (DEFAULT)."
    )
    return MailOutcome(
        "ignored",
        decisions,
        ASYNCHRONOUS.id,
        reason,
        Report(issues, SOURCE, None, "response"),
        invocation=invocation,
        mode="async",
        fallback_action=fallback_action,
    )


def invocation_failure(invocation: Invocation, response_timeout_s: float) -> tuple[str, str] | None:
    """(result, sentence) when the attempt failed before its answer could be read, else None."""
    if invocation.timed_out:
        return "timeout", f"The function did not answer within {response_timeout_s:g} s"
    if invocation.error is not None:
        return "error", f"The function {what_it_did(invocation.error)}"
    took = invocation.duration_ms / 1000.0
    if took > response_timeout_s:
        return "timeout", (
            f"The function answered after {took:.3g} s, but the mail service waits only {response_timeout_s:g} s"
        )
    return None


_CERTAIN = {"missing", "bounce-message"}  # invalid by the contract itself; the rest of M4's list is inferred
# the actions list itself: a limit there (no action at all, M4; too many recipients outbound, M6) is certain
_ACTIONS = ROOT.path_to(None, "actions")


def _invalid_is_inferred(report: Report) -> bool:
    certain = [
        i
        for i in report.errors
        if i.code in _CERTAIN or i.rule == id_of(decode_json) or (i.code == "limit" and i.path == _ACTIONS)
    ]
    return not certain


def _applied_reason(covered: Coverage, policy: str, fallback_action: str) -> tuple[str, str]:
    """(rule, reason) of an applied response: the effects the coverage rules stated (M5, M6, M7)."""
    counts = Counter(d.action for d in covered.decisions.values() if d.via != "fallback")
    parts = [", ".join(f"{n} {a}" for a, n in counts.items())] if counts else []
    uncovered, late, conflicted, added = covered.uncovered, covered.late, covered.conflicted, covered.added
    if uncovered:
        parts.append(f"{_n(uncovered, 'recipient')} covered by no action get the fallback action {fallback_action}")
    if late:
        parts.append(
            f"{_n(late, 'recipient')} covered only by actions beyond the first {UNIQUE_ACTIONS_LIMIT} "
            f"unique ones get the fallback action {fallback_action} ({id_of(unique_actions)})"
        )
    if conflicted:
        parts.append(f"{_n(conflicted, 'conflict')} resolved by the {policy} policy ({id_of(conflicts)}, inferred)")
    if added:
        parts.append(f"{_n(len(added), 'recipient')} named by the response but not in the envelope added")
    return covered.rule, f"The function's answer was applied ({id_of(coverage)}): " + "; ".join(parts) + "."


def returned_answer(response: Any) -> Any:
    """One reading of what the function gave: a returned string or bytes is that value (a JSON string, or
    not JSON at all), never JSON text; `Raw` is the exact text; anything else is the value itself."""
    if isinstance(response, (str, bytes, bytearray, memoryview)):
        text, why = encode_response(response)
        return Invocation(returned=response, response_text=text, encode_error=why)
    return response


# the settings one attempt's outcome depends on (`outcome`, `run`)
ATTEMPT_SETTINGS = (
    "mode",
    "fallback_action",
    "response_timeout_s",
    "conflict_policy",
    "extensions",
    "recipients_limit",
)


@with_settings(MailConfig, *ATTEMPT_SETTINGS)
def outcome(
    event: Any,
    response: Any,
    *,
    envelope: Sequence[str] = (),
    config: MailConfig | None = None,
    **settings: Unpack[MailAttemptSettings],
) -> MailOutcome:
    """What the mail service does with `response` to `event`: one `Decision` per recipient.

    `response`: the returned value, `fnkit.Raw` (the exact text), or an `Invocation`
    (which also covers a raised error or a timeout). `envelope`: the message's SMTP
    recipients, when they may be more than the event holds (a truncated event): each one
    the event lacks gets what rule M1 decides (`truncation`), so every recipient has a
    decision. The rule's settings: `config` (a `MailConfig`) or its fields as keywords.
    Raises `ContractError` for an invalid event and ValueError, naming the rule, for a
    configuration the platform refuses (M2).
    """
    rule_config = MailConfig.of(config, settings, outcome)
    decided = _outcome_of_event(event, response, rule_config)
    if not envelope:
        return decided
    cut = truncation(parse_event(event), envelope=envelope, fallback_action=rule_config.fallback_action).cut
    held = {r.lower() for r in decided.decisions}
    cut = {r: d for r, d in cut.items() if r.lower() not in held}  # (one the response names has its decision)
    if not cut:
        return decided
    if rule_config.mode == "async":  # every recipient, the cut ones too, is delivered as usual (M8)
        queued: MailOutcome = async_outcome(list(cut), [])  # `@rule` leaves it untyped
        cut, effect = queued.decisions, f"the usual delivery ({ASYNCHRONOUS.id})"
    else:
        effect = f"the fallback action {rule_config.fallback_action} ({id_of(truncation)}, inferred)"
    reason = f"{decided.reason} {_n(len(cut), 'recipient')} cut from the truncated event get {effect}."
    return replace(decided, decisions={**decided.decisions, **cut}, reason=reason)


def _outcome_of_event(event: Any, response: Any, rule_config: MailConfig) -> MailOutcome:
    """The outcome for the recipients the event holds."""
    mode, fallback_action = rule_config.mode, rule_config.fallback_action
    conflict_policy = rule_config.conflict_policy
    value, _ = decode_event(event)
    recipients = envelope_recipients(value)
    invocation = response if isinstance(response, Invocation) else None
    flow = value["flowDirection"]
    if mode == "async":
        notes = place(ignored_answer(response), by=ignored_answer)
        queued: MailOutcome = async_outcome(  # `@rule` leaves it untyped
            recipients, notes, invocation=invocation, fallback_action=fallback_action
        )
        return queued
    if invocation is not None:
        failure = invocation_failure(invocation, rule_config.response_timeout_s)
        if failure is not None:
            result, why = failure
            failed: MailOutcome = fallback_outcome(
                recipients, fallback_action, why, [], invocation=invocation, failure=result
            )
            return failed
    report, read = judge_response(returned_answer(response), flow, rule_config)
    if not report.ok:
        first = report.errors[0]
        why = (
            f"The function's answer is not a valid response ({_n(len(report.errors), 'error')}; first: "
            f"{first.path}: {first.message.rstrip('.')})"
        )
        fallen_back: MailOutcome = fallback_outcome(
            recipients, fallback_action, why, list(report), invocation=invocation, inferred=_invalid_is_inferred(report)
        )
        return fallen_back
    # the rules' judgements of the response, made while validating it (`read`), decide for each recipient (M5)
    answer, _ = decode_json(as_returned(returned_answer(response)))
    covered = coverage(answer, Seen({**read, "recipients": recipients, "fallback_action": fallback_action}))
    decisions = covered.decisions
    said = place(covered, by=coverage) if covered else []
    notes = [i for i in said if i not in report]  # (what validating it said is in the report)
    rule, reason = _applied_reason(covered, conflict_policy, fallback_action)
    return MailOutcome(
        "applied",
        decisions,
        rule,
        reason,
        Report([*report, *notes], SOURCE, None, "response"),
        invocation=invocation,
        fallback_action=fallback_action,
    )


# --- running a handler --------------------------------------------------------------


def request_id(invocation_id: str, attempt: int) -> str:
    """A deterministic request id for one attempt (same notebook, same ids)."""
    digest = hashlib.md5(f"{invocation_id}:{attempt}".encode()).digest()
    return str(uuid.UUID(bytes=digest, version=4))


def call_handler(
    handler: Any,
    event: dict[str, Any],
    *,
    store: Any,
    mode: str,
    timeout_s: float,
    attempt: int = 1,
    context: Context | None = None,
    at_s: float | None = None,
    isolation: str | None = None,
) -> tuple[Invocation, Any]:
    """Invoke `handler` once with the content API open on `context.message_content` (M9).

    The function gets its own copy of the event, as it would get its own JSON; in a worker
    process, its calls to the content API come back here, where the store is. Its boto3
    calls to the message flow API are answered from the same content API (`_workmail`).
    """
    if context is None:
        context = Context(timeout_s=timeout_s, aws_request_id=request_id(event["invocationId"], attempt))
    with content_open(store, event["messageId"], context, mode=mode, at_s=at_s, isolation=isolation) as content:
        invocation = invoke(handler, event, timeout_s=timeout_s, context=context, isolation=isolation)
    return invocation, content


@contextmanager
def content_open(
    store: Any,
    message_id: str,
    context: Context,
    *,
    mode: str,
    at_s: float | None = None,
    isolation: str | None = None,
) -> Iterator[MessageContent]:
    """The content API of one invocation, open on `context.message_content` while the handler runs (M9), and
    answering the message flow SDK's calls there (fnkit.mail._workmail) in the isolation the handler runs in."""
    from ._workmail import bridged

    with store.invocation(message_id, mode=mode, at_s=at_s) as content:
        context.message_content = content
        with bridged(context, resolve_isolation(isolation)):
            yield content


def ensure_message(store: Any, event: dict[str, Any]) -> None:
    """Make the event's raw message readable (a minimal one when none is stored) and undo old replacements."""
    from ._content import minimal_message

    message_id = event["messageId"]
    if message_id not in store:
        store.add(message_id, minimal_message(event))
    store.restore(message_id)


@MESSAGE_CONTENT
def with_content(result: MailOutcome, clients: list[Any], store: Any, message_id: str) -> MailOutcome:
    """The outcome with what the content API did: the delivered replacement, ignored ones (M9)."""
    found = [
        caution(
            "ignored",
            f"The raw message was replaced {r.why}; a replacement counts only during a "
            f"synchronous invocation, so the original is delivered ({MESSAGE_CONTENT.id}).",
        )
        for client in clients
        for r in client.replacements
        if not r.applied
    ]
    notes = place(found, by=with_content) if found else []
    delivered = None
    try:
        stored = store.message(message_id)
        if stored.replaced and any(d.action in DELIVERED for d in result.decisions.values()):
            delivered = stored.content
    except ValueError:
        pass
    if notes:
        result = replace(result, issues=Report([*result.issues, *notes], SOURCE, None, result.issues.subject))
    return replace(result, delivered_content=delivered)


@with_settings(MailConfig, *ATTEMPT_SETTINGS)
def run(
    handler: Any,
    event: Any,
    *,
    timeout_s: float | None = None,
    context: Context | None = None,
    store: Any = None,
    isolation: Isolation | None = None,
    config: MailConfig | None = None,
    **settings: Unpack[MailAttemptSettings],
) -> MailOutcome:
    """Validate the event, invoke `handler(event, context)`, and decide the outcome.

    The handler is cut at `response_timeout_s` (15 s by default; `timeout_s` may only make
    it shorter), as the mail service stops waiting then (M3). During the call,
    `context.message_content` reads and replaces the raw message (M9) held by `store`
    (default: `default_store()`). Takes the keywords of `outcome`; `.invocation` holds
    what happened. `isolation`: where the handler runs (see `fnkit.invoke`). Raises
    ContractError for an invalid event.
    """
    planned = plan_call(
        event, config=MailConfig.of(config, settings, run), timeout_s=timeout_s, context=context, store=store
    )
    return planned.run(handler, isolation)


def plan_call(
    event: Any,
    *,
    config: MailConfig,
    timeout_s: float | None = None,
    context: Context | None = None,
    store: Any = None,
) -> PlannedCall[MailOutcome]:
    """The call `run` makes for `event`: validated (ContractError when invalid), its raw message in `store`
    (restored), cut at `response_timeout_s` (or `timeout_s` when shorter), with the content API open during
    the call; its outcome is `outcome` on the Invocation, with what the content API did (`with_content`)."""
    from ._content import default_store

    value, event_report = decode_event(event)
    limit = config.response_timeout_s
    wait = limit if timeout_s is None else min(timeout_s, limit)
    store = store if store is not None else default_store()
    ensure_message(store, value)
    message_id = value["messageId"]
    if context is None:
        context = Context(timeout_s=wait, aws_request_id=request_id(value["invocationId"], 1))
    call_context = context
    opened: list[MessageContent] = []

    @contextmanager
    def session(isolation: str) -> Iterator[None]:
        with content_open(store, message_id, call_context, mode=config.mode, isolation=isolation) as content:
            opened.append(content)
            yield

    def finish(invocation: Invocation) -> MailOutcome:
        result = outcome(value, invocation, config=config)
        completed: MailOutcome = with_content(result, opened, store, message_id)  # `@rule` leaves it untyped
        return replace(completed, event_issues=event_report)

    # one message's calls never share a chunk, nor do calls that share the caller's one context
    return PlannedCall(value, wait, finish, context, session=session, exclusive=(message_id, id(context)))
