"""Handlers written with Powertools for AWS Lambda run unchanged under fnkit.

Each handler below is written as Powertools' documentation teaches: a batch processor with
`process_partial_response`, the FIFO processor, and `event_parser` with a parser model.
fnkit runs them as the platform would (`queue.run`, `QueueSim`, `alb.serve` behind a real
HTTP client) and says what the platform does with their answers. Where Powertools' own
models reject an event the contract allows, the test shows it and the workaround.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx
import pytest
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    SqsFifoPartialProcessor,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.parser.models import AlbModel, SqsModel, SqsRecordModel
from pydantic import Field

from fnkit import alb, queue
from fnkit.testing import assert_outcome, assert_valid

# --- handlers, as Powertools users write them -------------------------------------------------------------

processor = BatchProcessor(event_type=EventType.SQS)


def record_handler(record: SQSRecord) -> None:
    order = record.json_body  # raises on a body that is not JSON: that record is reported as failed
    if order["qty"] <= 0:
        raise ValueError(f"order {order['id']} has no quantity")


def batch_handler(event: dict[str, Any], context) -> PartialItemFailureResponse:
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)


model_processor = BatchProcessor(event_type=EventType.SQS, model=SqsRecordModel)


def model_record_handler(record: SqsRecordModel) -> None:
    assert isinstance(record.body, str)  # (a body model would parse it; this model has none)
    json.loads(record.body)


def model_batch_handler(event: dict[str, Any], context) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=model_record_handler, processor=model_processor, context=context
    )


@event_parser(model=SqsModel)
def parsed_sqs_handler(event: SqsModel, context) -> dict[str, Any]:
    return {"batchItemFailures": [{"itemIdentifier": r.messageId} for r in event.Records if r.body == "poison"]}


seen: list[str] = []


def fifo_record_handler(record: SQSRecord) -> None:
    seen.append(record.body)
    if record.body.startswith("poison"):
        raise ValueError("cannot process")


def make_fifo_handler(processor: SqsFifoPartialProcessor):
    def fifo_handler(event: dict[str, Any], context) -> PartialItemFailureResponse:
        return process_partial_response(
            event=event, record_handler=fifo_record_handler, processor=processor, context=context
        )

    return fifo_handler


def naive_fifo_handler(event: dict[str, Any], context) -> PartialItemFailureResponse:
    # the plain processor on a FIFO queue: it lists only the failed record, not the ones after it
    return process_partial_response(
        event=event, record_handler=fifo_record_handler, processor=processor, context=context
    )


@event_parser(model=AlbModel)
def alb_handler(event: AlbModel, context) -> dict[str, Any]:
    body = {
        "method": event.httpMethod,
        "path": event.path,
        "query": event.queryStringParameters,
        "agent": event.headers.get("user-agent"),
        "body": event.body,
    }
    return {
        "statusCode": 200,
        "statusDescription": "200 OK",
        "isBase64Encoded": False,
        "headers": {"content-type": "application/json"},
        "body": json.dumps(body),
    }


# --- BatchProcessor under queue.run ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", ["provider", "aws"])
def test_batch_processor_reports_exactly_the_bad_records(dialect):
    event = queue.build_event(
        [
            json.dumps({"id": 1, "qty": 2}),
            "{not json",
            json.dumps({"id": 3, "qty": 0}),
            json.dumps({"id": 4, "qty": 1}),
        ],
        dialect=dialect,
        seed=1,
    )
    ids = queue.correlation_ids(event)
    result = assert_outcome(batch_handler, event, kind="partial", failed_ids=[ids[1], ids[2]], source="queue")
    assert result.deleted_ids == (ids[0], ids[3])
    assert result.invocation is not None
    assert_valid(result.invocation.returned, event=event)


def test_batch_processor_that_fails_every_record_fails_the_batch():
    # Powertools raises BatchProcessingError when every record failed: the platform retries the whole batch
    event = queue.build_event(["{bad", "{worse"], seed=2)
    result = assert_outcome(batch_handler, event, kind="failure", rule="Q6")
    assert result.invocation is not None and result.invocation.error is not None
    assert result.invocation.error.type == "BatchProcessingError"


def test_batch_processor_with_a_parser_model_needs_the_aws_spelling():
    good = [json.dumps({"id": 1}), json.dumps({"id": 2})]
    # SqsRecordModel insists on eventSource 'aws:sqs': every record of the spec's spelling fails to parse
    provider = queue.build_event(good, seed=3)
    assert_outcome(model_batch_handler, provider, kind="failure", rule="Q6")
    assert provider["Records"][0]["eventSource"] == "provider:queue"
    # the workaround: build (or simulate) the queue in the aws dialect
    assert_outcome(model_batch_handler, queue.build_event(good, dialect="aws", seed=3), kind="success")


def test_event_parser_with_sqs_model_rejects_the_provider_spelling():
    provider = queue.build_event(["ok", "poison"], seed=4)
    assert_valid(provider)  # a valid event by the contract ...
    result = queue.run(parsed_sqs_handler, provider)  # ... that SqsModel rejects before the handler runs
    assert result.invocation is not None
    assert result.invocation.error is not None
    assert result.kind == "failure" and result.invocation.error.type == "ValidationError"
    assert "aws:sqs" in result.invocation.error.message
    aws = queue.build_event(["ok", "poison"], dialect="aws", seed=4)
    assert_outcome(parsed_sqs_handler, aws, kind="partial", failed_ids=[queue.correlation_ids(aws)[1]])


class ProviderSqsRecordModel(SqsRecordModel):
    """The workaround for events in the spec's spelling: accept any eventSource."""

    eventSource: str  # type: ignore[assignment]


class ProviderSqsModel(SqsModel):
    Records: Sequence[ProviderSqsRecordModel]


@event_parser(model=ProviderSqsModel)
def provider_sqs_handler(event: ProviderSqsModel, context) -> dict[str, Any]:
    return {"batchItemFailures": [{"itemIdentifier": r.messageId} for r in event.Records if r.body == "poison"]}


def test_a_model_that_accepts_any_event_source_takes_both_spellings():
    for dialect in ("provider", "aws"):
        event = queue.build_event(["ok", "poison"], dialect=dialect, seed=5)
        assert_outcome(provider_sqs_handler, event, kind="partial", failed_ids=[queue.correlation_ids(event)[1]])


# --- SqsFifoPartialProcessor under QueueSim ----------------------------------------------------------------------


def _fifo_run(handler):
    seen.clear()
    sim = queue.QueueSim(fifo=True, max_receive_count=2, visibility_timeout_s=30, seed=7)
    for group in ("a", "b"):
        for i in range(4):
            body = f"poison {group}{i}" if (group, i) == ("a", 1) else f"{group}{i}"
            sim.send(body, group_id=group, dedup_id=f"{group}{i}")
    return sim.run(handler)


@pytest.mark.parametrize(
    ("skip_group_on_error", "deleted"),
    [
        # by default the processor stops at the first failure: the rest of the batch, group b too, shares its fate
        (False, ["a0"]),
        # skip_group_on_error: only the poison's own group waits behind it
        (True, ["a0", "b0", "b1", "b2", "b3"]),
    ],
)
def test_fifo_processor_keeps_each_group_in_order(skip_group_on_error, deleted):
    run = _fifo_run(make_fifo_handler(SqsFifoPartialProcessor(skip_group_on_error=skip_group_on_error)))
    states = {m.body: m.state for m in run.messages}
    assert sorted(body for body, state in states.items() if state == "deleted") == deleted
    assert all(state == "dead-lettered" for body, state in states.items() if body not in deleted)  # none lost
    # no batch broke a group's order, and each group was processed in the order it was sent
    assert not [w for inv in run.invocations for w in inv.outcome.issues.warnings if w.rule == "Q10"]
    for group in ("a", "b"):
        order = [body for body in dict.fromkeys(seen) if body.removeprefix("poison ").startswith(group)]
        assert order == sorted(order, key=lambda body: body[-1])


def test_the_plain_processor_on_a_fifo_queue_is_flagged():
    run = _fifo_run(naive_fifo_handler)
    flagged = [w for inv in run.invocations for w in inv.outcome.issues.warnings if w.rule == "Q10"]
    assert flagged and "order breaks" in flagged[0].message


# --- event_parser(model=AlbModel) behind alb.serve, with a real HTTP client -------------------------------------------


def test_alb_model_handler_answers_real_requests():
    with alb.serve(alb_handler) as server, httpx.Client(base_url=server.url) as client:
        got = client.get("/items", params={"page": "2"}, headers={"user-agent": "fnkit-test"})
        assert got.status_code == 200
        assert got.json() == {
            "method": "GET",
            "path": "/items",
            "query": {"page": "2"},
            "agent": "fnkit-test",
            "body": "",
        }
        posted = client.post("/items", json={"id": 1})
        assert posted.status_code == 200 and json.loads(posted.json()["body"]) == {"id": 1}
        assert [row["status"] for row in server.log.to_dict("records")] == [200, 200]


def test_alb_model_rejects_multi_value_events_and_the_client_gets_502():
    with alb.serve(alb_handler, multi_value=True) as server, httpx.Client(base_url=server.url) as client:
        got = client.get("/items", params={"tag": "a"})
        assert got.status_code == 502
        row = server.log.to_dict("records")[-1]
        assert row["rule"] == "A5"


class AlbMultiValueModel(AlbModel):
    """The workaround for multi-value mode: the single-value maps are absent, the lists are there."""

    headers: dict[str, str] = Field(default_factory=dict)
    queryStringParameters: dict[str, str] = Field(default_factory=dict)
    multiValueHeaders: dict[str, list[str]] = Field(default_factory=dict)
    multiValueQueryStringParameters: dict[str, list[str]] = Field(default_factory=dict)


@event_parser(model=AlbMultiValueModel)
def multi_value_handler(event: AlbMultiValueModel, context) -> dict[str, Any]:
    return {
        "statusCode": 200,
        "isBase64Encoded": False,
        "multiValueHeaders": {"content-type": ["application/json"]},
        "body": json.dumps(event.multiValueQueryStringParameters),
    }


def test_a_model_with_the_multi_value_fields_serves_multi_value_mode():
    with alb.serve(multi_value_handler, multi_value=True) as server, httpx.Client(base_url=server.url) as client:
        got = client.get("/items?tag=a&tag=b")
        assert got.status_code == 200 and got.json() == {"tag": ["a", "b"]}


def test_a_parser_model_failing_on_the_spec_spelling_gets_one_sentence_pointing_at_the_aws_dialect():
    provider = queue.build_event([json.dumps({"id": 1})], seed=3, dialect="provider")
    result = queue.run(parsed_sqs_handler, provider)
    assert result.kind == "failure" and result.rule == "Q6"
    assert "'aws:sqs'" in result.reason and 'dialect="aws"' in result.reason and "[tool.fnkit]" in result.reason
    # the same handler on the real spelling, or a failure that names no spelling: no such sentence
    assert queue.run(parsed_sqs_handler, queue.build_event([json.dumps({"id": 1})], dialect="aws")).kind == "success"

    def broken(event: Any, context: Any) -> None:
        raise KeyError("id")

    assert "dialect" not in queue.run(broken, provider).reason


def test_a_load_balancer_handler_that_wants_the_real_trace_header_gets_the_hint():
    def traced(event: Any, context: Any) -> dict[str, Any]:
        return {"statusCode": 200, "body": event["headers"]["x-amzn-trace-id"]}

    result = alb.run(traced, alb.build_event(dialect="provider"))
    assert result.status == 502 and 'dialect="aws"' in result.explanation
    assert alb.run(traced, alb.build_event(dialect="aws")).status == 200
