"""`python -m fnkit`: the command line."""

from .cli import main

raise SystemExit(main())
