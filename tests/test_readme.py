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
