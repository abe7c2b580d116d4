"""The import contract that keeps `import fnkit` light (tools/import_contracts.py).

It must see an import at the top of a module, in a class body or a module-level `try`, and
through the parent package Python imports first; and it must let an import inside a
function (the house style for pandas) or under `if TYPE_CHECKING:` pass.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.import_contracts import ImportTimeForbiddenContract, import_time_lines  # noqa: E402


def test_only_the_imports_that_run_at_import_time_count() -> None:
    source = textwrap.dedent(
        """
        import os
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            import pandas
        try:
            import yaml
        except ImportError:
            import json

        class Box:
            import csv

        def later():
            import pandas as pd

        async def later_too():
            import numpy
        """
    )
    lines = import_time_lines(source)
    counted = {source.splitlines()[n - 1].strip() for n in lines}
    assert counted == {"import os", "from typing import TYPE_CHECKING", "import yaml", "import json", "import csv"}


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package `shop` whose `heavy` module stands for pandas."""
    root = tmp_path / "shop"
    (root / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "heavy.py": "",
        "lazy.py": "def table():\n    from . import heavy\n    return heavy\n",
        "eager.py": "from . import heavy\n",
        "light.py": "from . import lazy\n",
        "sub/__init__.py": "from .. import eager\n",
        "sub/leaf.py": "",
    }
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "shop" or m.startswith("shop.")]:
        monkeypatch.delitem(sys.modules, name)
    return root


def _broken_sources(exempt: list[str]) -> dict[str, list[str]]:
    contract = ImportTimeForbiddenContract(
        name="shop stays light",
        session_options={"root_packages": ["shop"]},
        contract_options={"source_modules": ["shop"], "forbidden_modules": ["shop.heavy"], "exempt_modules": exempt},
    )
    graph = grimp.build_graph("shop", cache_dir=None)
    check = contract.check(graph, verbose=False)
    return {chain[0]["importer"]: [link["imported"] for link in chain] for chain in check.metadata["chains"]}


def test_a_lazy_import_passes_and_an_eager_one_is_caught_with_its_chain(package: Path) -> None:
    broken = _broken_sources(exempt=["shop.heavy"])
    assert "shop.lazy" not in broken and "shop.light" not in broken
    assert broken["shop.eager"] == ["shop.heavy"]
    # importing shop.sub.leaf runs shop/sub/__init__.py first, which imports shop.eager
    assert broken["shop.sub.leaf"] == ["shop.sub", "shop.eager", "shop.heavy"]


def test_nothing_is_broken_once_the_eager_import_moves_into_a_function(package: Path) -> None:
    (package / "eager.py").write_text("def later():\n    from . import heavy\n", encoding="utf-8")
    assert _broken_sources(exempt=["shop.heavy"]) == {}
