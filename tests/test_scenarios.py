"""Random simulator scenarios (issue 10): nothing lost, FIFO order kept, one disposition per recipient.

A few dozen here, in a worker process and inline; tests/benchmarks/bench_scenarios.py runs 1,000 of each.
"""

from __future__ import annotations

import pytest

from . import scenarios


@pytest.mark.parametrize("seed", range(40))
def test_random_queue_scenarios_keep_every_message(seed):
    scenarios.queue_scenario(seed, "none")


@pytest.mark.parametrize("seed", range(40, 46))
def test_random_queue_scenarios_in_a_worker_process(seed):
    scenarios.queue_scenario(seed, "process")


@pytest.mark.parametrize("seed", range(40))
def test_random_mail_rules_give_every_recipient_one_disposition(seed):
    scenarios.mail_scenario(seed, "none")


@pytest.mark.parametrize("seed", range(40, 44))
def test_random_mail_rules_in_a_worker_process(seed):
    scenarios.mail_scenario(seed, "process")


def test_the_scenarios_cover_every_behaviour():
    statuses = {scenarios.mail_scenario(seed, "none")["status"] for seed in range(30)}
    assert statuses == {"applied", "fallback", "ignored"}
    summaries = [scenarios.queue_scenario(seed, "none") for seed in range(30)]
    assert any(s["dead-lettered"] for s in summaries) and any(s["deleted"] for s in summaries)
    assert any(s["ordering warnings"] for s in summaries)
