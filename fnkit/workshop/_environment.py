"""The environment check of notebook 00: this kernel against pyproject.toml and environment.yml.

Requirement strings are read with `packaging.requirements` and environment.yml with
PyYAML, the parsers pip and conda themselves trust.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIX_ALL = (
    "from the repository's folder run: python3 kit.py lab   "
    "(it installs everything into .venv and opens JupyterLab with it)"
)


@dataclass
class EnvCheck:
    """One line of the environment check."""

    what: str
    needed: str
    found: str
    ok: bool
    fix: str = ""
    severity: str = "error"  # "error": the notebooks need it; "warning": only the tests do


@dataclass
class EnvironmentReport:
    """Every check of `check_environment`, and what to fix first."""

    checks: list[EnvCheck]
    root: Path | None

    @property
    def ok(self) -> bool:
        return all(c.ok or c.severity != "error" for c in self.checks)

    @property
    def problems(self) -> list[EnvCheck]:
        return [c for c in self.checks if not c.ok]

    def details(self) -> str:
        """Every check, one line each, with the versions found."""
        lines = []
        for c in self.checks:
            mark = "✔" if c.ok else ("✘" if c.severity == "error" else "⚠")
            lines.append(f"{mark} {c.what}: needs {c.needed}; found {c.found}")
            if not c.ok and c.fix:
                lines.append(f"    fix: {c.fix}")
        return "\n".join(lines)

    def verdict(self) -> str:
        """One sentence: ready, or how many problems and where to start."""
        errors = [c for c in self.checks if not c.ok and c.severity == "error"]
        warns = [c for c in self.checks if not c.ok and c.severity != "error"]
        if not errors and not warns:
            return (
                "✔ All checks pass: Python, the packages the notebooks need, fnkit from this repository, and "
                "widgets. Your environment is ready for the workshop."
            )
        if not errors:
            return f"⚠ The notebooks will work; {_count(len(warns), 'warning')} below (how the notebook is run)."
        return f"✘ {_count(len(errors), 'problem')} to fix before the workshop; start with the first one."

    def __str__(self) -> str:
        return self.verdict() + "\n" + self.details()

    def __repr__(self) -> str:
        return str(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
        # the metadata says the output differs from machine to machine: tools/notebooks.py never commits it
        return (
            {"text/plain": str(self), "text/html": self._repr_html_()},
            {"fnkit": {"varies": "with the machine it runs on"}},
        )

    def _repr_html_(self) -> str:
        from .._cells import panel_html

        rows = []
        for c in self.checks:
            mark = "✔" if c.ok else ("✘" if c.severity == "error" else "⚠")
            rows.append(
                {"": mark, "what": c.what, "needs": c.needed, "found": c.found, "fix": c.fix if not c.ok else ""}
            )
        tone = "good" if not self.problems else ("mixed" if self.ok else "bad")
        return panel_html(
            self.verdict(),
            tone=tone,
            rows=rows,
            columns=["", "what", "needs", "found", "fix"],
            css_class="fnkit-environment",
        )

    def table(self):
        """Every check as a pandas DataFrame (what, needed, found, ok, fix)."""
        from .._optional import require

        require("pandas", extra="frames", feature="EnvironmentReport.table()")
        from .._frame import Table

        return Table(
            [{"what": c.what, "needs": c.needed, "found": c.found, "ok": c.ok, "fix": c.fix} for c in self.checks]
        )


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _project_name(pyproject: Path) -> str | None:
    import tomllib

    try:
        name: str | None = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("name")
        return name
    except (OSError, ValueError):
        return None


def find_root(start: Path | None = None) -> Path | None:
    """The repository root (the folder holding fnkit's pyproject.toml), or None.

    Looked for beside the fnkit package, then from `start` (the current folder) upwards, so
    a notebook finds it from notebooks/, from the learner's work/ copy, or from anywhere below.
    """
    here = Path(__file__).resolve().parents[2]
    begin = (start or Path.cwd()).resolve()
    for folder in [here, begin, *begin.parents]:
        project = folder / "pyproject.toml"
        if project.is_file() and _project_name(project) == "fnkit":
            return folder
    return None


def _installed_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _satisfies(version: str, spec: Any) -> bool:
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion

    try:
        return SpecifierSet(str(spec)).contains(version, prereleases=True)
    except InvalidVersion:
        return False


def _requirements(pyproject: dict[str, Any], extra: str, seen: frozenset[str] = frozenset()) -> list[Any]:
    """The requirements (`packaging.requirements.Requirement`) of the project, or of one extra.

    fnkit[...] in them is expanded.
    """
    from packaging.requirements import InvalidRequirement, Requirement

    project = pyproject.get("project", {})
    name = project.get("name", "fnkit")
    lines = project.get("dependencies", []) if extra == "" else project.get("optional-dependencies", {}).get(extra, [])
    out = []
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        if req.name.lower() == name.lower():
            for inner in sorted(req.extras):
                if inner not in seen:
                    out.extend(_requirements(pyproject, inner, seen | {extra}))
        else:
            out.append(req)
    return out


@dataclass
class _EnvironmentYml:
    """What environment.yml asks for: the Python spec, and the project's extras installed through pip."""

    python: str = ""
    extras: tuple[str, ...] = ("lab",)


def _read_environment_yml(path: Path, project: str) -> _EnvironmentYml:
    import yaml
    from packaging.requirements import InvalidRequirement, Requirement

    if not path.is_file():
        return _EnvironmentYml()
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    found = _EnvironmentYml()
    for dep in data.get("dependencies", []) or []:
        if isinstance(dep, str):
            spec = dep.replace(" ", "")
            if spec.startswith("python") and not spec.startswith("python-"):
                version = spec[len("python") :]
                # conda's "python=3.11" means "3.11.*"; PEP 440 spells it "==3.11.*"
                if version.startswith("=") and not version.startswith("=="):
                    version = f"=={version[1:]}.*"
                found.python = version
        elif isinstance(dep, dict):
            for line in dep.get("pip", []) or []:
                target = str(line).strip().removeprefix("-e").strip()
                if target.startswith("."):  # the project itself: ".[dev,lab]"
                    try:
                        found.extras = tuple(sorted(Requirement(project + target[1:]).extras)) or found.extras
                    except InvalidRequirement:
                        continue
    return found


def check_environment(root: str | Path | None = None) -> EnvironmentReport:
    """Compare this kernel's Python and packages with pyproject.toml and environment.yml; say what to fix."""
    import tomllib

    root = Path(root) if root is not None else find_root()
    checks: list[EnvCheck] = []
    if root is None:
        checks.append(
            EnvCheck(
                "project files",
                "pyproject.toml of fnkit",
                "not found",
                False,
                "open this notebook from the fnkit repository (its notebooks/ folder, or work/ after "
                "python3 kit.py lab)",
            )
        )
        return EnvironmentReport(checks, None)
    for module, package in (("packaging", "packaging"), ("yaml", "pyyaml")):
        try:
            __import__(module)
        except ImportError:
            checks.append(
                EnvCheck(
                    package,
                    "installed (to read the project's requirements)",
                    "not installed",
                    False,
                    f"{FIX_ALL}; or, in this environment: pip install {package}",
                )
            )
    if checks:
        return EnvironmentReport(checks, root)
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    project = pyproject.get("project", {}).get("name", "fnkit")
    env = _read_environment_yml(root / "environment.yml", project)
    # Python
    needs = pyproject.get("project", {}).get("requires-python", "")
    have = ".".join(map(str, sys.version_info[:3]))
    spec = ",".join(dict.fromkeys(s for s in (needs, env.python) if s))
    checks.append(
        EnvCheck(
            "python",
            f"{spec} (pyproject.toml, environment.yml)",
            have,
            _satisfies(have, spec),
            f"install Python {needs.lstrip('>=~')} or newer, then {FIX_ALL}",
        )
    )
    # packages: what the notebooks import, the project's own and its `lab` extra (what `kit.py lab`
    # installs); the tests' tools are not a learner's business, so they are not listed
    notebook_reqs = _requirements(pyproject, "") + _requirements(pyproject, "lab")
    seen_names: set[str] = set()
    for req in notebook_reqs:
        if req.name.lower() in seen_names:
            continue
        seen_names.add(req.name.lower())
        version = _installed_version(req.name)
        wanted = str(req.specifier) or "any version"
        if version is None:
            checks.append(
                EnvCheck(
                    req.name,
                    wanted,
                    "not installed",
                    False,
                    f'{FIX_ALL}; or, in this environment: pip install -e "{root}[lab]"',
                )
            )
        else:
            ok = _satisfies(version, req.specifier)
            checks.append(
                EnvCheck(
                    req.name,
                    wanted,
                    version,
                    ok,
                    "" if ok else f'pip install "{req.name}{req.specifier}" in this environment, or {FIX_ALL}',
                )
            )
    # fnkit itself, from this repository
    fnkit_root = Path(__file__).resolve().parents[2]
    same = fnkit_root == root.resolve()
    checks.append(
        EnvCheck(
            "fnkit",
            "the copy in this repository",
            "the copy in this repository" if same else str(fnkit_root),
            same,
            f"this kernel imports another copy of fnkit ({fnkit_root}); choose the kernel of "
            f"{root.name}/.venv, or {FIX_ALL}",
        )
    )
    # widgets: importable, new enough, the lab extension present, and a kernel that can talk to them
    checks.append(_widgets_check())
    return EnvironmentReport(checks, root)


def _widgets_check() -> EnvCheck:
    from packaging.version import InvalidVersion, Version

    try:
        import ipywidgets
    except ImportError:
        return EnvCheck(
            "widgets",
            "ipywidgets 8 in this kernel",
            "not installed",
            False,
            'pip install "ipywidgets>=8" in this environment, then restart the kernel',
        )
    try:
        major = Version(ipywidgets.__version__).major
    except InvalidVersion:
        major = 0
    if major < 8:
        return EnvCheck(
            "widgets",
            "ipywidgets 8 in this kernel",
            f"ipywidgets {ipywidgets.__version__}",
            False,
            'pip install -U "ipywidgets>=8", then restart JupyterLab',
        )
    if _installed_version("jupyterlab_widgets") is None:
        return EnvCheck(
            "widgets",
            "the JupyterLab widgets extension (jupyterlab_widgets)",
            "missing",
            False,
            "pip install jupyterlab_widgets in the environment that runs JupyterLab, then restart JupyterLab",
        )
    if widgets_extension() is None:
        return EnvCheck(
            "widgets",
            "the JupyterLab widgets extension (@jupyter-widgets/jupyterlab-manager)",
            "not in JupyterLab's extension folders",
            False,
            "pip install --force-reinstall jupyterlab_widgets in this environment, then restart JupyterLab",
        )
    try:
        from IPython import get_ipython

        shell = get_ipython()
        in_kernel = shell is not None and getattr(shell, "kernel", None) is not None
    except ImportError:
        in_kernel = False
    # outside a kernel (`python3 kit.py doctor`) the installed extension is what can be checked, and is enough
    found = "ready in this kernel" if in_kernel else "installed"
    return EnvCheck("widgets", "ipywidgets 8 with its JupyterLab extension", found, True)


WIDGETS_EXTENSION = ("@jupyter-widgets", "jupyterlab-manager")


def widgets_extension() -> Path | None:
    """The folder of the widgets' JupyterLab extension, among the folders JupyterLab reads extensions from; None."""
    try:
        from jupyter_core.paths import jupyter_path
    except ImportError:
        folders = [str(Path(sys.prefix) / "share" / "jupyter")]
        labextensions = [str(Path(f) / "labextensions") for f in folders]
    else:
        labextensions = jupyter_path("labextensions")
    for folder in labextensions:
        candidate = Path(folder).joinpath(*WIDGETS_EXTENSION)
        if (candidate / "package.json").is_file():
            return candidate
    return None
