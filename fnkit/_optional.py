"""Optional dependencies: import one, or fail with the one-line pip command that installs it.

`pip install fnkit` brings the core only (msgspec and cloudpickle): validation, outcomes,
builders, simulators and `fnkit.testing`'s assertions. The rest comes with an extra, and
every edge that needs one asks for it here first, so a missing package is a
`MissingDependency` (a `ModuleNotFoundError`) whose message ends with the command:

    fnkit.tabulate needs pandas: pip install 'fnkit[frames]'
"""

from __future__ import annotations

import importlib
from types import ModuleType

# The extras of pyproject.toml that an edge of fnkit names, and what each brings.
EXTRAS = {
    "frames": "pandas: tabulate, replay, the outcomes' to_frame, rules.table, the servers' logs",
    "testing": "pytest and hypothesis: the pytest plugin's fixtures and fnkit.testing.strategies",
    "widgets": "ipywidgets: fnkit.widgets in JupyterLab",
    "serve": "uvicorn and aiosmtpd: fnkit.alb.serve and fnkit.mail.serve (fnkit serve-alb, serve-mail)",
    "dask": "dask and distributed: replay(engine='dask')",
    "lab": "the notebooks' environment: JupyterLab, widgets, servers, frames, progress bars, the workshop",
}


class MissingDependency(ModuleNotFoundError):
    """An optional package is not installed: the message names the feature and the pip command that installs it."""

    def __init__(self, package: str, *, extra: str, feature: str) -> None:
        self.extra = extra
        self.feature = feature
        super().__init__(f"{feature} needs {package}: {install_command(extra)}", name=package)


def install_command(extra: str) -> str:
    """The pip command that installs fnkit with an extra: `pip install 'fnkit[frames]'`."""
    if extra not in EXTRAS:
        raise ValueError(f"fnkit has no extra {extra!r}; its extras are {', '.join(EXTRAS)}")
    return f"pip install 'fnkit[{extra}]'"


def require(module: str, *, extra: str, feature: str) -> ModuleType:
    """Import `module` (e.g. "pandas"), or raise `MissingDependency` naming `feature` and the `extra` that brings it.

    The module is imported once (later calls find it in `sys.modules`), so an edge may call
    this and then `import pandas as pd` as usual, keeping the module's types.
    """
    install_command(extra)  # an unknown extra is fnkit's own mistake: say so even when the module is there
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # it, or a package it needs, is missing: the cause stays chained for a closer look
        raise MissingDependency(module.partition(".")[0], extra=extra, feature=feature) from exc


__all__ = ["EXTRAS", "MissingDependency", "install_command", "require"]
