"""`python -m fnkit.workshop doctor|progress|update|release ...`: what those commands of kit.py run in .venv."""

from __future__ import annotations

import sys

USAGE = """usage:
    python3 kit.py doctor [-v]                          is this machine ready for the workshop? (exit 0 or 1)
    python3 kit.py progress [--stored] [--csv FILE] [PATH...]   the exercises passed, per learner
    python3 kit.py update [--check]                     the instructor's new and changed notebooks into work/
    python3 kit.py release [NAME...|--hide]             solutions learners get in work/solutions/"""


def main(argv: list[str]) -> int:
    """Run the command named first."""
    if argv[:1] == ["doctor"]:
        from ._doctor import doctor

        return doctor(argv[1:])
    if argv[:1] == ["progress"]:
        from ._progress import progress_main

        return progress_main(argv[1:])
    if argv[:1] == ["update"]:
        from ._update import update_main

        return update_main(argv[1:])
    if argv[:1] == ["release"]:
        from ._update import release_main

        return release_main(argv[1:])
    print(USAGE, file=sys.stderr)
    return 0 if argv[:1] in (["-h"], ["--help"]) else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
