"""A check knows what ran: a handler's cell that failed, or changed since it ran, is said before grading.

Cells run in a real IPython shell, as in a kernel: the handler's cell, then an edit of it
that fails, then the check.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from IPython.core.interactiveshell import InteractiveShell

from fnkit import workshop
from fnkit.workshop import _history

PLACEHOLDER = """def report_failures(event, context):
    failures = []
    for record in event["Records"]:
        ...  # process the order
    return ...
"""
RIGHT = """def report_failures(event, context):
    failures = []
    for record in event["Records"]:
        try:
            process_order(record["body"])
        except BadOrder:
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
"""
# the learner's edit, one line indented one level too little
BROKEN = RIGHT.replace("            failures.append", "        failures.append")
CHECK = 'result = workshop.check("queue-partial", report_failures)'


@pytest.fixture
def shell():
    shell = InteractiveShell.instance()
    assert _history.install(shell)
    shell.run_cell("from fnkit import workshop\nfrom fnkit.workshop import BadOrder, process_order", store_history=True)
    yield shell
    InteractiveShell.clear_instance()


def run(shell, source):
    return shell.run_cell(source, store_history=True)


def test_a_check_after_the_handlers_cell_failed_says_so_and_names_the_cell(shell):
    run(shell, PLACEHOLDER)
    first = shell.execution_count - 1
    assert not run(shell, BROKEN).success
    broken = shell.execution_count - 1
    run(shell, CHECK)
    result = shell.user_ns["result"]
    assert result.status == "not done yet"
    assert result.message == (
        f"the cell that defines report_failures failed with IndentationError on line 7 when it ran as cell "
        f"[{broken}]; the check used the earlier version, from cell [{first}]: fix it, run it, then this check."
    )
    assert result.problems[0].startswith("the earlier version: not done yet: report_failures")
    # fixed and run: graded as usual
    run(shell, RIGHT)
    run(shell, CHECK)
    assert shell.user_ns["result"].passed, shell.user_ns["result"]


def test_a_handlers_cell_that_raised_before_its_def_is_said_with_its_error_and_line(shell):
    run(shell, PLACEHOLDER)
    first = shell.execution_count - 1
    assert not run(shell, "limit = undefined_name\n" + RIGHT).success  # raised on line 1: the def never ran
    failed = shell.execution_count - 1
    run(shell, CHECK)
    assert shell.user_ns["result"].message.startswith(
        f"the cell that defines report_failures failed with NameError on line 1 when it ran as cell [{failed}]; "
        f"the check used the earlier version, from cell [{first}]"
    )
    # a cell that defined it anew, then raised: the name holds the new version, graded as usual
    run(shell, RIGHT + "\nrecord = undefined_name\n")
    run(shell, CHECK)
    assert shell.user_ns["result"].passed


def test_a_placeholder_message_says_to_run_the_handlers_cell_then_the_check(shell):
    run(shell, PLACEHOLDER)
    defined = shell.execution_count - 1
    run(shell, CHECK)
    result = shell.user_ns["result"]
    assert result.message == (
        f"not done yet: report_failures (as cell [{defined}] defined it) still holds 2 placeholders (...); "
        "replace each with your code, run the handler's cell, then this check."
    )


def test_a_check_before_its_handler_exists_says_which_cell_to_run_not_a_traceback(shell, capsys):
    outcome = run(shell, 'workshop.check("queue-partial", report_failures)')
    shown = capsys.readouterr().out
    assert isinstance(outcome.error_in_exec, NameError)  # the cell did not succeed: Run All stops there
    assert "Traceback" not in shown and "NameError" not in shown
    assert "report_failures is not defined yet: run the cell that defines it" in shown
    assert "`def report_failures(event, context):`, above this one), then this check." in shown
    # any other NameError keeps its traceback
    run(shell, "print(nowhere)")
    assert "NameError" in capsys.readouterr().out


def test_a_handlers_cell_edited_and_saved_since_it_ran_is_said(shell, tmp_path):
    notebook = tmp_path / "01_queue.ipynb"
    run(shell, PLACEHOLDER)
    defined = shell.execution_count - 1
    cells: list[dict[str, object]] = [
        {"cell_type": "code", "source": RIGHT, "metadata": {}, "outputs": [], "execution_count": None}
    ]
    notebook.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    later = time.time() + 5
    os.utime(notebook, (later, later))  # saved after the run
    shell.user_ns["__session__"] = str(notebook)
    run(shell, CHECK)
    result = shell.user_ns["result"]
    assert result.message == (
        f"the cell that defines report_failures has changed since it ran as cell [{defined}]; "
        "the check used the version that ran: run that cell, then this check."
    )
    # saved before the run: the file cannot say what is on screen, so nothing is said
    earlier = time.time() - 60
    os.utime(notebook, (earlier, earlier))
    run(shell, CHECK)
    assert shell.user_ns["result"].message.startswith("not done yet: report_failures")


def test_outside_a_kernel_nothing_is_said():
    def report_failures(event, context):
        return {"batchItemFailures": []}

    assert _history.stale_note(report_failures) is None
    assert workshop.check("queue-partial", report_failures).status in ("passed", "failed")
