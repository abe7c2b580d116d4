"""Typed handlers take fnkit's own events: builders, fixtures and strategies pass `mypy --strict` and pyright.

A service's test file, written as an adopter writes it (handlers annotated with `fnkit.types`,
fixtures annotated with their factory classes, hypothesis strategies), is checked by both type
checkers: no line of it needs a cast, and each misspelt keyword at its end is one error.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from fnkit import alb, mail, queue
from fnkit.testing import AlbEventFactory, MailEventFactory, QueueEventFactory, event_factory

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

USER_FILE = textwrap.dedent(
    """
    # A service's tests, typed: handlers take fnkit.types' events, fixtures and strategies are annotated.

    from typing import Any

    from hypothesis import given

    from fnkit import alb, mail, queue
    from fnkit.testing import AlbEventFactory, MailEventFactory, QueueEventFactory, assert_outcome, strategies
    from fnkit.types import AlbEvent, AlbResponse, MailEvent, MailResponse, QueueEvent, QueueResponse


    def queue_handler(event: QueueEvent, context: Any) -> QueueResponse:
        failed = [r["messageId"] for r in event["Records"] if not r["body"]]
        return {"batchItemFailures": [{"itemIdentifier": i} for i in failed]}


    def alb_handler(event: AlbEvent, context: Any) -> AlbResponse:
        return {"statusCode": 200, "body": event["path"]}


    def mail_handler(event: MailEvent, context: Any) -> MailResponse:
        return {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}]}


    queue_handler(queue.build_event(["a", ""], fifo=True, group_ids=["g", "g"]), None)
    alb_handler(alb.build_event("POST", "/orders", body=b"{}", multi_value=True), None)
    mail_handler(mail.build_event(mail_from="a@example.org", recipients=["b@example.com"]), None)
    alb_handler(alb.health_check_event(), None)


    def test_with_fixtures(
        queue_event: QueueEventFactory, alb_event: AlbEventFactory, mail_event: MailEventFactory
    ) -> None:
        queue_handler(queue_event(["x"], fifo=True, group_ids=["g"]), None)
        alb_handler(alb_event("GET", "/"), None)
        mail_handler(mail_event(subject="Hi"), None)
        assert_outcome(queue_handler, queue_event(), kind="success", source="queue")
        assert_outcome(alb_handler, alb_event(), kind="delivered", status=200, source="alb")
        assert_outcome(mail_handler, mail_event(), status="applied", source="mail", mode="sync")


    @given(strategies.queue_events())
    def test_queue_property(event: QueueEvent) -> None:
        queue_handler(event, None)


    @given(strategies.alb_events(), strategies.mail_events())
    def test_alb_and_mail_properties(request: AlbEvent, letter: MailEvent) -> None:
        alb_handler(request, None)
        mail_handler(letter, None)


    # the typos a type checker catches: each line below is one error
    queue.build_event(["a"], fiffo=True)
    alb.build_event(multi_valu=True)
    queue.run(queue_handler, queue.build_event(["a"]), report_batch_item_failure=True)
    assert_outcome(queue_handler, queue.build_event(["a"]), knd="partial", source="queue")
    assert_outcome(queue_handler, queue.build_event(["a"]), knd="partial")
    """
)
# the last five lines of USER_FILE, one misspelt keyword each
TYPOS = ["fiffo", "multi_valu", "report_batch_item_failure", "knd", "knd"]


def _typo_lines() -> list[int]:
    lines = USER_FILE.splitlines()
    return [n for n, line in enumerate(lines, 1) if any(f"{typo}=" in line for typo in TYPOS)]


def test_mypy_strict_accepts_typed_handlers_given_fnkits_events_and_names_each_misspelt_keyword(tmp_path):
    (tmp_path / "test_service.py").write_text(USER_FILE, encoding="utf-8")
    done = subprocess.run(
        [str(BIN / "mypy"), "--strict", f"--cache-dir={ROOT / '.mypy_cache' / 'typed-handlers'}", "test_service.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=600,
        check=False,
    )
    errors = [line for line in done.stdout.splitlines() if line.startswith("test_service.py:") and ": error:" in line]
    assert sorted({int(line.split(":")[1]) for line in errors}) == _typo_lines(), done.stdout
    for typo in TYPOS:
        assert any(f'"{typo}"' in line for line in errors), (typo, done.stdout)


def test_pyright_strict_accepts_them_too(tmp_path):
    (tmp_path / "test_service.py").write_text(USER_FILE, encoding="utf-8")
    config = {"extraPaths": [str(ROOT)], "typeCheckingMode": "strict"}
    (tmp_path / "pyrightconfig.json").write_text(json.dumps(config), encoding="utf-8")
    done = subprocess.run(
        [str(BIN / "pyright"), "--outputjson", "--pythonpath", sys.executable, "test_service.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    report = json.loads(done.stdout[done.stdout.index("{") :])
    errors = [d for d in report["generalDiagnostics"] if d["severity"] == "error"]
    assert sorted({d["range"]["start"]["line"] + 1 for d in errors}) == _typo_lines(), errors
    assert report["summary"]["filesAnalyzed"] == 1


def _parameters(function: object) -> list[str]:
    return [p for p in inspect.signature(function).parameters if p not in ("self", "settings", "more")]  # type: ignore[arg-type]


def test_each_fixture_takes_exactly_its_builders_arguments():
    builders = (
        (QueueEventFactory, queue.build_event),
        (MailEventFactory, mail.build_event),
        (AlbEventFactory, alb.build_event),
    )
    for factory, build in builders:
        taken = [p for p in _parameters(build) if p not in ("fifo", "multi_value")]
        assert _parameters(factory.__call__) == taken, factory.__name__


def test_event_factory_makes_the_typed_class_of_its_source():
    assert isinstance(event_factory("queue"), QueueEventFactory)
    assert isinstance(event_factory("mail"), MailEventFactory)
    assert isinstance(event_factory("alb"), AlbEventFactory)
