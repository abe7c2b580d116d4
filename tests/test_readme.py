"""The README a learner opens first: its pictures are there, and its advice for a stuck kernel is in the right order."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_picture_the_readme_shows_is_in_the_repository():
    pictures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README)
    assert any(p.startswith("docs/learner-path/") for p in pictures)
    missing = [p for p in pictures if not (ROOT / p).is_file()]
    assert missing == []


def test_a_stuck_kernel_is_stop_first_then_interrupt_and_restart_last():
    start = README.index("## Learners: start here")
    section = README[start : README.index("\n## ", start + 1)]
    advice = section[section.index("**A kernel that seems stuck**") :]
    stop, interrupt, restart = (advice.index(word) for word in ("**Stop**", "Interrupt Kernel", "Restart Kernel"))
    assert stop < interrupt < restart
    assert "last resort" in advice[restart - 40 : restart + 200]


def _learners_section() -> str:
    return README[README.index("## Learners: start here") : README.index("## Instructors")]


def test_the_learners_path_runs_to_05_and_says_which_lessons_have_exercises():
    learners = _learners_section()
    assert "`01_queue_batch` to `05_real_logs`" in learners
    assert "04 and 05 are lessons only" in learners and "python3 kit.py lab --with dask" in learners


def test_an_open_notebook_is_reset_by_closing_its_tab_then_reset_then_reopening():
    learners = " ".join(_learners_section().split())
    close = learners.index("close its tab first")
    reset = learners.index("then run `reset`", close)
    reopen = learners.index("then open the notebook again", reset)
    assert close < reset < reopen and "Overwrite" in learners[reopen:]


def test_the_readme_gives_the_learners_install_size_and_time_and_the_help_command():
    learners = " ".join(_learners_section().split())
    assert re.search(r"\*\*\d+ s\*\* to install", learners) and re.search(r"a `\.venv` of \*\*\d+ MB\*\*", learners)
    assert "`python3 kit.py --help`" in learners


def _adopters_section() -> str:
    return README[README.index("## Adopters") : README.index("## Instructors")]


def test_the_adopters_section_follows_the_learners_and_installs_the_way_that_works():
    assert README.index("## Learners: start here") < README.index("## Adopters") < README.index("## Instructors")
    adopters = _adopters_section()
    installs = re.findall(r"^\s*(?:- run: )?pip install (.+)$", adopters, flags=re.MULTILINE)
    assert len(installs) == 3 and all("'../fnkit[" in i or " @ git+" in i for i in installs)
    # fnkit is not on the index: no line of the README installs it by its name alone
    assert not re.search(r"pip install ['\"]?fnkit(\[[a-z,]+\])?['\"]?\s*$", README, flags=re.MULTILINE)
    assert "is not on the package index" in adopters


def test_the_adopters_section_shows_the_setting_a_ci_workflow_extensions_and_ignore():
    adopters = _adopters_section()
    assert "[tool.fnkit]" in adopters and "extensions = true" in adopters and 'ignore = ["Q13"]' in adopters
    assert "--format github" in adopters and "--format sarif" in adopters and "upload-sarif" in adopters
    assert "QueueEventFactory" in adopters and "mypy --strict" in adopters
