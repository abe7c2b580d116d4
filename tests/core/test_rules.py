"""The rules catalogue (fnkit/rules.py): one id per rule, evidence stated, every cited id known."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import fnkit
from fnkit import queue, rules

FNKIT_DIR = Path(fnkit.__file__).resolve().parent
# a quoted rule id in the source: "Q8a", 'QS1', "G2", "H4", "MS3", "A12"
QUOTED_ID = re.compile(r"""["']((?:[GH]|[QMA]S?)\d{1,2}[a-z]?)["']""")


def _cited_ids() -> dict[str, list[str]]:
    cited: dict[str, list[str]] = {}
    for path in sorted(FNKIT_DIR.rglob("*.py")):
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for rule_id in QUOTED_ID.findall(line):
                cited.setdefault(rule_id, []).append(f"{path.relative_to(FNKIT_DIR.parent)}:{lineno}")
    return cited


def test_ids_are_unique():
    ids = [r.id for r in rules.catalogue()]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert rules.ids() == frozenset(ids)


def test_every_rule_states_its_evidence_source_and_summary():
    for rule in rules.catalogue():
        assert rule.evidence in rules.EVIDENCE, rule
        assert rule.source in ("queue", "mail", "alb", "any"), rule
        assert rule.summary.strip(), rule
        assert rule.origin in ("spec", "platform-rules", "kit"), rule


def test_evidence_vocabulary_is_the_four_words():
    assert set(rules.EVIDENCE) == {"contract", "doc", "observed", "inferred"}


def test_every_rule_id_cited_in_the_source_is_in_the_catalogue():
    cited = _cited_ids()
    assert {"Q8", "Q8a", "QS1", "G0"} <= set(cited)  # the scan does find ids
    unknown = {rule_id: where for rule_id, where in cited.items() if rule_id not in rules.ids()}
    assert not unknown, f"rule ids cited but not in the catalogue: {unknown}"


def test_the_queue_rules_of_platform_rules_are_all_there():
    ids = rules.ids()
    for n in range(1, 15):
        assert f"Q{n}" in ids
    assert {"Q8a", "Q8b", "Q8c"} <= ids
    assert {f"QS{n}" for n in range(1, 8)} <= ids


def test_inferred_rules_say_so():
    assert rules.get("Q7").inferred
    assert rules.get("Q8a").inferred and rules.get("Q8b").inferred and rules.get("Q8c").inferred
    assert not rules.get("Q8").inferred
    assert rules.get("Q8").evidence == "contract"
    assert rules.get("Q13").evidence == "doc"


def test_get_unknown_rule_names_it():
    with pytest.raises(KeyError, match="Q99"):
        rules.get("Q99")


def test_catalogue_by_source_includes_the_general_rules():
    queue_rules = rules.catalogue("queue")
    assert {r.source for r in queue_rules} == {"queue", "any"}
    assert any(r.id == "G0" for r in queue_rules)
    assert not any(r.id.startswith("M") for r in queue_rules)


def test_table_has_the_columns():
    frame = rules.table()
    assert list(frame.columns) == ["id", "source", "evidence", "origin", "summary"]
    assert len(frame) == len(rules.catalogue())
    assert frame.set_index("id").loc["Q8a", "evidence"] == "inferred"


def test_table_for_one_source():
    frame = rules.table("queue")
    assert set(frame["source"]) == {"queue", "any"}


def test_rules_is_reachable_from_the_package():
    assert fnkit.rules is rules


# --- an id leads to its one function: `fnkit rules ID` ---------------------------------------------------------


@pytest.mark.parametrize("rule_id", ["Q7", "Q8", "Q10", "A1", "M1", "Q13", "G1"])
def test_fnkit_rules_id_shows_the_function_at_file_line(rule_id, capsys):
    from fnkit.cli import main

    assert main(["rules", rule_id]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{rule_id} (")
    where, _, name = out[1].partition(": ")
    path, _, line = where.rpartition(":")
    source = (FNKIT_DIR.parent / path).read_text(encoding="utf-8").splitlines()
    # the line named is where the function starts (its decorators: the rule's declaration among them)
    start = int(line) - 1
    head = "\n".join(source[start : start + 40])
    assert f"def {name.rsplit('.', 1)[-1]}(" in head, (rule_id, out[1])
    # the function shown is the one the rule's declaration is applied to (beside it, or named by it)
    assert rules.get(rule_id).implementation.__qualname__ == name, f"{rule_id} is not implemented by {name}"
    # and the id is written in one place at most, which the command names
    assert len(out[2].removeprefix("id written in: ").split(", ")) == 1, out[2]
    # and its code is printed beneath, as the file holds it
    assert any(f"def {name.rsplit('.', 1)[-1]}(" in o for o in out[3:])


def test_fnkit_rules_id_lists_every_function_that_finds_its_problems(capsys):
    """A rule declared on a shape and decided past it by a function (QS1: the event's shape, and `one_batch`, which
    `check_batch` and `check_arn_region` ask) is issued by that function alone: the checks return what it found,
    and the shape's walk names the rule by the id its declaration holds. A rule only a declaration states is
    issued by the engine's walk of it."""
    from fnkit.cli import main
    from fnkit.queue import _event

    issuers = rules.issued_by("QS1")
    assert [i.rsplit(": ", 1)[-1] for i in issuers] == ["one_batch"] and rules.of(_event.one_batch).id == "QS1"
    path, line = issuers[0].split(": ")[0].rsplit(":", 1)
    head = (FNKIT_DIR.parent / path).read_text(encoding="utf-8").splitlines()[int(line) - 1 : int(line) + 8]
    assert "def one_batch(" in "\n".join(head)
    # what the checks find of it is still QS1's, at the same place and in the same words
    report = queue.validate_event({"Records": []})
    assert [(i.path, i.rule) for i in report] == [("$.Records", "QS1")]
    two = queue.build_event(["a", "b"])
    two["Records"][1]["eventSourceARN"] = two["Records"][0]["eventSourceARN"] + "-other"
    found = [(i.path, i.code) for i in queue.validate_event(two) if i.rule == "QS1"]
    assert found == [("$.Records", "conflict")]
    assert main(["rules", "QS1"]) == 0
    assert capsys.readouterr().out.splitlines()[3] == f"issued by: {issuers[0]}"
    # a rule only a declaration states: the engine's walk of it
    assert rules.issued_by("QS2") == [rules.ENGINE_WALK]
    # a rule whose function finds all its problems is issued by that function alone
    assert main(["rules", "Q1"]) == 0
    assert (
        capsys.readouterr().out.splitlines()[3]
        == f"issued by: {rules.location('Q1')[0]}:{rules.location('Q1')[1]}: check_batch"
    )
    # and so is one whose function names itself on its findings (for the check that calls it): listed once
    assert rules.issued_by("Q15") == [f"{rules.location('Q15')[0]}:{rules.location('Q15')[1]}: placeholder_arn"]
    # a caller that places what the rule's function returned (`order = group_order(...)`, `place(order,
    # by=group_order)`), or what it was given, finds nothing itself: Q10 and G3 have one issuer each
    assert [i.rsplit(": ", 1)[1] for i in rules.issued_by("Q10")] == ["group_order"]
    assert [i.rsplit(": ", 1)[1] for i in rules.issued_by("G3")] == ["detect_source"]


def test_fnkit_rules_id_lists_the_functions_that_have_the_engine_place_its_findings(capsys):
    """A function that hands findings to the engine as a rule's (`place(found, by=...)`) issues that rule, unless
    what it places is what the rule's own function returned: A5 is issued by its check alone, though the report of
    a response a worker measured over the limit places the check's findings too; a timeout's 502 (H4) and a
    raise's (H3) by the running code's rule functions, which each source's outcome asks in its own words."""
    from fnkit import alb, queue
    from fnkit._engine.codec import HandlerError, Invocation
    from fnkit._running import handler_rules
    from fnkit.alb import _response
    from fnkit.cli import main

    def functions(rule_id: str) -> list[str]:
        return [i.rsplit(": ", 1)[1] for i in rules.issued_by(rule_id)]

    assert functions(rules.id_of(_response.check_size)) == ["check_size"]
    # and the report placed there says so: the rule of the worker's too-large response is A5
    assert _response.too_large_report(2_000_000).rules() == [rules.id_of(_response.check_size)]
    assert functions("H4") == ["timed_out"] and rules.of(handler_rules.timed_out).id == "H4"
    assert functions("H3") == ["raised"] and rules.of(handler_rules.raised).id == "H3"
    for rule_id, name in (("H3", "raised"), ("H4", "timed_out")):  # file:line is where the function starts
        path, line = rules.issued_by(rule_id)[0].split(": ")[0].rsplit(":", 1)
        head = (FNKIT_DIR.parent / path).read_text(encoding="utf-8").splitlines()[int(line) - 1 : int(line) + 1]
        assert f"def {name}(" in "\n".join(head), head
    # each outcome's issue of a late or raising call is still the rule's, in the source's words
    late = Invocation(timed_out=True, timeout_s=3.0)
    failed = Invocation(error=HandlerError("ValueError", "no", ""))
    event = queue.build_event(["a"])
    assert [(i.code, i.rule) for i in queue.outcome(event, late).issues] == [("timeout", "H4")]
    assert [(i.code, i.rule) for i in queue.outcome(event, failed).issues] == [("error", "H3")]
    assert alb.outcome(alb.build_event(), late).issues.rules() == ["H4"]
    assert [i.message for i in alb.outcome(alb.build_event(), late).issues] == [
        "The function did not answer within 3.0 s."
    ]
    assert main(["rules", "A5"]) == 0
    assert capsys.readouterr().out.splitlines()[3] == f"issued by: {', '.join(rules.issued_by('A5'))}"


def test_fnkit_rules_id_json_and_an_unknown_id(capsys):
    import json

    from fnkit.cli import main

    assert main(["rules", "Q8", "A1", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [s["id"] for s in shown] == ["Q8", "A1"]
    for s in shown:
        assert s["file"].startswith("fnkit/") and s["line"] > 0 and s["code"].strip()
        assert rules.location(s["id"]) == (s["file"], s["line"])
    assert main(["rules", "Q99"]) == 2
    assert "no rule Q99" in capsys.readouterr().err


def test_every_rule_leads_to_code():
    for r in rules.catalogue():
        path, line = rules.location(r.id)
        assert (FNKIT_DIR.parent / path).is_file() and line > 0, r.id
        assert rules.code(r.id).strip(), r.id


def test_each_rule_is_issued_by_the_one_function_that_decides_it():
    """`fnkit rules ID` lists one issuer for every rule: the function (or class, or the engine's walk of a
    declaration) that decides it; other code that finds the rule's problems places what that function returned
    (issue 30: a rule decides, the engine does the rest)."""
    several = {i: found for i in sorted(rules.ids()) if len(found := rules.issued_by(i)) != 1}
    assert not several, several


def test_g1_and_q12_are_decided_by_one_function_each_whichever_reading_asks():
    """G1: the engine's walk and the queue response's own reading both place what `unknown_key` returns; Q12: the
    ARN pass and the message attributes' loop both return what `record_keys` found, at each record's keys."""
    from fnkit.queue import _contents

    assert [i.rsplit(": ", 1)[-1] for i in rules.issued_by("G1")] == ["unknown_key"]
    assert [i.rsplit(": ", 1)[-1] for i in rules.issued_by("Q12")] == ["record_keys"]
    assert rules.of(_contents.record_keys).id == "Q12"
    walked = queue.validate_event({"Records": [], "records": 1})
    read = queue.validate_response({"batchItemFailures": [{"itemIdentifier": "a", "why": 1}], "note": 2})
    assert [(i.path, i.code, i.rule) for i in walked if i.rule == "G1"] == [("$.records", "unknown", "G1")]
    assert [(i.path, i.message, i.rule) for i in read if i.rule == "G1"] == [
        ("$.note", "'note' is not part of the response; the platform ignores it.", "G1"),
        ("$.batchItemFailures[0].why", "'why' is ignored; a failure carries only itemIdentifier.", "G1"),
    ]
    event = queue.build_event(["a", "b"], dialect="aws", seed=1)
    event["Records"][1]["awsRegion"] = "eu-west-1"
    event["Records"][0]["messageAttributes"] = {"x": {"dataType": "Binary", "stringValue": "v"}}
    found = [(i.path, i.code, i.rule) for i in queue.validate_event(event) if i.rule in ("Q12", "Q13", "Q14")]
    assert found == [
        ("$.Records[1].awsRegion", "mismatch", "Q12"),
        ("$.Records[0].messageAttributes.x.binaryValue", "missing", "Q12"),
        ("$.Records[0].messageAttributes.x.stringValue", "unexpected", "Q12"),
    ]
