"""One `Outcome` protocol: replay, tabulate and the command line read every source's outcome the same way,
and every result shows itself in a notebook through one helper."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from pathlib import Path
from typing import Any, ClassVar

import pytest

import fnkit
from fnkit import _cells
from fnkit._engine.outcome import Display, Grid, Outcome, outcome_html, outcome_row
from fnkit._engine.report import Report
from fnkit._running.plan import PlannedCall
from fnkit._settings.config import with_settings
from fnkit.queue import QueueConfig


def _outcomes() -> dict[str, Any]:
    queue_event = fnkit.queue.build_event(["a", "b"])
    mail_event = fnkit.mail.build_event(mail_from="a@example.com", recipients=["b@example.com", "c@example.com"])
    alb_event = fnkit.alb.build_event("GET", "/")
    return {
        "BatchOutcome": fnkit.queue.outcome(
            queue_event, {"batchItemFailures": [{"itemIdentifier": fnkit.correlation_ids(queue_event)[0]}]}
        ),
        "MailOutcome": fnkit.mail.outcome(
            mail_event, {"actions": [{"action": {"type": "BOUNCE"}, "recipients": ["b@example.com"]}]}
        ),
        "HttpOutcome": fnkit.alb.outcome(alb_event, {"statusCode": 404, "body": "no"}),
        "MailRun": fnkit.mail.MailRule().run(lambda e, c: {"actions": []}, mail_event),
    }


@pytest.mark.parametrize("name", ["BatchOutcome", "MailOutcome", "HttpOutcome", "MailRun"])
def test_every_source_s_outcome_is_an_outcome_shown_by_the_one_helper(name):
    outcome = _outcomes()[name]
    assert type(outcome).__name__ == name and isinstance(outcome, Outcome)
    assert type(outcome)._repr_html_ is outcome_html and type(outcome).to_row is outcome_row
    row = outcome.to_row()
    assert list(row) == ["source", "outcome", "rule", "inferred", "reason", "items", "errors", "warnings"]
    assert row["outcome"] == outcome.headline and row["reason"] == outcome.explanation
    assert all(outcome.result_column in r for r in outcome.rows())
    html = outcome._repr_html_()
    assert outcome.rule in html and outcome.tone in {"good", "mixed", "bad", "none"}


def _html_makers() -> dict[str, Any]:
    """One value of every fnkit class that writes its own `_repr_html_`."""
    from fnkit.workshop._environment import EnvCheck, EnvironmentReport
    from fnkit.workshop._progress import ExerciseProgress, Progress
    from fnkit.workshop._registry import CheckResult, exercise_list

    sim = fnkit.queue.QueueSim()
    sim.send("x")
    return {
        **_outcomes(),
        "QueueRun": sim.run(lambda e, c: None),
        "Report": fnkit.validate({}),
        "QueueConfig": fnkit.queue.QueueConfig(),
        "MailConfig": fnkit.mail.MailConfig(),
        "AlbConfig": fnkit.alb.AlbConfig(),
        "CheckResult": CheckResult("ex1", "failed", "not yet", ["a problem"]),
        "EnvironmentReport": EnvironmentReport([EnvCheck("python", "3.11", "3.11", True)], None),
        "ExerciseList": exercise_list("queue"),
        "Progress": Progress("ana", [ExerciseProgress("ex1", "a title", "passed")]),
    }


def _classes_with_their_own_html() -> set[str]:
    found = set()
    for info in pkgutil.walk_packages(fnkit.__path__, "fnkit."):
        if info.name.endswith(".__main__"):  # running it is running the command line
            continue
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and "_repr_html_" in cls.__dict__ and not inspect.isabstract(cls):
                found.add(cls.__name__)
    return found


def test_every_html_of_fnkit_goes_through_the_one_panel_helper(monkeypatch):
    makers = _html_makers()
    # Table (a DataFrame) shows through frame_html; the protocols and the widgets' own views are not results
    exempt = {"Table", "Tabular", "Outcome", "Config"}
    missing = _classes_with_their_own_html() - set(makers) - exempt
    assert not missing, f"_repr_html_ written by hand (give it a sample here, and use panel_html): {missing}"
    calls = []
    real = _cells.panel_html

    def counting(*a: Any, **k: Any) -> str:
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(_cells, "panel_html", counting)
    for name, value in makers.items():
        calls.clear()
        html = value._repr_html_()
        assert calls and html, f"{name}._repr_html_ does not use panel_html"


# -- no branch per source: a new kind of outcome goes through unchanged -------------------------------


class _Verdict:
    """An outcome of a kind nobody wrote a branch for: its item column is "verdict"."""

    source: ClassVar[str] = "queue"
    result_column: ClassVar[str] = "verdict"
    rule = "Q7"
    inferred = False
    explanation = "Every record is kept for a reason no branch knows."
    headline = "kept"
    tone = "mixed"
    invocation = None

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids
        self.issues = Report((), "queue", None, "response")

    def rows(self) -> list[dict[str, Any]]:
        return [
            {
                "source": "queue",
                "item": i,
                "verdict": "kept",
                "rule": self.rule,
                "inferred": False,
                "reason": self.explanation,
            }
            for i in self.ids
        ]

    def _display(self) -> Display:
        return Display([Grid(self.rows(), ["item", "verdict"])])

    to_row = outcome_row
    _repr_html_ = outcome_html


def _fake_plan_call(event, *, config, timeout_s=None, context=None):
    """The queue's `plan_call` (the call `run` makes; replay makes it in chunks), deciding an unknown verdict."""
    return PlannedCall(event, timeout_s, lambda invocation: _Verdict(fnkit.correlation_ids(event)), context)


@with_settings(QueueConfig, "report_batch_item_failures")
def _fake_outcome(event, response, *, config=None, **settings):
    QueueConfig.of(config, settings, _fake_outcome)
    return _Verdict(fnkit.correlation_ids(event))


def test_replay_reads_any_outcome_through_the_protocol(monkeypatch):
    monkeypatch.setattr(fnkit.queue._outcome, "plan_call", _fake_plan_call)
    event = fnkit.queue.build_event(["a", "b"])
    frame = fnkit.replay(lambda e, c: None, [event], report_batch_item_failures=False)
    assert list(frame["result"]) == ["kept", "kept"]
    assert set(frame["reason"]) == {_Verdict.explanation}
    assert fnkit.tabulate(_Verdict(["m1"]))["verdict"].tolist() == ["kept"]


def test_the_command_line_reads_any_outcome_through_the_protocol(monkeypatch, tmp_path, capsys):
    from fnkit.cli import main

    monkeypatch.setattr(fnkit.queue, "outcome", _fake_outcome)
    event = tmp_path / "event.json"
    event.write_text(json.dumps(fnkit.queue.build_event(["a"])))
    response = tmp_path / "response.json"
    response.write_text("{}")
    assert main(["outcome", "--event", str(event), "--response", str(response), "--no-report-failures"]) == 0
    out = capsys.readouterr().out
    assert f"queue: rule Q7: {_Verdict.explanation}" in out and "kept" in out
    assert main(["outcome", "--event", str(event), "--response", str(response), "--format", "json"]) == 0
    [shown] = [r for r in json.loads(capsys.readouterr().out)["records"] if r["kind"] == "outcome"]
    assert shown["reason"] == _Verdict.explanation and shown["rows"][0]["verdict"] == "kept"


def test_cli_and_replay_name_no_source_s_outcome_type():
    root = Path(fnkit.__file__).parent
    for path in [
        *sorted((root / "cli").glob("*.py")),
        root / "_replay" / "run.py",
        root / "_replay" / "partition.py",
        root / "_table.py",
    ]:
        text, name = path.read_text(), path.relative_to(root).as_posix()
        for word in ("BatchOutcome", "MailOutcome", "HttpOutcome", "MailRun", 'source == "', 'name == "'):
            assert word not in text, f"fnkit/{name} special-cases a source ({word})"
