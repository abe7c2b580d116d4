"""Which request bodies go as text: one statement (fnkit.alb.TEXT_BODIES), for the code, the lesson, the exercise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fnkit import alb
from fnkit.alb._http import TEXT_TYPES

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def _markdown(name: str) -> str:
    cells = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


@pytest.mark.parametrize(
    "notebook", ["03_load_balancer.ipynb", "exercises/03_load_balancer.ipynb", "solutions/03_load_balancer.ipynb"]
)
def test_the_lesson_and_the_exercise_state_the_codes_sentence(notebook):
    # the markdown may wrap it over lines and mark the names up as code
    said = " ".join(_markdown(notebook).replace("`", "").replace("**", "").split())
    assert alb.TEXT_BODIES in said


def test_the_sentence_names_every_text_type_and_the_code_follows_it():
    for kind in [*TEXT_TYPES, "text/*", "content-encoding", "isBase64Encoded true"]:
        assert kind in alb.TEXT_BODIES
    for kind, as_text in [
        ("text/csv", True),
        ("application/json; charset=utf-8", True),
        ("application/javascript", True),
        ("application/xml", True),
        ("application/x-www-form-urlencoded", False),
        ("image/png", False),
    ]:
        event = alb.build_event("POST", "/", headers={"content-type": kind}, body=b"qty=2", seed=1)
        assert event["isBase64Encoded"] is not as_text, kind
    zipped = alb.build_event("POST", "/", headers={"content-type": "text/plain", "content-encoding": "gzip"}, body=b"x")
    assert zipped["isBase64Encoded"] is True


def test_the_warning_for_a_body_sent_as_text_wrongly_says_the_sentence():
    event = alb.build_event("POST", "/", headers={"content-type": "image/png"}, body=b"png", seed=1)
    event["isBase64Encoded"] = False
    warnings = [i.message for i in alb.validate_event(event) if i.rule == "A4"]
    assert warnings and warnings[0].endswith(alb.TEXT_BODIES[1:])
