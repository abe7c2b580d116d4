"""The import graph of a package, lazy imports included, and the cycles in it.

Every `import` statement counts, wherever it stands: at the top of a module, inside a
function (a lazy import runs later, but it is an arrow all the same), under `try` or
`if TYPE_CHECKING:`. A cycle is a strongly connected set of modules; the tool prints each
one with a closed path through it, each step with the line that makes it.

    python tools/import_graph.py              # the cycles in fnkit; exit status 1 if any
    python tools/import_graph.py --packages   # the same, with each subpackage as one node
    python tools/import_graph.py --edges fnkit._running.inprocess   # what one module imports, and who imports it
    python tools/import_graph.py --by-name    # plug-ins looked up by their module's name count too

tools/import_contracts.py uses it as an import-linter contract (`acyclic`).
"""

from __future__ import annotations

import argparse
import ast
import itertools
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True, order=True)
class Arrow:
    """One import: `importer` imports `imported` at `line`; `lazy` when inside a function."""

    importer: str
    imported: str
    line: int
    lazy: bool
    type_only: bool
    by_name: bool = False  # a module named in a string (a plug-in looked up with importlib), not an import

    def __str__(self) -> str:
        how = " (by name)" if self.by_name else " (type checking)" if self.type_only else " (lazy)" if self.lazy else ""
        return f"{self.importer} -> {self.imported} (l.{self.line}){how}"


def modules_of(package_dir: Path, package: str) -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    found: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join([package, *parts])] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    return ast.unparse(node.test) in {"TYPE_CHECKING", "typing.TYPE_CHECKING"}


def _imports(tree: ast.Module) -> Iterable[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    """Each import statement with (lazy, type_only)."""

    def visit(node: ast.AST, lazy: bool, type_only: bool) -> Iterable[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, lazy, type_only
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            lazy = True
        if isinstance(node, ast.If) and _is_type_checking(node):
            for statement in node.body:
                yield from visit(statement, lazy, True)
            for statement in node.orelse:
                yield from visit(statement, lazy, type_only)
            return
        for child in ast.iter_child_nodes(node):
            yield from visit(child, lazy, type_only)

    yield from visit(tree, False, False)


def _resolve(known: Mapping[str, Path], name: str) -> str | None:
    """The longest prefix of a dotted name that is a module of the package."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in known:
            return candidate
    return None


def arrows_of(module: str, path: Path, known: Mapping[str, Path], *, by_name: bool = False) -> list[Arrow]:
    """The arrows from one module to the other modules of the package; with `by_name`, also each string that
    is the full name of one of them (what `importlib.import_module` looks up: not an import, but a use)."""
    is_package = path.name == "__init__.py"
    here = module.split(".") if is_package else module.split(".")[:-1]
    found: list[Arrow] = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if by_name:  # (a package's name is left out: it is as often a label, "fnkit.widgets", as a lookup)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            name = node.value
            if name != module and name in known and known[name].name != "__init__.py":
                found.append(Arrow(module, name, node.lineno, True, False, True))
    for node, lazy, type_only in _imports(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                base = ".".join([*anchor, *([base] if base else [])])
            # `from package import name`: the submodule when `name` is one, else the package itself
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        for target in targets:
            resolved = _resolve(known, target)
            if resolved is not None and resolved != module:
                found.append(Arrow(module, resolved, node.lineno, lazy, type_only))
    return found


def build(package: str = "fnkit", root: Path = ROOT, *, by_name: bool = False) -> list[Arrow]:
    """Every arrow between the modules of `package` (found under `root`); `by_name`: modules named in strings too."""
    known = modules_of(root / package.replace(".", "/"), package)
    return sorted(
        {arrow for module, path in known.items() for arrow in arrows_of(module, path, known, by_name=by_name)}
    )


def collapse(name: str, package: str) -> str:
    """A module's node when each subpackage counts as one: fnkit.queue._event -> fnkit.queue."""
    parts = name.split(".")
    depth = len(package.split(".")) + 1
    return ".".join(parts[:depth])


def components(nodes: Iterable[str], edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(nodes):
        if start in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    found.append(sorted(members))
    return sorted(found, key=lambda c: (-len(c), c))


def _closed_path(members: list[str], edges: Mapping[str, Iterable[str]]) -> list[str]:
    """A shortest path from the first member back to itself, inside the component."""
    inside = set(members)
    start = members[0]
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in sorted(edges.get(node, ())):
                if child not in inside:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, node, start]
                if child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    return [start]


@dataclass(frozen=True)
class Cycle:
    """A strongly connected set of modules, a closed path through it, and the arrows of that path."""

    members: list[str]
    path: list[Arrow]


def cycles(arrows: Iterable[Arrow], *, package: str = "fnkit", packages: bool = False) -> list[Cycle]:
    """The cycles among the arrows; with `packages`, each subpackage is one node."""
    node = (lambda name: collapse(name, package)) if packages else (lambda name: name)
    edges: dict[str, set[str]] = {}
    by_pair: dict[tuple[str, str], Arrow] = {}
    nodes: set[str] = set()
    for arrow in arrows:
        a, b = node(arrow.importer), node(arrow.imported)
        nodes |= {a, b}
        if a == b:
            continue
        edges.setdefault(a, set()).add(b)
        by_pair.setdefault((a, b), arrow)
    result = []
    for members in components(nodes, edges):
        steps = _closed_path(members, edges)
        result.append(Cycle(members, [by_pair[pair] for pair in itertools.pairwise(steps)]))
    return result


def describe(found: list[Cycle]) -> str:
    """The cycles as text, one block each."""
    lines = []
    for cycle in found:
        lines.append(f"{len(cycle.members)} modules in one cycle: {', '.join(cycle.members)}")
        lines.append("  for example:")
        lines.extend(f"    {arrow}" for arrow in cycle.path)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """The command line: print the cycles (or one module's arrows); 1 when there is a cycle."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", default="fnkit")
    parser.add_argument("--packages", action="store_true", help="count each subpackage as one node")
    parser.add_argument("--edges", metavar="MODULE", help="list what MODULE imports and what imports it")
    parser.add_argument(
        "--by-name", action="store_true", help="count a module named in a string (a plug-in lookup) as an arrow too"
    )
    args = parser.parse_args(argv)
    arrows = build(args.package, by_name=args.by_name)
    if args.edges:
        for arrow in arrows:
            if args.edges in (arrow.importer, arrow.imported):
                print(arrow)
        return 0
    found = cycles(arrows, package=args.package, packages=args.packages)
    print(describe(found) if found else "no cycle")
    in_cycles = sum(len(c.members) for c in found)
    print(f"{len(arrows)} arrows, {len(found)} cycle(s), {in_cycles} modules in cycles")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
