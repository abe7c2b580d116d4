"""Running the rule -> example table (fnkit/data/rule_examples.json): which rules each example triggers.

An example is data: which source, what to build (a builder's keywords; `bodies` may be
`{"text", "times", "count"}`, for sizes no one would write out), how to break it
(`set`, `delete`, `copy`, `repeat` at JSON paths), and what to do with it (validate an event,
validate a response, decide an outcome, run a handler, configure a simulator, walk a shape).
`run_example` does that and answers with the rule ids it observed and a few facts, so the tests
can hold every rule of the catalogue to an example that triggers it.
"""

from __future__ import annotations

import copy
import importlib
import re
import time
from collections.abc import Callable
from typing import Any

from .rules import examples

_CITED = re.compile(r"\(((?:[QMA]S?|[GH])\d{1,2}[a-z]?)\b")


# --- the handlers examples may name --------------------------------------------------------


def _returns_no_failures(event: Any, context: Any) -> Any:
    return {"batchItemFailures": []}


def _returns_a_set(event: Any, context: Any) -> Any:
    return {"batchItemFailures": {"not", "json"}}


def _raises(event: Any, context: Any) -> Any:
    raise RuntimeError("the example handler fails")


def _sleeps(event: Any, context: Any) -> Any:
    time.sleep(1.0)
    return None


def _fails_all(event: Any, context: Any) -> Any:
    return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}


def _fails_first_once() -> Callable[[Any, Any], Any]:
    seen: set[str] = set()

    def handler(event: Any, context: Any) -> Any:
        first = event["Records"][0]["messageId"]
        if first in seen:
            return None
        seen.add(first)
        return {"batchItemFailures": [{"itemIdentifier": first}]}

    return handler


def _replaces_content(event: Any, context: Any) -> Any:
    content = context.message_content
    raw = content.get_raw_message_content(event["messageId"])
    content.put_raw_message_content(event["messageId"], b"X-Scanned: yes\r\n" + raw)
    return {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}]}


# name -> a fresh handler (a maker, so that a handler with state starts clean each time)
HANDLERS: dict[str, Callable[[], Callable[[Any, Any], Any]]] = {
    "returns-no-failures": lambda: _returns_no_failures,
    "returns-a-set": lambda: _returns_a_set,
    "raises": lambda: _raises,
    "sleeps": lambda: _sleeps,
    "fails-all": lambda: _fails_all,
    "fails-first-once": _fails_first_once,
    "replaces-content": lambda: _replaces_content,
}


# --- building and breaking ------------------------------------------------------------------


def _at(doc: Any, path: list[str | int]) -> tuple[Any, Any]:
    for key in path[:-1]:
        doc = doc[key]
    return doc, path[-1]


def build(example: dict[str, Any]) -> Any:
    """The example's event: built by the source's builder, then broken as it says."""
    inp = example["input"]
    module = importlib.import_module(f"fnkit.{example['source']}")
    builder = getattr(module, inp.get("builder", "build_event"))
    keywords = dict(inp.get("build", {}))
    if isinstance(keywords.get("bodies"), dict):  # {"text": "x", "times": N, "count": k}: k bodies of N copies of text
        spec = keywords["bodies"]
        keywords["bodies"] = [spec["text"] * spec["times"]] * spec.get("count", 1)
    event = builder(keywords.pop("bodies"), **keywords) if "bodies" in keywords else builder(**keywords)
    for path, value in inp.get("set", []):
        parent, key = _at(event, path)
        parent[key] = copy.deepcopy(value)
    for path in inp.get("delete", []):
        parent, key = _at(event, path)
        del parent[key]
    for source, target in inp.get("copy", []):
        parent, key = _at(event, source)
        into, at = _at(event, target)
        into[at] = copy.deepcopy(parent[key])
    for path, count in inp.get("repeat", []):
        parent, key = _at(event, path)
        parent[key] = [copy.deepcopy(parent[key][0]) for _ in range(count)]
    return event


def _with_ids(value: Any, ids: list[str]) -> Any:
    """`value` with each "@N" string replaced by the Nth messageId."""
    if isinstance(value, str) and re.fullmatch(r"@\d+", value):
        return ids[int(value[1:])]
    if isinstance(value, list):
        return [_with_ids(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _with_ids(v, ids) for k, v in value.items()}
    return value


def _outcome_rules(result: Any) -> set[str]:
    found = {result.rule} | {i.rule for i in result.issues if i.rule}
    found |= set(getattr(result, "rules", ()) or ())
    decisions = getattr(result, "decisions", None)
    if decisions:
        found |= {d.rule for d in decisions.values()}
    return found


def run_example(example: dict[str, Any]) -> dict[str, Any]:
    """Run one example: {"rules": the rule ids observed, "facts": what else it shows}."""
    import fnkit

    kind, source, inp = example["kind"], example["source"], example["input"]
    module = importlib.import_module(f"fnkit.{source}") if source != "any" else fnkit
    options = dict(inp.get("options", {}))
    facts: dict[str, Any] = {}
    if kind == "event":
        report = module.validate_event(inp["text"] if "text" in inp else build(example), **options)
        return {"rules": {i.rule for i in report}, "facts": facts}
    if kind == "detect":
        return {"rules": {i.rule for i in fnkit.validate(inp["value"])}, "facts": facts}
    if kind == "shape":
        shape = module.EVENT_SHAPE if inp["shape"] == "event" else module.RESPONSE_SHAPE
        return {"rules": {i.rule for i in shape.walk(inp["value"])}, "facts": facts}
    if kind == "response":
        report = module.validate_response(inp["response"], **options)
        return {"rules": {i.rule for i in report}, "facts": facts}
    if kind == "outcome":
        event = build(example)
        ids = module.correlation_ids(event) if source == "queue" else []
        result = module.outcome(event, _with_ids(inp["response"], ids), **options)
        facts["outcome_rule"] = result.rule
        return {"rules": _outcome_rules(result), "facts": facts}
    if kind == "run":
        result = module.run(HANDLERS[inp["handler"]](), build(example), **options)
        facts["outcome_rule"] = result.rule
        return {"rules": _outcome_rules(result), "facts": facts}
    if kind == "invoke":
        invocation = fnkit.invoke(HANDLERS[inp["handler"]](), {"Records": []}, **options)
        facts["response_text"] = invocation.response_text
        return {"rules": {example["rule"]} if invocation.succeeded else set(), "facts": facts}
    if kind == "config":
        try:
            module.Config(**inp["config"])
        except ValueError as exc:
            return {"rules": set(_CITED.findall(str(exc))), "facts": {"refused": str(exc)}}
        return {"rules": set(), "facts": {"refused": None}}
    if kind == "http":  # a request head as the load balancer reads it (A16, A17)
        from .alb._desync import decide, judge_head

        head = judge_head(inp["request"].encode("utf-8"))
        _close, refused = decide(head, options.get("mode", "defensive"))
        facts["tier"] = head.tier
        found = ({refused.rule} if refused else set()) | {head.target_rule}
        return {"rules": found - {None}, "facts": facts}
    if kind == "sim":
        sim = module.QueueSim(**inp["config"])
        sent = []
        for i, body in enumerate(inp["send"]):
            keywords = {}
            if "group_id" in inp:
                keywords["group_id"] = inp["group_id"]
            if inp.get("dedup_ids"):
                keywords["dedup_id"] = f"d{i}"
            sent.append(sim.send(body, **keywords))
        run = sim.run(HANDLERS[inp["handler"]]())
        found = {step["rule"] for mid in sent if mid for step in run.timeline(mid) if step["rule"]}
        for inv in run.invocations:
            found |= _outcome_rules(inv.outcome)
        facts["dead_lettered"] = len(run.dead_letter_queue)
        facts["deduplicated"] = sim.deduplicated
        deliveries = [mid for inv in run.invocations for mid in inv.message_ids]
        if len(deliveries) > 1:
            facts["second_delivery_of"] = sent.index(deliveries[1]) if deliveries[1] in sent else None
        return {"rules": found, "facts": facts}
    raise ValueError(f"unknown example kind {kind!r}")


def table() -> list[dict[str, Any]]:
    """The examples, one row each: rule, kind, source, title."""
    return [{"rule": e["rule"], "kind": e["kind"], "source": e["source"], "title": e["title"]} for e in examples()]
