"""Where the browser tests save their screenshots.

The README shows the committed ones (tests/browser/screenshots/, docs/learner-path/). A test run
writes them to the same place under build/screenshots/ (git ignores it), so running the tests leaves the working
tree as it was; with FNKIT_UPDATE_SCREENSHOTS=1 they go over the committed ones, to be
committed on purpose (`FNKIT_UPDATE_SCREENSHOTS=1 python3 kit.py test -m browser`).
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def screenshot_dir(committed: Path) -> Path:
    """The folder to write the screenshots of `committed` into on this run (made if missing)."""
    update = os.environ.get("FNKIT_UPDATE_SCREENSHOTS") == "1"
    folder = committed if update else ROOT / "build" / "screenshots" / committed.relative_to(ROOT)
    folder.mkdir(parents=True, exist_ok=True)
    return folder
