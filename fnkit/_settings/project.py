"""The project's settings: the default `dialect` and `isolation` of every builder, run and command, and more.

Where a call does not say, fnkit takes the first of:

1. the environment: `FNKIT_DIALECT`, `FNKIT_ISOLATION`;
2. pytest's ini options `fnkit_dialect`, `fnkit_isolation` (pytest.ini, tox.ini, setup.cfg or
   `[tool.pytest.ini_options]`), while pytest runs with fnkit's plugin;
3. `[tool.fnkit]` in the nearest pyproject.toml that has one, looked for from the project being
   worked on up: under pytest, the project pytest runs (its ini file's folder, else its rootdir);
   for `fnkit validate/outcome/replay`, the first file given that has one above it; else the
   current directory:

       [tool.fnkit]
       dialect = "aws"          # or "provider"
       isolation = "none"       # or "process", "thread"
       extensions = true        # the mail service's extra action types (MOVE_TO_JUNK, BYPASS_SPAM_CHECK)
       ignore = ["Q13"]         # rules the command line sets aside (reported as ignored, never silently)

4. the built-in default: "provider" for the dialect, "none" (in the caller) for isolation, no
   extensions, nothing ignored.

An argument given to a call always wins. A pyproject.toml is read once and cached; it is read
again when its modification time or size changes. A key fnkit does not know, or a value it
cannot use, is a SettingError (a ValueError) naming the file and the key, as ruff and mypy
refuse theirs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Literal, cast

from .._engine.report import Dialect as Dialect

Isolation = Literal["none", "process", "thread"]

#: the choices of each setting, and the sentence that lists them
CHOICES: dict[str, tuple[str, ...]] = {"dialect": ("provider", "aws"), "isolation": ("none", "process", "thread")}
_EXPLAINED = {
    "dialect": "expected 'provider' (the spec's spelling) or 'aws' (the real platform's)",
    "isolation": "expected 'none' (in this process), 'process' or 'thread'",
}
_ISOLATIONS = CHOICES["isolation"]
BUILT_IN: dict[str, str] = {"dialect": "provider", "isolation": "none"}
ENVIRONMENT = {"dialect": "FNKIT_DIALECT", "isolation": "FNKIT_ISOLATION"}
INI = {"dialect": "fnkit_dialect", "isolation": "fnkit_isolation"}
#: every key of [tool.fnkit], and what it takes
KEYS: dict[str, str] = {
    "dialect": "'provider' or 'aws'",
    "isolation": "'none', 'process' or 'thread'",
    "extensions": "true or false",
    "ignore": 'a list of rule ids, as ignore = ["Q13"]',
}

# set by the pytest plugin while a session runs (pytest_configure / pytest_unconfigure): name -> (value, its file)
_pytest_ini: dict[str, tuple[str, str]] = {}
# where [tool.fnkit] is looked for from, when not the current directory: the project pytest runs, the files the
# command line was given (set_project_root)
_root: list[Path] = []
# pyproject.toml path -> ((mtime_ns, size), its [tool.fnkit] table or None when it has none)
_read: dict[Path, tuple[tuple[int, int], dict[str, Any] | None]] = {}


class SettingError(ValueError):
    """A project setting (environment, pytest ini, [tool.fnkit]) holds a value fnkit cannot use; says where."""


def _check(name: str, value: object, where: str, error: type[ValueError] = SettingError) -> str:
    if not isinstance(value, str) or value not in CHOICES[name]:
        raise error(f"{where} is {value!r}: {_EXPLAINED[name]}")
    return value


def _tool_table(path: Path, stamp: tuple[int, int]) -> dict[str, Any] | None:
    """The [tool.fnkit] table of one pyproject.toml (None without one), from the cache while the file is unchanged."""
    cached = _read.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    import tomllib  # only when a project has a pyproject.toml: `import fnkit` stays light

    try:
        with path.open("rb") as file:
            document = tomllib.load(file)
    except tomllib.TOMLDecodeError as exc:
        raise SettingError(f"{path} is not valid TOML ({exc}), so its [tool.fnkit] cannot be read") from None
    tool = document.get("tool")
    table = tool.get("fnkit") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise SettingError(f"[tool.fnkit] in {path} is {table!r}: it is a table (dialect = ..., isolation = ...)")
    if table is not None:
        _check_table(table, path)
    _read[path] = (stamp, table)
    return table


def _check_table(table: dict[str, Any], path: Path) -> None:
    """Every key of a [tool.fnkit] table known, every value usable; else a SettingError naming the file and key."""
    for key, value in table.items():
        where = f"[tool.fnkit] {key} in {path}"
        if key not in KEYS:
            import difflib

            near = difflib.get_close_matches(key, KEYS, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise SettingError(f"{path}: [tool.fnkit] has no key {key!r}{hint}; its keys are {', '.join(KEYS)}")
        if key in CHOICES:
            _check(key, value, where)
        elif (key == "extensions" and not isinstance(value, bool)) or (
            key == "ignore"
            and (not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value))
        ):
            raise SettingError(f"{where} is {value!r}: expected {KEYS[key]}")


def project_file(start: Path | None = None) -> tuple[Path, dict[str, Any]] | None:
    """The nearest pyproject.toml with a [tool.fnkit] table, from `start` (the current directory) up, and the table."""
    here = (start or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        try:
            status = candidate.stat()
        except OSError:
            continue
        table = _tool_table(candidate, (status.st_mtime_ns, status.st_size))
        if table is not None:
            return candidate, table
    return None


# current directory -> (the pyproject.toml paths looked at, each with its (mtime_ns, size) or None; when the missing
# ones were last looked for; what was found)
_lookups: dict[
    str, tuple[tuple[tuple[str, tuple[int, int] | None], ...], float, tuple[Path, dict[str, Any]] | None]
] = {}
_RECHECK_MISSING_S = 1.0


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size


def set_project_root(folder: str | Path | None) -> Path | None:
    """Look for [tool.fnkit] from `folder` up (the project pytest runs, the files given), then from the current
    directory; None: from the current directory only. Returns the folder set before."""
    before = _root[0] if _root else None
    _root[:] = [Path(folder).absolute()] if folder is not None else []
    return before


def project_root_of(paths: list[str]) -> Path | None:
    """The folder of the nearest pyproject.toml with a [tool.fnkit] above the first of `paths` that has one."""
    for given in paths:
        if given == "-":
            continue
        path = Path(given).absolute()
        found = project_file(path if path.is_dir() else path.parent)
        if found is not None:
            return found[0].parent
    return None


def _project_here() -> tuple[Path, dict[str, Any]] | None:
    """`project_file()` for the project's folder (`set_project_root`), then for the current directory."""
    if _root:
        found = _project_from(str(_root[0]))
        if found is not None:
            return found
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    return _project_from(cwd)


def _project_from(cwd: str) -> tuple[Path, dict[str, Any]] | None:
    """`project_file()` for a folder, remembered while none of the files it looked at changed (a few stat calls:
    every call a user makes reads the setting, so it must cost microseconds, not a walk of paths)."""
    cached = _lookups.get(cwd)
    now = time.monotonic()
    if cached is not None:
        looked_at, checked, result = cached
        # a file that changed is seen at once; a pyproject.toml that appears in a folder above, within a second
        if now - checked < _RECHECK_MISSING_S:
            if all(_stamp(path) == stamp for path, stamp in looked_at if stamp is not None):
                return result
        elif all(_stamp(path) == stamp for path, stamp in looked_at):
            _lookups[cwd] = (looked_at, now, result)
            return result
    looked: list[tuple[str, tuple[int, int] | None]] = []
    found: tuple[Path, dict[str, Any]] | None = None
    here = Path(cwd)
    for folder in (here, *here.parents):
        candidate = os.path.join(folder, "pyproject.toml")
        stamp = _stamp(candidate)
        looked.append((candidate, stamp))
        if stamp is None:
            continue
        table = _tool_table(Path(candidate), stamp)
        if table is not None:
            found = (Path(candidate), table)
            break
    if len(_lookups) > 64:
        _lookups.clear()
    _lookups[cwd] = (tuple(looked), now, found)
    return found


def default_of(name: str) -> tuple[str, str]:
    """The default of setting `name` ('dialect' or 'isolation') and where it came from, checked."""
    if name not in CHOICES:
        raise KeyError(f"fnkit has the settings 'dialect' and 'isolation', not {name!r}")
    value = os.environ.get(ENVIRONMENT[name])
    if value:
        where = f"the environment variable {ENVIRONMENT[name]}"
        return _check(name, value, where), where
    if name in _pytest_ini:
        value, inifile = _pytest_ini[name]
        where = f"pytest's ini option {INI[name]}" + (f" in {inifile}" if inifile else "")
        return _check(name, value, where), where
    found = _project_here()
    if found is not None and name in found[1]:
        path, table = found
        where = f"[tool.fnkit] {name} in {path}"
        return _check(name, table[name], where), where
    return BUILT_IN[name], "fnkit's built-in default"


def project_table() -> tuple[Path, dict[str, Any]] | None:
    """The project's pyproject.toml and its [tool.fnkit] table (checked), or None when no project has one."""
    return _project_here()


def project_setting(name: str) -> tuple[Any, str] | None:
    """[tool.fnkit]'s `name` ('extensions', 'ignore', ...) and where it was read, or None when the project sets none."""
    found = _project_here()
    if found is None or name not in found[1]:
        return None
    return found[1][name], f"[tool.fnkit] {name} in {found[0]}"


def resolve_dialect(dialect: str | None) -> Dialect:
    """The dialect a builder uses: the one given, else the project's setting (module docstring), else 'provider'."""
    if dialect is None:
        return cast(Dialect, default_of("dialect")[0])
    return cast(Dialect, _check("dialect", dialect, "dialect", ValueError))


def resolve_isolation(isolation: str | None) -> Isolation:
    """Where a call runs: the isolation given, else the project's setting (module docstring), else 'none'.

    Every call resolves its isolation here, once (a source's `run`, `invoke`, replay, the simulators)."""
    if isolation in _ISOLATIONS:  # named, and valid: nothing to look up
        return isolation  # type: ignore[return-value]
    if isolation is None:
        return cast(Isolation, default_of("isolation")[0])
    return cast(Isolation, _check("isolation", isolation, "isolation", ValueError))


def set_pytest_ini(values: dict[str, str], inifile: str = "") -> None:
    """The pytest plugin's ini options of this session, by setting name (empty values are unset); `{}` ends them."""
    _pytest_ini.clear()
    _pytest_ini.update({name: (value, inifile) for name, value in values.items() if name in CHOICES and value})
