"""A shape with one field relaxed, so that a caller can check that field its own way.

The generated fast check of `fnkit._shape` spends about 0.15 µs per list item in
Python (a type test, a key-set test, a lookup, another type test). A mail event is mostly
its list of recipients, so the generated check alone costs about as much as
`json.loads` of the event. `relaxed(EVENT_SHAPE, ("envelope", "recipients"))` keeps the
generated check for everything else (still derived from the one declaration) and lets
the event's fast lane check the recipients in a few C-level passes.
"""

from __future__ import annotations

from dataclasses import replace

from .._shape import ANY, Shape


def relaxed(shape: Shape, path: tuple[str, ...]) -> tuple[Shape, object]:
    """A copy of `shape` whose field at `path` accepts any value, and that field's declared type."""
    head, rest = path[0], path[1:]
    fields = list(shape.fields)
    i = next(i for i, f in enumerate(fields) if f.key == head)
    if rest:
        inner, found = relaxed(fields[i].type, rest)
        fields[i] = replace(fields[i], type=inner)
    else:
        found = fields[i].type
        fields[i] = replace(fields[i], type=ANY)
    return replace(shape, fields=fields, _fast=None, _cls=None), found
