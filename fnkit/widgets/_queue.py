"""The queue source as the widgets see it: form, example handlers, response forms."""

from __future__ import annotations

import json
import time
from typing import Any

from ..queue._config import QueueConfig
from ._adapter import Form, SourceAdapter
from ._fields import Field, FieldError, setting_field

FIELDS = [
    Field(
        "bodies",
        "Bodies",
        "lines",
        ['{"order": 1, "qty": 2}', '{"order": 2, "qty": 1}', '{"order": 3, "qty": 5}'],
        "One message body per line.",
        rows=4,
    ),
    setting_field(QueueConfig, "fifo"),
    Field(
        "group_ids",
        "Group ids",
        "csv",
        None,
        "FIFO only: one message group per body, e.g. a, a, b.",
        example="FIFO: a, a, b",
    ),
    Field(
        "receive_counts",
        "Receive counts",
        "csv",
        None,
        "How often each message was received so far, one per body (1 = first delivery).",
        example="e.g. 1, 1, 3",
    ),
    Field(
        "message_attributes",
        "Message attributes",
        "json",
        None,
        'JSON for every body, e.g. {"Author": {"dataType": "String", "stringValue": "Ada"}}',
        rows=2,
    ),
    Field("region", "Region", "text", "us-east-1", "The queue's region (awsRegion and the ARN)."),
]


def _field(name: str) -> Field:
    return next(f for f in FIELDS if f.name == name)


def to_kwargs(values: dict[str, Any]) -> dict[str, Any]:
    """Form values -> `fnkit.queue.build_event` keywords; FieldError in plain words."""
    bodies = values["bodies"]
    if not bodies:
        raise FieldError(_field("bodies"), "Write at least one message body (one per line): a batch is never empty.")
    n = len(bodies)
    kwargs: dict[str, Any] = {
        "bodies": bodies,
        "fifo": bool(values["fifo"]),
        "dialect": values["dialect"],
        "seed": int(values["seed"]),
    }
    groups = values.get("group_ids")
    if groups:
        if not values["fifo"]:
            raise FieldError(
                _field("group_ids"), "Group ids belong to FIFO queues: tick 'FIFO queue' or clear the group ids."
            )
        if len(groups) != n:
            raise FieldError(
                _field("group_ids"),
                f"There are {n} bodies but {len(groups)} group id(s): give one group id per body, separated by commas.",
            )
        kwargs["group_ids"] = groups
    if values["fifo"] and n > 10:
        raise FieldError(_field("bodies"), f"A FIFO batch holds at most 10 messages; there are {n} bodies.")
    counts = values.get("receive_counts")
    if counts:
        if len(counts) != n:
            raise FieldError(
                _field("receive_counts"),
                f"There are {n} bodies but {len(counts)} receive count(s): give one per body, separated by commas.",
            )
        parsed = []
        for c in counts:
            if not c.isdigit() or int(c) < 1:
                raise FieldError(
                    _field("receive_counts"),
                    f"'{c}' is not a receive count: write whole numbers from 1 (1 = first delivery).",
                )
            parsed.append(int(c))
        kwargs["receive_counts"] = parsed
    attrs = values.get("message_attributes")
    if attrs is not None:
        if not isinstance(attrs, (dict, list)):
            raise FieldError(
                _field("message_attributes"),
                "Message attributes are a JSON object of name -> attribute (the same for every body), "
                "or a list with one object per body.",
            )
        if isinstance(attrs, list) and len(attrs) != n:
            raise FieldError(
                _field("message_attributes"),
                f"There are {n} bodies but {len(attrs)} attribute objects in the list: give one per body.",
            )
        kwargs["message_attributes"] = attrs
    region = str(values.get("region") or "").strip()
    if region:
        kwargs["region"] = region
    return kwargs


# --- example handlers ---------------------------------------------------------------


def _order_ok(body: str) -> bool:
    try:
        order = json.loads(body)
    except ValueError:
        return False
    qty = order.get("qty") if isinstance(order, dict) else None
    return isinstance(qty, int) and not isinstance(qty, bool) and qty > 0


def list_bad_orders(event, context):
    """Process each order; list the messages whose body is not an order with a positive qty."""
    failures = []
    for record in event["Records"]:
        if not _order_ok(record["body"]):
            print(f"bad order in {record['messageId']}")
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


def list_mentions_of_bad(event, context):
    """List every message whose body mentions 'bad'."""
    return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"] if "bad" in r["body"]]}


def fifo_safe(event, context):
    """FIFO-safe: a group stops at its first bad order; that message and the rest of its group are listed."""
    failures, stopped = [], set()
    for record in event["Records"]:
        group = record["attributes"].get("MessageGroupId", "")
        if group in stopped or not _order_ok(record["body"]):
            stopped.add(group)
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


def all_succeed(event, context):
    """Process every message and report no failures."""
    return {"batchItemFailures": []}


def raise_an_error(event, context):
    """Fails the whole invocation: the database is down."""
    raise ConnectionError("the orders database is down")


def hang(event, context):
    """Never returns (the runner's timeout stops it)."""
    while True:
        time.sleep(0.05)


def return_junk(event, context):
    """Returns a Python set, which JSON cannot encode."""
    return {"batchItemFailures": {r["messageId"] for r in event["Records"]}}


def misspelled_key(event, context):
    """Lists the bad orders under 'BatchItemFailures' (capital B)."""
    return {
        "BatchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"] if not _order_ok(r["body"])]
    }


EXAMPLES = {
    "list bad orders": list_bad_orders,
    "list bodies that mention 'bad'": list_mentions_of_bad,
    "FIFO-safe: stop a group at its first failure": fifo_safe,
    "all succeed": all_succeed,
    "misspelled key (BatchItemFailures)": misspelled_key,
    "raise an error": raise_an_error,
    "hang (never returns)": hang,
    "return junk (a set)": return_junk,
}

# --- response forms -------------------------------------------------------------------


def _ids(event: Any) -> list[str]:
    recs = event.get("Records") if isinstance(event, dict) else None
    ids = [r.get("messageId") for r in recs or [] if isinstance(r, dict)]
    return [i for i in ids if isinstance(i, str)] or ["<messageId>"]


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2)


FORMS = [
    Form("complete success", "all deleted · null", lambda e: "null", key="null"),
    Form("complete success", "all deleted · {}", lambda e: "{}", key="{}"),
    Form(
        "complete success",
        "all deleted · failures null",
        lambda e: _dump({"batchItemFailures": None}),
        key="failures null",
    ),
    Form(
        "complete success", "all deleted · failures []", lambda e: _dump({"batchItemFailures": []}), key="failures []"
    ),
    Form(
        "partial failure",
        "first retried, rest deleted",
        lambda e: _dump({"batchItemFailures": [{"itemIdentifier": _ids(e)[0]}]}),
        key="first message failed",
    ),
    Form(
        "partial failure",
        "last retried, rest deleted",
        lambda e: _dump({"batchItemFailures": [{"itemIdentifier": _ids(e)[-1]}]}),
        key="last message failed",
    ),
    Form(
        "complete failure",
        "whole batch retried · invalid JSON",
        lambda e: '{"batchItemFailures": [',
        key="invalid JSON",
    ),
    Form(
        "complete failure",
        "whole batch retried · empty id",
        lambda e: _dump({"batchItemFailures": [{"itemIdentifier": ""}]}),
        key="empty id",
    ),
    Form(
        "complete failure",
        "whole batch retried · null id",
        lambda e: _dump({"batchItemFailures": [{"itemIdentifier": None}]}),
        key="null id",
    ),
    Form(
        "complete failure",
        "whole batch retried · id under 'id'",
        lambda e: _dump({"batchItemFailures": [{"id": _ids(e)[0]}]}),
        key="wrong key name",
        note="The messageId is there, but under 'id' instead of 'itemIdentifier'.",
    ),
    Form(
        "complete failure",
        "whole batch retried · id not in batch",
        lambda e: _dump({"batchItemFailures": [{"itemIdentifier": "not-in-this-batch"}]}),
        key="id not in batch",
    ),
    Form(
        "trap",
        "all deleted, failure lost · 'BatchItemFailures'",
        lambda e: _dump({"BatchItemFailures": [{"itemIdentifier": _ids(e)[0]}]}),
        key="misspelled key",
        note="A capital B: read as no failures, so the failure is lost.",
    ),
]


def describe_event(event: Any) -> str:
    recs = event.get("Records") if isinstance(event, dict) else None
    if not isinstance(recs, list):
        return ""
    fifo = any(
        isinstance(r, dict) and isinstance(r.get("attributes"), dict) and "MessageGroupId" in r["attributes"]
        for r in recs
    )
    return f"{len(recs)} record(s){', FIFO' if fifo else ''}"


ADAPTER = SourceAdapter(
    source="queue",
    title="Queue batch event",
    fields=FIELDS,
    examples=EXAMPLES,
    default_example="list bad orders",
    config=[setting_field(QueueConfig, "report_batch_item_failures")],
    forms=FORMS,
    default_response=lambda e: _dump({"batchItemFailures": []}),
    to_kwargs=to_kwargs,
    columns=["index", "item", "action", "rule", "warnings"],
    describe_event=describe_event,
    id_columns=("item",),
)
