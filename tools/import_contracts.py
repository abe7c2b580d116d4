"""An import-linter contract for what a module loads when it is imported, lazy imports aside.

fnkit's house style imports pandas inside the functions that return a DataFrame, so that
`import fnkit` stays light. import-linter's own contracts see every import, wherever it
stands, and cannot tell that lazy import from one at the top of a module. This contract
can: it follows only the imports that run when a module is imported (module body, class
bodies, module-level `if`/`try`/`with`; not function bodies, not `if TYPE_CHECKING:`),
plus the import of each parent package that Python runs first, and fails when one of the
source modules reaches a forbidden module that way.

    [tool.importlinter]
    contract_types = ["import_time_forbidden: tools.import_contracts.ImportTimeForbiddenContract"]

`AcyclicContract` (type `acyclic`) fails on any import cycle, lazy imports included
(tools/import_graph.py finds them).
"""

from __future__ import annotations

import ast
import importlib.util
from collections import deque
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any, cast

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields, output
from importlinter.domain.imports import Module

_TYPE_CHECKING_NAMES = {"TYPE_CHECKING", "typing.TYPE_CHECKING"}


def _is_type_checking_guard(node: ast.If) -> bool:
    return ast.unparse(node.test) in _TYPE_CHECKING_NAMES


def import_time_lines(source: str) -> set[int]:
    """The lines of the import statements that run when the module is imported."""
    lines: set[int] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue  # runs when called, not when imported
            elif isinstance(node, ast.If) and _is_type_checking_guard(node):
                visit(node.orelse)
            else:
                for name in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(node, name, None)
                    if isinstance(inner, list):
                        visit([n for n in inner if isinstance(n, ast.stmt)])
                        for handler in inner:
                            if isinstance(handler, ast.ExceptHandler):
                                visit(handler.body)
                if isinstance(node, ast.Match):
                    for case in node.cases:
                        visit(case.body)

    visit(ast.parse(source).body)
    return lines


@cache
def _import_time_lines_of(module: str) -> frozenset[int]:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return frozenset()
    return frozenset(import_time_lines(Path(spec.origin).read_text(encoding="utf-8")))


def _names(field_value: object) -> set[str]:
    """The module names of a parsed `SetField(ModuleField())` option (import-linter sets the parsed value on
    the contract where the class declares the field, so its type is the field's)."""
    return {module.name for module in cast("Iterable[Module] | None", field_value) or ()}


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts))]


class ImportTimeForbiddenContract(Contract):
    """The source modules, when imported, load none of the forbidden modules.

    Options:
        - source_modules: the modules checked (each with its submodules).
        - forbidden_modules: what they must not load (external packages need
          `include_external_packages = true`).
        - exempt_modules: modules that are not checked as sources, each because it is the edge
          that holds a forbidden import; they are still followed, so importing one at import
          time from a source module breaks the contract.
    """

    type_name = "import_time_forbidden"

    source_modules = fields.SetField(subfield=fields.ModuleField())
    forbidden_modules = fields.SetField(subfield=fields.ModuleField())
    exempt_modules = fields.SetField(subfield=fields.ModuleField(), required=False)

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        """Walk the import-time edges from each source module; report each chain to a forbidden one."""
        forbidden = _names(self.forbidden_modules)
        exempt = _names(self.exempt_modules)
        sources: set[str] = set()
        for name in _names(self.source_modules):
            sources |= {name} | graph.find_descendants(name)
        sources -= exempt

        def import_time_edges(importer: str) -> list[tuple[str, int | None]]:
            lines = _import_time_lines_of(importer)
            edges: list[tuple[str, int | None]] = [(parent, None) for parent in _parents(importer)]
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                for detail in graph.get_import_details(importer=importer, imported=imported):
                    if detail["line_number"] in lines:
                        edges.append((imported, detail["line_number"]))
                        break
            return edges

        chains: list[list[dict[str, Any]]] = []
        for source in sorted(sources):
            output.verbose_print(verbose, f"Following the import-time imports of {source}...")
            came_from: dict[str, tuple[str, int | None] | None] = {source: None}
            queue = deque([source])
            while queue:
                module = queue.popleft()
                if module in forbidden:
                    chains.append(self._chain(came_from, module))
                    continue
                if module not in graph.modules:
                    continue
                for imported, line in import_time_edges(module):
                    if imported not in came_from:
                        came_from[imported] = (module, line)
                        queue.append(imported)
        return ContractCheck(kept=not chains, warnings=[], metadata={"chains": chains})

    @staticmethod
    def _chain(came_from: dict[str, tuple[str, int | None] | None], end: str) -> list[dict[str, Any]]:
        links: list[dict[str, Any]] = []
        module = end
        while (step := came_from[module]) is not None:
            importer, line = step
            links.append({"importer": importer, "imported": module, "line": line})
            module = importer
        return links[::-1]

    def render_broken_contract(self, check: ContractCheck) -> None:
        """Print each chain, one import per line, with the line that makes it."""
        for chain in check.metadata["chains"]:
            output.print_error(f"{chain[0]['importer']} loads {chain[-1]['imported']} when imported:", bold=True)
            output.new_line()
            for link in chain:
                where = f" (l.{link['line']})" if link["line"] is not None else " (its parent package)"
                output.indent_cursor()
                output.print_error(f"{link['importer']} -> {link['imported']}{where}", bold=False)
            output.new_line()


class AcyclicContract(Contract):
    """No import cycle among the modules of a package, counting every import wherever it stands.

    A lazy import (inside a function) closes a cycle as surely as one at the top: it only
    hides it until the function runs. The graph comes from tools/import_graph.py, which
    reads every import statement with `ast`; each cycle is shown with a closed path through
    it, one import (and its line) per step.

    Options:
        - package: the package checked (its modules, each one node).
        - packages: "true" to count each subpackage as one node as well (a subpackage whose
          modules import another's, and back, is a cycle even when no module-level one is).
    """

    type_name = "acyclic"

    package = fields.StringField()
    packages = fields.BooleanField(default=False)

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        """Build the graph with every import, find its strongly connected sets of modules."""
        from tools import import_graph

        package = str(self.package)
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ValueError(f"{package} is not an importable package")
        root = Path(next(iter(spec.submodule_search_locations))).parents[len(package.split(".")) - 1]
        arrows = import_graph.build(package, root)
        found = import_graph.cycles(arrows, package=package)
        if cast(bool, self.packages):
            found += import_graph.cycles(arrows, package=package, packages=True)
        output.verbose_print(verbose, f"{len(arrows)} imports among the modules of {package}, {len(found)} cycle(s)")
        return ContractCheck(kept=not found, warnings=[], metadata={"text": import_graph.describe(found)})

    def render_broken_contract(self, check: ContractCheck) -> None:
        """Each cycle: its modules, and one closed path through it."""
        for line in check.metadata["text"].splitlines():
            output.print_error(line, bold=not line.startswith(" "))
        output.new_line()
