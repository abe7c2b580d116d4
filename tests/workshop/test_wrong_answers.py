"""The wrong answers learners actually write, one function each, and the hint each one must get.

Every hint is tested against the mistake it is for: the first finding of the check must
hold the words that point the learner the right way, say it once, and show ids cut short.
A few right answers written another way than the solution must pass.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Callable
from typing import Any

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

WRONG: list[tuple[str, Callable[..., Any], list[str]]] = []  # (exercise id, handler, words the first finding must hold)
RIGHT: list[tuple[str, Callable[..., Any]]] = []


def wrong(exercise_id: str, *words: str):
    def register(fn):
        WRONG.append((exercise_id, fn, list(words)))
        return fn

    return register


def right(exercise_id: str):
    def register(fn):
        RIGHT.append((exercise_id, fn))
        return fn

    return register


def _bad_ids(event, key="messageId"):
    out = []
    for r in event["Records"]:
        try:
            process_order(r["body"])
        except BadOrder:
            out.append(r[key])
    return out


# --- queue-partial ---------------------------------------------------------------------------------


@wrong("queue-partial", "raised BadOrder", "catch BadOrder around each record")
def lets_bad_order_escape(event, context):
    for record in event["Records"]:
        process_order(record["body"])
    return {"batchItemFailures": []}


@wrong("queue-partial", "under the key 'itemIdentifier'", "yours has 'id'", "every message comes back")
def message_id_under_the_key_id(event, context):
    return {"batchItemFailures": [{"id": mid} for mid in _bad_ids(event)]}


@wrong("queue-partial", "under the key 'itemIdentifier'", "yours has 'messageId'")
def message_id_under_the_key_message_id(event, context):
    return {"batchItemFailures": [{"messageId": mid} for mid in _bad_ids(event)]}


@wrong(
    "queue-partial",
    "you listed the receiptHandle",
    "matches itemIdentifier against messageId",
    'list record["messageId"] instead',
)
def returns_the_receipt_handle(event, context):
    return {"batchItemFailures": [{"itemIdentifier": h} for h in _bad_ids(event, "receiptHandle")]}


@wrong("queue-partial", "you listed the body", "matches itemIdentifier against messageId")
def returns_the_body(event, context):
    return {"batchItemFailures": [{"itemIdentifier": b} for b in _bad_ids(event, "body")]}


@wrong("queue-partial", "was processed fine (process_order returned), but your response lists it", "processed twice")
def processes_all_then_lists_every_id(event, context):
    for record in event["Records"]:
        try:
            process_order(record["body"])
        except BadOrder:
            pass
    return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}


@wrong("queue-partial", "your handler exited (the handler's process exited with code 0)", "every message comes back")
def exits_the_process(event, context):
    import os

    os._exit(0)


# process_order was never called: the check must not say a message "was processed fine"
@wrong("queue-partial", "your handler never called process_order", 'process_order(record["body"])')
def lists_every_id(event, context):
    return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}


@wrong("queue-partial", "never called process_order")
def lists_nothing_and_processes_nothing(event, context):
    return {"batchItemFailures": []}


# the body decoded first: process_order raised (it got a dict) for every message, good orders too
@wrong(
    "queue-partial",
    "gave process_order a dict instead of the body text (every call)",
    "process_order raised BadOrder",
    'pass record["body"] as it is',
)
def decodes_the_body_first(event, context):
    failures = []
    for record in event["Records"]:
        try:
            process_order(json.loads(record["body"]))
        except BadOrder:
            failures.append({"itemIdentifier": record["messageId"]})
        except ValueError:
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


@wrong("queue-partial", "gave process_order a dict instead of the body text", "process_order raised BadOrder")
def decodes_the_body_first_and_lets_it_raise(event, context):
    for record in event["Records"]:
        process_order(json.loads(record["body"]))
    return {"batchItemFailures": []}


@wrong("queue-fifo", "gave process_order a dict instead of the body text")
def fifo_decodes_the_body_first(event, context):
    failures = []
    for record in event["Records"]:
        try:
            process_order(json.loads(record["body"]))
        except (BadOrder, ValueError):
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


@wrong("queue-partial", "returns a list", '{"batchItemFailures": [...]}')
def returns_a_list_instead_of_an_object(event, context):
    return [{"itemIdentifier": mid} for mid in _bad_ids(event)]


@wrong("queue-partial", "not a bare string")
def lists_bare_ids(event, context):
    return {"batchItemFailures": _bad_ids(event)}


@wrong("queue-partial", "returns None (is a return missing?)", "order is lost")
def forgets_to_return(event, context):
    failures = [{"itemIdentifier": mid} for mid in _bad_ids(event)]
    failures.sort(key=str)


@wrong("queue-partial", "raised RuntimeError", "every message comes back", "instead of raising")
def raises_instead_of_reporting(event, context):
    for record in event["Records"]:
        try:
            process_order(record["body"])
        except BadOrder:
            raise RuntimeError("bad order")  # noqa: B904 - the wrong answer as a learner writes it
    return {"batchItemFailures": []}


@wrong("queue-partial", "'BatchItemFailures' is another name", "case-sensitive", "lost")
def capital_b(event, context):
    return {"BatchItemFailures": [{"itemIdentifier": mid} for mid in _bad_ids(event)]}


@wrong("queue-partial", "no 'batchItemFailures' key (it has 'failures')", "lost")
def another_key_name(event, context):
    return {"failures": [{"itemIdentifier": mid} for mid in _bad_ids(event)]}


@wrong("queue-partial", "returns text", "return the dict itself")
def returns_json_text(event, context):
    return json.dumps({"batchItemFailures": [{"itemIdentifier": mid} for mid in _bad_ids(event)]})


@wrong("queue-partial", "raised KeyError", "names are case-sensitive", "messageId")
def misspells_message_id(event, context):
    failures = []
    for record in event["Records"]:
        try:
            process_order(record["body"])
        except BadOrder:
            failures.append({"itemIdentifier": record["messageID"]})
    return {"batchItemFailures": failures}


@wrong("queue-partial", "raised TypeError", "two arguments: def handler(event, context)")
def takes_one_argument(event):
    return {"batchItemFailures": []}


@right("queue-partial")
def partial_with_a_comprehension(event, context):
    return {"batchItemFailures": [{"itemIdentifier": mid} for mid in _bad_ids(event)]}


# --- queue-fifo ---------------------------------------------------------------------------------


@wrong("queue-fifo", "processed out of order", "list every later message of that group")
def not_fifo_safe(event, context):
    return {"batchItemFailures": [{"itemIdentifier": mid} for mid in _bad_ids(event)]}


@wrong("queue-fifo", "after that customer's earlier order failed", "stop a group at its first failure")
def processes_after_a_failure_then_lists(event, context):
    failures, stopped = [], set()
    for record in event["Records"]:
        group = record["attributes"]["MessageGroupId"]
        try:
            process_order(record["body"])
            if group in stopped:
                failures.append({"itemIdentifier": record["messageId"]})
        except BadOrder:
            stopped.add(group)
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


@wrong("queue-fifo", "raised KeyError", "names are case-sensitive")
def misspells_the_group_attribute(event, context):
    for record in event["Records"]:
        record["attributes"]["MessageGroupID"]
    return {"batchItemFailures": []}


@right("queue-fifo")
def stops_the_whole_batch_at_the_first_failure(event, context):
    failures: list[dict[str, str]] = []
    for record in event["Records"]:
        if failures:
            failures.append({"itemIdentifier": record["messageId"]})
            continue
        try:
            process_order(record["body"])
        except BadOrder:
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


# --- queue-first (lesson 01's first task) ---------------------------------------------------------


@wrong("queue-first", "a good order, so it comes back", "list only the orders whose qty is 0 or less")
def lists_every_order(event, context):
    return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}


@wrong("queue-first", "you listed the receiptHandle of message 2", 'list record["messageId"] instead')
def lists_the_receipt_handle(event, context):
    bad = [r for r in event["Records"] if json.loads(r["body"])["qty"] <= 0]
    return {"batchItemFailures": [{"itemIdentifier": r["receiptHandle"]} for r in bad]}


@wrong("queue-first", "returns None (is a return missing?)")
def prints_instead_of_returning(event, context):
    failures = [{"itemIdentifier": r["messageId"]} for r in event["Records"] if json.loads(r["body"])["qty"] <= 0]
    print({"batchItemFailures": failures})


@right("queue-first")
def bad_orders_in_a_comprehension(event, context):
    bad = [r["messageId"] for r in event["Records"] if json.loads(r["body"])["qty"] < 1]
    return {"batchItemFailures": [{"itemIdentifier": mid} for mid in bad]}


# --- queue-poison ---------------------------------------------------------------------------------


def _poison(name, park_when):
    def handler(event, context):
        failures = []
        for record in event["Records"]:
            try:
                process_order(record["body"])
            except BadOrder:
                if park_when(record["attributes"]["ApproximateReceiveCount"]):
                    park(record)
                else:
                    failures.append({"itemIdentifier": record["messageId"]})
        return {"batchItemFailures": failures}

    handler.__name__ = name
    return handler


compares_a_string_with_a_number = wrong("queue-poison", "raised TypeError", "int(...)")(
    _poison("compares_a_string_with_a_number", lambda count: count >= 3)
)
compares_texts = wrong("queue-poison", "received 12 times", "compare numbers, not texts", "int(...)")(
    _poison("compares_texts", lambda count: count >= "3")
)
off_by_one = wrong("queue-poison", "did not park it", "from the 3rd receive on")(
    _poison("off_by_one", lambda count: int(count) > 3)
)
parks_too_early = wrong("queue-poison", "too early to give up")(_poison("parks_too_early", lambda count: True))
# `count == 3`: a string is never equal to 3, so park never runs, though the handler calls it
equals_a_string = wrong("queue-poison", "calls park, but the test before it never holds", "compare int(...) with 3")(
    _poison("equals_a_string", lambda count: count == 3)
)


@wrong("queue-poison", "never calls park", "call park(record) from the 3rd receive on")
def never_parks(event, context):  # the first exercise's answer, unchanged: it lists every bad order
    return {"batchItemFailures": [{"itemIdentifier": mid} for mid in _bad_ids(event)]}


def test_a_handler_that_never_parks_nor_compares_is_not_told_to_compare_texts_or_numbers():
    said = str(workshop.check("queue-poison", never_parks))
    assert "compare numbers" not in said and "int(" not in said, said


def test_a_handler_that_calls_park_is_never_told_it_did_not_park_without_why():
    first = workshop.check("queue-poison", equals_a_string).problems[0]
    assert "did not park it" not in first, first


@wrong("queue-poison", "was parked but is still listed")
def parks_and_lists(event, context):
    failures = []
    for record in event["Records"]:
        try:
            process_order(record["body"])
        except BadOrder:
            if int(record["attributes"]["ApproximateReceiveCount"]) >= 3:
                park(record)
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


# --- alb-cookies ------------------------------------------------------------------------------------


def _answer(event, status=200, body="welcome", pairs=()):
    if "multiValueHeaders" in event:
        multi: dict[str, list[str]] = {}
        for n, v in pairs:
            multi.setdefault(n, []).append(v)
        return {"statusCode": status, "body": body, "multiValueHeaders": multi}
    return {"statusCode": status, "body": body, "headers": dict(pairs)}


@wrong("alb-cookies", "differ only in case")
def one_set_cookie_key(event, context):
    return _answer(event, pairs=[("Set-Cookie", "session=abc123"), ("Set-Cookie", "theme=dark")])


@wrong("alb-cookies", "one Set-Cookie header", "a comma does not separate cookies")
def cookies_as_a_comma_joined_header(event, context):
    return _answer(event, pairs=[("Set-Cookie", "session=abc123, theme=dark")])


@wrong("alb-cookies", "reads only 'multiValueHeaders'", "answer with 'multiValueHeaders'")
def headers_in_both_modes(event, context):
    return {
        "statusCode": 200,
        "body": "welcome",
        "headers": {"Set-Cookie": "session=abc123", "set-cookie": "theme=dark"},
    }


@wrong("alb-cookies", "holds a list of values", "502 Bad Gateway")
def multi_value_header_as_a_string(event, context):
    if "multiValueHeaders" in event:
        return {"statusCode": 200, "body": "welcome", "multiValueHeaders": {"Set-Cookie": "session=abc123"}}
    return {
        "statusCode": 200,
        "body": "welcome",
        "headers": {"Set-Cookie": "session=abc123", "set-cookie": "theme=dark"},
    }


@wrong("alb-cookies", "statusCode is text ('200')", "write a number")
def status_as_a_string(event, context):
    return _answer(event, status="200", pairs=[("Set-Cookie", "session=abc123"), ("set-cookie", "theme=dark")])


@wrong("alb-cookies", "returns None (is a return missing?)", "502 Bad Gateway")
def cookies_forgets_to_return(event, context):
    _answer(event)


# --- alb-greeting ---------------------------------------------------------------------------------------


def _greet(name, event, status=200):
    mode = "multiValueHeaders" if "multiValueHeaders" in event else "headers"
    value = ["text/plain"] if mode == "multiValueHeaders" else "text/plain"
    if name is None:
        return {"statusCode": 400, "body": "no name", mode: {"Content-Type": value}}
    return {"statusCode": status, "body": f"Hello, {name}!", mode: {"Content-Type": value}}


def _query(event):
    if "multiValueQueryStringParameters" in event:
        return {k: v[-1] for k, v in event["multiValueQueryStringParameters"].items()}
    return event["queryStringParameters"]


@wrong("alb-greeting", "urllib.parse.unquote")
def does_not_decode(event, context):
    return _greet(_query(event).get("name"), event)


@wrong("alb-greeting", "use the last value")
def takes_the_first_value(event, context):
    if "multiValueQueryStringParameters" in event:
        names = event["multiValueQueryStringParameters"].get("name")
        name = names[0] if names else None
    else:
        name = event["queryStringParameters"].get("name")
    return _greet(urllib.parse.unquote(name) if name else None, event)


@wrong("alb-greeting", "multiValueQueryStringParameters instead of queryStringParameters")
def reads_query_string_parameters_in_both_modes(event, context):
    name = event["queryStringParameters"].get("name")
    return _greet(urllib.parse.unquote(name) if name else None, event)


@wrong("alb-greeting", '.get("name")', "answer 400")
def assumes_a_name(event, context):
    return _greet(urllib.parse.unquote(_query(event)["name"]), event)


@wrong("alb-greeting", "without a name, answer 400")
def greets_none(event, context):
    name = _query(event).get("name")
    return _greet(urllib.parse.unquote(name) if name else "None", event)


@wrong("alb-greeting", "each query value is a list")
def greets_the_list(event, context):
    if "multiValueQueryStringParameters" in event:
        name = event["multiValueQueryStringParameters"].get("name")
    else:
        name = event["queryStringParameters"].get("name")
        name = urllib.parse.unquote(name) if name else None
    return _greet(name, event)


@wrong("alb-greeting", "say text/plain")
def no_content_type(event, context):
    name = _query(event).get("name")
    status = 200 if name else 400
    return {"statusCode": status, "body": f"Hello, {urllib.parse.unquote(name)}!" if name else "no name"}


@right("alb-greeting")
def greets_with_parse_qs(event, context):
    values = event.get("multiValueQueryStringParameters") or {}
    names = values.get("name") or (
        [event["queryStringParameters"]["name"]] if "name" in (event.get("queryStringParameters") or {}) else []
    )
    return _greet(urllib.parse.unquote(names[-1]) if names else None, event)


# --- alb-upper ---------------------------------------------------------------------------------------


@wrong("alb-upper", "base64.b64decode", "isBase64Encoded true")
def never_decodes(event, context):
    return {"statusCode": 200, "body": event["body"].upper()}


@wrong("alb-upper", "decode base64 only when isBase64Encoded is true")
def always_decodes(event, context):
    return {"statusCode": 200, "body": base64.b64decode(event["body"]).decode("utf-8").upper()}


@wrong("alb-upper", "the body is bytes, not text")
def returns_bytes(event, context):
    body = base64.b64decode(event["body"]) if event["isBase64Encoded"] else event["body"].encode()
    return {"statusCode": 200, "body": body.upper()}


# --- mail ----------------------------------------------------------------------------------------------------


def _all(kind, **parameters):
    action = {"type": kind, **({"parameters": parameters} if parameters else {})}
    return {"actions": [{"action": action, "allRecipients": True}]}


@wrong("mail-executables", "no disclaimer", "put_raw_message_content")
def forgets_the_disclaimer(event, context):
    raw = context.message_content.get_raw_message_content(event["messageId"])
    if any(n.lower().endswith(EXECUTABLE_EXTENSIONS) for n in attachment_names(raw)):
        return _all("BOUNCE", bounceMessage="No programs, please.")
    return _all("DEFAULT")


@wrong("mail-executables", "compare the names in lower case")
def compares_extensions_case_sensitively(event, context):
    raw = context.message_content.get_raw_message_content(event["messageId"])
    if any(n.endswith(EXECUTABLE_EXTENSIONS) for n in attachment_names(raw)):
        return _all("BOUNCE", bounceMessage="No programs, please.")
    context.message_content.put_raw_message_content(event["messageId"], add_disclaimer(raw))
    return _all("DEFAULT")


@wrong("mail-executables", "has no bounceMessage")
def bounces_without_a_message(event, context):
    raw = context.message_content.get_raw_message_content(event["messageId"])
    if any(n.lower().endswith(EXECUTABLE_EXTENSIONS) for n in attachment_names(raw)):
        return _all("BOUNCE")
    context.message_content.put_raw_message_content(event["messageId"], add_disclaimer(raw))
    return _all("DEFAULT")


@wrong("mail-executables", "returns None (is a return missing?)", "fallback action (DEFAULT)")
def mail_forgets_to_return(event, context):
    context.message_content.get_raw_message_content(event["messageId"])


@wrong("mail-executables", "cannot use your response at $.actions[0].action.type", "fallback action")
def lower_case_action_type(event, context):
    return _all("bounce", bounceMessage="No.")


@wrong("mail-former-staff", "compare addresses in lower case")
def compares_addresses_case_sensitively(event, context):
    gone = [r["address"] for r in event["envelope"]["recipients"] if r["address"] in FORMER_STAFF]
    actions = [{"action": {"type": "DEFAULT"}, "allRecipients": True}]
    if gone:
        actions.insert(0, {"action": {"type": "DROP"}, "recipients": gone})
    return {"actions": actions}


@wrong("mail-former-staff", "still works here", "deliver to them")
def drops_everyone(event, context):
    return _all("DROP")


@wrong(
    "mail-full-mailboxes", "only the first 10 unique actions count", "one BOUNCE action that lists every full mailbox"
)
def one_action_per_full_mailbox(event, context):
    actions = [
        {
            "action": {"type": "BOUNCE", "parameters": {"bounceMessage": f"{r['address']} is full"}},
            "recipients": [r["address"]],
        }
        for r in event["envelope"]["recipients"]
        if mailbox_full(r["address"])
    ]
    return {"actions": [*actions, {"action": {"type": "DEFAULT"}, "allRecipients": True}]}


@wrong("mail-full-mailboxes", "say that the mailbox is full")
def full_bounce_without_a_message(event, context):
    full = [r["address"] for r in event["envelope"]["recipients"] if mailbox_full(r["address"])]
    actions = [{"action": {"type": "DEFAULT"}, "allRecipients": True}]
    if full:
        actions.insert(0, {"action": {"type": "BOUNCE"}, "recipients": full})
    return {"actions": actions}


# --- the tests ---------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_LONG_ID = re.compile(r"[A-Za-z0-9+/=_\-]{24,}")


@pytest.mark.parametrize(("exercise_id", "handler", "words"), WRONG, ids=[f"{e}:{h.__name__}" for e, h, _ in WRONG])
def test_each_wrong_answer_gets_its_hint(exercise_id, handler, words):
    result = workshop.check(exercise_id, handler)
    assert result.status == "failed", str(result)
    first = result.problems[0]
    for word in words:
        assert word in first, f"{word!r} not in the first finding:\n{result}"


@pytest.mark.parametrize(("exercise_id", "handler", "words"), WRONG, ids=[f"{e}:{h.__name__}" for e, h, _ in WRONG])
def test_feedback_says_each_thing_once_with_ids_cut_short(exercise_id, handler, words):
    result = workshop.check(exercise_id, handler)
    sentences = [s for line in [result.message, *result.problems] for s in _SENTENCE_END.split(line)]
    assert len(sentences) == len(set(sentences)), f"a sentence is repeated:\n{result}"
    for problem in result.problems:
        # one finding, one sentence: nothing after its closing full stop
        assert len(_SENTENCE_END.split(problem.split(": ", 1)[1])) == 1, problem
    ids = [t for t in _LONG_ID.findall(str(result)) if any(c.isdigit() for c in t)]
    assert not ids, f"ids not cut short: {ids}"


def test_the_receipt_handle_hint_points_to_the_message_id():
    problem = workshop.check("queue-partial", returns_the_receipt_handle).problems[0]
    assert problem.index("receiptHandle") < problem.index('record["messageId"] instead')
    assert "…" in problem  # the receipt handle itself is cut short


@pytest.mark.parametrize(("exercise_id", "handler"), RIGHT, ids=[f"{e}:{h.__name__}" for e, h in RIGHT])
def test_right_answers_written_another_way_pass(exercise_id, handler):
    assert workshop.check(exercise_id, handler).passed


def test_every_exercise_has_wrong_answers_written_down():
    covered = {e for e, _, _ in WRONG}
    assert covered == set(workshop.exercises())


def test_the_same_finding_in_many_cases_is_said_once_naming_the_cases():
    result = workshop.check("queue-partial", lets_bad_order_escape)
    assert len(result.problems) == 1, str(result)
    assert result.problems[0].startswith("case 'one bad order in the middle' (also 'every order bad',")
    result = workshop.check("queue-partial", message_id_under_the_key_id)
    assert result.problems[0].startswith("cases 'one bad order in the middle', 'every order bad',")
