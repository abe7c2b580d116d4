"""The application load balancer source: HTTP request events, response objects, and what the client gets."""

from ._access_log import LoggedRequest, events_from_access_log
from ._build import build_event, health_check_event
from ._config import AlbConfig
from ._event import (
    EVENT_SHAPE,
    body_size,
    correlation_ids,
    looks_like,
    parse_event,
    query_pairs,
    validate_event,
)
from ._http import MAX_REQUEST_BODY, MAX_RESPONSE_JSON, TEXT_BODIES, make_target_group_arn, request_to_event
from ._outcome import HttpOutcome, HttpRequest, outcome, refusal, run
from ._response import RESPONSE_SHAPE, json_schema, validate_response
from ._serve import AlbServer, cli_serve, serve

Config = AlbConfig  # every source names its configuration `Config`

__all__ = [
    "EVENT_SHAPE",
    "MAX_REQUEST_BODY",
    "MAX_RESPONSE_JSON",
    "RESPONSE_SHAPE",
    "TEXT_BODIES",
    "AlbConfig",
    "AlbServer",
    "Config",
    "HttpOutcome",
    "HttpRequest",
    "LoggedRequest",
    "body_size",
    "build_event",
    "cli_serve",
    "correlation_ids",
    "events_from_access_log",
    "health_check_event",
    "json_schema",
    "looks_like",
    "make_target_group_arn",
    "outcome",
    "parse_event",
    "query_pairs",
    "refusal",
    "request_to_event",
    "run",
    "serve",
    "validate_event",
    "validate_response",
]
