"""Fuzzing every validator, parser and outcome (issue 10): nothing raises but the documented errors.

The profile's examples each here (tests/conftest.py: 100 in the suite); tests/benchmarks/bench_fuzz.py
runs 10,000 each and checks the time per input. Inputs and checks live in tests/fuzzing.py.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fnkit
from fnkit import alb, mail, queue

from . import fuzzing

# the examples per test come from the profile (tests/conftest.py)
FUZZ = settings(deadline=None, suppress_health_check=list(HealthCheck))
SOURCES = ["queue", "mail", "alb"]


@pytest.mark.parametrize("source", SOURCES)
@FUZZ
@given(data=st.data())
def test_validators_and_parsers_never_raise(source, data):
    value = data.draw(fuzzing.inputs(source))
    for name, target in fuzzing.targets(source).items():
        fuzzing.check_result(name, target(value))


@pytest.mark.parametrize("source", SOURCES)
@FUZZ
@given(data=st.data())
def test_outcome_of_a_built_event_never_raises_whatever_the_response(source, data):
    event = data.draw(fuzzing.built_events(source))
    response = data.draw(fuzzing.inputs(source))
    fuzzing.outcome_of(source, event, response)


@pytest.mark.parametrize("source", SOURCES)
@FUZZ
@given(data=st.data())
def test_outcome_of_any_event_never_raises_but_the_documented_error(source, data):
    fuzzing.outcome_of(source, data.draw(fuzzing.inputs(source)), data.draw(fuzzing.inputs(source)))


@FUZZ
@given(value=st.one_of(fuzzing.inputs("queue"), fuzzing.inputs("mail"), fuzzing.inputs("alb")))
def test_fnkit_validate_never_raises(value):
    fuzzing.validate_any(value)


@pytest.mark.parametrize("value", fuzzing.SPECIAL, ids=[f"special-{i}" for i in range(len(fuzzing.SPECIAL))])
def test_the_special_inputs_for_every_target(value):
    for source in SOURCES:
        for name, target in fuzzing.targets(source).items():
            fuzzing.check_result(name, target(value))
        fuzzing.outcome_of(source, value, value)
    fuzzing.validate_any(value)


@pytest.mark.parametrize("source", SOURCES)
@FUZZ
@given(data=st.data())
def test_invalid_utf8_in_a_key_or_a_value_is_a_located_issue_for_every_validator(source, data):
    raw, at, _where = data.draw(fuzzing.invalid_utf8_inside(source))
    module = {"queue": queue, "mail": mail, "alb": alb}[source]
    answers = {
        "validate_event": module.validate_event,
        "validate_response": module.validate_response,
        "parse_event": fuzzing.parse_or_report(module),
        "fnkit.validate": fnkit.validate,
        "fnkit.validate_response": lambda d: fnkit.validate_response(d, source=source),
    }
    for name, target in answers.items():
        report = target(raw)
        assert isinstance(report, fnkit.Report), name
        [issue] = report.errors  # nothing else can be said of bytes that are not text
        # G0; a queue response names Q8, what the platform does with it (the whole batch fails)
        assert issue.rule in ("G0", "Q8") and issue.path == "$", (name, issue)
        assert f"not UTF-8 text (bad byte at position {at})" in issue.message, (name, issue.message)


def test_invalid_utf8_in_a_key_is_located_by_each_source_and_fnkit_validate():
    for module in (queue, mail, alb):
        for target in (module.validate_event, module.validate_response, fuzzing.parse_or_report(module)):
            [issue] = target(b'{"\xff": 1}').errors
            assert "bad byte at position 2" in issue.message and issue.rule in ("G0", "Q8")
    assert "bad byte at position 16" in fnkit.validate(b'{"Records": [{"a\xc3\x28": 1}]}').errors[0].message
    # after a byte-order mark, the position still counts from the first byte of what was given
    assert "bad byte at position 5" in queue.validate_event(b'\xef\xbb\xbf{"\xff": 1}').errors[0].message


# --- the findings, each kept as a regression test --------------------------------------------------


def test_an_int_of_5000_digits_is_described_not_raised():
    report = queue.validate_event({"Records": [{"messageId": fuzzing.HUGE_INT}]})
    assert not report.ok and any("number" in i.message for i in report)


def test_an_alb_status_code_of_5000_digits_is_a_located_issue():
    report = alb.validate_response({"statusCode": fuzzing.HUGE_INT})
    assert not report.ok and "4300 digits" in report.errors[0].message
    report = alb.validate_response({"statusCode": 10**20})
    assert report.errors[0].path == "$.statusCode" and "of 21 digits" in report.errors[0].message
    result = alb.outcome(alb.build_event(seed=1), {"statusCode": fuzzing.HUGE_INT})
    assert result.status == 502


def test_a_response_whose_items_raise_is_invalid_json_not_a_crash():
    result = queue.outcome(queue.build_event(["a"], seed=1), fuzzing.ExplodingDict(batchItemFailures=[]))
    assert result.kind == "failure" and result.rule == "Q8"
    assert alb.outcome(alb.build_event(seed=1), fuzzing.ExplodingDict(statusCode=200)).status == 502
    event = mail.build_event(mail_from="a@example.org", recipients=["b@example.com"], seed=1)
    assert mail.outcome(event, fuzzing.ExplodingDict(actions=[])).status == "fallback"
    assert not fnkit.validate(fuzzing.ExplodingDict(Records=[])).ok


def test_alb_headers_of_a_dict_subclass_whose_items_raise_are_read_as_a_dict():
    event = alb.build_event(seed=2)
    event["headers"] = fuzzing.ExplodingDict(event["headers"])
    report = alb.validate_event(event)
    assert report.ok, list(report)
    assert alb.outcome(event, {"statusCode": 200}).status == 200
    response = alb.validate_response({"statusCode": 200, "headers": fuzzing.ExplodingDict(a="b")})
    assert not response.ok and "exploded" in response.errors[0].message  # a response must be JSON: this is not


def test_a_mail_action_type_of_5000_digits_is_an_issue_not_a_crash():
    for odd in (fuzzing.HUGE_INT, [fuzzing.HUGE_INT], {"n": fuzzing.HUGE_INT}):
        report = mail.validate_response({"actions": [{"action": {"type": odd}, "allRecipients": True}]})
        assert not report.ok and not [i for i in report if i.code == "unchecked"]


def test_a_queue_message_attribute_map_whose_items_raise_is_reported():
    event = queue.build_event(["a"], seed=1)
    event["Records"][0]["messageAttributes"] = fuzzing.ExplodingDict(a=1)
    report = queue.validate_event(event)
    # read as the dict it is (never through its own items()), so its entry is judged like any other
    assert [(i.path, i.rule) for i in report.errors] == [("$.Records[0].messageAttributes.a", "Q12")]


# --- readers and HTTP framing (issue 32) ------------------------------------------------------------------


@FUZZ
@given(text=fuzzing.reader_texts)
def test_the_readers_turn_any_lines_into_events_or_located_issues(tmp_path_factory, text):
    from fnkit._import import events_from_file, is_json_lines

    path = tmp_path_factory.mktemp("lines") / "events.jsonl"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    stream = events_from_file(path)
    entries = list(stream.entries())
    assert all(issue.path.startswith(f"{path}:") for issue in stream.issues)
    said = {issue.path for issue in stream.issues}
    assert stream.read == len(text.splitlines()) or not is_json_lines(path)  # as lines: each one counted
    assert len(entries) <= stream.read and (said or entries or not text.strip())
    messages = queue.events_from_messages(path)
    list(messages)
    assert all(issue.path.startswith(f"{path}:") for issue in messages.issues)


@pytest.mark.parametrize("field", fuzzing.MESSAGE_FIELDS)
@pytest.mark.parametrize("raw", ["9" * 5000, "-" + "9" * 5000, "[" * 5000 + "]" * 5000], ids=["huge", "-huge", "deep"])
def test_a_huge_integer_or_a_deep_value_in_any_message_field_is_a_located_issue(field, raw):
    stream = queue.events_from_messages(fuzzing.message_with(field, raw))
    assert list(stream) == []
    assert [issue.path for issue in stream.issues] == ["<text>:1"]


@FUZZ
@given(head=fuzzing.request_heads())
def test_any_request_head_is_judged_and_both_framing_headers_are_never_forwarded_as_is(head):
    from fnkit.alb._desync import decide, judge_head

    judged = judge_head(head)
    close, refused = decide(judged)
    names, lengths = fuzzing.framing_of(head)
    if names == {"transfer-encoding", "content-length"} or len(lengths) > 1:
        assert judged.tier in ("ambiguous", "severe"), (head, judged.why)
        assert close and (refused is not None or judged.tier == "ambiguous")
    if len(set(lengths)) > 1:
        assert refused is not None and refused.status == 400
    if judged.tier == "severe":
        assert refused is not None


@FUZZ
@given(data=st.binary(max_size=300), cut=st.integers(min_value=0, max_value=300))
def test_the_request_reader_never_raises_on_any_bytes(data, cut):
    from fnkit.alb._desync import body_framing, judge_head
    from fnkit.alb._reader import Reader

    reader = Reader(16 * 1024)
    for piece in (data[:cut], data[cut:]):
        reader.feed(piece)
        for _ in range(50):
            kind, value = reader.next()
            if kind == "head":
                assert isinstance(value, bytes)
                framing, length = body_framing(judge_head(value))
                reader.expect("none" if framing == "unreadable" else framing, length)
            elif kind == "end":
                reader.next_cycle()
            elif kind in ("need", "error", "done"):
                break
