"""The rules about invoking a handler (H1-H4), declared beside the names that implement them.

The code is in `fnkit._running.calls` (calling the handler: `invoke`, which `fnkit.isolation` names),
`fnkit._running.inprocess` (catching a raise, judging a late end) and `fnkit._engine.codec` (encoding what
it returned: H2, declared with the issues, in `fnkit._engine.report`). What a source's outcome reports of a
call that raised (H3) or timed out (H4) is said here, by `raised` and `timed_out`, each the one function that
issues its rule: the outcomes ask them with their own words and place what they return.
"""

from __future__ import annotations

from .._engine.codec import Invocation
from .._engine.findings import Finding, problem
from ..rules import rule
from . import calls

rule(
    "H1",
    "any",
    "contract",
    "The handler is called as handler(event, context); what it returns is serialised to JSON.",
    origin="kit",
    severity="behaviour",
)(calls.invoke)
RAISED = rule(
    "H3",
    "any",
    "doc",
    "A handler that raises is an invocation error; its message and traceback are captured.",
    origin="kit",
    severity="outcome",
)
TIMED_OUT = rule(
    "H4",
    "any",
    "doc",
    "A handler still running at its timeout is a timed-out invocation; the caller is never kept waiting.",
    origin="kit",
    severity="outcome",
)


@RAISED
def raised(invocation: Invocation, code: str, sentence: str) -> list[Finding]:
    """H3: a call whose handler raised (`inprocess._call_handler` catches the raise and records it, wherever the
    call ran) is an invocation error; what the source's outcome reports of it (`code`, `sentence`), nothing when
    the handler did not raise (a timed-out call is `timed_out`'s)."""
    return [problem(code, sentence)] if invocation.error is not None and not invocation.timed_out else []


@TIMED_OUT
def timed_out(invocation: Invocation, code: str, sentence: str) -> list[Finding]:
    """H4: a call still running at its timeout is timed out (the running code stops waiting there, and
    `inprocess.ended_invocation` judges a call that ended late, wherever it ran); what the source's outcome
    reports of it (`code`, `sentence`), nothing when the call ended in time."""
    return [problem(code, sentence)] if invocation.timed_out else []
