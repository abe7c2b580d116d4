"""The lists of exercises a learner reads come from the registry: lesson 02's closing cell, the README's count."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from fnkit import workshop
from fnkit.workshop import _registry

ROOT = Path(__file__).resolve().parents[2]
NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]


def test_exercise_list_shows_one_sources_exercises_from_the_registry():
    listed = workshop.exercise_list("mail")
    ids = [e.id for e in _registry._EXERCISES.values() if e.source == "mail"]
    assert [row[0] for row in listed.rows] == ids
    text = str(listed)
    assert text.splitlines()[0] == f"{len(ids)} exercises on the mail flow:"
    assert f"- mail-former-staff: {workshop.exercises()['mail-former-staff']}" in text
    assert "fnkit-exercises" in listed._repr_html_()
    assert len(workshop.exercise_list().rows) == len(workshop.exercises())


def test_lesson_02_closes_with_the_registrys_list_of_its_exercises():
    cells = json.loads((ROOT / "notebooks" / "02_mail_flow.ipynb").read_text(encoding="utf-8"))["cells"]
    closing = [c for c in cells if c["cell_type"] == "code"][-1]
    assert "".join(closing["source"]) == 'workshop.exercise_list("mail")'
    shown = "".join(closing["outputs"][0]["data"]["text/plain"])
    assert shown == str(workshop.exercise_list("mail"))  # nbval compares it too: an exercise added shows there


def test_the_readmes_count_of_exercises_is_the_registrys():
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    said = re.search(r"(\w+) exercises, (\w+) per source", readme)
    assert said is not None
    # the exercises of notebooks/exercises/ (a lesson's first task, such as 01's, is not one of them)
    held = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "notebooks" / "exercises").glob("*.ipynb"))
    per_source = Counter(e.source for e in _registry._EXERCISES.values() if f'check(\\"{e.id}\\"' in held)
    assert len(set(per_source.values())) == 1, f"the README says 'N per source'; the registry has {per_source}"
    assert said.groups() == (NUMBERS[sum(per_source.values())], NUMBERS[next(iter(per_source.values()))])
