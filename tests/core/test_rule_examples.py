"""Every rule is one object with an implementation, and the rule -> example table triggers every rule.

The table is data (fnkit/data/rule_examples.json, printed by `fnkit rules --examples`); each
example is run here and must show its rule: in an issue, as the deciding rule of an outcome, in a
refusal, or (for simulator behaviour) in the fact it names.
"""

from __future__ import annotations

import pytest

from fnkit import rules
from fnkit._examples import run_example

EXAMPLES = rules.examples()


def test_every_rule_has_an_implementation():
    missing = [r.id for r in rules.catalogue() if r.implementation is None]
    assert not missing, f"rules without an implementation: {missing}"
    for r in rules.catalogue():
        assert ":" in r.implemented_by and r.implemented_by.startswith("fnkit."), (r.id, r.implemented_by)


def test_every_rule_has_an_example_and_every_example_a_rule():
    ids = rules.ids()
    with_examples = {e["rule"] for e in EXAMPLES}
    assert not ids - with_examples, f"rules without an example: {sorted(ids - with_examples)}"
    assert not with_examples - ids, f"examples of rules not in the catalogue: {sorted(with_examples - ids)}"


def test_rules_are_declared_once():
    with pytest.raises(ValueError, match="declared twice"):
        rules.rule("Q13", "queue", "doc", "again")


def test_an_implementation_cannot_cite_an_unknown_form_of_id():
    with pytest.raises(ValueError, match="is not of the form"):
        rules.rule("X1", "queue", "doc", "not an id of the catalogue's forms")


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"{e['rule']}-{e['kind']}" for e in EXAMPLES])
def test_each_example_triggers_its_rule(example):
    result = run_example(example)
    expect = example["input"].get("expect", {})
    for key, value in expect.items():
        assert result["facts"].get(key) == value, (key, result)
    if example["kind"] not in ("sim", "invoke") or not expect:
        assert example["rule"] in result["rules"], result


def test_the_command_line_prints_the_examples(capsys):
    from fnkit.cli import main

    assert main(["rules", "--examples", "--source", "queue"]) == 0
    out = capsys.readouterr().out
    assert "Q13" in out and "md5OfBody that does not match the body" in out
    assert "MS1" not in out
