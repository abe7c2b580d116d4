"""Tests of the order service with fnkit's pytest plugin: fixtures, assertions, strategies.

The fixtures `queue_event`, `alb_event` and `mail_event` come from the plugin that
installing fnkit registers (no conftest.py needed); `assert_valid` and `assert_outcome`
fail with messages that list every issue or print the outcome's table.
"""

import json
from typing import Any

import pytest
from hypothesis import given, settings
from orders_service import orders_api, process_orders, screen_mail

import fnkit
from fnkit.testing import EventFactory, assert_outcome, assert_valid, strategies

# --- the queue consumer ------------------------------------------------------------------


def test_good_orders_are_deleted(queue_event: EventFactory) -> None:
    event = queue_event([json.dumps({"id": 1, "qty": 2}), json.dumps({"id": 2, "qty": 1})])
    assert_outcome(process_orders, event, kind="success", failed_ids=[])


def test_only_the_bad_order_comes_back(queue_event: EventFactory) -> None:
    event = queue_event([json.dumps({"id": 1, "qty": 2}), "{not json", json.dumps({"id": 3, "qty": 0})])
    ids = fnkit.queue.correlation_ids(event)
    result = assert_outcome(process_orders, event, kind="partial", failed_ids=[ids[1], ids[2]])
    assert result.deleted_ids == (ids[0],)


def test_the_consumer_answers_what_the_contract_allows(queue_event: EventFactory) -> None:
    event = queue_event(["{not json"], fifo=True, group_ids=["customer-7"])
    assert_valid(event)
    assert_valid(process_orders(event, None), event=event)


@settings(max_examples=50, deadline=None)
@given(strategies.queue_events())
def test_no_order_is_ever_lost(event: dict[str, Any]) -> None:
    result = fnkit.queue.run(process_orders, event)
    assert result.kind != "failure"  # never the whole batch back: the handler reports each bad record
    assert set(result.failed_ids) | set(result.deleted_ids) == set(fnkit.queue.correlation_ids(event))


# --- the HTTP API ------------------------------------------------------------------------


def test_an_order_can_be_read(alb_event: EventFactory) -> None:
    result = assert_outcome(
        orders_api, alb_event("GET", "/orders/42"), status=200, headers={"content-type": "application/json"}
    )
    assert json.loads(result.body)["item"] == "parcel"


def test_a_posted_order_is_created_in_either_header_mode(alb_event: EventFactory) -> None:
    for multi_value in (False, True):
        event = alb_event(
            "POST",
            "/orders",
            body=b'{"id": "7", "qty": 1}',
            headers={"content-type": "application/json"},
            multi_value=multi_value,
        )
        assert_outcome(orders_api, event, status=201, body='{"id": "7", "qty": 1}')


@pytest.mark.parametrize(("method", "path"), [("GET", "/nowhere"), ("DELETE", "/orders/42")])
def test_unknown_routes_are_404(alb_event: EventFactory, method: str, path: str) -> None:
    assert_outcome(orders_api, alb_event(method, path), status=404)


@settings(max_examples=50, deadline=None)
@given(strategies.alb_events())
def test_every_request_gets_a_valid_answer(event: dict[str, Any]) -> None:
    assert_valid(orders_api(event, None), event=event)
    assert fnkit.alb.run(orders_api, event).status in (200, 201, 400, 404)


# --- the mail rule -----------------------------------------------------------------------


def test_executables_bounce_for_every_recipient(mail_event: EventFactory) -> None:
    event = mail_event(recipients=["ana@example.com", "ben@example.com"], subject="invoice.EXE attached")
    assert_outcome(screen_mail, event, status="applied", actions="BOUNCE")


def test_other_mail_is_delivered(mail_event: EventFactory) -> None:
    assert_outcome(screen_mail, mail_event(subject="Lunch?"), actions="DEFAULT")


@settings(max_examples=50, deadline=None)
@given(strategies.mail_events())
def test_every_recipient_gets_a_decision(event: dict[str, Any]) -> None:
    result = fnkit.mail.run(screen_mail, event)
    assert result.status == "applied"
    assert set(result.decisions) == {r["address"] for r in event["envelope"]["recipients"]}
