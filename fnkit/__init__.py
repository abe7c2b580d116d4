"""fnkit: type, validate and simulate function event contracts.

Three event sources, one set of verbs: `fnkit.queue`, `fnkit.mail` and `fnkit.alb` each
offer build_event, validate_event, parse_event, validate_response, outcome and run.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import rules
from ._engine.codec import HandlerError, Invocation, Raw
from ._engine.report import DIALECTS, ContractError, Dialect, Issue, Report
from ._running.inprocess import Context, Interrupted
from .isolation import invoke

if TYPE_CHECKING:  # what the lazy names below are, for type checkers (at run time they load on first use)
    from . import alb, corpus, isolation, mail, queue, types  # noqa: F401 - lazy modules, typed (not testing: a layer above)
    from ._engine.outcome import Outcome, Tabular
    from ._replay.columns import columns
    from ._replay.run import replay, replay_partitions
    from ._settings.config import Config, Setting
    from ._sources import correlation_ids, detect_source, validate, validate_response
    from ._table import tabulate
    from .isolation import invoke_many

__version__ = "0.1.0"

_SOURCES = ("queue", "mail", "alb")
_LAZY = {
    "tabulate": ("._table", "tabulate"),
    "check": ("._check", "check"),
    "columns": ("._replay.columns", "columns"),
    "replay": ("._replay.run", "replay"),
    "replay_partitions": ("._replay.run", "replay_partitions"),
    "detect_source": ("._sources", "detect_source"),
    "validate": ("._sources", "validate"),
    "validate_response": ("._sources", "validate_response"),
    "correlation_ids": ("._sources", "correlation_ids"),
    "corpus": (".corpus", None),
    "testing": (".testing", None),
    "types": (".types", None),
    "workshop": (".workshop", None),
    "widgets": (".widgets", None),
    "isolation": (".isolation", None),
    "invoke_many": (".isolation", "invoke_many"),
    "Outcome": ("._engine.outcome", "Outcome"),
    "Tabular": ("._engine.outcome", "Tabular"),
    "Config": ("._settings.config", "Config"),
    "Setting": ("._settings.config", "Setting"),
}

__all__ = [
    "DIALECTS",
    "Config",
    "Context",
    "ContractError",
    "Dialect",
    "HandlerError",
    "Interrupted",
    "Invocation",
    "Issue",
    "Outcome",
    "Raw",
    "Report",
    "Setting",
    "Tabular",
    "alb",
    "check",
    "columns",
    "correlation_ids",
    "detect_source",
    "invoke",
    "invoke_many",
    "isolation",
    "mail",
    "queue",
    "replay",
    "replay_partitions",
    "rules",
    "tabulate",
    "types",
    "validate",
    "validate_response",
]


def __getattr__(name: str) -> Any:
    # submodules and edge helpers load on first use, so `import fnkit` stays light
    if name in _SOURCES:
        return importlib.import_module(f".{name}", __name__)
    if name in _LAZY:
        module_name, attr = _LAZY[name]
        module = importlib.import_module(module_name, __name__)
        value = module if attr is None else getattr(module, attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fnkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
