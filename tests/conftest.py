"""Test settings for the whole suite: hypothesis profiles, the order of work on parallel workers, and the
handler workers stopped at the end."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# --- bytecode, kept in the venv when the machine forbids __pycache__ (PYTHONDONTWRITEBYTECODE) -------------
# Without it every process of the suite compiles all it imports again: each worker, each notebook's kernel,
# each `python -m fnkit` or Dask worker a test starts (pandas 1.2 s instead of 0.35 s, Dask 2.2 s instead of
# 0.7 s), and pytest rewrites every test module again (collecting: 15 s of CPU instead of 5 s per worker).


def keep_bytecode_in_the_venv() -> None:
    """With bytecode forbidden, keep it in <venv>/pycache (PYTHONPYCACHEPREFIX: nothing is written beside the
    sources), for this process and, through the environment, every process it starts (xdist's workers too).
    Python checks each file's mtime and size before using its bytecode, as in __pycache__. A prefix of the
    user's own, or a Python outside a venv, is left alone."""
    if not sys.dont_write_bytecode or sys.prefix == sys.base_prefix or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    pycache = Path(sys.prefix, "pycache")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix = str(pycache)
    sys.dont_write_bytecode = False
    # the modules that tests write into temporary folders are new in every run: their bytecode goes (once per
    # run: the workers inherit the prefix and pass by), not a venv's or a checkout's that lives there
    mirror = {p: pycache.joinpath(*Path(os.path.abspath(p)).parts[1:]) for p in (sys.prefix, tempfile.gettempdir())}
    kept = (mirror[sys.prefix], pycache.joinpath(*Path(__file__).resolve().parent.parent.parts[1:]))
    temporary = mirror[tempfile.gettempdir()]
    for made in sorted(temporary.iterdir()) if temporary.is_dir() else ():
        if not any(made == keep or made in keep.parents for keep in kept):
            shutil.rmtree(made, ignore_errors=True)


keep_bytecode_in_the_venv()

# Examples per property test. "suite" is what `python3 kit.py test` runs, on a laptop and in CI
# alike (a test that sets max_examples itself asks for fewer): 100 each, enough for each to
# find what it checks. "long" is the soak: tests/benchmarks/bench_properties.py runs every
# property test with it (`pytest --hypothesis-profile=long` does the same by hand).
# No deadline: a loaded machine makes a slow example, not a failing one.
settings.register_profile("suite", max_examples=100, deadline=None)
settings.register_profile("long", max_examples=2_000, deadline=None)
settings.load_profile("suite")

# --- parallel workers (pytest-xdist; `python3 kit.py test` runs `-n auto --dist loadfile`) ---------
# A unit of work is a file: a notebook's cells run in order in one kernel, a module's fixtures are
# made once. The browser tests are one unit (one JupyterLab and one Chromium between them).
# Units start longest first, so that no long one is left for the end while the other workers
# idle: these lead (seconds of each unit's tests, run one directory at a time on the 2-core machine at
# load 2, bytecode kept; every other unit takes under 6 s); the others follow in collection order.
# A stale figure here costs balance only, never a result.
LONGEST_FIRST = {
    "tests/browser": 57,
    "tests/core/test_isolation.py": 15,
    "tests/core/test_patterns.py": 15,
    "tests/test_replay_engines.py": 14,
    "tests/test_replay_chunks.py": 13,
    "tests/test_fuzz.py": 10,
    "tests/test_load.py": 8,
    "tests/workshop/test_checks.py": 8,
    "notebooks/04_analysis.ipynb": 7,
    "tests/core/test_isolation_async.py": 6,
    "notebooks/02_mail_flow.ipynb": 6,
    "tests/alb/test_serve.py": 6,
    "tests/workshop/test_authoring.py": 6,
    "tests/core/test_schema.py": 6,
}


def pytest_configure(config: pytest.Config) -> None:
    """nbval's items (the notebooks' cells) get the `workshop` marker and failures that say where (notebook_items)."""
    config.pluginmanager.import_plugin("tests.notebook_items")


def work_unit(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or tests/browser for every browser test."""
    path = nodeid.split("::", 1)[0]
    return "tests/browser" if path.startswith("tests/browser/") else path


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile` with the units above, in the order the workers collected them."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class LoadUnitScheduling(LoadScopeScheduling):  # type: ignore[misc]  # xdist is untyped
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False  # the workers' order (longest first, below), not "most tests first"
    return LoadUnitScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a parallel worker, the longest units first (a stable sort: a file's tests keep their order)."""
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: -LONGEST_FIRST.get(work_unit(item.nodeid), 0))


@pytest.fixture(scope="session", autouse=True)
def _stop_handler_workers():
    """At the end of the run, stop fnkit's worker processes, so that their coverage data is saved in time."""
    yield
    import sys

    if "fnkit.isolation" in sys.modules or "fnkit._running.pool" in sys.modules:
        from fnkit import isolation

        isolation.shutdown()
