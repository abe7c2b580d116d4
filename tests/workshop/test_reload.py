"""`workshop.reload()`: an edited judge takes effect in a running kernel (fnkit/workshop/_reload.py)."""

from __future__ import annotations

import importlib
import sys

import pytest

from fnkit import workshop
from fnkit.workshop import _registry

MODULE = """
from fnkit.workshop import Case, Exercise, register


def _cases():
    return [Case("one", {{}})]


def _judge(handler, case):
    return {sentence!r}


register(Exercise("reload-demo", "queue", "a demo exercise", _cases, _judge))
"""


def handler(event, context):
    return {"batchItemFailures": []}


@pytest.fixture
def instructors_module(tmp_path, monkeypatch):
    """An instructor's module of exercises, imported as a kernel would; forgotten afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    path = tmp_path / "my_exercises.py"
    path.write_text(MODULE.format(sentence="the first sentence."), encoding="utf-8")
    importlib.import_module("my_exercises")
    yield path
    _registry._EXERCISES.pop("reload-demo", None)
    sys.modules.pop("my_exercises", None)


def test_an_edited_judge_says_its_new_sentence_after_reload(instructors_module):
    assert "the first sentence." in str(workshop.check("reload-demo", handler))
    instructors_module.write_text(MODULE.format(sentence="the edited, longer sentence."), encoding="utf-8")
    assert "the first sentence." in str(workshop.check("reload-demo", handler))  # not yet: the kernel's old judge
    said = workshop.reload()
    assert "the edited, longer sentence." in str(workshop.check("reload-demo", handler))
    assert "reload-demo" in said and "queue-partial" in said
    workshop.reload()  # again: no "two exercises have the id ..."
    assert list(workshop.exercises()).count("reload-demo") == 1


def test_the_workshops_own_exercises_reload_and_keep_their_ids():
    before = dict(workshop.exercises())
    workshop.reload()
    workshop.reload()
    assert workshop.exercises() == before
    passed = workshop.check("queue-partial", handler)
    assert passed.status == "failed"  # the reloaded judge runs, and the registry holds each exercise once


def test_a_module_that_no_longer_loads_leaves_the_exercises_as_they_were(instructors_module):
    instructors_module.write_text("def broken(:\n", encoding="utf-8")
    with pytest.raises(SyntaxError):
        workshop.reload()
    assert "the first sentence." in str(workshop.check("reload-demo", handler))
    assert "queue-partial" in workshop.exercises()


def test_the_helpers_notebooks_hold_still_match_after_reload():
    from fnkit.workshop import BadOrder, process_order

    workshop.reload()
    with pytest.raises(BadOrder):  # a notebook's `except BadOrder:` still catches what process_order raises
        process_order('{"order": 1, "qty": 0}')
