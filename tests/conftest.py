"""Shared test settings: hypothesis profiles and the path to the shared/ folder."""

import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=300, deadline=None)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def shared_dir() -> Path:
    """The project's shared/ folder, which sits beside the repository."""
    return REPO_ROOT.parent / "shared"


@pytest.fixture(scope="session", autouse=True)
def _stop_handler_workers():
    """At the end of the run, stop fnkit's worker processes, so that their coverage data is saved in time."""
    yield
    import sys

    if "fnkit.isolation" in sys.modules or "fnkit._isolate" in sys.modules:
        from fnkit import isolation

        isolation.shutdown()
