"""Building load balancer request events: `build_event` for one request, `health_check_event` for a check.

What the builders make is what `request_to_event` makes of an HTTP request (A2, A3, A4), so
a built event passes `validate_event`; building holds no rule of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Unpack

from .._settings.config import with_settings
from .._settings.project import Dialect, resolve_dialect
from ._config import AlbConfig, AlbMultiValueSetting
from ._http import (
    DEFAULT_CLIENT_IP,
    DEFAULT_HOST,
    METHODS,
    encode_query,
    header_values,
    never_forwarded,
    request_to_event,
    seeded_trace_id,
)
from ._http import (
    health_check_event as _health_check_event,
)

if TYPE_CHECKING:
    from ..types import AlbEvent


def _query_text(query: Any) -> str:
    if query is None:
        return ""
    if isinstance(query, (bytes, bytearray)):
        query = bytes(query).decode("latin-1")
    if isinstance(query, str):
        return query.removeprefix("?")
    return encode_query(_pairs(query, "query"))


def _pairs(items: Any, what: str) -> list[tuple[str, str]]:
    """A mapping (values may be lists: repeats) or an iterable of pairs, as (str, str) pairs in order."""
    out: list[tuple[str, str]] = []
    source: Iterable[Any] = items.items() if isinstance(items, Mapping) else items
    for entry in source:
        try:
            name, value = entry
        except (TypeError, ValueError):
            raise TypeError(f"{what} must be a mapping or (name, value) pairs, got {entry!r}") from None
        values = value if isinstance(value, (list, tuple)) else [value]
        out.extend((str(name), v.decode("latin-1") if isinstance(v, (bytes, bytearray)) else str(v)) for v in values)
    return out


def _body_bytes(body: Any, headers: list[tuple[str, str]]) -> bytes:
    if body is None:
        return b""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (dict, list)):
        if not any(name.lower() == "content-type" for name, _ in headers):
            headers.append(("content-type", "application/json"))
        return json.dumps(body, separators=(",", ":")).encode("utf-8")
    raise TypeError(f"body must be bytes, text, or a dict/list (sent as JSON), got {type(body).__name__}")


@with_settings(AlbConfig, "multi_value")
def build_event(
    method: str = "GET",
    path: str = "/",
    *,
    query: Any = None,
    headers: Any = None,
    body: Any = b"",
    target_group_arn: str | None = None,
    dialect: Dialect | None = None,
    seed: int = 0,
    client_ip: str = DEFAULT_CLIENT_IP,
    port: int = 80,
    proto: str = "http",
    host: str = DEFAULT_HOST,
    config: AlbConfig | None = None,
    **settings: Unpack[AlbMultiValueSetting],
) -> AlbEvent:
    """A valid load balancer event for one request, deterministic for a seed (A2, A3, A4).

    `query`: the raw query string (kept exactly, never decoded), or plain pairs / a mapping
    (percent-encoded as a client would); a `path` holding '?' also brings its query.
    `headers`: a mapping or (name, value) pairs, repeats allowed (last wins, or all with
    `multi_value`). `body`: bytes, text (UTF-8), or a dict/list sent as JSON. The target
    group: `multi_value=` (multi-value headers on), or `config` (an `AlbConfig`). `dialect`:
    'aws' or 'provider'; by default the project's setting (fnkit's README, "One project setting").
    """
    multi_value = AlbConfig.of(config, settings, build_event).multi_value_on
    method = str(method).upper()
    if method not in METHODS:
        raise ValueError(f"the load balancer forwards only {', '.join(METHODS)} to a function, not {method}")
    dialect = resolve_dialect(dialect)
    given: object = path  # a learner may pass anything
    if not isinstance(given, str) or not given.startswith("/"):
        raise ValueError(f"path must start with '/', got {path!r}")
    path, mark, path_query = path.partition("?")
    raw_query = _query_text(query)
    if mark and query is None:
        raw_query = path_query
    header_pairs = _pairs(headers or (), "headers")
    data = _body_bytes(body, header_pairs)
    refused = never_forwarded(header_values(header_pairs, "upgrade"), len(data))
    if refused:
        raise ValueError(f"{refused[0].why} ({refused[0].rule}; fnkit.alb.refusal says so for a request)")
    return request_to_event(
        method,
        path,
        raw_query,
        header_pairs,
        data,
        multi_value,
        target_group_arn=target_group_arn,
        dialect=dialect,
        trace=seeded_trace_id(seed),
        client_ip=client_ip,
        port=port,
        proto=proto,
        host=host,
    )


@with_settings(AlbConfig, "multi_value")
def health_check_event(
    *,
    target_group_arn: str | None = None,
    dialect: Dialect | None = None,
    config: AlbConfig | None = None,
    **settings: Unpack[AlbMultiValueSetting],
) -> AlbEvent:
    """The event a load balancer health check sends (A11): GET /, `{}` query, only a user-agent, empty body."""
    multi_value = AlbConfig.of(config, settings, health_check_event).multi_value_on
    dialect = resolve_dialect(dialect)
    return _health_check_event(multi_value=multi_value, target_group_arn=target_group_arn, dialect=dialect)


__all__ = ["build_event", "health_check_event"]
