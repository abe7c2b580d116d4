"""`fnkit.check`: the public face of `fnkit.testing._check` (it draws its events with fnkit.testing's strategies)."""

from __future__ import annotations

from .testing._check import CHECK_SOURCES, CheckFinding, CheckResult, check

__all__ = ["CHECK_SOURCES", "CheckFinding", "CheckResult", "check"]
