#!/usr/bin/env python3
"""`python3 kit.py ...` where JupyterLab's terminal opens (work/): the repository's kit.py, one folder up.

`python3 kit.py lab` puts this file into your working copy, so its commands work from here too:
`python3 kit.py reset exercises/01_queue`, `python3 kit.py --help`.
"""

import runpy
import sys
from pathlib import Path

KIT = Path(__file__).resolve().parent.parent / "kit.py"
if not KIT.is_file():
    sys.exit(f"kit.py: the repository's kit.py is not at {KIT}; run the command from the repository's folder")
sys.argv[0] = str(KIT)
runpy.run_path(str(KIT), run_name="__main__")
