"""The rules about invoking a handler (H1-H4), declared beside the names that implement them.

The code is in `fnkit.isolation` (calling the handler) and `fnkit._codec` (encoding what it returned); this
module only declares the rules and points at that code, so the catalogue can say where
each rule lives.
"""

from __future__ import annotations

from . import _codec, isolation
from .rules import rule

rule(
    "H1",
    "any",
    "contract",
    "The handler is called as handler(event, context); what it returns is serialised to JSON.",
    origin="kit",
    severity="behaviour",
)(isolation.invoke)
rule(
    "H2",
    "any",
    "inferred",
    "A returned value that JSON cannot encode (a set, bytes, NaN) is an invalid JSON response.",
    origin="kit",
)(_codec.encode_response)
rule(
    "H3",
    "any",
    "doc",
    "A handler that raises is an invocation error; its message and traceback are captured.",
    origin="kit",
    severity="outcome",
)(_codec.HandlerError)
rule(
    "H4",
    "any",
    "doc",
    "A handler still running at its timeout is a timed-out invocation; the caller is never kept waiting.",
    origin="kit",
    severity="outcome",
)(_codec.Invocation)
