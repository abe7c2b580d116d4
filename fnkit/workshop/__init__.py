"""The workshop's helpers: the environment check of notebook 00, and the exercises' checks.

- `check_environment()`: compares this kernel with pyproject.toml and environment.yml and
  says exactly what to fix (`_environment`).
- `check(exercise_id, handler)`: runs the exercise's hidden cases on your handler and says,
  one sentence per finding, what is wrong; while `...` placeholders are left it is "not
  done yet" and names each one with its cell and line (`_registry`, `_placeholders`); when the
  handler's cell failed or changed since it ran, it says so first (`_history`).
- `exercises()`: the exercises, by id, with their titles (`_queue`, `_mail`, `_alb`);
  `exercise_list("mail")` shows those of one source (a lesson's closing cell).
- `progress()`: every exercise of your working copy, passed / not done / failing and why, read from
  copies executed in memory (your notebooks are not changed) (`_progress`).
- `reload()`: after editing a judge or its cases, the running kernel's checks use the new
  code (`_reload`).
- `try_it(handler, event)`: run your handler on an event of your own (a dict or JSON text):
  the outcome, or in a sentence why it cannot run (unfinished, JSON that does not parse, located).
- Helpers the exercises' handlers call (`_helpers`): `process_order`, `BadOrder`, `park`
  (queue); `attachment_names`, `add_disclaimer`, `EXECUTABLE_EXTENSIONS`, `FORMER_STAFF`,
  `mailbox_full` (mail); and `email_message` to make a deterministic email.
"""

from __future__ import annotations

from . import _alb, _mail, _queue  # noqa: F401 - importing an exercise module registers its exercises
from ._environment import EnvCheck, EnvironmentReport, check_environment, find_root
from ._helpers import (
    DISCLAIMER,
    EXECUTABLE_EXTENSIONS,
    FIXED_DATE,
    FORMER_STAFF,
    BadOrder,
    add_disclaimer,
    attachment_names,
    body_text,
    email_message,
    has_disclaimer,
    is_good_order,
    mailbox_full,
    park,
    process_order,
)
from ._history import install as _install_history
from ._placeholders import Placeholder, placeholder_line, placeholders
from ._progress import ExerciseProgress, Progress, progress
from ._registry import (
    CASE_TIMEOUT_S,
    Case,
    CheckResult,
    Exercise,
    ExerciseList,
    Finding,
    check,
    exercise_list,
    exercises,
    register,
    try_it,
)
from ._reload import reload

# in a kernel: each cell's run is recorded, so a check knows when the handler's cell failed or changed
_install_history()

__all__ = [
    "CASE_TIMEOUT_S",
    "DISCLAIMER",
    "EXECUTABLE_EXTENSIONS",
    "FIXED_DATE",
    "FORMER_STAFF",
    "BadOrder",
    "Case",
    "CheckResult",
    "EnvCheck",
    "EnvironmentReport",
    "Exercise",
    "ExerciseList",
    "ExerciseProgress",
    "Finding",
    "Placeholder",
    "Progress",
    "add_disclaimer",
    "attachment_names",
    "body_text",
    "check",
    "check_environment",
    "email_message",
    "exercise_list",
    "exercises",
    "find_root",
    "has_disclaimer",
    "is_good_order",
    "mailbox_full",
    "park",
    "placeholder_line",
    "placeholders",
    "process_order",
    "progress",
    "register",
    "reload",
    "try_it",
]
