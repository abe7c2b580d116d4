"""The contract engine: one declaration of a shape checks, parses, reports and locates.

Its rooms, each importing only those below it (the import-linter contract "engine-rooms"):
- `validate`: `Contract`, the one place that checks a value against a shape and its rules;
- `shape` (shapes declared once, as data, compiled to msgspec Structs) and `outcome` (the
  `Outcome` protocol every source's outcome follows);
- `vocabulary` (the types shapes are declared in, and each one's JSON Schema);
- `report` (issues and reports), `columns` (what the engine reads of a typed value) and
  `patterns` (a declared pattern checked over a column of strings);
- `codec` (a handler's answer as JSON, the record of one call), `memo` (values already met,
  bounded by bytes) and `locate` (an issue's JSONPath as a line and column).

The public names live in `fnkit` and `fnkit.rules`; nothing here imports a source, the running
code or an edge.
"""
