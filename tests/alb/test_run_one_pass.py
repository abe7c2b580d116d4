"""`alb.run` decides each thing once (issue 31): the settings, the event's decoding, its refusal, the isolation;
the outcome after the handler does not read them again."""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

import pytest

from fnkit import alb
from fnkit._engine import report as _report
from fnkit._settings import config as _config
from fnkit._settings import project as _settings
from fnkit.alb import _event, _outcome

WATCHED = {
    _config.Config.of.__func__.__code__: "config",  # type: ignore[attr-defined]
    _report.decode_json.__code__: "decode",
    _event.refusals.__code__: "refusal",
    _outcome.refusal.__code__: "refusal",
    _settings.resolve_isolation.__code__: "isolation",
}


def counted_run(event: Any, **keywords: Any) -> Counter[str]:
    """How often `alb.run(handler, event)` called each of the watched steps (the event's decoding alone: the
    response has its own), whichever module reached them."""
    counts: Counter[str] = Counter()

    def profile(frame: Any, what: str, arg: Any) -> None:
        if what == "call":
            name = WATCHED.get(frame.f_code)
            if name == "decode" and frame.f_locals.get("value") is not event:
                return
            if name is not None:
                counts[name] += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        result = alb.run(lambda e, c: {"statusCode": 200, "body": "ok"}, event, **keywords)
    finally:
        sys.setprofile(previous)
    assert result.status == 200
    return counts


@pytest.mark.parametrize("isolation", [None, "none", "thread"])
def test_run_reads_settings_event_refusal_and_isolation_once(isolation):
    # before: config x4, the event decoded x2, refusal x3, isolation resolved x4 in one run
    event = alb.build_event("POST", "/orders", body='{"n": 1}', seed=1)
    counts = counted_run(event, isolation=isolation, timeout_s=5)
    assert counts["config"] == 1, counts
    assert counts["decode"] <= 1, counts  # a dict event needs no decoding; text is decoded once
    assert counts["refusal"] == 1, counts
    assert counts["isolation"] == 1, counts


def test_a_refused_request_is_still_refused_in_one_pass():
    event = alb.build_event("GET", "/chat", seed=1)
    event["headers"]["upgrade"] = "websocket"
    outcome = alb.run(lambda e, c: {"statusCode": 200}, event)
    assert outcome.status == 400 and outcome.invocation is None


def test_an_event_given_as_text_is_decoded_once():
    import json

    event = json.dumps(alb.build_event("POST", "/orders", body='{"n": 1}', seed=1))
    counts = counted_run(event, timeout_s=5)
    assert counts["decode"] == 1, counts


@pytest.mark.parametrize("isolation", ["none", "thread", "process"])
def test_a_response_returned_as_json_text_is_still_a_502(isolation):
    # reading the response's text once must not read a returned JSON string as the response's own text
    import json

    event = alb.build_event("GET", "/", seed=1)
    text = json.dumps({"statusCode": 200, "body": "ok"})
    outcome = alb.run(lambda e, c: text, event, isolation=isolation, timeout_s=10)
    assert outcome.status == 502
    assert outcome.rule == "A6" and "got a string" in outcome.explanation
