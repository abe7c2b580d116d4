"""How tests/conftest.py shares the suite among parallel workers: units of work, longest first."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import LONGEST_FIRST, work_unit

ROOT = Path(__file__).resolve().parent.parent


def test_a_unit_is_a_file_and_the_browser_tests_are_one():
    assert work_unit("tests/test_cli.py::test_version") == "tests/test_cli.py"
    assert work_unit("tests/core/test_shape.py::TestX::test_y[a::b]") == "tests/core/test_shape.py"
    assert work_unit("notebooks/02_mail_flow.ipynb::Cell 9") == "notebooks/02_mail_flow.ipynb"
    assert work_unit("tests/browser/test_lab.py::test_a") == work_unit("tests/browser/test_learner_path.py::test_b")


def test_every_unit_said_to_be_long_exists():
    # a renamed or removed file would silently lose its place at the front
    stale = [unit for unit in LONGEST_FIRST if not (ROOT / unit).exists()]
    assert stale == []
