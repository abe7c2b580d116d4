"""Hypothesis strategies of valid events and responses, for property tests of your own handlers.

    from hypothesis import given
    from fnkit.testing import strategies

    @given(strategies.queue_events())
    def test_no_message_is_lost(event):
        result = fnkit.queue.run(my_handler, event)
        assert set(result.failed_ids) | set(result.deleted_ids) == set(fnkit.queue.correlation_ids(event))

Every event is made by the source's own `build_event`, so it is valid and JSON-ready;
keyword arguments narrow what is drawn (a fixed value, or a strategy of your own).
Needs hypothesis: `pip install 'fnkit[testing]'`.
"""

from __future__ import annotations

import base64
import json
from typing import Any, cast

from .._engine.report import DIALECTS
from .._optional import MissingDependency
from .._settings.project import resolve_dialect
from ..alb._http import HOP_BY_HOP  # a response header the load balancer drops (A7) is not "valid" to draw
from ..types import AlbEvent, AlbResponse, MailAction, MailEvent, MailResponse, QueueEvent, QueueResponse

try:
    from hypothesis import strategies as st
except ModuleNotFoundError as exc:
    raise MissingDependency("hypothesis", extra="testing", feature="fnkit.testing.strategies") from exc

__all__ = ["alb_events", "alb_responses", "mail_events", "mail_responses", "queue_events", "queue_responses"]

_SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
_JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
_JSON_OBJECTS = st.dictionaries(st.text(min_size=1, max_size=10), _JSON_SCALARS, max_size=5)
# A message body: usually a JSON object, sometimes any text (a poison message, an empty body, unicode).
QUEUE_BODIES = st.one_of(_JSON_OBJECTS.map(json.dumps), st.text(max_size=64))
_NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", min_size=1, max_size=12)
_ATTRIBUTE_VALUES = st.one_of(st.text(max_size=20), st.integers(), st.binary(min_size=1, max_size=16))
_LOCAL = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=10)
_DOMAINS = st.sampled_from(["example.com", "example.org", "mail.example.net"])
ADDRESSES = st.builds(
    lambda local, tag, domain: f"{local}{tag}@{domain}", _LOCAL, st.sampled_from(["", ".x", "+tag", "_1"]), _DOMAINS
)
_TOKEN = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
_HEADER_VALUE = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30)
# headers a test draws freely; these few are set by the strategy or change how the body is read
_RESERVED_HEADERS = {"upgrade", "content-type", "content-encoding", "content-length", "host", "transfer-encoding"}
_HEADERS = st.lists(st.tuples(_TOKEN.filter(lambda n: n not in _RESERVED_HEADERS), _HEADER_VALUE), max_size=6)
_QUERY = st.lists(st.tuples(st.text(min_size=1, max_size=8), st.text(max_size=8)), max_size=4)
_STATUSES = st.sampled_from([200, 201, 202, 204, 301, 302, 304, 400, 401, 403, 404, 409, 418, 422, 429, 500, 502, 503])


def _fixed(value: Any, default: st.SearchStrategy) -> st.SearchStrategy:
    """`value` as a strategy: None draws from `default`, a strategy stays one, anything else is fixed."""
    if value is None:
        return default
    return value if isinstance(value, st.SearchStrategy) else st.just(value)


def _dialects(dialect: str | st.SearchStrategy | None) -> st.SearchStrategy:
    """The spellings to draw: one (given, else the project's setting), both for "both", or a strategy's."""
    if isinstance(dialect, st.SearchStrategy):
        return dialect
    if dialect == "both":
        return st.sampled_from(DIALECTS)
    return st.just(resolve_dialect(dialect))


@st.composite
def queue_events(
    draw: Any,
    *,
    bodies: st.SearchStrategy | None = None,
    min_records: int = 1,
    max_records: int = 10,
    fifo: bool | st.SearchStrategy | None = None,
    dialect: str | st.SearchStrategy | None = None,
    message_attributes: bool = True,
    receive_counts: bool = True,
) -> QueueEvent:
    """Valid queue batch events: 1-10 records, standard or FIFO (groups g1-g3), in one spelling.

    `bodies`: a strategy of one body (default: JSON objects and any text). `fifo`: a fixed
    value or a strategy. `dialect`: 'aws' or 'provider' (default: the project's setting,
    else 'provider'), "both" to draw either, or a strategy. `message_attributes`, `receive_counts`: whether records may
    carry attributes and redelivery counts above 1.
    """
    from .. import queue

    chosen = draw(st.lists(bodies if bodies is not None else QUEUE_BODIES, min_size=min_records, max_size=max_records))
    n = len(chosen)
    is_fifo = draw(_fixed(fifo, st.booleans()))
    options: dict[str, Any] = {}
    if is_fifo:
        options["group_ids"] = draw(st.lists(st.sampled_from(["g1", "g2", "g3"]), min_size=n, max_size=n))
    if message_attributes and draw(st.booleans()):
        options["message_attributes"] = draw(st.dictionaries(_NAME, _ATTRIBUTE_VALUES, min_size=1, max_size=4))
    if receive_counts:
        options["receive_counts"] = draw(st.lists(st.integers(1, 5), min_size=n, max_size=n))
    return queue.build_event(chosen, fifo=is_fifo, dialect=draw(_dialects(dialect)), seed=draw(_SEEDS), **options)


@st.composite
def queue_responses(draw: Any, event: QueueEvent) -> QueueResponse | None:
    """Valid responses to this batch: null, no failures, or some of its messageIds as batchItemFailures."""
    ids = [record["messageId"] for record in event["Records"]]
    failed = draw(st.lists(st.sampled_from(ids), unique=True, max_size=len(ids))) if ids else []
    answers: list[Any] = [
        None,
        {"batchItemFailures": []},
        {"batchItemFailures": [{"itemIdentifier": i} for i in failed]},
    ]
    return cast("QueueResponse | None", draw(st.sampled_from(answers)))


@st.composite
def mail_events(
    draw: Any,
    *,
    min_recipients: int = 1,
    max_recipients: int = 10,
    flow_direction: str | st.SearchStrategy | None = None,
    subject: st.SearchStrategy | None = None,
    addresses: st.SearchStrategy | None = None,
    dialect: str | st.SearchStrategy | None = None,
) -> MailEvent:
    """Valid mail-flow events: 1-10 distinct recipients, inbound or outbound, any subject text.

    `addresses`: a strategy of one address (default: plain addresses at example domains).
    `dialect`: as in `queue_events` (the mail event is spelled the same in both, so it is
    taken for the common signature and checked).
    """
    from .. import mail

    address = addresses if addresses is not None else ADDRESSES
    recipients = draw(st.lists(address, min_size=min_recipients, max_size=max_recipients, unique_by=str.lower))
    return mail.build_event(
        mail_from=draw(address),
        recipients=recipients,
        subject=draw(subject if subject is not None else st.text(max_size=120)),
        flow_direction=draw(_fixed(flow_direction, st.sampled_from(["INBOUND", "OUTBOUND"]))),
        dialect=draw(_dialects(dialect)),
        seed=draw(_SEEDS),
    )


@st.composite
def mail_responses(draw: Any, event: MailEvent) -> MailResponse:
    """Valid synchronous responses to this event: one action for all recipients, or one per recipient."""
    recipients = [r["address"] for r in event["envelope"]["recipients"]]

    def action(kind: str) -> MailAction:
        if kind == "BOUNCE" and draw(st.booleans()):
            return cast(
                "MailAction", {"type": kind, "parameters": {"bounceMessage": draw(st.text(min_size=1, max_size=40))}}
            )
        return cast("MailAction", {"type": kind})

    kinds = st.sampled_from(["DEFAULT", "BOUNCE", "DROP"])
    if draw(st.booleans()):
        return {"actions": [{"action": action(draw(kinds)), "allRecipients": True}]}
    return {"actions": [{"action": action(draw(kinds)), "recipients": [r]} for r in recipients]}


@st.composite
def alb_events(
    draw: Any,
    *,
    methods: st.SearchStrategy | None = None,
    multi_value: bool | st.SearchStrategy | None = None,
    dialect: str | st.SearchStrategy | None = None,
    bodies: st.SearchStrategy | None = None,
) -> AlbEvent:
    """Valid load balancer events: any method, path, query and headers, text or binary bodies, both header modes.

    `bodies`: a strategy of request bodies (bytes or text; default: JSON, text or binary);
    a GET has no body. `multi_value`: a fixed value or a strategy. `dialect`: as in
    `queue_events` (one spelling, the project's by default; "both" draws either).
    """
    from .. import alb

    method = draw(
        methods if methods is not None else st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"])
    )
    path = "/" + "/".join(draw(st.lists(_TOKEN, max_size=3)))
    headers = draw(_HEADERS)
    body: Any = b""
    if method != "GET":
        drawn = draw(
            bodies
            if bodies is not None
            else st.one_of(
                _JSON_OBJECTS.map(lambda o: ("application/json", json.dumps(o).encode())),
                st.text(max_size=40).map(lambda t: ("text/plain; charset=utf-8", t.encode())),
                st.binary(max_size=40).map(lambda b: ("application/octet-stream", b)),
            )
        )
        if isinstance(drawn, tuple):
            content_type, body = drawn
            headers.append(("content-type", content_type))
        else:
            body = drawn
    return alb.build_event(
        method,
        path,
        query=draw(_QUERY),
        headers=headers,
        body=body,
        multi_value=draw(_fixed(multi_value, st.booleans())),
        dialect=draw(_dialects(dialect)),
        seed=draw(_SEEDS),
    )


@st.composite
def alb_responses(draw: Any, *, multi_value: bool | None = False, event: AlbEvent | None = None) -> AlbResponse:
    """Valid load balancer responses: a status, headers, and a text or base64 body.

    `event`: answer in its header mode (`multiValueHeaders` when the event has them);
    otherwise `multi_value` says which form.
    """
    if event is not None:
        multi_value = "multiValueHeaders" in event
    headers = draw(
        st.dictionaries(
            _TOKEN.filter(lambda n: n not in _RESERVED_HEADERS and n not in HOP_BY_HOP), _HEADER_VALUE, max_size=4
        )
    )
    response: dict[str, Any] = {"statusCode": draw(_STATUSES)}
    if multi_value:
        response["multiValueHeaders"] = {name: [value] for name, value in headers.items()}
    else:
        response["headers"] = headers
    if draw(st.booleans()):
        response["body"] = draw(st.text(max_size=60))
        response["isBase64Encoded"] = False
    else:
        response["body"] = base64.b64encode(draw(st.binary(max_size=40))).decode("ascii")
        response["isBase64Encoded"] = True
    return cast("AlbResponse", response)
