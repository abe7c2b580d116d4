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


def test_an_open_notebook_after_a_reset_is_reloaded_from_disk_not_saved():
    learners = " ".join(_learners_section().split())
    reset = learners.index("python3 kit.py reset exercises/01_queue")
    reload = learners.index("*File → Reload Notebook from Disk*", reset)
    assert "Overwrite" in learners[reload:] and "JupyterLab's own terminal" in learners[:reset]
    assert "it asks first; --yes does not" in learners


def test_the_learners_section_says_where_handlers_run_truly():
    learners = " ".join(_learners_section().split())
    assert "run in the kernel" in learners and "only a restart ends it" in learners
    assert "so none can freeze the kernel" not in learners
    assert not re.search(r"\d+ to \d+ s on this shared|load at \d+ to \d+", learners)  # no test timings


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


def test_the_instructors_section_walks_the_day_in_order():
    start = README.index("## Instructors")
    section = " ".join(README[start : README.index("\n## ", start + 1)].split())
    steps = [
        ("**Before the day, every laptop**", "python3 kit.py doctor"),
        ("**Adding an exercise**", "workshop.reload()"),
        ("**Releasing a solution**", "python3 kit.py release 02_mail"),
        ("**Who is stuck**", "python3 kit.py progress collected/ --csv class.csv"),
        ("**Updating the learners' copies**", "python3 kit.py update"),
    ]
    at = [section.index(heading) for heading, _ in steps]
    assert at == sorted(at), steps
    for (heading, command), end in zip(steps, [*at[1:], len(section)], strict=True):
        assert command in section[section.index(heading) : end], heading
    assert "**Supported systems**: Linux" in section and "macOS and Windows" in section
    assert "workshop.progress()" in section and "workshop.reload()" in section
