"""The widgets, driven from Python the way most notebooks and tests drive them."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

pytest.importorskip("ipywidgets")

import fnkit
from fnkit import widgets
from fnkit.widgets import EventBuilder, HandlerRunner, ResponseExplorer
from fnkit.widgets._explorer import _slug

GOOD = ['{"order": 1, "qty": 2}', '{"order": 2, "qty": 1}', '{"order": 3, "qty": 5}']
ONE_BAD = ['{"order": 1, "qty": 2}', '{"order": 2, "qty": 0}', '{"order": 3, "qty": 5}']


def classes(widget) -> list[str]:
    return list(widget._dom_classes)


# --- the event builder ----------------------------------------------------------------------


@pytest.mark.parametrize("source", ["queue", "mail", "alb"])
def test_a_fresh_builder_holds_a_valid_event_of_its_source(source):
    builder = EventBuilder(source, seed=0)
    assert builder.report.ok, builder.report
    assert fnkit.detect_source(builder.event) == source
    assert builder.event == EventBuilder(source, seed=0).event  # seeded: the same every time
    assert f"fnkit-builder-{source}" in classes(builder.widget)


def test_setting_fields_rebuilds_the_event_and_the_preview():
    builder = EventBuilder("queue", seed=0)
    builder.set(bodies=["a", "b"], fifo=True, group_ids=["g1", "g2"])
    assert builder.event is not None
    records = builder.event["Records"]
    assert [r["body"] for r in records] == ["a", "b"]
    assert [r["attributes"]["MessageGroupId"] for r in records] == ["g1", "g2"]
    assert '"MessageGroupId": "g1"' in builder.preview.value
    assert builder.values["group_ids"] == ["g1", "g2"]
    assert not builder.edited


def test_the_event_is_a_copy_the_caller_may_change():
    builder = EventBuilder("queue")
    mine = builder.event
    assert mine is not None
    mine["Records"].clear()
    again = builder.event
    assert again is not None and len(again["Records"]) == 3


def test_a_form_value_that_makes_no_sense_is_shown_at_its_field_in_words():
    builder = EventBuilder("queue").set(fifo=True, group_ids=["only-one"])
    assert builder.event is None and not builder.report.ok
    issue = builder.report.errors[0]
    assert issue.path == "Group ids"
    assert "3 bodies but 1 group id" in issue.message
    # beside the field it is about, not in the list under the JSON
    error = builder.field_errors["group_ids"]
    assert "3 bodies but 1 group id" in error.value and error.layout.display == ""
    assert "fnkit-field-error" in classes(error)
    assert all(e.layout.display == "none" for name, e in builder.field_errors.items() if name != "group_ids")
    assert builder.issue_list.value == "" and "Group ids" in builder.status.value
    builder.set(group_ids=["a", "a", "b"])
    assert (builder.report.ok, error.layout.display) == (True, "none")


def test_labels_fit_their_text():
    builder = EventBuilder("queue")
    width = builder.controls["message_attributes"].style.description_width
    assert width.endswith("ch") and int(width[:-2]) >= len("Message attributes")
    runner = HandlerRunner(builder=EventBuilder("mail"))
    assert int(runner.config_controls["fallback_action"].style.description_width[:-2]) >= len("Fallback action")


def test_invalid_json_in_a_json_field_is_located():
    builder = EventBuilder("queue").set(message_attributes='{"Author": }')
    assert builder.event is None
    assert "line 1, column 12" in builder.report.errors[0].message


def test_invalid_json_typed_into_the_preview_is_located_and_reset_brings_the_form_back():
    builder = EventBuilder("queue")
    builder.set_text('{\n  "Records": [\n    {"messageId": "m1",}\n  ]\n}')
    assert builder.edited and builder.event is None
    message = builder.report.errors[0].message
    assert "line 3, column" in message and "not valid JSON" in message
    assert builder.reset_button.layout.display == ""
    builder.reset()
    assert (builder.edited, builder.report.ok) == (False, True)
    assert builder.reset_button.layout.display == "none"


def test_a_hand_edited_event_is_validated_live():
    builder = EventBuilder("queue")
    event = builder.event
    assert event is not None
    event["Records"][0]["md5OfBody"] = "0" * 32
    import json

    builder.set_text(json.dumps(event))
    assert builder.edited and not builder.report.ok
    assert builder.report.errors[0].path == "$.Records[0].md5OfBody"


def test_an_unknown_field_is_a_type_error_naming_the_fields():
    with pytest.raises(TypeError, match="bodies"):
        EventBuilder("queue").set(body=["a"])
    with pytest.raises(ValueError, match="queue"):
        EventBuilder("sns")


def test_listeners_hear_every_change():
    builder = EventBuilder("alb")
    seen = []
    builder.on_change(lambda b: seen.append(b.event["path"] if b.event else None))
    builder.set(path="/a")
    builder.set(path="no-slash")
    assert seen == ["/a", None]


def test_every_field_has_a_css_class_the_browser_can_find():
    builder = EventBuilder("queue")
    for name in widgets.fields("queue"):
        assert f"fnkit-field-{name.replace('_', '-')}" in classes(builder.controls[name])
    assert "fnkit-preview" in classes(builder.preview)


def test_the_text_shown_for_a_widget_is_short_and_deterministic():
    bundle = EventBuilder("queue", seed=0)._repr_mimebundle_()
    assert bundle["text/plain"] == "EventBuilder('queue': 3 record(s), valid queue event, from the form)"
    assert "application/vnd.jupyter.widget-view+json" in bundle


# --- the handler runner ----------------------------------------------------------------------------


def test_the_runner_runs_the_chosen_example_on_the_builders_event():
    builder = EventBuilder("queue")
    runner = HandlerRunner(builder=builder)
    assert runner.summary == "not run yet"
    assert runner.run().kind == "success"
    builder.set(bodies=ONE_BAD)
    outcome = runner.run()
    assert outcome.kind == "partial" and runner.summary == "partial"
    assert runner.view.rule == "Q8"
    assert [row["action"] for row in runner.rows] == ["delete", "retry", "delete"]
    assert "partial" in runner.view.badge.value
    assert "fnkit-run" in classes(runner.button) and "fnkit-outcome" in classes(runner.view.badge)


def test_the_runner_runs_the_learners_own_function():
    def everything_failed(event, context):
        return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}

    runner = HandlerRunner(builder=EventBuilder("queue"), handler=everything_failed)
    assert runner.run().kind == "partial"
    assert "your handler: everything_failed" in runner.handler_choice.options[0][0]


def test_a_raising_handler_is_shown_in_plain_words_at_its_line():
    def broken(event, context):
        total = 0
        return 1 / total

    runner = HandlerRunner(builder=EventBuilder("queue"), handler=broken)
    assert runner.run().kind == "failure"
    first = runner.issues[0].message
    assert first.startswith("Your handler raised ZeroDivisionError: division by zero (in broken, line ")
    assert ": return 1 / total)." in first
    assert runner.view.rule == "Q6"


def test_a_hanging_handler_is_stopped_at_the_runners_timeout():
    def forever(event, context):
        while True:
            time.sleep(0.01)

    runner = HandlerRunner(builder=EventBuilder("alb"), handler=forever, timeout_s=0.2)
    started = time.monotonic()
    outcome = runner.run()
    assert time.monotonic() - started < 3
    assert outcome.status == 502 and runner.summary == "502 Bad Gateway"
    assert "did not return within 0.2 s" in runner.issues[0].message


def test_junk_and_wrong_signatures_are_explained():
    runner = HandlerRunner(builder=EventBuilder("queue"), handler=lambda event, context: {"batchItemFailures": {1, 2}})
    assert runner.run().kind == "failure"
    assert "cannot be encoded as JSON" in runner.issues[0].message

    def one_argument(event):
        return None

    runner.use(one_argument).run()
    assert "A handler takes two arguments" in runner.issues[0].message


def test_the_runner_says_why_it_cannot_run_instead_of_raising():
    builder = EventBuilder("queue").set(fifo=True, group_ids=["a"])
    runner = HandlerRunner(builder=builder)
    assert runner.run() is None and runner.summary == "no event"
    assert runner.issues[0].path == "Group ids"
    builder.reset().set(fifo=False, group_ids=None)
    builder.set_text('{"Records": []}')
    assert runner.run() is None and runner.summary == "invalid event"


def test_a_bug_inside_fnkit_is_shown_not_raised(monkeypatch):
    runner = HandlerRunner(builder=EventBuilder("queue"))
    monkeypatch.setattr(runner.adapter, "run", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("boom")))
    assert runner.run() is None
    assert runner.summary == "fnkit error" and "RuntimeError: boom" in runner.message


def test_reporting_off_is_a_setting_of_the_runner():
    builder = EventBuilder("queue").set(bodies=ONE_BAD)
    runner = HandlerRunner(builder=builder, report_batch_item_failures=False)
    outcome = runner.run()
    assert outcome.kind == "success" and outcome.rule == "Q7"
    assert any(i.rule == "Q7" for i in runner.issues)
    with pytest.raises(TypeError):
        HandlerRunner(builder=builder, fifo=True)


def test_the_load_balancer_runner_shows_what_the_client_receives():
    builder = EventBuilder("alb")
    runner = HandlerRunner(builder=builder)
    runner.run()
    assert runner.summary == "200 OK"
    assert runner.rows[-1] == {"part": "body", "name": "20 bytes", "value": "Hello, Ada Lovelace!"}
    builder.set(path="/cookies", multi_value=True)
    runner.run()
    assert [r["value"] for r in runner.rows if r["name"].lower() == "set-cookie"] == [
        "session=abc123; HttpOnly",
        "theme=dark",
    ]
    builder.set(path="/boom")
    runner.run()
    assert runner.summary == "502 Bad Gateway" and runner.view.rule == "A5"


def test_the_mail_runner_shows_a_decision_per_recipient():
    builder = EventBuilder("mail").set(attachments=["setup.exe"])
    runner = HandlerRunner(builder=builder, handler="bounce executables, disclaimer on the rest")
    runner.run()
    assert runner.summary == "applied: 2 BOUNCE"
    assert {row["recipient"] for row in runner.rows} == {"bob@example.org", "carol@example.org"}
    runner.set(mode="async").run()
    assert runner.summary.startswith("ignored")


# --- running, stopping ------------------------------------------------------------------------------


def never_returns(event, context):
    while True:
        try:
            time.sleep(1)
        except BaseException:  # noqa: BLE001 - the learner's mistake: every exception swallowed, an interrupt too
            pass


def wait_for(predicate, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.02)


def test_the_run_button_starts_the_handler_without_waiting_and_stop_kills_it():
    runner = HandlerRunner(builder=EventBuilder("queue"), handler=never_returns, timeout_s=30)
    killed = fnkit.isolation.stats()["workers_killed"]
    runner.button.click()  # what a click does: start, and give the kernel back at once
    assert runner.running and runner.summary == "running…"
    assert runner.button.disabled and runner.stop_button.layout.display != "none"
    assert "fnkit-running" in classes(runner.widget) and "fnkit-stop" in classes(runner.stop_button)
    assert runner.start() is False  # one run at a time
    wait_for(lambda: runner.elapsed_s > 0.5)
    wait_for(lambda: "running… 0." not in runner.clock.value)  # the clock moves
    assert runner.clock.value.count("running… ") == 1 and " s</span>" in runner.clock.value
    with pytest.raises(TimeoutError):
        runner.wait(0.1)
    runner.stop_button.click()  # returns once "stopped" is shown
    assert (runner.running, runner.stopped, runner.outcome) == (False, True, None)
    assert fnkit.isolation.stats()["workers_killed"] == killed + 1
    assert runner.summary == "stopped" and "stopped" in runner.view.badge.value
    assert runner.message.startswith("You stopped the handler after ")
    assert "its worker process was killed, and the kernel is free" in runner.message
    assert "a handler that never returns is stopped at its timeout, and then: the function timed out" in runner.message
    assert runner.view.rule == "Q6"  # what the platform does: the whole batch comes back
    assert {row["action"] for row in runner.rows} == {"retry"}
    assert runner.stop_button.layout.display == "none" and not runner.button.disabled
    assert "fnkit-running" not in classes(runner.widget) and runner.clock.value == ""
    assert runner.use("list bad orders").run().kind == "success"  # the next run is as usual
    assert not runner.stopped and runner.summary == "success"


@pytest.mark.parametrize(
    ("source", "word", "rule"), [("alb", "502 Bad Gateway", "A5"), ("mail", "fallback: 2 DEFAULT", "M3")]
)
def test_a_stopped_run_says_what_the_platform_does_with_a_handler_that_never_returns(source, word, rule):
    runner = HandlerRunner(builder=EventBuilder(source), handler=never_returns, timeout_s=30)
    assert runner.start()
    wait_for(lambda: runner.elapsed_s > 0.3)
    assert runner.stop() is True and runner.stop() is False
    assert runner.summary == "stopped" and runner.view.rule == rule
    assert runner.message.startswith("You stopped the handler after ")
    assert runner.view.badge.value.count("stopped") == 1 and word not in runner.view.badge.value


def test_run_from_code_waits_and_jupyters_interrupt_stops_it():
    import signal
    import threading

    runner = HandlerRunner(builder=EventBuilder("queue"), handler=never_returns, timeout_s=30)
    main = threading.main_thread().ident
    assert main is not None
    seen = []

    def interrupt():  # what the runner shows while a cell waits, then Kernel -> Interrupt
        seen.append((runner.summary, runner.message, runner.stop_button.layout.display))
        signal.pthread_kill(main, signal.SIGINT)

    threading.Timer(1.0, interrupt).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    assert time.monotonic() - started < 20  # long before the runner's 30 s timeout
    assert runner.stopped and not runner.running and runner.summary == "stopped"
    assert runner.message.startswith("Jupyter's interrupt stopped the handler after ")
    summary, message, stop_shown = seen[0]
    assert summary == "running…" and "■ (Kernel → Interrupt Kernel) stops it now" in message
    assert stop_shown == "none"  # a click would queue behind the waiting cell: no Stop button offered then
    assert runner.use("list bad orders").run().kind == "success"


def test_problems_before_running_are_said_at_once_without_a_clock():
    builder = EventBuilder("queue").set(fifo=True, group_ids=["a"])
    runner = HandlerRunner(builder=builder)
    assert runner.start() is True and not runner.running and runner.summary == "no event"
    assert runner.clock.value == "" and runner.stop_button.layout.display == "none"


# --- the response explorer ---------------------------------------------------------------------------

QUEUE_FORMS = {  # key: (the button's label, what the platform does)
    "null": ("all deleted · null", "success"),
    "{}": ("all deleted · {}", "success"),
    "failures null": ("all deleted · failures null", "success"),
    "failures []": ("all deleted · failures []", "success"),
    "first message failed": ("first retried, rest deleted", "partial"),
    "last message failed": ("last retried, rest deleted", "partial"),
    "invalid JSON": ("whole batch retried · invalid JSON", "failure"),
    "empty id": ("whole batch retried · empty id", "failure"),
    "null id": ("whole batch retried · null id", "failure"),
    "wrong key name": ("whole batch retried · id under 'id'", "failure"),
    "id not in batch": ("whole batch retried · id not in batch", "failure"),
    "misspelled key": ("all deleted, failure lost · 'BatchItemFailures'", "success"),
}


def test_every_queue_form_of_the_spec_is_one_press_away_and_decided():
    explorer = ResponseExplorer(fnkit.queue.build_event(GOOD, seed=1), source="queue")
    assert set(explorer.forms) == {label for label, _ in QUEUE_FORMS.values()}
    for key, (label, kind) in QUEUE_FORMS.items():
        for name in (key, label):  # the button's label, or the form's short key
            explorer.press(name)
            assert explorer.outcome.kind == kind, name
            assert explorer.summary == kind
        assert f"fnkit-form-{_slug(key)}" in classes(explorer.form_buttons[label])
    assert "fnkit-form" in classes(explorer.form_buttons["all deleted · null"])


def test_form_labels_say_what_the_platform_does():
    effects = (
        "all deleted",
        "retried",
        "whole batch retried",
        "failure lost",
        "delivered",
        "bounced",
        "dropped",
        "fallback",
        "502",
        "200",
        "404",
        "cookies set",
        "ignored",
        "stricter action wins",
    )
    for source in ("queue", "mail", "alb"):
        for label in widgets.forms(source):
            assert label.startswith(effects) or any(e in label.split(" · ")[0] for e in effects), label
    assert "fnkit-form-wrong-key-name" in classes(
        ResponseExplorer(source="queue").form_buttons["whole batch retried · id under 'id'"]
    )


def test_the_explorer_decides_live_and_locates_invalid_json():
    event = fnkit.queue.build_event(GOOD, seed=1)
    explorer = ResponseExplorer(event, source="queue")
    explorer.set_text(json.dumps({"batchItemFailures": [{"itemIdentifier": event["Records"][1]["messageId"]}]}))
    assert explorer.summary == "partial"
    explorer.set_text('{"batchItemFailures": [\n  {"itemIdentifier": "x"},\n]}')
    assert explorer.summary == "failure"
    assert "at line 3, column 1" in explorer.issues[0].message
    explorer.set_text("")
    assert "empty" in explorer.issues[0].message
    explorer.set(report_batch_item_failures=False).set_text('{"batchItemFailures": [{"itemIdentifier": "x"}]}')
    assert explorer.outcome.rule == "Q7"
    with pytest.raises(ValueError, match="no form 'no such form'; forms: "):
        explorer.press("no such form")


def test_the_explorer_follows_a_builder():
    builder = EventBuilder("alb")
    explorer = ResponseExplorer(builder=builder)
    explorer.press("two cookies")
    assert explorer.summary == "200 OK"
    builder.set(multi_value=True)
    assert any(i.code == "ignored" for i in explorer.issues)  # the single-value form is now the wrong field
    explorer.press("two cookies")
    assert explorer.outcome.header_values("set-cookie") == ["session=abc123", "theme=dark"]
    builder.set(path="nope")
    assert explorer.summary == "no event"


@pytest.mark.parametrize(
    ("label", "status"),
    [
        ("200 text", 200),
        ("status only", 200),
        ("status as a string", 502),
        ("no statusCode", 502),
        ("body null", 502),
        ("bad base64", 502),
        ("not an object", 502),
        ("invalid JSON", 502),
    ],
)
def test_load_balancer_forms(label, status):
    explorer = ResponseExplorer(source="alb").press(label)
    assert explorer.outcome.status == status


@pytest.mark.parametrize(
    ("label", "status"),
    [
        ("deliver to all", "applied"),
        ("conflict", "applied"),
        ("no actions", "fallback"),
        ("unknown type", "fallback"),
        ("null", "fallback"),
        ("invalid JSON", "fallback"),
    ],
)
def test_mail_forms(label, status):
    explorer = ResponseExplorer(source="mail", fallback_action="BOUNCE").press(label)
    assert explorer.outcome.status == status
    if status == "fallback":
        assert explorer.summary.startswith("fallback: 2 BOUNCE")


def test_importing_fnkit_loads_neither_pandas_nor_ipywidgets():
    code = (
        "import sys, fnkit, fnkit.queue, fnkit.mail, fnkit.alb; "
        "print('pandas' in sys.modules, 'ipywidgets' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
    code = "import sys, fnkit.widgets, fnkit.workshop; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False"]


def test_an_event_that_is_not_json_or_not_valid_is_explained_not_raised():
    explorer = ResponseExplorer('{"Records": [', source="queue")
    assert explorer.summary == "invalid event" and "line 1, column 14" in explorer.issues[0].message
    explorer = ResponseExplorer({"Records": []}, source="queue")
    assert explorer.summary == "invalid event" and explorer.issues[0].path == "$.Records"
    runner = HandlerRunner(event='{"Records": [', source="queue")
    assert runner.run() is None and runner.summary == "invalid event"
    assert "not valid JSON" in runner.issues[0].message


def test_every_one_line_fields_placeholder_shows_whole():
    # a one-line field shows its placeholder beside its label in a half-width form: a long help was cut
    # there, so it goes to the tooltip and the placeholder is a short example
    from fnkit.widgets import _alb, _mail, _queue
    from fnkit.widgets._fields import PLACEHOLDER_CHARS

    fields = [f for module in (_queue, _mail, _alb) for f in module.FIELDS]
    one_line = [f for f in fields if f.kind in ("text", "csv")]
    assert {f.name for f in one_line} >= {"group_ids", "receive_counts", "path", "query", "subject", "mail_from"}
    for field in one_line:
        assert len(field.placeholder) <= PLACEHOLDER_CHARS, (field.name, field.placeholder)
        control = field.control(None if field.kind == "csv" else "")
        assert control.placeholder == field.placeholder and control.tooltip == field.help
