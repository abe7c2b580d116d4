"""The rules catalogue: every rule fnkit applies, each declared once, beside its implementation.

A rule is one object: its id, source, evidence, severity, summary and the code that
implements it. It is declared where it is implemented, with `rule(...)` used as a
decorator (on a check, a decider, a simulator step) or applied to a declaration (a
shape whose structure states the rule):

    @rule("Q13", "queue", "doc", "md5OfBody is the MD5 hex of the UTF-8 body; ...")
    def check_md5_of_body(event, seen): ...

The catalogue is collected from those declarations: `catalogue()`, `get()`, `ids()` and
`table()` load the modules that declare rules on first use (so `import fnkit` stays
light). Ids `Q…`, `M…`, `A…` are the platform's behaviour beyond the contract spec, each
with its evidence; ids with an `S` (`QS1`, `MS2`, `AS3`) are facts of the contract spec
itself; `G…` are general rules of the kit (input must be JSON, unknown fields, spellings);
`H…` are about invoking a handler. Every `Issue.rule` and every outcome's `rule` is an id of this catalogue.
`markdown()` writes the catalogue as docs/RULES.md (`fnkit rules --format markdown`).
`examples()` is the table that holds one triggering example per rule
(fnkit/data/rule_examples.json): `fnkit rules --examples` prints it, and the tests run
every example.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import pandas as pd


EVIDENCE = ("contract", "doc", "observed", "inferred")
ORIGINS = ("spec", "platform-rules", "kit")
#: what a rule does when it applies: reports issues (of that severity), decides an
#: outcome, refuses a configuration (ValueError), or shapes what a simulator does
SEVERITIES = ("error", "warning", "error or warning", "outcome", "refusal", "behaviour")
SOURCES = ("any", "queue", "mail", "alb")

# Modules that declare rules, loaded when the catalogue is first read.
_DECLARING_MODULES = (
    "fnkit._engine.report",
    "fnkit._engine.findings",
    "fnkit._engine.shape",
    "fnkit._sources",
    "fnkit._running.handler_rules",
    "fnkit.queue._config",
    "fnkit.queue._contents",
    "fnkit.queue._event",
    "fnkit.queue._fifo",
    "fnkit.queue._response",
    "fnkit.queue._outcome",
    "fnkit.queue._sim",
    "fnkit.mail._config",
    "fnkit.mail._event",
    "fnkit.mail._response",
    "fnkit.mail._outcome",
    "fnkit.mail._rule",
    "fnkit.mail._content",
    "fnkit.alb._config",
    "fnkit.alb._event",
    "fnkit.alb._event_shape",
    "fnkit.alb._response",
    "fnkit.alb._outcome",
    "fnkit.alb._http",
    "fnkit.alb._desync",
)
_T = TypeVar("_T")  # what a rule decorates keeps its type (a function keeps its signature)
_ID = re.compile(r"^(?:[GH]|[QMA]S?)\d{1,2}[a-z]?$")


@dataclass(frozen=True, eq=False)
class Rule:
    """One rule: `id`, `source` (queue, mail, alb, any), `summary`, `evidence`, `severity`, and its implementation."""

    id: str
    source: str
    summary: str
    evidence: str
    origin: str = "platform-rules"  # "spec", "platform-rules" or "kit"
    severity: str = "error"
    implementation: Any = field(default=None, repr=False)
    declared_in: str = field(default="", repr=False)  # the module that declares the rule
    declared_at: int = field(default=0, repr=False)  # the line of that module where `rule(...)` is called

    @property
    def inferred(self) -> bool:
        """True when nobody states the rule: it is fnkit's most plausible reading."""
        return self.evidence == "inferred"

    @property
    def implemented_by(self) -> str:
        """`module:name` of the code (or declaration) that implements the rule."""
        impl = self.implementation
        if impl is None:
            return ""
        if callable(impl) and hasattr(impl, "__qualname__"):  # a function or class: where it is defined
            return f"{impl.__module__}:{impl.__qualname__}"
        # a declaration (a shape, a field, a constrained string): where the rule declares it
        name = getattr(impl, "name", None) or getattr(impl, "key", None)
        what = (
            f"{type(impl).__name__} {name}"
            if name
            else f"{type(impl).__name__} {getattr(impl, 'pattern', '')}".rstrip()
        )
        return f"{self.declared_in}:{what}"

    def __call__(self, implementation: _T) -> _T:
        """Attach the implementation (used as a decorator); returns it unchanged."""
        if self.implementation is not None:
            raise ValueError(f"rule {self.id} is already implemented by {self.implemented_by}")
        object.__setattr__(self, "implementation", implementation)
        _BY_IMPLEMENTATION[id(implementation)] = self
        caller = sys._getframe(1)
        if caller.f_globals["__name__"] != self.declared_in and not hasattr(implementation, "__qualname__"):
            # a declaration (a shape) the rule was declared apart from: the catalogue names where it is applied
            object.__setattr__(self, "declared_in", caller.f_globals["__name__"])
            object.__setattr__(self, "declared_at", caller.f_lineno)
        return implementation


_REGISTRY: dict[str, Rule] = {}
# the rule each implementation (a module-level function, class or declaration, alive as long as the process) holds
_BY_IMPLEMENTATION: dict[int, Rule] = {}


def of(implementation: Any) -> Rule:
    """The rule a function (or class, or declaration) implements: how code names another rule, never by its id."""
    found = _BY_IMPLEMENTATION.get(id(implementation))
    if found is None:  # declared by a module not loaded yet (the H rules name code below the catalogue)
        _load()
        found = _BY_IMPLEMENTATION.get(id(implementation))
    if found is None or found.implementation is not implementation:
        raise KeyError(f"{implementation!r} implements no rule of the fnkit catalogue")
    return found


def declared_by(implementation: Any) -> Rule | None:
    """The rule a loaded function (or declaration) implements, a `Rule` itself as it is, None when it implements
    none; unlike `of`, it loads nothing (the engine asks it of the checks it was given, whose modules are loaded)."""
    if isinstance(implementation, Rule):
        return implementation
    found = _BY_IMPLEMENTATION.get(id(implementation))
    return found if found is not None and found.implementation is implementation else None


def id_of(implementation: Any) -> str:
    """The id of the rule a function (or declaration) implements (`of(implementation).id`)."""
    return of(implementation).id


_loaded = False


def rule(
    id: str,  # noqa: A002 - a public keyword (never renamed), the name the catalogue gives the field
    source: str,
    evidence: str,
    summary: str,
    *,
    origin: str = "platform-rules",
    severity: str = "error",
) -> Rule:
    """Declare a rule; use the result as a decorator on its implementation (or call it on a declaration)."""
    if not _ID.match(id):
        raise ValueError(f"rule id {id!r} is not of the form Q8, QS1, Q8a, G0, H2")
    if id in _REGISTRY:
        raise ValueError(f"rule {id} is declared twice (again in a module, first by {_REGISTRY[id].implemented_by})")
    if source not in SOURCES or evidence not in EVIDENCE or origin not in ORIGINS or severity not in SEVERITIES:
        raise ValueError(f"rule {id}: bad source/evidence/origin/severity {(source, evidence, origin, severity)}")
    caller = sys._getframe(1)
    declared = Rule(
        id,
        source,
        summary,
        evidence,
        origin,
        severity,
        declared_in=caller.f_globals["__name__"],
        declared_at=caller.f_lineno,
    )
    _REGISTRY[id] = declared
    return declared


def _load() -> None:
    global _loaded
    if not _loaded:
        for name in _DECLARING_MODULES:
            importlib.import_module(name)
        _loaded = True


def _order(r: Rule) -> tuple[int, int, bool, int, str]:
    m = re.match(r"^([A-Z])(S?)(\d+)([a-z]?)$", r.id)
    letter, spec, number, suffix = m.groups() if m else (r.id, "", "0", "")
    return (SOURCES.index(r.source), "GH".find(letter), spec != "S", int(number), suffix)


def catalogue(source: str | None = None) -> list[Rule]:
    """Every rule, in catalogue order (optionally only one source's, plus the general ones)."""
    _load()
    rules = sorted(_REGISTRY.values(), key=_order)
    if source is None:
        return rules
    return [r for r in rules if r.source in (source, "any")]


def get(rule_id: str) -> Rule:
    """The rule with this id; KeyError naming the id when there is none."""
    found = _REGISTRY.get(rule_id)
    if found is None:
        _load()
        found = _REGISTRY.get(rule_id)
    if found is None:
        raise KeyError(f"no rule {rule_id!r} in the fnkit catalogue")
    return found


@functools.cache
def is_inferred(rule_id: str) -> bool:
    """`get(rule_id).inferred`, remembered: an outcome's rows ask it once per outcome, and a replay makes thousands."""
    return get(rule_id).inferred


def ids() -> frozenset[str]:
    """Every rule id."""
    _load()
    return frozenset(_REGISTRY)


def table(source: str | None = None) -> pd.DataFrame:
    """The catalogue as a pandas DataFrame (id, source, evidence, origin, summary), an `fnkit.Table`: a notebook
    shows its summaries whole and left-aligned."""
    from ._optional import require

    require("pandas", extra="frames", feature="fnkit.rules.table()")
    from ._frame import Table

    return Table(
        [
            {"id": r.id, "source": r.source, "evidence": r.evidence, "origin": r.origin, "summary": r.summary}
            for r in catalogue(source)
        ],
        columns=["id", "source", "evidence", "origin", "summary"],
    )


# (os.path, not pathlib: `import fnkit` loads this module, and pathlib would add a tenth of its import time)
_EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "rule_examples.json")


def examples() -> list[dict[str, Any]]:
    """The rule -> triggering example table (one or more examples per rule id), as data."""
    with open(_EXAMPLES, encoding="utf-8") as f:
        data: dict[str, list[dict[str, Any]]] = json.load(f)
    return data["examples"]


def implementation_of(rule_id: str) -> Callable[..., Any] | Any:
    """The code (or declaration) that implements a rule."""
    return get(rule_id).implementation


# --- the catalogue as a document (docs/RULES.md) ---------------------------------------------

EVIDENCE_MEANING = {
    "contract": "stated in the contract specification fnkit implements; it always wins",
    "doc": "stated in the platform's public documentation",
    "observed": "recorded against the real platform, or reproduced by many users",
    "inferred": "stated by nobody: fnkit's most plausible reading, shown as inferred wherever it decides something",
}
_SOURCE_TITLES = {
    "any": "Every source",
    "queue": "Queue (message queue → function, a batch of records)",
    "mail": "Mail flow (mail-flow rule → function)",
    "alb": "Load balancer (HTTP request → function)",
}
#: the command that writes docs/RULES.md (tests/core/test_rules_doc.py holds the file to it)
REGENERATE = "fnkit rules --format markdown > docs/RULES.md"


def source_file(module: str) -> str:
    """The repository path of a fnkit module ("fnkit.queue._event" -> "fnkit/queue/_event.py")."""
    loaded = sys.modules.get(module) or importlib.import_module(module)
    from pathlib import Path

    path = Path(str(loaded.__file__)).resolve()
    return path.relative_to(Path(__file__).resolve().parent.parent).as_posix()


def where(r: Rule) -> tuple[str, str]:
    """(what implements the rule: a function's qualified name or a declaration, the file that holds it)."""
    module, _, what = r.implemented_by.partition(":")
    return what, source_file(module) if module else ""


def location(rule_id: str) -> tuple[str, int]:
    """(the repository path, the line) of the one function or declaration holding a rule's logic.

    A function (or class) is found where it is defined; a declaration (a shape, a field) where
    `rule(...)` is applied to it. `fnkit rules ID` prints it as file:line.
    """
    r = get(rule_id)
    impl = r.implementation
    code = getattr(impl, "__code__", None) if callable(impl) else None
    if code is not None:
        module = impl.__module__
        line = code.co_firstlineno
    elif isinstance(impl, type):
        import inspect

        module = impl.__module__
        line = inspect.getsourcelines(impl)[1]
    else:
        module, line = r.declared_in, r.declared_at
    return source_file(module), line


@functools.cache
def _parsed() -> tuple[tuple[Any, str, Any], ...]:
    """fnkit's own files as (path, text, syntax tree), read and parsed once per process: the scans of the code
    below (`written_at`, `issued_by`) ask them for every id."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent
    return tuple(
        (file, text, ast.parse(text))
        for file in sorted(root.rglob("*.py"))
        for text in (file.read_text(encoding="utf-8"),)
    )


def written_at() -> dict[str, list[str]]:
    """Where each rule id is written as a string in fnkit's code (`file:function`, or `file` at module level),
    the declarations (`rule("Q8", ...)`) left out: each id should be written in one place at most, its rule's
    function or declaring module, since the rest of the code names a rule by its function or declaration."""
    return {i: list(places) for i, places in _written().items()}


@functools.cache
def _written() -> dict[str, tuple[str, ...]]:
    import ast
    from pathlib import Path

    known = ids()
    root = Path(__file__).resolve().parent
    found: dict[str, set[str]] = {i: set() for i in known}
    for file, _, tree in _parsed():
        declared = {
            id(node.args[0])
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and node.args
            and getattr(node.func, "id", getattr(node.func, "attr", None)) == "rule"
        }
        owner: dict[int, str] = {}
        for node in ast.walk(tree):  # outer functions first: a nested function counts as the one holding it
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for inner in ast.walk(node):
                    owner.setdefault(id(inner), node.name)
        name = file.relative_to(root.parent).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in known and id(node) not in declared:
                function = owner.get(id(node))
                found[node.value].add(f"{name}:{function}" if function else name)
    return {i: tuple(sorted(places)) for i, places in found.items()}


def issued_by(rule_id: str) -> list[str]:
    """Every function that finds problems of a rule (`file:line: function`): the rule's own function, each
    function whose findings name the rule's function or declaration (`problem(..., of=EVENT_SHAPE)`), and each
    function that has the engine place findings as the rule's (`place(found, by=timed_out)`); the engine stamps
    the id on what they return. A rule implemented by a class (a configuration that refuses what the platform
    refuses) is issued by the class; one declared on a shape, a field or a pattern by the engine's walk of it
    (`ENGINE_WALK`, listed last). Each rule should have one issuer: the function that decides it."""
    target = get(rule_id)
    found: list[str] = []
    impl = target.implementation
    if callable(impl) and (getattr(impl, "__code__", None) is not None or isinstance(impl, type)):
        path, line = location(rule_id)
        found.append(f"{path}:{line}: {impl.__qualname__}")
    for named, function, where in _namings():
        own = impl is not None and function is impl  # listed first already
        if named is not None and (named is target or named is impl) and not own and where not in found:
            found.append(where)
    if impl is not None and not callable(impl):
        found.append(ENGINE_WALK)
    return found


@functools.cache
def _namings() -> tuple[tuple[Any, Any, str], ...]:
    """Every place in fnkit's code where a function names the rule its findings belong to, in file and walk order:
    (what it names: a rule's function or declaration, the function as its module holds it, `file:line: name`).
    A finding made with `of=X` names X; `place(found, by=X)` names X unless `found` is what X returned or what
    the function was given (`_relayed`). Found in one walk of the code, which `issued_by` reads for every id."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent
    namings: list[tuple[Any, Any, str]] = []
    for file, text, tree in _parsed():
        if "of=" not in text and "place(" not in text:
            continue
        module: Any = None
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if not isinstance(node, ast.Call):
                    continue
                made_by = getattr(node.func, "id", None)
                if made_by in _FINDING_MAKERS:
                    named = [k.value for k in node.keywords if k.arg == "of"]
                elif made_by == "place":  # (the engine's `place(found, by)`: the rule `by` implements)
                    named = [k.value for k in node.keywords if k.arg == "by"] or node.args[1:2]
                else:
                    continue
                if not named:
                    continue
                if module is None:
                    name = ".".join(file.relative_to(root.parent).with_suffix("").parts)
                    module = sys.modules.get(name) or importlib.import_module(name)
                value = _resolve(named[0], module)
                if made_by == "place" and node.args and _relayed(node.args[0], function, value, module):
                    continue  # what the rule's own function found, placed by its caller: the caller finds nothing
                where = f"{source_file(module.__name__)}:{function.lineno}: {function.name}"
                namings.append((value, getattr(module, function.name, None), where))
    return tuple(namings)


#: how `issued_by` names the engine's walk of a declaration (a shape, a field, a pattern) that implements a rule
ENGINE_WALK = "the engine, checking the declaration"


_FINDING_MAKERS = ("problem", "caution", "Finding")  # what a rule's finding is made with (fnkit._engine.findings)


def _relayed(found: Any, function: Any, by: Any, module: Any) -> bool:
    """True when `place(found, by=...)` in `function` places what `by` itself returned, or what `function` was
    given: `found` (or its one item) is a call of `by`, a name `function` binds to calls of it only
    (`order = group_order(...)`; `place(order, by=group_order)`), or one of `function`'s parameters."""
    import ast

    if isinstance(found, ast.Tuple | ast.List) and len(found.elts) == 1:
        found = found.elts[0]
    if isinstance(found, ast.Name):
        if found.id in {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}:
            return True
        bound = [  # (`found = by(...)`, or `found, flag = by(...)`: a part of what it returned)
            n.value
            for n in ast.walk(function)
            if isinstance(n, ast.Assign)
            and any(
                isinstance(t, ast.Name) and t.id == found.id
                for target in n.targets
                for t in (target.elts if isinstance(target, ast.Tuple) else (target,))
            )
        ]
        return bool(bound) and all(_relayed(b, function, by, module) for b in bound)
    return isinstance(found, ast.Call) and by is not None and _resolve(found.func, module) is by


def _resolve(node: Any, module: Any) -> Any:
    """The object a name or dotted name in a module's code stands for (None when it is not that simple)."""
    import ast

    if isinstance(node, ast.Name):
        return getattr(module, node.id, None)
    if isinstance(node, ast.Attribute):
        owner = _resolve(node.value, module)
        return getattr(owner, node.attr, None) if owner is not None else None
    return None


def code(rule_id: str) -> str:
    """The source text of the function (or the declaration's line) that holds a rule's logic."""
    import inspect

    r = get(rule_id)
    impl = r.implementation
    if callable(impl) and (getattr(impl, "__code__", None) is not None or isinstance(impl, type)):
        return inspect.getsource(impl)
    import ast

    _, line = location(rule_id)
    text = inspect.getsource(sys.modules[r.declared_in])
    for node in ast.walk(ast.parse(text)):  # the statement that applies the rule to its declaration
        if not isinstance(node, ast.stmt) or not node.lineno <= line <= (node.end_lineno or node.lineno):
            continue
        if not isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) or node.lineno == line:
            return (ast.get_source_segment(text, node, padded=True) or "") + "\n"
    return ""


def _cell(text: str) -> str:
    """Text for a Markdown table cell: one line, pipes escaped, and <...> outside `code` shown rather than read as a
    tag (inside a code span Markdown shows it as it is)."""
    parts = " ".join(text.split()).split("`")
    for i in range(0, len(parts), 2):  # the even parts are outside code spans
        parts[i] = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts).replace("|", "\\|")


def markdown() -> str:
    """The catalogue as a Markdown document: per source, each rule's id, sentence, evidence and implementation."""
    rules = catalogue()
    lines = [
        "# The rules fnkit applies",
        "",
        "Generated from fnkit's rules catalogue (`fnkit.rules.catalogue()`); do not edit by hand. Each rule is",
        "declared once, beside the code that implements it, and this file is written from those declarations:",
        "",
        f"    {REGENERATE}",
        "",
        "(tests/core/test_rules_doc.py fails when this file falls behind the catalogue).",
        "",
        "Ids: `QS…`, `MS…`, `AS…` are facts of the contract specification itself; `Q…`, `M…`, `A…` are the",
        "platform's behaviour beyond it, each with its evidence; `G…` are general rules of the kit (input must be",
        "JSON, unknown fields, spellings, detection) and `H…` rules of invoking a handler. Every issue and every",
        "outcome fnkit reports names one of these ids; `fnkit rules --examples` prints an input that triggers each.",
        "",
        "Evidence:",
        "",
        *(f"- **{name}**: {meaning}." for name, meaning in EVIDENCE_MEANING.items()),
        "",
        f"{len(rules)} rules: "
        + ", ".join(
            f"{sum(r.evidence == e for r in rules)} {e}" for e in EVIDENCE if any(r.evidence == e for r in rules)
        )
        + ".",
    ]
    for source in SOURCES:
        chosen = [r for r in rules if r.source == source]
        if not chosen:
            continue
        lines += ["", f"## {_SOURCE_TITLES[source]}", "", "| id | rule | evidence | severity | implemented by |"]
        lines.append("| --- | --- | --- | --- | --- |")
        for r in chosen:
            what, file = where(r)
            lines.append(f"| {r.id} | {_cell(r.summary)} | {r.evidence} | {r.severity} | `{_cell(what)}` in `{file}` |")
    return "\n".join(lines) + "\n"
