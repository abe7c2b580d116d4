"""A small order service with three entry points, one per event source.

- `process_orders`: consumes a queue of orders; reports the messages it could not
  process (partial-batch responses), so only those come back.
- `orders_api`: the service's HTTP API behind a load balancer, in either header mode.
- `screen_mail`: a mail-flow rule that bounces attachments it does not accept.

Plain functions of `(event, context)`: nothing here imports fnkit. The tests beside this
file (`test_orders_service.py`) check them with fnkit's pytest plugin.
"""

from __future__ import annotations

import base64
import json
from typing import Any

Event = dict[str, Any]  # an event as the platform sends it: decoded JSON
Response = dict[str, Any]

ORDERS: dict[str, dict[str, Any]] = {"42": {"id": "42", "item": "parcel", "qty": 2}}


def process_orders(event: Event, context: object) -> Response:
    """Store each order of the batch; list the records that are not valid orders."""
    failures: list[dict[str, str]] = []
    for record in event["Records"]:
        try:
            order = json.loads(record["body"])
            if not isinstance(order, dict) or int(order["qty"]) <= 0:
                raise ValueError("not an order")
            ORDERS[str(order["id"])] = order
        except (ValueError, KeyError, TypeError):
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


def _answer(event: Event, status: int, payload: object) -> Response:
    """A JSON response in the event's header mode."""
    headers = {"content-type": "application/json"}
    response: Response = {"statusCode": status, "body": json.dumps(payload), "isBase64Encoded": False}
    if "multiValueHeaders" in event:
        response["multiValueHeaders"] = {name: [value] for name, value in headers.items()}
    else:
        response["headers"] = headers
    return response


def orders_api(event: Event, context: object) -> Response:
    """GET /orders/ID reads an order; POST /orders stores one; anything else is 404."""
    method, path = event["httpMethod"], event["path"]
    if method == "GET" and path.startswith("/orders/"):
        order = ORDERS.get(path.rsplit("/", 1)[-1])
        return _answer(event, 200, order) if order else _answer(event, 404, {"error": "no such order"})
    if method == "POST" and path == "/orders":
        raw = base64.b64decode(event["body"]) if event["isBase64Encoded"] else event["body"].encode()
        try:
            order = json.loads(raw)
            ORDERS[str(order["id"])] = order
        except (ValueError, KeyError, TypeError):
            return _answer(event, 400, {"error": "the body is not an order"})
        return _answer(event, 201, order)
    return _answer(event, 404, {"error": f"no route for {method} {path}"})


def screen_mail(event: Event, context: object) -> Response:
    """Bounce mail whose subject announces an executable; deliver the rest."""
    if ".exe" in event["subject"].lower():
        bounce = {"type": "BOUNCE", "parameters": {"bounceMessage": "Executables are not accepted."}}
        return {"actions": [{"action": bounce, "allRecipients": True}]}
    return {"actions": [{"action": {"type": "DEFAULT"}, "allRecipients": True}]}
