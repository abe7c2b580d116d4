"""`python -m fnkit.cli`: the command line (as `fnkit` and `python -m fnkit`)."""

from . import main

raise SystemExit(main())
