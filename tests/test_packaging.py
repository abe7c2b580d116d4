"""pyproject.toml and environment.yml describe one environment: keep them in step."""
import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO_ROOT = Path(__file__).resolve().parent.parent
PROJECT = "fnkit"

# conda-forge names whose PyPI twin is spelled differently.
CONDA_TO_PYPI = {
    "matplotlib-base": "matplotlib",
    "pytables": "tables",
    "pytorch": "torch",
    "jupyter_core": "jupyter-core",
}

# The pip line that installs this project from the folder of environment.yml.
PROJECT_LINE = re.compile(
    r"""^(?:-e\s+|--editable[=\s]+)?["']?\.[/\\]?(?:\[(?P<extras>[^\]]*)\])?["']?$"""
)


def load_pyproject(path: Path = REPO_ROOT / "pyproject.toml") -> dict:
    """pyproject.toml as a dict."""
    with path.open("rb") as f:
        return tomllib.load(f)


def load_environment(path: Path = REPO_ROOT / "environment.yml") -> dict:
    """environment.yml as a dict."""
    with path.open(encoding="utf-8") as f:
        return yaml.safe_load(f)


def _minimum_python(spec: str) -> tuple[int, int] | None:
    """The lowest major.minor that a specifier like '>=3.11', '=3.11' or '3.11.*' admits."""
    m = re.search(r"(?:>=|~=|==|=|\s|^)\s*(\d+)\.(\d+)", spec)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _conda_name_and_spec(entry: str) -> tuple[str, str]:
    """Split a conda spec such as 'conda-forge::pandas >=2' into ('pandas', '>=2')."""
    entry = entry.split("::")[-1].strip()
    m = re.match(r"([A-Za-z0-9_.\-]+)\s*(.*)$", entry)
    if not m:
        return entry, ""
    return m.group(1), m.group(2)


def _requirements(pyproject: dict) -> dict[str, list[Requirement]]:
    """Runtime dependencies under the key '' and each extra under its own name."""
    project = pyproject.get("project", {})
    groups = {"": project.get("dependencies", [])}
    groups.update(project.get("optional-dependencies", {}))
    return {name: [Requirement(r) for r in reqs] for name, reqs in groups.items()}


def _expanded_names(pyproject: dict, extra: str, seen: frozenset = frozenset()) -> set[str]:
    """Names an extra installs, following fnkit[...] references to other extras."""
    names: set[str] = set()
    for req in _requirements(pyproject).get(extra, []):
        if canonicalize_name(req.name) == PROJECT:
            for inner in req.extras - seen:
                names |= _expanded_names(pyproject, inner, seen | {extra})
        else:
            names.add(canonicalize_name(req.name))
    return names


def packaging_drift(pyproject: dict, environment: dict) -> list[str]:
    """Every way environment.yml disagrees with pyproject.toml, one sentence each."""
    problems: list[str] = []
    groups = _requirements(pyproject)
    declared = {
        canonicalize_name(req.name)
        for reqs in groups.values()
        for req in reqs
        if canonicalize_name(req.name) != PROJECT
    }

    requires = pyproject.get("project", {}).get("requires-python", "")
    project_min = _minimum_python(requires)
    if project_min is None:
        problems.append(f"pyproject.toml: requires-python {requires!r} names no minimum version")

    conda_python = None
    has_pip = False
    pip_lines: list[str] | None = None
    for entry in environment.get("dependencies") or []:
        if isinstance(entry, dict) and "pip" in entry:
            pip_lines = [str(line).strip() for line in entry["pip"] or []]
            continue
        name, spec = _conda_name_and_spec(str(entry))
        cname = canonicalize_name(name)
        if cname == "python":
            conda_python = spec
        elif cname == "pip":
            has_pip = True
        else:
            pypi = canonicalize_name(CONDA_TO_PYPI.get(name, name))
            if pypi not in declared:
                problems.append(
                    f"environment.yml lists conda package {name!r}, "
                    f"but pyproject.toml declares no dependency named {pypi!r}"
                )

    if conda_python is None:
        problems.append("environment.yml does not list python")
    else:
        conda_min = _minimum_python(conda_python)
        if conda_min != project_min:
            problems.append(
                f"minimum Python differs: environment.yml has python{conda_python} "
                f"but pyproject.toml has requires-python {requires!r}"
            )
    if not has_pip:
        problems.append("environment.yml does not list pip, so its pip section cannot run")

    project_lines = [m for line in pip_lines or [] if (m := PROJECT_LINE.match(line))]
    if not project_lines:
        problems.append(
            "environment.yml's pip section does not install the project itself "
            "(expected a line like '-e .[dev,lab]')"
        )
    else:
        extras = {
            e.strip()
            for m in project_lines
            for e in (m.group("extras") or "").split(",")
            if e.strip()
        }
        if "dev" not in extras:
            problems.append(
                "environment.yml's pip section installs the project without its 'dev' extra"
            )
        for extra in sorted(extras - set(groups)):
            problems.append(
                f"environment.yml asks for extra {extra!r}, which pyproject.toml does not define"
            )
    return problems


def dev_extra_gaps(pyproject: dict) -> list[str]:
    """What the 'dev' extra misses of 'lab' and 'serve', or refers to indirectly."""
    groups = _requirements(pyproject)
    if "dev" not in groups:
        return ["pyproject.toml defines no 'dev' extra"]
    problems = [
        f"the 'dev' extra refers to {req}: list the packages themselves"
        for req in groups["dev"]
        if canonicalize_name(req.name) == PROJECT
    ]
    dev = _expanded_names(pyproject, "dev")
    for extra in ("lab", "serve"):
        for name in sorted(_expanded_names(pyproject, extra) - dev):
            problems.append(f"the 'dev' extra lacks {name!r}, which the {extra!r} extra installs")
    return problems


# --- the project's own files -------------------------------------------------------


def test_environment_yml_is_in_step_with_pyproject():
    problems = packaging_drift(load_pyproject(), load_environment())
    assert not problems, "environment.yml drifted from pyproject.toml:\n- " + "\n- ".join(problems)


def test_dev_extra_installs_everything_lab_and_serve_do():
    problems = dev_extra_gaps(load_pyproject())
    assert not problems, "pyproject.toml's dev extra:\n- " + "\n- ".join(problems)


def test_console_script_and_minimum_python():
    project = load_pyproject()["project"]
    assert project["scripts"]["fnkit"] == "fnkit.cli:main"
    assert _minimum_python(project["requires-python"]) == (3, 11)
    assert [canonicalize_name(Requirement(r).name) for r in project["dependencies"]] == ["pandas", "cloudpickle"]


# --- the comparison itself, on pairs made to agree or drift ---------------------------

GOOD_PYPROJECT = {
    "project": {
        "requires-python": ">=3.11",
        "dependencies": ["pandas>=2"],
        "optional-dependencies": {
            "serve": ["uvicorn>=0.30"],
            "lab": ["jupyterlab>=4", "matplotlib", "fnkit[serve]"],
            "dev": ["jupyterlab>=4", "matplotlib", "uvicorn>=0.30", "pytest"],
        },
    }
}
GOOD_ENVIRONMENT = {
    "name": "fnkit",
    "channels": ["conda-forge"],
    "dependencies": [
        "python>=3.11",
        "pip",
        "matplotlib-base",
        "conda-forge::pandas >=2",
        {"pip": ["-e .[dev,lab]"]},
    ],
}


def test_a_pair_in_step_reports_nothing():
    assert packaging_drift(GOOD_PYPROJECT, GOOD_ENVIRONMENT) == []
    assert dev_extra_gaps(GOOD_PYPROJECT) == []


def test_every_kind_of_drift_is_reported():
    drifted = {
        "name": "fnkit",
        "dependencies": [
            "python>=3.10",
            "numpy",
            {"pip": ["-e .[lab,docs]"]},
        ],
    }
    problems = packaging_drift(GOOD_PYPROJECT, drifted)
    text = "\n".join(problems)
    assert "minimum Python differs" in text and "python>=3.10" in text
    assert "'numpy'" in text
    assert "does not list pip" in text
    assert "without its 'dev' extra" in text
    assert "extra 'docs'" in text
    assert len(problems) == 5


def test_a_missing_project_line_is_reported():
    env = {"dependencies": ["python=3.11", "pip", {"pip": ["pytest"]}]}
    assert packaging_drift(GOOD_PYPROJECT, env) == [
        "environment.yml's pip section does not install the project itself "
        "(expected a line like '-e .[dev,lab]')"
    ]


def test_a_dev_extra_that_falls_behind_is_reported():
    pyproject = {
        "project": {
            "optional-dependencies": {
                "serve": ["uvicorn", "aiosmtpd"],
                "lab": ["jupyterlab", "fnkit[serve]"],
                "dev": ["jupyterlab", "uvicorn", "fnkit[widgets]"],
            }
        }
    }
    assert dev_extra_gaps(pyproject) == [
        "the 'dev' extra refers to fnkit[widgets]: list the packages themselves",
        "the 'dev' extra lacks 'aiosmtpd', which the 'lab' extra installs",
        "the 'dev' extra lacks 'aiosmtpd', which the 'serve' extra installs",
    ]
