"""Types reach the user: a service's own file type-checks under `mypy --strict` and sees fnkit's real types."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MYPY = Path(sys.executable).with_name("mypy")

USER_FILE = textwrap.dedent(
    '''
    """A service's tests, written as a user would: no annotations beyond the handler's."""

    from typing import Any

    import fnkit
    from fnkit import alb, mail, queue
    from fnkit.testing import assert_outcome
    from fnkit.types import QueueEvent, QueueResponse


    def handler(event: QueueEvent, context: Any) -> QueueResponse:
        failed = [r["messageId"] for r in event["Records"] if not r["body"]]
        return {"batchItemFailures": [{"itemIdentifier": i} for i in failed]}


    event = queue.build_event(["a", ""], dialect="aws")
    reveal_type(fnkit.validate(event))
    reveal_type(fnkit.validate_response(None, source="queue"))
    reveal_type(fnkit.detect_source(event))
    reveal_type(queue.run(handler, event))
    reveal_type(queue.run(handler, event).kind)
    reveal_type(alb.outcome(alb.build_event(), {"statusCode": 200}))
    reveal_type(alb.outcome(alb.build_event(), {"statusCode": 200}).kind)
    letter = mail.build_event(mail_from="a@example.org", recipients=["b@example.com"])
    reveal_type(mail.run(lambda e, c: None, letter).kind)
    reveal_type(assert_outcome(handler, event, kind="partial", source="queue"))
    reveal_type(assert_outcome(handler, event))
    reveal_type(fnkit.tabulate([queue.run(handler, event)]))
    reveal_type(fnkit.replay(handler, [event]))
    reveal_type(fnkit.replay(handler, [event], engine="dask"))
    reveal_type(queue.parse_event(event).records[0].attributes.message_group_id)
    reveal_type(fnkit.invoke(handler, event, isolation="none"))
    queue.build_event(["a"], dialect="amazon")  # two mistakes: mypy names them
    queue.run(handler, event, isolation="docker")
    '''
)

EXPECTED = [
    "fnkit._engine.report.Report",
    "fnkit._engine.report.Report",
    "Literal['queue'] | Literal['mail'] | Literal['alb'] | None",
    "fnkit.queue._outcome.BatchOutcome",
    "Literal['success'] | Literal['partial'] | Literal['failure']",
    "fnkit.alb._outcome.HttpOutcome",
    "Literal['delivered'] | Literal['refused'] | Literal['error']",
    "Literal['applied'] | Literal['fallback'] | Literal['ignored']",
    "fnkit.queue._outcome.BatchOutcome",
    "Any",  # without source=, the event decides at run time: the test reads the outcome it expects
    "fnkit._frame.Table",
    "pandas.core.frame.DataFrame",
    "dask.dataframe.dask_expr._collection.DataFrame",
    "str | None",
]


def _normalise(revealed: str) -> str:
    # mypy spells unions of literals either way ('Literal['a', 'b']' or 'Literal['a'] | Literal['b']')
    found = re.fullmatch(r"Literal\[(.*)\]", revealed)
    if found and "]" not in found.group(1):
        return " | ".join(f"Literal[{part.strip()}]" for part in found.group(1).split(","))
    return revealed.replace("Union[", "").rstrip("]") if revealed.startswith("Union[") else revealed


@pytest.mark.skipif(not MYPY.exists(), reason="mypy is not installed in this environment")
def test_a_users_file_type_checks_strictly_and_sees_fnkits_types(tmp_path):
    (tmp_path / "test_service.py").write_text(USER_FILE, encoding="utf-8")
    done = subprocess.run(
        # mypy's own cache (it rechecks what changed) beside the checkout's: a warm checkout pays seconds, not 25 s
        [str(MYPY), "--strict", f"--cache-dir={ROOT / '.mypy_cache' / 'user-file'}", "test_service.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=600,
        check=False,
    )
    # only the user's file counts: an installed package's own findings are not shown to its users (this
    # checkout is found through MYPYPATH, so mypy reads it as source and would list fnkit's)
    lines = [line for line in done.stdout.splitlines() if line.startswith("test_service.py:")]
    errors = [line for line in lines if ": error:" in line]
    assert len(errors) == 2, done.stdout
    assert 'Argument "dialect" to "build_event" has incompatible type "Literal[\'amazon\']"' in errors[0]
    assert 'Argument "isolation" to "run" has incompatible type "Literal[\'docker\']"' in errors[1]
    revealed = [re.sub(r'^.*Revealed type is "(.*)"$', r"\1", line) for line in lines if "Revealed type" in line]
    assert len(revealed) == len(EXPECTED) + 1, done.stdout
    assert [_normalise(r).replace("?", "") for r in revealed[: len(EXPECTED)]] == EXPECTED
    assert revealed[-1].startswith("fnkit._engine.codec.Invocation")


def test_the_parsed_event_protocols_name_only_fields_the_parsed_values_have():
    from typing import get_type_hints

    from fnkit import alb, mail, queue, types

    queue_event = queue.parse_event(queue.build_event(["x"], fifo=True, message_attributes={"a": "b"}))
    letter = mail.build_event(mail_from="a@example.org", recipients=["b@example.com"])
    record = queue_event.records[0]
    parsed = {
        types.ParsedQueueEvent: queue_event,
        types.ParsedQueueRecord: record,
        types.ParsedQueueAttributes: record.attributes,
        types.ParsedMessageAttribute: record.message_attributes["a"],
        types.ParsedMailEvent: mail.parse_event(letter),
        types.ParsedAlbEvent: alb.parse_event(alb.build_event()),
    }
    for protocol, value in parsed.items():
        missing = [name for name in get_type_hints(protocol) if not hasattr(value, name)]
        assert missing == [], protocol.__name__
