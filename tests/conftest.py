"""Test settings for the whole suite: hypothesis profiles, and the handler workers stopped at the end."""

import pytest
from hypothesis import settings

# Examples per property test. "suite" is what `python3 kit.py test` runs, on a laptop and in CI
# alike (a test that sets max_examples itself asks for fewer): 100 each, enough for each to
# find what it checks. "long" is the soak: tests/benchmarks/bench_properties.py runs every
# property test with it (`pytest --hypothesis-profile=long` does the same by hand).
# No deadline: a loaded machine makes a slow example, not a failing one.
settings.register_profile("suite", max_examples=100, deadline=None)
settings.register_profile("long", max_examples=2_000, deadline=None)
settings.load_profile("suite")


@pytest.fixture(scope="session", autouse=True)
def _stop_handler_workers():
    """At the end of the run, stop fnkit's worker processes, so that their coverage data is saved in time."""
    yield
    import sys

    if "fnkit.isolation" in sys.modules or "fnkit._isolate" in sys.modules:
        from fnkit import isolation

        isolation.shutdown()
