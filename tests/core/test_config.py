"""Each configuration is declared once (QueueConfig, MailConfig, AlbConfig) and everything else is made from it.

These tests fail when a setting is restated: a keyword written by hand beside the
declaration, a command-line option or a widget field that does not come from it, or a
platform limit checked somewhere else than in the dataclass.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import json
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, cast

import pytest

import fnkit
from fnkit import rules
from fnkit._settings.config import Config, setting, settings_of, with_settings
from fnkit.alb import AlbConfig
from fnkit.mail import MailConfig
from fnkit.queue import QueueConfig

CONFIGS: dict[str, type[Config]] = {"queue": QueueConfig, "mail": MailConfig, "alb": AlbConfig}

# Public names whose parameters happen to share a setting's name without taking the setting:
# records of what an outcome was decided with, and the configurations themselves.
NOT_TAKERS = {
    ("mail", "MailOutcome"): "records the mode and fallback action the outcome was decided with",
    ("alb", "HttpOutcome"): "records whether multi-value headers were on",
    ("mail", "MessageContent"): "the content API's handle, made by the rule with the rule's mode",
    ("alb", "request_to_event"): "the HTTP mapping's positional flag, given by the server from its AlbConfig",
    ("alb", "LoggedRequest"): "records the importer's multi_value (read from its AlbConfig) to make its event later",
}
# Keywords that share a setting's name with another meaning, each refused with the declared wording.
OWN_MEANING = {
    ("queue", "validate_event", "batch_size"): "None: the batch is not checked against a batch size",
    ("queue", "events_from_messages", "batch_size"): "a replay's batching, checked by the declared setting only",
}


def _callables(source: str):
    module = importlib.import_module(f"fnkit.{source}")
    for name in module.__all__:
        obj = getattr(module, name)
        if isinstance(obj, type) and issubclass(obj, Config):
            continue
        target = cast(Any, obj).__init__ if isinstance(obj, type) else obj
        if not callable(target):
            continue
        try:
            signature = inspect.signature(target)
        except (TypeError, ValueError):
            continue
        yield name, target, signature


# -- one declaration drives every signature -------------------------------------------------


@pytest.mark.parametrize("source", list(CONFIGS))
def test_every_keyword_named_like_a_setting_is_generated_from_the_declaration(source):
    config = CONFIGS[source]
    declared = {s.name: s for s in config.settings()}
    takers = 0
    for name, target, signature in _callables(source):
        shared = [
            p for p in signature.parameters.values() if p.name in declared and (source, name, p.name) not in OWN_MEANING
        ]
        if not shared or (source, name) in NOT_TAKERS:
            continue
        config_class, names = settings_of(target)
        for p in shared:
            assert config_class is config and p.name in names, (
                f"fnkit.{source}.{name} restates the setting {p.name!r}: declare it with "
                f"@with_settings({config.__name__}, ...)"
            )
            s = declared[p.name]
            assert (p.default, p.annotation, p.kind) == (s.default, s.annotation, p.KEYWORD_ONLY), (name, p)
        assert "config" in signature.parameters, f"fnkit.{source}.{name} takes settings but not config="
        takers += 1
    assert takers >= 4  # builders, simulators or servers, outcome, run, validate_response ...


def test_the_exceptions_are_still_needed():
    """A stale entry in the lists of exceptions would hide a restated setting."""
    for source, name in NOT_TAKERS:
        params = inspect.signature(_target(source, name)).parameters
        assert set(params) & set(CONFIGS[source].names()), (source, name)
    for source, name, keyword in OWN_MEANING:
        assert keyword in inspect.signature(_target(source, name)).parameters


def _target(source: str, name: str):
    obj = getattr(importlib.import_module(f"fnkit.{source}"), name)
    return cast(Any, obj).__init__ if isinstance(obj, type) else obj


def test_a_keyword_with_its_own_meaning_refuses_with_the_declared_wording():
    expected = str(QueueConfig.setting("batch_size").refuse(0))
    with pytest.raises(ValueError, match="batch_size") as caught:
        list(fnkit.queue.events_from_messages({"Messages": []}, batch_size=0))
    assert str(caught.value) == expected


def test_the_simulators_and_servers_take_every_setting_of_their_source():
    takers: list[tuple[Any, type[Config]]] = [
        (fnkit.queue.QueueSim, QueueConfig),
        (fnkit.mail.MailRule, MailConfig),
        (fnkit.alb.serve, AlbConfig),
        (fnkit.mail.serve, MailConfig),
    ]
    for taker, config in takers:
        assert settings_of(cast(Any, taker).__init__ if isinstance(taker, type) else taker) == (config, config.names())


def test_a_new_setting_appears_in_the_signature_the_options_and_the_widget_field():
    """What `with_settings`, `add_arguments` and `setting_field` make comes from the declaration alone."""

    @dataclass(frozen=True)
    class Toy(Config):
        speed: int = setting(3, rule="Q1", minimum=1, maximum=9, label="Speed", help="How fast.")
        loud: bool = setting(False, help="Shout.")
        source = "queue"

    @with_settings(Toy)
    def go(*, config: Toy | None = None, **settings):
        return Toy.of(config, settings, go)

    params = inspect.signature(go).parameters
    assert [(p, params[p].default) for p in ("speed", "loud")] == [("speed", 3), ("loud", False)]
    assert go(speed=9).speed == 9 and go().speed == 3
    with pytest.raises(ValueError, match=r"speed must be a whole number from 1 to 9, not 10 \(Q1\)"):
        go(speed=10)
    with pytest.raises(TypeError, match="unexpected keyword argument 'sped'"):
        go(sped=4)

    parser = Toy.add_arguments(argparse.ArgumentParser())
    assert Toy.given(parser.parse_args(["--speed", "4", "--loud"])) == {"speed": 4, "loud": True}
    assert Toy.given(parser.parse_args([])) == {}  # not given: the declared default applies
    assert "How fast. [Q1] (default: 3)" in parser.format_help()

    from fnkit.widgets._fields import setting_field

    field = setting_field(Toy, "speed")
    assert (field.label, field.kind, field.default, field.help) == ("Speed", "int", 3, "How fast.")


# -- the command line's options ---------------------------------------------------------------


def _options(argv_prefix: list[str]) -> dict[str, argparse.Action]:
    from fnkit.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: a for a in sub.choices[argv_prefix[0]]._actions}


@pytest.mark.parametrize(
    ("command", "verb_or_all"),
    [("outcome", "outcome"), ("replay", "outcome"), ("serve-mail", MailConfig), ("serve-alb", AlbConfig)],
)
def test_the_command_line_options_are_made_from_the_declarations(command, verb_or_all):
    options = _options([command])
    if isinstance(verb_or_all, str):
        wanted = [
            (config, settings_of(getattr(importlib.import_module(f"fnkit.{source}"), verb_or_all))[1])
            for source, config in CONFIGS.items()
        ]
    else:
        wanted = [(verb_or_all, verb_or_all.names())]
    for config, names in wanted:
        for s in config.settings(names):
            action = options.get(s.name)
            assert action is not None, f"fnkit {command} has no option for {s.name}"
            assert s.flag in action.option_strings
            shown = action.help or ""
            assert s.help[1:] in shown and (s.rule is None or f"[{s.rule}]" in shown)
            if s.choices is not None:
                assert tuple(cast(Any, action.type).setting.choices) == s.choices


def test_an_option_out_of_range_is_refused_with_its_rule(tmp_path):
    event = tmp_path / "event.json"
    event.write_text(json.dumps(fnkit.mail.build_event(mail_from="a@example.com", recipients=["b@example.com"])))
    response = tmp_path / "response.json"
    response.write_text("{}")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "fnkit",
            "outcome",
            "--event",
            str(event),
            "--response",
            str(response),
            "--recipients-limit",
            "0",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "recipients_limit must be a whole number from 1, not 0 (M6)" in done.stderr


# -- the widgets' fields ----------------------------------------------------------------------------


@pytest.mark.parametrize("source", list(CONFIGS))
def test_the_widgets_setting_fields_are_made_from_the_declarations(source):
    from fnkit.widgets._adapter import adapter_for

    adapter = adapter_for(source)
    config = CONFIGS[source]
    made = [f for f in [*adapter.config, *adapter.fields] if f.name in config.names()]
    assert made, f"the {source} widgets show no setting"
    for field in made:
        s = config.setting(field.name)
        assert field.setting is s, f"the {source} widget's field {field.name!r} restates its setting"
        assert (field.label, field.help, tuple(field.options)) == (s.label, s.help, tuple(s.choices or ()))


def test_a_widget_refuses_a_setting_out_of_range_naming_the_rule():
    from fnkit.widgets import EventBuilder, HandlerRunner

    with pytest.raises(ValueError, match=r"\(M2\)"):
        HandlerRunner(builder=EventBuilder("mail"), fallback_action="KEEP")
    runner = HandlerRunner(builder=EventBuilder("mail"), mode="async")
    assert runner.config_controls["mode"].value == "async"
    with pytest.raises(ValueError, match=r"\(M2\)"):
        runner.set(mode="later")


# -- validation: one test per rule ------------------------------------------------------------------

REFUSED: list[tuple[type[Config], dict[str, Any], str]] = [
    (QueueConfig, {"batch_size": 0}, "Q1"),
    (QueueConfig, {"batch_size": 10_001, "batch_window_s": 1}, "Q1"),
    (QueueConfig, {"fifo": True, "batch_size": 11, "batch_window_s": 1}, "Q1"),
    (QueueConfig, {"fifo": True, "batch_window_s": 5}, "Q1"),
    (QueueConfig, {"batch_size": 11}, "Q1"),  # above 10 needs a batching window
    (QueueConfig, {"batch_window_s": 301}, "Q1"),
    (QueueConfig, {"batch_size": 2.5}, "Q1"),
    (QueueConfig, {"visibility_timeout_s": 2, "function_timeout_s": 3}, "Q2"),
    (QueueConfig, {"visibility_timeout_s": 43_201}, "Q3"),
    (QueueConfig, {"max_receive_count": 0}, "Q3"),
    (QueueConfig, {"function_timeout_s": 0}, "Q6"),
    (QueueConfig, {"report_batch_item_failures": "yes"}, "Q7"),
    (QueueConfig, {"fifo": 1}, "Q9"),
    (QueueConfig, {"content_based_deduplication": True}, "Q11"),
    (MailConfig, {"mode": "later"}, "M2"),
    (MailConfig, {"fallback_action": "KEEP"}, "M2"),
    (MailConfig, {"rule_timeout_minutes": 241}, "M2"),
    (MailConfig, {"response_timeout_s": 0}, "M3"),
    (MailConfig, {"backoff_factor": 0.5}, "M3"),
    (MailConfig, {"backoff_initial_s": 120, "backoff_max_s": 60}, "M3"),
    (MailConfig, {"jitter": 1}, "M3"),
    (MailConfig, {"extensions": "on"}, "M4"),
    (MailConfig, {"recipients_limit": 0}, "M6"),
    (MailConfig, {"conflict_policy": "loudest"}, "M7"),
    (AlbConfig, {"multi_value": "yes"}, "A3"),
    (AlbConfig, {"timeout_s": 0}, "A5"),
    (AlbConfig, {"health_check_interval_s": -1}, "A11"),
]


@pytest.mark.parametrize(("config", "values", "rule_id"), REFUSED, ids=[f"{r}-{','.join(v)}" for _, v, r in REFUSED])
def test_a_configuration_the_platform_refuses_raises_naming_the_rule(config, values, rule_id):
    with pytest.raises(ValueError, match=rule_id) as caught:
        config(**values)
    assert str(caught.value).endswith(f"({rule_id}).")
    assert rules.get(rule_id).source == config.source


def test_every_rule_a_setting_cites_has_a_refusal_test():
    cited = {s.rule for config in CONFIGS.values() for s in config.settings() if s.rule}
    assert cited <= {r for _, _, r in REFUSED}


@pytest.mark.parametrize(
    "make",
    [
        lambda: fnkit.queue.QueueSim(visibility_timeout_s=2, function_timeout_s=3),
        lambda: fnkit.queue.outcome(fnkit.queue.build_event(["a"]), None, report_batch_item_failures="no"),  # type: ignore[arg-type]
        lambda: fnkit.queue.build_event(["a"], fifo="yes"),  # type: ignore[arg-type]
        lambda: fnkit.mail.MailRule(rule_timeout_minutes=300),
        lambda: fnkit.mail.outcome(
            fnkit.mail.build_event(mail_from="a@example.com", recipients=["b@example.com"]),
            {},
            mode="later",  # type: ignore[arg-type]
        ),
        lambda: fnkit.mail.serve(lambda e, c: None, domains=["example.com"], fallback_action="KEEP"),
        lambda: fnkit.alb.serve(lambda e, c: None, timeout_s=-1),
        lambda: fnkit.alb.build_event(multi_value="on"),  # type: ignore[arg-type]
        lambda: fnkit.replay(lambda e, c: None, [], mode="later"),
    ],
    ids=[
        "QueueSim",
        "queue.outcome",
        "queue.build_event",
        "MailRule",
        "mail.outcome",
        "mail.serve",
        "alb.serve",
        "alb.build_event",
        "replay",
    ],
)
def test_every_taker_refuses_through_the_declaration(make):
    with pytest.raises(ValueError, match=r"\([QMA]\d+\)\.$"):
        make()


def test_an_unknown_keyword_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="'batch_sise'"):
        fnkit.queue.QueueSim(batch_sise=5)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'mode'"):
        fnkit.queue.outcome(fnkit.queue.build_event(["a"]), None, mode="sync")  # type: ignore[call-arg]


# -- the keywords users already write keep working ---------------------------------------------------


def test_the_public_keywords_keep_working():
    sim = fnkit.queue.QueueSim(
        fifo=True,
        visibility_timeout_s=30,
        max_receive_count=3,
        batch_size=10,
        batch_window_s=0,
        report_batch_item_failures=True,
        function_timeout_s=3,
        seed=0,
    )
    assert sim.config == QueueConfig(fifo=True, max_receive_count=3) and sim.batch_size == 10
    rule = fnkit.mail.MailRule(mode="async", fallback_action="BOUNCE", rule_timeout_minutes=10, response_timeout_s=5)
    assert (rule.mode, rule.fallback_action, rule.rule_timeout_s, rule.response_timeout_s) == (
        "async",
        "BOUNCE",
        600.0,
        5.0,
    )
    event = fnkit.queue.build_event(["a", "b"])
    ids = fnkit.correlation_ids(event)
    answer = {"batchItemFailures": [{"itemIdentifier": ids[0]}]}
    assert fnkit.queue.outcome(event, answer, report_batch_item_failures=False).kind == "success"
    assert fnkit.queue.outcome(event, answer, config=QueueConfig(report_batch_item_failures=False)).kind == "success"
    assert fnkit.queue.outcome(event, answer).failed_ids == (ids[0],)


def test_a_config_and_keywords_combine_the_keywords_on_top():
    base = MailConfig(mode="async", fallback_action="DROP")
    rule = fnkit.mail.MailRule(config=base, fallback_action="BOUNCE")
    assert (rule.mode, rule.fallback_action) == ("async", "BOUNCE")
    assert base.fallback_action == "DROP"  # frozen: the caller's configuration is untouched
    with pytest.raises(dataclasses.FrozenInstanceError):
        base.mode = "sync"  # type: ignore[misc]
    with pytest.raises(TypeError, match="MailConfig"):
        fnkit.mail.MailRule(config=QueueConfig())  # type: ignore[arg-type]  # the mistake under test


def test_a_configuration_shows_one_row_per_setting():
    config = QueueConfig(max_receive_count=3)
    frame = fnkit.tabulate(config)
    assert list(frame["setting"]) == list(QueueConfig.names())
    html = config._repr_html_()
    assert "QueueConfig: 1 setting(s) changed" in html and "max_receive_count" in html


def test_fnkit_validate_response_gives_each_setting_to_its_own_source():
    mail = fnkit.validate_response({"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}]}, mode="async")
    assert [i.rule for i in mail] == ["M8"]  # the asynchronous rule ignores the answer
    assert fnkit.validate_response({"batchItemFailures": []}, mode="async").ok  # not the queue's setting
    with pytest.raises(TypeError, match="'mod'"):
        fnkit.validate_response({}, mod="async")
    with pytest.raises(ValueError, match=r"\(M2\)\.$"):
        fnkit.validate_response({"actions": []}, mode="later")
