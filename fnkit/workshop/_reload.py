"""`workshop.reload()`: an edited judge, its cases or a helper take effect in a running kernel."""

from __future__ import annotations

import importlib
import sys

from . import _registry

HELPERS = "fnkit.workshop._helpers"


def reload() -> str:
    """Load the exercises' modules again (yours too: every module that registered one), then the checks use them.

    For the instructor editing a judge with a kernel running: the next `workshop.check(...)` says the new
    sentences, without restarting the kernel. When an edited module does not load, the exercises stay as
    they were and the error says where.
    """
    modules = [HELPERS, *dict.fromkeys(e.judge.__module__ for e in _registry._EXERCISES.values())]
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
    # a module that no longer registers an exercise keeps none; fnkit.workshop's names follow the new helpers
    package = sys.modules[__package__]
    helpers = sys.modules[HELPERS]
    for name in getattr(package, "__all__", []):
        if hasattr(helpers, name):
            setattr(package, name, getattr(helpers, name))
    return (
        f"reloaded {len(modules)} module(s): {len(_registry._EXERCISES)} exercises ({', '.join(_registry._EXERCISES)})"
    )
