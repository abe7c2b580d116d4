"""pyproject.toml, environment.yml and the lock (constraints.txt) describe one environment: keep them in step."""

import argparse
import importlib.util
import shlex
import sys
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO_ROOT = Path(__file__).resolve().parent.parent
PROJECT = "fnkit"
LOCK = "constraints.txt"
RELOCK = "run `python3 kit.py lock` and commit constraints.txt"

# conda-forge names whose PyPI twin is spelled differently.
CONDA_TO_PYPI = {
    "matplotlib-base": "matplotlib",
    "pytables": "tables",
    "pytorch": "torch",
    "jupyter_core": "jupyter-core",
}

# A line of a pip requirements file, as pip reads its options (the rest is a requirement or a path).
PIP_LINE = argparse.ArgumentParser(prog="pip line", add_help=False, exit_on_error=False)
PIP_LINE.add_argument("-e", "--editable")
PIP_LINE.add_argument("-c", "--constraint")
PIP_LINE.add_argument("-r", "--requirement")
PIP_LINE.add_argument("target", nargs="?")


def load_pyproject(path: Path = REPO_ROOT / "pyproject.toml") -> dict[str, Any]:
    """pyproject.toml as a dict."""
    with path.open("rb") as f:
        return tomllib.load(f)


def load_environment(path: Path = REPO_ROOT / "environment.yml") -> dict[str, Any]:
    """environment.yml as a dict."""
    with path.open(encoding="utf-8") as f:
        environment: dict[str, Any] = yaml.safe_load(f)
        return environment


def _minimum_python(spec: str) -> tuple[int, int] | None:
    """The lowest Python 3 major.minor that a PEP 440 specifier set (e.g. '>=3.11', '==3.11.*') admits."""
    from packaging.specifiers import SpecifierSet

    admitted = [minor for minor in range(40) if Version(f"3.{minor}") in SpecifierSet(spec)]
    return (3, admitted[0]) if admitted else None


def conda_requirement(entry: str) -> Requirement:
    """A conda match spec ('conda-forge::pandas >=2', 'python=3.11', 'numpy 1.26.*') as a PEP 508 requirement."""
    spec = entry.split("::")[-1].strip()
    name_end = next((i for i, ch in enumerate(spec) if ch in " <>=!~"), len(spec))
    name, version = spec[:name_end], spec[name_end:].strip()
    if version[:1].isdigit():  # conda's bare version: that version exactly, or its series with a '*'
        version = "==" + version
    elif version.startswith("=") and not version.startswith("=="):  # conda's '=3.11': the 3.11 series
        version = "=" + version + ("" if version.endswith("*") else ".*")
    return Requirement(name + version)


def pip_line(line: str) -> argparse.Namespace:
    """A requirements-file line of environment.yml's pip section, read as pip reads its options."""
    options, _ = PIP_LINE.parse_known_args(shlex.split(line))
    return options


def project_extras(line: str) -> set[str] | None:
    """The extras a pip line installs this project with ('-e .[dev,lab]' -> {'dev', 'lab'}); None for another line."""
    options = pip_line(line)
    target = options.editable or options.target
    if target is None:
        return None
    path, bracket, extras = target.partition("[")
    if path.rstrip("/\\") != ".":
        return None
    return set(Requirement(f"{PROJECT}{bracket}{extras}").extras)


def _requirements(pyproject: dict[str, Any]) -> dict[str, list[Requirement]]:
    """Runtime dependencies under the key '' and each extra under its own name."""
    project = pyproject.get("project", {})
    groups = {"": project.get("dependencies", [])}
    groups.update(project.get("optional-dependencies", {}))
    return {name: [Requirement(r) for r in reqs] for name, reqs in groups.items()}


def _expanded_names(pyproject: dict[str, Any], extra: str, seen: frozenset[str] = frozenset()) -> set[str]:
    """Names an extra installs, following fnkit[...] references to other extras."""
    names: set[str] = set()
    for req in _requirements(pyproject).get(extra, []):
        if canonicalize_name(req.name) == PROJECT:
            for inner in req.extras - seen:
                names |= _expanded_names(pyproject, inner, seen | {extra})
        else:
            names.add(canonicalize_name(req.name))
    return names


def packaging_drift(pyproject: dict[str, Any], environment: dict[str, Any], lock: str | None = LOCK) -> list[str]:
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
        name = conda_requirement(str(entry)).name
        cname = canonicalize_name(name)
        if cname == "python":
            conda_python = str(entry).strip()
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
        conda_min = _minimum_python(str(conda_requirement(conda_python).specifier))
        if conda_min != project_min:
            problems.append(
                f"minimum Python differs: environment.yml has {conda_python} "
                f"but pyproject.toml has requires-python {requires!r}"
            )
    if not has_pip:
        problems.append("environment.yml does not list pip, so its pip section cannot run")

    project_lines = [extras for line in pip_lines or [] if (extras := project_extras(line)) is not None]
    if not project_lines:
        problems.append(
            "environment.yml's pip section does not install the project itself (expected a line like '-e .[dev,lab]')"
        )
    else:
        extras = set().union(*project_lines)
        if "dev" not in extras:
            problems.append("environment.yml's pip section installs the project without its 'dev' extra")
        problems.extend(
            f"environment.yml asks for extra {extra!r}, which pyproject.toml does not define"
            for extra in sorted(extras - set(groups))
        )
    constraints = [pip_line(line).constraint for line in pip_lines or []]
    if lock is not None and lock not in constraints:
        problems.append(
            f"environment.yml's pip section does not install the locked versions (expected a line '-c {lock}')"
        )
    return problems


# Extras the 'dev' extra need not cover: itself, and the benchmarks' own.
NOT_IN_DEV = ("dev", "bench")


def dev_extra_gaps(pyproject: dict[str, Any]) -> list[str]:
    """What the 'dev' extra misses of every other extra (but 'bench'), or refers to indirectly."""
    groups = _requirements(pyproject)
    if "dev" not in groups:
        return ["pyproject.toml defines no 'dev' extra"]
    problems = [
        f"the 'dev' extra refers to {req}: list the packages themselves"
        for req in groups["dev"]
        if canonicalize_name(req.name) == PROJECT
    ]
    dev = _expanded_names(pyproject, "dev")
    problems.extend(
        f"the 'dev' extra lacks {name!r}, which the {extra!r} extra installs"
        for extra in sorted(groups)
        if extra and extra not in NOT_IN_DEV
        for name in sorted(_expanded_names(pyproject, extra) - dev)
    )
    return problems


def read_lock(text: str) -> tuple[dict[str, list[Requirement]], list[str]]:
    """The pins of a constraints file (canonical name -> its pins, one per marker), and every line that is no pin."""
    pins: dict[str, list[Requirement]] = {}
    problems: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        try:
            req = Requirement(entry)
        except InvalidRequirement as exc:
            problems.append(f"{LOCK} line {number}: {entry!r} is not a requirement ({exc})")
            continue
        specifiers = list(req.specifier)
        if req.extras or req.url or len(specifiers) != 1 or specifiers[0].operator != "==":
            problems.append(
                f"{LOCK} line {number}: {entry!r} is not a pin like 'name==1.2.3' (pip's constraints allow no more)"
            )
            continue
        pins.setdefault(canonicalize_name(req.name), []).append(req)
    return pins, problems


def _extra_requirements(req: Requirement) -> list[Requirement]:
    """What the extras of `req` add, read from the installed distribution's metadata ([] when not installed)."""
    try:
        lines = metadata.distribution(req.name).requires or []
    except metadata.PackageNotFoundError:
        return []
    added = []
    for line in lines:
        inner = Requirement(line)
        marker = inner.marker
        if (
            marker is not None
            and any(marker.evaluate({"extra": e}) for e in req.extras)
            and not marker.evaluate({"extra": ""})
        ):
            added.append(inner)
    return added


def lock_gaps(pyproject: dict[str, Any], lock_text: str, extra_requirements=_extra_requirements) -> list[str]:
    """Each requirement of pyproject.toml (and of the extras it draws in) the lock leaves out or pins off range."""
    pins, problems = read_lock(lock_text)
    for group, reqs in _requirements(pyproject).items():
        where = f"pyproject.toml (extra {group!r})" if group else "pyproject.toml (dependencies)"
        for req in reqs:
            if canonicalize_name(req.name) == PROJECT:
                continue
            for needed in [req, *(extra_requirements(req) if req.extras else [])]:
                if needed.marker is not None and not any(
                    needed.marker.evaluate({"extra": e}) for e in ("", *req.extras)
                ):
                    continue  # needed on other platforms only: the universal lock pins it under a marker
                name = canonicalize_name(needed.name)
                via = "" if needed is req else f" (through {req})"
                if name not in pins:
                    problems.append(f"{where} requires {str(needed)!r}{via}, which {LOCK} does not pin: {RELOCK}")
                    continue
                for pin in pins[name]:
                    version = next(iter(pin.specifier)).version
                    if not needed.specifier.contains(version, prereleases=True):
                        problems.append(
                            f"{where} requires {str(needed)!r}{via}, but {LOCK} pins {pin.name}=={version}: {RELOCK}"
                        )
    return problems


def installed_drift(lock_text: str, installed: dict[str, str]) -> list[str]:
    """Every installed distribution whose version is not the one the lock pins for this platform."""
    pins, _ = read_lock(lock_text)
    problems = []
    for name, version in sorted(installed.items()):
        wanted = [
            next(iter(p.specifier)).version
            for p in pins.get(canonicalize_name(name), [])
            if p.marker is None or p.marker.evaluate()
        ]
        if wanted and Version(version) != Version(wanted[0]):
            problems.append(
                f"{name} {version} is installed, but {LOCK} pins {wanted[0]}: run `python3 kit.py test` "
                "(it reinstalls from the lock) or `pip install -c constraints.txt -e .[dev]`"
            )
    return problems


def _dev_closure() -> dict[str, str]:
    """Every distribution fnkit[dev] installs, with its installed version (tools/wheel_smoke.py walks the metadata)."""
    spec = importlib.util.spec_from_file_location("fnkit_wheel_smoke", REPO_ROOT / "tools" / "wheel_smoke.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    closure: dict[str, str] = module.closure(("dev",))
    return closure


# --- the project's own files -------------------------------------------------------


def test_environment_yml_is_in_step_with_pyproject():
    problems = packaging_drift(load_pyproject(), load_environment())
    assert not problems, "environment.yml drifted from pyproject.toml:\n- " + "\n- ".join(problems)


def test_dev_extra_installs_everything_the_other_extras_do():
    problems = dev_extra_gaps(load_pyproject())
    assert not problems, "pyproject.toml's dev extra:\n- " + "\n- ".join(problems)


def test_the_lock_pins_every_requirement_of_pyproject():
    problems = lock_gaps(load_pyproject(), (REPO_ROOT / LOCK).read_text(encoding="utf-8"))
    assert not problems, f"{LOCK} is behind pyproject.toml:\n- " + "\n- ".join(problems)


def test_this_environment_has_the_locked_versions():
    # what nbval's outputs were recorded with is what a workshop installs (kit.py installs with -c constraints.txt)
    closure = _dev_closure()
    assert len(closure) > 50 and "jupyterlab" in closure
    problems = installed_drift((REPO_ROOT / LOCK).read_text(encoding="utf-8"), closure)
    assert not problems, "this environment is not the locked one:\n- " + "\n- ".join(problems)


def test_console_script_and_minimum_python():
    project = load_pyproject()["project"]
    assert project["scripts"]["fnkit"] == "fnkit.cli:main"
    assert _minimum_python(project["requires-python"]) == (3, 11)
    # the light core (tests/test_wheel_core.py installs it alone); pandas is the 'frames' extra
    assert [canonicalize_name(Requirement(r).name) for r in project["dependencies"]] == ["msgspec", "cloudpickle"]
    assert [canonicalize_name(Requirement(r).name) for r in project["optional-dependencies"]["frames"]] == ["pandas"]


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
        {"pip": ["-c constraints.txt", "-e .[dev,lab]"]},
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
    assert "expected a line '-c constraints.txt'" in text
    assert len(problems) == 6


def test_a_missing_project_line_is_reported():
    env = {"dependencies": ["python=3.11", "pip", {"pip": ["pytest", "--constraint=constraints.txt"]}]}
    assert packaging_drift(GOOD_PYPROJECT, env) == [
        "environment.yml's pip section does not install the project itself (expected a line like '-e .[dev,lab]')"
    ]


def test_a_dev_extra_that_falls_behind_is_reported():
    pyproject = {
        "project": {
            "optional-dependencies": {
                "frames": ["pandas"],
                "serve": ["uvicorn", "aiosmtpd"],
                "lab": ["jupyterlab", "fnkit[serve]"],
                "bench": ["psutil"],
                "dev": ["jupyterlab", "uvicorn", "fnkit[widgets]"],
            }
        }
    }
    assert dev_extra_gaps(pyproject) == [
        "the 'dev' extra refers to fnkit[widgets]: list the packages themselves",
        "the 'dev' extra lacks 'pandas', which the 'frames' extra installs",
        "the 'dev' extra lacks 'aiosmtpd', which the 'lab' extra installs",
        "the 'dev' extra lacks 'aiosmtpd', which the 'serve' extra installs",
    ]


# --- the readers: conda specs, pip lines, Python minimums ---------------------------------------


def test_conda_specs_read_as_pep_508_requirements():
    cases = {
        "python=3.11": ("python", "==3.11.*"),
        "python>=3.11,<3.13": ("python", "<3.13,>=3.11"),
        "conda-forge::pandas >=2": ("pandas", ">=2"),
        "numpy 1.26.*": ("numpy", "==1.26.*"),
        "matplotlib-base": ("matplotlib-base", ""),
        "pip": ("pip", ""),
    }
    for entry, (name, spec) in cases.items():
        req = conda_requirement(entry)
        assert (req.name, str(req.specifier)) == (name, spec), entry


def test_minimum_python_of_a_specifier():
    assert _minimum_python(">=3.11") == (3, 11)
    assert _minimum_python("==3.11.*") == (3, 11)
    assert _minimum_python("~=3.12") == (3, 12)
    assert _minimum_python(">3.10,<4") == (3, 11)
    assert _minimum_python("<3") is None


def test_pip_lines_that_install_the_project():
    assert project_extras("-e .[dev,lab]") == {"dev", "lab"}
    assert project_extras("--editable=./[dev]") == {"dev"}
    assert project_extras("'.[lab]'") == {"lab"}
    assert project_extras("-e .") == set()
    for other in ("pytest", "-c constraints.txt", "-e ../other[dev]", "--index-url x"):
        assert project_extras(other) is None, other
    assert pip_line("--constraint constraints.txt").constraint == "constraints.txt"


# --- the lock, on pairs made to agree or drift ----------------------------------------------------

GOOD_LOCK = """\
# This file was autogenerated by uv via the following command:
#    python3 kit.py lock
jupyterlab==4.5.0
    # via fnkit (pyproject.toml)
matplotlib==3.10.0
pandas==2.3.3 ; python_full_version < '3.12'
pandas==3.0.1 ; python_full_version >= '3.12'
pytest==9.0.0
uvicorn==0.38.0
"""


def test_a_lock_in_step_reports_nothing():
    assert lock_gaps(GOOD_PYPROJECT, GOOD_LOCK) == []


def test_a_lock_behind_pyproject_is_reported():
    pyproject = {
        "project": {
            "dependencies": ["pandas>=3", "msgspec>=0.18"],
            "optional-dependencies": {"dev": ["dask[distributed]>=2024", "tomli; python_version < '3.11'"]},
        }
    }
    lock = GOOD_LOCK + "dask==2024.12.1\n-e .\nnumpy[extra]==2.0\n"

    def extras(req):
        return [Requirement("distributed==2024.12.1; extra == 'distributed'")]

    problems = lock_gaps(pyproject, lock, extra_requirements=extras)
    assert len(problems) == 5
    assert problems[0].startswith("constraints.txt line 11: '-e .' is not a requirement (")
    assert problems[1:] == [
        (
            "constraints.txt line 12: 'numpy[extra]==2.0' is not a pin like 'name==1.2.3' "
            "(pip's constraints allow no more)"
        ),
        "pyproject.toml (dependencies) requires 'pandas>=3', but constraints.txt pins pandas==2.3.3: " + RELOCK,
        "pyproject.toml (dependencies) requires 'msgspec>=0.18', which constraints.txt does not pin: " + RELOCK,
        "pyproject.toml (extra 'dev') requires 'distributed==2024.12.1; extra == \"distributed\"' "
        "(through dask[distributed]>=2024), which constraints.txt does not pin: " + RELOCK,
    ]


def test_an_environment_off_the_lock_is_reported():
    installed = {"jupyterlab": "4.4.0", "matplotlib": "3.10.0", "uv": "0.9.0"}
    assert installed_drift(GOOD_LOCK, installed) == [
        (
            "jupyterlab 4.4.0 is installed, but constraints.txt pins 4.5.0: run `python3 kit.py test` "
            "(it reinstalls from the lock) or `pip install -c constraints.txt -e .[dev]`"
        )
    ]
    # of two pins, the one whose marker holds here counts
    here = "2.3.3" if sys.version_info < (3, 12) else "3.0.1"
    assert installed_drift(GOOD_LOCK, {"pandas": here}) == []
    assert len(installed_drift(GOOD_LOCK, {"pandas": "3.0.1" if here == "2.3.3" else "2.3.3"})) == 1
