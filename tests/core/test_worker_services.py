"""What the worker processes know of the sources without importing them (fnkit/_running sits below them).

A service of the context (the mail content API) refuses in a worker once its invocation is
over, with the error the service declares; the zygote warms the workers with the sources the
caller has loaded, found rather than named.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fnkit import mail

ROOT = Path(__file__).resolve().parents[2]
ACCEPT = {"actions": [{"allRecipients": True, "action": {"type": "DEFAULT"}}]}


def keeps_the_content_api(event, context):
    """The first call keeps its message content API; the next one (in the same worker) calls the old one."""
    kept = getattr(sys, "_fnkit_kept_content", None)
    sys._fnkit_kept_content = context.message_content  # type: ignore[attr-defined]
    if kept is not None:
        try:
            kept.get_raw_message_content(event["messageId"])
        except Exception as exc:  # noqa: BLE001 - what the handler saw is the result
            print(f"{type(exc).__name__}: {exc}")
    return ACCEPT


def test_a_service_kept_past_its_invocation_refuses_in_a_worker_with_its_own_error():
    event = mail.build_event(mail_from="alice@example.com", recipients=["bob@example.org"])
    logs = []
    for _ in range(5):  # a warm worker serves the next call: the second call meets the first call's API
        run = mail.run(keeps_the_content_api, event, response_timeout_s=10, isolation="process")
        assert run.status == "applied" and run.invocation is not None
        if run.invocation.logs:
            logs.append(run.invocation.logs)
            break
    assert logs and logs[0].startswith("MessageFrozenError: This invocation is over"), logs


def test_the_zygote_preloads_the_sources_the_caller_has_loaded():
    code = (
        "import sys; import fnkit; from fnkit._running import zygote; print(zygote._loaded_sources()); "
        "from fnkit import mail, alb; print(zygote._loaded_sources())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120, check=True
    )
    assert done.stdout.splitlines() == ["[]", "['fnkit.alb', 'fnkit.mail']"]
