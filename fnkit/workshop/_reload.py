"""`workshop.reload()`: an edited judge or its cases take effect in a running kernel."""

from __future__ import annotations

import importlib
import sys

from . import _registry


def reload() -> str:
    """Load the exercises' modules again (yours too: every module that registered one); the checks then use them.

    For the instructor editing a judge with a kernel running: the next `workshop.check(...)` says the new
    sentences, without restarting the kernel. When an edited module does not load, the exercises stay as
    they were and the error says where. The helpers (`fnkit.workshop._helpers`) are not reloaded: the
    notebooks hold their classes (`except BadOrder:`), which a new copy would no longer match; after
    editing one, restart the kernel.
    """
    modules = list(dict.fromkeys(e.judge.__module__ for e in _registry._EXERCISES.values()))
    before = dict(_registry._EXERCISES)
    _registry._EXERCISES.clear()
    try:
        for name in modules:
            if name in sys.modules:
                importlib.reload(sys.modules[name])
    except BaseException:
        _registry._EXERCISES.clear()
        _registry._EXERCISES.update(before)
        raise
    ids = ", ".join(_registry._EXERCISES)
    return f"reloaded {len(modules)} module(s): {len(_registry._EXERCISES)} exercises ({ids})"
