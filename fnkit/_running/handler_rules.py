"""The rules about invoking a handler (H1-H4), declared beside the names that implement them.

The code is in `fnkit._running.calls` (calling the handler: `invoke`, which `fnkit.isolation` names),
`fnkit._running.inprocess` (catching a raise, judging a late end) and `fnkit._engine.codec` (encoding what
it returned: H2, declared with the issues, in `fnkit._engine.report`); this module only declares the rules
and points at that code, so the catalogue can say where each rule lives.
"""

from __future__ import annotations

from ..rules import rule
from . import calls, inprocess

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
RAISED(inprocess._call_handler)  # where a raise is caught and recorded
TIMED_OUT = rule(
    "H4",
    "any",
    "doc",
    "A handler still running at its timeout is a timed-out invocation; the caller is never kept waiting.",
    origin="kit",
    severity="outcome",
)
TIMED_OUT(inprocess.ended_invocation)  # a call that ended late is timed out, wherever it ran
