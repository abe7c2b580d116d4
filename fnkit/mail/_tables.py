"""The mail event's tables, by name: how the mail rules read the envelope's recipients as a column
(`seen.tables[RECIPIENTS]["address"]`) and say which recipient they found something in (`RECIPIENTS.row(i)`);
the engine knows where each row sits."""

from __future__ import annotations

from .._engine.findings import Table

#: the envelope's recipients, one row per entry of `envelope.recipients`
RECIPIENTS = Table("envelope.recipients")
