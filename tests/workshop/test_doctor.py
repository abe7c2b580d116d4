"""`python3 kit.py doctor`: the environment check headless (fnkit/workshop/_doctor.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fnkit import workshop
from fnkit.workshop import _doctor, _environment

ROOT = Path(__file__).resolve().parents[2]


def _doctor_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fnkit.workshop", "doctor", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )


def test_outside_jupyter_the_widgets_are_checked_by_their_extension_not_warned_about():
    # plain Python (pytest, kit.py doctor): no "needs a Jupyter kernel" warning, the installed extension is checked
    report = workshop.check_environment()
    assert not report.problems, report.details()
    widgets = next(c for c in report.checks if c.what == "widgets")
    assert widgets.ok and widgets.found == "installed"
    assert _environment.widgets_extension() is not None


def test_a_missing_widgets_extension_is_a_problem_with_its_fix(monkeypatch):
    monkeypatch.setattr(_environment, "widgets_extension", lambda: None)
    widgets = next(c for c in workshop.check_environment().checks if c.what == "widgets")
    assert not widgets.ok and widgets.severity == "error" and "jupyterlab_widgets" in widgets.fix


def test_the_doctor_passes_here_with_exit_0_and_says_what_it_checked():
    done = _doctor_cli()
    assert done.returncode == 0, done.stdout + done.stderr
    line = done.stdout.strip()
    assert len(line.splitlines()) == 1 and line.startswith("doctor: ready for the workshop")
    for checked in ("Python 3.", "JupyterLab 4", "widgets' extension", "each at its pin", "a handler in a worker"):
        assert checked in line


def test_each_problem_is_one_line_with_its_fix_and_the_exit_code_is_1(tmp_path):
    import pandas as pd

    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "fnkit"\nrequires-python = ">=3.99"\ndependencies = ["pandas>=2"]\n', encoding="utf-8"
    )
    # a pin that holds here, one that does not hold on this machine (its marker), and one the install broke
    (tmp_path / "constraints.txt").write_text(
        f"pandas==0.1.0\n    # via fnkit\nnot-installed-here==1.0\nnumpy==0.0.1 ; sys_platform == 'nowhere'\n"
        f"# pandas=={pd.__version__}\n",
        encoding="utf-8",
    )
    done = _doctor_cli("--root", str(tmp_path))
    assert done.returncode == 1
    lines = done.stdout.strip().splitlines()
    problems = lines[:-1]
    assert all(line[0] in "✘⚠" and " -> fix: " in line for line in problems), lines
    pins = next(line for line in problems if line.startswith("✘ pinned versions"))
    assert f"pandas {pd.__version__} (pinned 0.1.0)" in pins and '-c constraints.txt "pandas==0.1.0"' in pins
    assert "numpy" not in pins and "not-installed-here" not in pins
    assert any(line.startswith("✘ python: needs >=3.99") for line in problems)
    assert lines[-1].startswith(f"doctor: {len(problems)} problem(s) to fix")


def test_a_handler_that_cannot_run_in_a_worker_is_a_problem(monkeypatch):
    from fnkit import isolation

    def broken(*args, **kwargs):
        raise OSError("no worker could start")

    monkeypatch.setattr(isolation, "invoke", broken)
    check = _doctor.worker_check()
    assert not check.ok and "OSError: no worker could start" in check.found
    assert "kit.py lab" in _doctor.problem_line(check)


def test_the_doctor_runs_a_handler_without_an_import_path_in_a_worker():
    check = _doctor.worker_check()
    assert check.ok, check.found
    assert check.found.startswith("ran in ")


def test_other_systems_are_a_warning_not_a_failure(monkeypatch):
    import platform

    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    check = _doctor.system_check()
    assert not check.ok and check.severity == "warning" and "Darwin" in check.found


def test_kit_doctor_is_the_pre_workshop_step_with_its_exit_code():
    kit = str(ROOT / "kit.py")
    usage = subprocess.run([sys.executable, kit, "--help"], capture_output=True, text=True, check=False)
    assert "python3 kit.py doctor" in usage.stdout and "python3 kit.py progress [PATH...]" in usage.stdout
    done = subprocess.run(
        [sys.executable, str(ROOT / "kit.py"), "doctor"], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith("doctor: ready for the workshop")
