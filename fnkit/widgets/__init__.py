"""Widgets for JupyterLab (ipywidgets 8): build events, run handlers, explore responses.

- `EventBuilder(source, **fields)`: form fields, live JSON preview (editable), live validation.
- `HandlerRunner(builder=..., handler=...)`: run your handler or an example on the built event;
  outcome, reason, deciding rule and a table. The handler runs in a worker process: the
  button starts it without blocking the kernel, shows "running… 3.2 s" and a Stop button
  that kills it (`start()`, `stop()`, `wait()`; `run()` waits, and Jupyter's interrupt stops it).
- `ResponseExplorer(event, source=...)`: edit a response and see the platform's decision live;
  the spec's success and failure forms one click away.

Each is driven from Python as well as by hand: `set(...)`, `set_text(...)`, `run()`,
`press(...)`, then read `event`, `report`, `outcome`, `summary`, `message`, `issues`.
Display one by leaving it as the last expression of a cell. Key controls carry CSS
classes (`fnkit-run`, `fnkit-stop`, `fnkit-running`, `fnkit-clock`, `fnkit-outcome`,
`fnkit-preview`, `fnkit-field-<name>`, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._adapter import adapter_for
from ._builder import EventBuilder
from ._explorer import ResponseExplorer
from ._runner import HandlerRunner

__all__ = ["EventBuilder", "HandlerRunner", "ResponseExplorer", "examples", "fields", "forms"]


def examples(source: str) -> dict[str, Callable[[Any, Any], Any]]:
    """The example handlers of a source, by name (the runner's dropdown)."""
    return dict(adapter_for(source).examples)


def fields(source: str) -> list[str]:
    """The field names an EventBuilder of this source accepts in `set(...)`."""
    return [f.name for f in adapter_for(source).all_fields]


def forms(source: str, event: dict[str, Any] | None = None) -> dict[str, str]:
    """The spec's response forms of a source (label -> response text) for an event."""
    adapter = adapter_for(source)
    if event is None:
        event = adapter.build({f.name: f.default for f in adapter.all_fields})
    return {f.label: f.text(event) for f in adapter.forms}
