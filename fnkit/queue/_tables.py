"""The queue event's tables, by name: how the queue's rules read a batch's columns (`seen.tables[RECORDS]`) and
say which record they found something in (`RECORDS.row(i)`); the engine knows where each row sits."""

from __future__ import annotations

from .._engine.findings import Table

#: the batch's records, one row per record
RECORDS = Table("records")
#: each record's `attributes` object, one row per record
ATTRIBUTE_ROWS = Table("records.attributes")
