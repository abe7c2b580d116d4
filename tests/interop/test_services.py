"""A service's test suite, written the usual way, through `fnkit.testing.assert_outcome`.

moto's `mock_aws`, `unittest.mock.patch` of a dependency, a `MagicMock` handler, pytest's
`monkeypatch` and a closure that collects what the handler did: each is active inside the
handler, with no extra argument to `assert_outcome`, and the test checks the side effect
afterwards, as it would after calling the handler directly.
"""

from __future__ import annotations

import json
import os
from typing import Any
from unittest import mock

import boto3  # type: ignore[import-untyped, unused-ignore]
import pytest
from moto import mock_aws

from fnkit import queue
from fnkit.testing import assert_outcome

TABLE = "orders"
OFFLINE = {  # no call may reach a real account
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}


# --- the service under test ---------------------------------------------------------------------------------


def save_orders(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Write each order to the table; a record that is not an order is reported failed (retried)."""
    table = boto3.resource("dynamodb").Table(os.environ["ORDERS_TABLE"])
    failures = []
    for record in event["Records"]:
        try:
            order = json.loads(record["body"])
            table.put_item(Item={"id": order["id"], "qty": int(order["qty"])})
        except (ValueError, KeyError, TypeError):
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


def notify(order: dict[str, Any]) -> None:
    """Tell the warehouse (a real service; a test replaces it)."""
    raise RuntimeError("the warehouse must not be called from a test")


def ship_orders(event: dict[str, Any], context: Any) -> dict[str, Any]:
    for record in event["Records"]:
        notify(json.loads(record["body"]))
    return {"batchItemFailures": []}


# --- tests -------------------------------------------------------------------------------------------------


@pytest.fixture
def orders_table(monkeypatch):
    for name, value in {**OFFLINE, "ORDERS_TABLE": TABLE}.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        yield boto3.resource("dynamodb").create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )


def test_a_queue_handler_writes_each_record_to_a_moto_table(orders_table, queue_event):
    event = queue_event([{"id": "o-1", "qty": 2}, "not an order", {"id": "o-2", "qty": 5}])
    ids = queue.correlation_ids(event)
    assert_outcome(save_orders, event, kind="partial", failed_ids=[ids[1]])
    items = orders_table.scan()["Items"]
    assert sorted((item["id"], int(item["qty"])) for item in items) == [("o-1", 2), ("o-2", 5)]


def test_a_patched_dependency_is_the_one_the_handler_calls(queue_event):
    event = queue_event([{"id": "o-1"}, {"id": "o-2"}])
    with mock.patch(f"{__name__}.notify") as warehouse:
        assert_outcome(ship_orders, event, kind="success", failed_ids=[])
    assert warehouse.call_args_list == [mock.call({"id": "o-1"}), mock.call({"id": "o-2"})]


def test_a_monkeypatched_dependency_is_the_one_the_handler_calls(queue_event, monkeypatch):
    told: list[dict[str, Any]] = []
    monkeypatch.setattr(f"{__name__}.notify", told.append)
    assert_outcome(ship_orders, queue_event([{"id": "o-3"}]), kind="success")
    assert told == [{"id": "o-3"}]


def test_a_magicmock_handler_is_called_once_with_the_event(queue_event):
    handler = mock.MagicMock(return_value={"batchItemFailures": []})
    event = queue_event(["a", "b"])
    assert_outcome(handler, event, kind="success")
    handler.assert_called_once()
    (called_with, context), _ = handler.call_args
    assert called_with == event and context.aws_request_id


def test_a_closure_collects_what_the_handler_saw(queue_event):
    seen: list[str] = []

    def handler(event, context):
        seen.extend(record["body"] for record in event["Records"])
        return {"batchItemFailures": []}

    assert_outcome(handler, queue_event(["first", "second"]), kind="success")
    assert seen == ["first", "second"]
