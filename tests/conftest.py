"""Test settings for the whole suite: hypothesis profiles, and the handler workers stopped at the end."""

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=300, deadline=None)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(scope="session", autouse=True)
def _stop_handler_workers():
    """At the end of the run, stop fnkit's worker processes, so that their coverage data is saved in time."""
    yield
    import sys

    if "fnkit.isolation" in sys.modules or "fnkit._isolate" in sys.modules:
        from fnkit import isolation

        isolation.shutdown()
