"""Optional dependencies (fnkit/_optional.py): a missing one is a one-line message with the pip command."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from fnkit._optional import EXTRAS, MissingDependency, install_command, require

ROOT = Path(__file__).resolve().parents[2]


def test_an_installed_module_is_returned():
    assert require("json", extra="frames", feature="x") is sys.modules["json"]


def test_a_missing_module_names_the_feature_and_the_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # what an environment without pandas does on import
    with pytest.raises(MissingDependency) as caught:
        require("pandas", extra="frames", feature="fnkit.tabulate")
    assert str(caught.value) == "fnkit.tabulate needs pandas: pip install 'fnkit[frames]'"
    assert issubclass(MissingDependency, ModuleNotFoundError) and caught.value.name == "pandas"
    assert caught.value.extra == "frames"
    assert isinstance(caught.value.__cause__, ImportError)  # the original stays chained


def test_a_missing_submodule_names_its_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.dataframe", None)  # as if never installed, even after a test imported it
    with pytest.raises(MissingDependency, match=r"^replay\(engine='dask'\) needs dask: pip install 'fnkit\[dask\]'$"):
        require("dask.dataframe", extra="dask", feature="replay(engine='dask')")


def test_an_extra_fnkit_does_not_define_is_fnkits_own_mistake():
    with pytest.raises(ValueError, match="fnkit has no extra 'frame'"):
        require("json", extra="frame", feature="x")
    assert install_command("serve") == "pip install 'fnkit[serve]'"


def test_the_extras_named_are_those_of_pyproject():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert set(EXTRAS) == set(extras) - {"dev", "bench"}
