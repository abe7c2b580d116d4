"""Every `...` left in a handler is found, with its line and notebook cell (fnkit/workshop/_placeholders.py)."""

from __future__ import annotations

import pytest

from fnkit.workshop import placeholder_line, placeholders


def test_every_placeholder_in_order_with_its_code():
    def handler(event, context):
        name = ...
        if name is not None:
            ...  # answer here
        return {"x": [...]}

    found = placeholders(handler)
    start = handler.__code__.co_firstlineno
    assert [p.line for p in found] == [start + 1, start + 3, start + 4]
    assert [p.code for p in found] == ["name = ...", "...  # answer here", 'return {"x": [...]}']
    assert placeholder_line(handler) == start + 1
    assert all(p.cell is None and p.function == "handler" for p in found)


def test_a_finished_handler_has_none():
    def handler(event, context):
        return {"batchItemFailures": []}

    assert placeholders(handler) == [] and placeholder_line(handler) is None
    assert placeholders(42) == []


def helper_written_beside(record):
    return ...


def test_placeholders_in_a_helper_written_beside_the_handler_count():
    def handler(event, context):
        return [helper_written_beside(r) for r in event["Records"]]

    found = placeholders(handler)
    assert [p.function for p in found] == ["helper_written_beside"]


def test_in_a_notebook_each_placeholder_names_its_cell():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_cell("x = 1")
        shell.run_cell("def handler(event, context):\n    failures = []\n    return ...\n", store_history=True)
        count = shell.execution_count - 1
        found = placeholders(shell.user_ns["handler"])
        assert [(p.cell, p.line) for p in found] == [(f"cell [{count}]", 3)]
        assert str(found[0]) == f"cell [{count}], line 3 (in handler): return ..."
    finally:
        InteractiveShell.clear_instance()


@pytest.mark.parametrize("code", ["lambda e, c: ...", "lambda e, c: None"])
def test_code_without_source_still_counts_a_bare_placeholder(code):
    fn = eval(compile(code, "<no file>", "eval"))
    assert (placeholders(fn) != []) == ("..." in code)
