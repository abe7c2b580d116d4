"""The environment check of notebook 00 (fnkit/workshop/_environment.py)."""

from __future__ import annotations

from fnkit import workshop


def test_the_environment_check_passes_here():
    report = workshop.check_environment()
    problems = [c for c in report.problems if c.severity == "error"]
    assert not problems, report.details()
    assert {"python", "pandas", "ipywidgets", "fnkit", "widgets"} <= {c.what for c in report.checks}


def test_every_check_is_shown_with_its_mark():
    report = workshop.check_environment()
    text = str(report)
    assert text.splitlines()[0] == report.verdict()
    assert all(line[0] in "✔✘⚠ " for line in text.splitlines()[1:])
    assert "✔ pandas: needs >=2" in text
    html = report._repr_html_()
    assert "fnkit-environment" in html and html.count("<tr>") == len(report.checks) + 1


def test_the_environment_check_says_exactly_what_to_fix(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "fnkit"\nrequires-python = ">=3.99"\n'
        'dependencies = ["pandas>=2", "surely-not-installed-pkg>=1", '
        "\"only-on-old-python>=1; python_version < '3.0'\"]\n"
        '[project.optional-dependencies]\nlab = ["ipywidgets>=99", "fnkit[extra]"]\n'
        'extra = ["pandas [performance] >= 2.0"]\n'
        'dev = ["pytest>=8"]\n',
        encoding="utf-8",
    )
    (tmp_path / "environment.yml").write_text(
        "name: x\ndependencies:\n  - python=3.99\n  - pip\n  - pip:\n      - -e .[lab, dev]\n", encoding="utf-8"
    )
    report = workshop.check_environment(tmp_path)
    assert not report.ok
    bad = {c.what: c for c in report.problems}
    assert "python" in bad and ">=3.99" in bad["python"].needed and "==3.99.*" in bad["python"].needed
    assert bad["surely-not-installed-pkg"].found == "not installed"
    assert "python3 kit.py lab" in bad["surely-not-installed-pkg"].fix
    assert '[lab]"' in bad["surely-not-installed-pkg"].fix  # the extra the notebooks need
    assert "ipywidgets" in bad and "pip install" in bad["ipywidgets"].fix
    assert "fnkit" in bad  # this fnkit is not the one of tmp_path
    names = [c.what for c in report.checks]
    assert "only-on-old-python" not in names  # its marker does not hold here
    assert names.count("pandas") == 1  # fnkit[extra] expanded, the duplicate folded
    # the tests' tools (the dev extra) are not a learner's business: not listed
    assert "pytest" not in names and not any("for the tests" in c.needed for c in report.checks)
    text = str(report)
    assert text.splitlines()[0].startswith("✘") and "fix:" in text


def test_a_missing_project_is_explained(tmp_path, monkeypatch):
    monkeypatch.setattr(workshop._environment, "find_root", lambda start=None: None)
    report = workshop.check_environment()
    assert not report.ok and "fnkit repository" in report.problems[0].fix


def test_the_root_is_found_from_a_learners_working_copy(tmp_path):
    root = workshop.find_root()
    assert root is not None and (root / "pyproject.toml").is_file()
    assert workshop.find_root(root / "work" / "exercises") == root
