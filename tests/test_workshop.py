"""The workshop's checks: hidden cases, plain-words sentences, "not done yet", and the environment check."""

from __future__ import annotations

import json
import linecache
from pathlib import Path

import pytest

from fnkit import workshop
from fnkit.workshop import (
    EXECUTABLE_EXTENSIONS,
    FORMER_STAFF,
    BadOrder,
    add_disclaimer,
    attachment_names,
    mailbox_full,
    park,
    process_order,
)

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def run_notebook_code(path: Path) -> tuple[dict, list]:
    """Execute a notebook's code cells in one namespace (each cell a 'file' inspect can read); the check results."""
    results = []
    real_check = workshop.check

    def recording_check(exercise_id, handler):
        result = real_check(exercise_id, handler)
        results.append(result)
        return result

    namespace: dict = {"__name__": "__notebook__"}
    cells = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    workshop.check = recording_check
    try:
        for n, cell in enumerate(cells):
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            name = f"<notebook {path.name} cell {n}>"
            linecache.cache[name] = (len(source), None, source.splitlines(True), name)
            exec(compile(source, name, "exec"), namespace)
    finally:
        workshop.check = real_check
    return namespace, results


def notebook_pairs() -> list[str]:
    return sorted(p.name for p in (NOTEBOOKS / "solutions").glob("*.ipynb"))


@pytest.mark.parametrize("name", notebook_pairs())
def test_every_solution_passes_its_checks(name):
    _, results = run_notebook_code(NOTEBOOKS / "solutions" / name)
    assert results, "a solution notebook without check cells"
    for result in results:
        assert result.passed, str(result)


@pytest.mark.parametrize("name", notebook_pairs())
def test_every_learner_version_runs_and_says_not_done_yet(name):
    _, results = run_notebook_code(NOTEBOOKS / "exercises" / name)
    assert results
    for result in results:
        assert result.status == "not done yet", str(result)
        assert "replace the ..." in result.message


def test_at_least_three_exercises_per_source_each_checked_in_a_notebook():
    ids = workshop.exercises()
    for source in ("queue", "mail", "alb"):
        assert sum(1 for i in ids if i.startswith(source + "-")) >= 3
    text = "".join(p.read_text(encoding="utf-8") for p in (NOTEBOOKS / "exercises").glob("*.ipynb"))
    for exercise_id in ids:
        assert f'workshop.check(\\"{exercise_id}\\"' in text, exercise_id


# --- "not done yet" and wrong input ------------------------------------------------------------


def test_placeholders_anywhere_in_the_handler_mean_not_done_yet():
    def untouched(event, context):
        ...

    def half_done(event, context):
        failures = []
        for record in event["Records"]:
            failures = ...
        return {"batchItemFailures": failures}

    for handler in (untouched, half_done):
        result = workshop.check("queue-partial", handler)
        assert result.status == "not done yet" and not result.passed
        assert f"replace the ... in {handler.__name__} (line " in result.message


def test_nonsense_is_answered_in_a_sentence_not_an_exception():
    assert workshop.check("queue-partial", None).status == "not done yet"
    assert "not a function" in workshop.check("queue-partial", 42).message
    result = workshop.check("no-such-exercise", lambda e, c: None)
    assert result.status == "failed" and "queue-partial" in result.message


def test_a_hanging_handler_stops_the_check_after_one_case():
    def forever(event, context):
        while True:
            pass

    result = workshop.check("alb-upper", forever)
    assert result.status == "failed"
    assert result.message.startswith("the check stopped at hidden case 1 of")
    assert "did not return within 2 s" in result.problems[0]


def test_results_render_as_text_and_html():
    result = workshop.check("queue-partial", lambda e, c: None)
    assert str(result).startswith("queue-partial: 5 of 6 hidden cases fail:")
    assert "fnkit-check-failed" in result._repr_html_()


# --- the sentences learners see for the usual mistakes --------------------------------------------


def first_problem(exercise_id, handler) -> str:
    result = workshop.check(exercise_id, handler)
    assert result.status == "failed", str(result)
    return result.problems[0]


def test_queue_partial_mistakes():
    def lets_it_raise(event, context):
        for record in event["Records"]:
            process_order(record["body"])

    assert "Catch BadOrder around each record" in first_problem("queue-partial", lets_it_raise)

    def wrong_key(event, context):
        return {"batchItemFailures": [{"id": r["messageId"]} for r in event["Records"]]}

    assert "complete failure" in first_problem("queue-partial", wrong_key)

    def capital_b(event, context):
        bad = []
        for r in event["Records"]:
            try:
                process_order(r["body"])
            except BadOrder:
                bad.append({"itemIdentifier": r["messageId"]})
        return {"BatchItemFailures": bad}

    assert "case-sensitive" in first_problem("queue-partial", capital_b)

    def lists_everything(event, context):
        return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}

    assert "processed twice" in first_problem("queue-partial", lists_everything)


def test_queue_fifo_mistake_breaks_the_order():
    def not_fifo_safe(event, context):
        failed = []
        for r in event["Records"]:
            try:
                process_order(r["body"])
            except BadOrder:
                failed.append({"itemIdentifier": r["messageId"]})
        return {"batchItemFailures": failed}

    problem = first_problem("queue-fifo", not_fifo_safe)
    assert "processed out of order" in problem and "customer 'a'" in problem


def test_queue_poison_mistakes():
    def compares_strings(event, context):
        failed = []
        for r in event["Records"]:
            try:
                process_order(r["body"])
            except BadOrder:
                if r["attributes"]["ApproximateReceiveCount"] >= 3:
                    park(r)
                else:
                    failed.append({"itemIdentifier": r["messageId"]})
        return {"batchItemFailures": failed}

    assert "int(...)" in first_problem("queue-poison", compares_strings)


def test_load_balancer_mistakes():
    def one_key(event, context):
        return {"statusCode": 200, "body": "welcome", "headers": {"Set-Cookie": "theme=dark"}}

    assert "differ only in case" in first_problem("alb-cookies", one_key)

    def not_decoded(event, context):
        name = (event.get("queryStringParameters") or {}).get("name")
        return {"statusCode": 200, "headers": {"content-type": "text/plain"}, "body": f"Hello, {name}!"}

    assert "urllib.parse.unquote" in first_problem("alb-greeting", not_decoded)

    def text_only(event, context):
        return {"statusCode": 200, "body": event["body"].upper()}

    assert "base64.b64decode" in first_problem("alb-upper", text_only)


def test_mail_mistakes():
    def no_disclaimer(event, context):
        return {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}]}

    assert "put_raw_message_content" in first_problem("mail-executables", no_disclaimer)

    def case_sensitive(event, context):
        gone = [r["address"] for r in event["envelope"]["recipients"] if r["address"] in FORMER_STAFF]
        actions = [{"action": {"type": "DEFAULT"}, "allRecipients": True}]
        if gone:
            actions.insert(0, {"action": {"type": "DROP"}, "recipients": gone})
        return {"actions": actions}

    assert "lower case" in first_problem("mail-former-staff", case_sensitive)

    def one_action_each(event, context):
        actions = [{"action": {"type": "BOUNCE", "parameters": {"bounceMessage": f"{r['address']} is full"}},
                    "recipients": [r["address"]]}
                   for r in event["envelope"]["recipients"] if mailbox_full(r["address"])]
        return {"actions": actions + [{"action": {"type": "DEFAULT"}, "allRecipients": True}]}

    assert "only the first 10 unique actions count" in first_problem("mail-full-mailboxes", one_action_each)


# --- helpers ------------------------------------------------------------------------------------------


def test_process_order_and_park():
    assert process_order('{"order": 1, "qty": 2}')["qty"] == 2
    for bad in ["", "[]", '{"qty": 0}', '{"qty": true}', '{"qty": "2"}']:
        with pytest.raises(BadOrder):
            process_order(bad)


def test_email_helpers_are_deterministic_and_round_trip():
    a = workshop.email_message(attachments=["a.pdf", "Setup.EXE"]).as_bytes()
    assert a == workshop.email_message(attachments=["a.pdf", "Setup.EXE"]).as_bytes()
    assert attachment_names(a) == ["a.pdf", "Setup.EXE"]
    assert "Setup.EXE".lower().endswith(EXECUTABLE_EXTENSIONS)
    changed = add_disclaimer(a)
    assert workshop.has_disclaimer(changed) and not workshop.has_disclaimer(a)
    assert attachment_names(changed) == ["a.pdf", "Setup.EXE"]
    from fnkit.mail import mime_problems

    assert mime_problems(changed) == []


# --- the environment check -------------------------------------------------------------------------------


def test_the_environment_check_passes_here():
    report = workshop.check_environment()
    problems = [c for c in report.problems if c.severity == "error"]
    assert not problems, report.details()
    assert {"python", "pandas", "ipywidgets", "fnkit", "widgets"} <= {c.what for c in report.checks}


def test_the_environment_check_says_exactly_what_to_fix(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "fnkit"\nrequires-python = ">=3.99"\ndependencies = ["pandas>=2", "surely-not-installed-pkg>=1"]\n'
        '[project.optional-dependencies]\nlab = ["ipywidgets>=99"]\n', encoding="utf-8")
    (tmp_path / "environment.yml").write_text("dependencies:\n  - python>=3.99\n  - pip:\n      - -e .[lab]\n", encoding="utf-8")
    report = workshop.check_environment(tmp_path)
    assert not report.ok
    bad = {c.what: c for c in report.problems}
    assert "python" in bad and "3.99" in bad["python"].needed
    assert bad["surely-not-installed-pkg"].found == "not installed"
    assert "python3 kit.py lab" in bad["surely-not-installed-pkg"].fix
    assert "ipywidgets" in bad and "pip install" in bad["ipywidgets"].fix
    assert "fnkit" in bad  # this fnkit is not the one of tmp_path
    text = str(report)
    assert text.splitlines()[0].startswith("✘") and "fix:" in text


def test_a_missing_project_is_explained(tmp_path, monkeypatch):
    monkeypatch.setattr(workshop, "find_root", lambda start=None: None)
    report = workshop.check_environment()
    assert not report.ok and "fnkit repository" in report.problems[0].fix
