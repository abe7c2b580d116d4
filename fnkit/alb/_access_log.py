"""Load balancer access logs in: one event per logged request, with what the log says happened.

The format is the load balancer's documented access-log entry: space-separated fields, some
in double quotes, in this order (newer logs may add fields at the end; they are kept in
`extra`, as the documentation asks parsers to ignore fields they do not expect):

    type time elb client:port target:port request_processing_time target_processing_time
    response_processing_time elb_status_code target_status_code received_bytes sent_bytes
    "request" "user_agent" ssl_cipher ssl_protocol target_group_arn "trace_id" "domain_name"
    "chosen_cert_arn" matched_rule_priority request_creation_time "actions_executed"
    "redirect_url" "error_reason" "target:port_list" "target_status_code_list"
    "classification" "classification_reason" conn_trace_id

A processing time of -1 means the load balancer could not dispatch the request or got no
response; `-` stands for a value that does not apply. The log keeps neither the request body
nor most headers: an event rebuilt from a line has the method, path, raw query, host, user
agent and trace header, an empty body, and is marked `body_known=False`.
"""

from __future__ import annotations

import functools
import gc
import zlib
from typing import TYPE_CHECKING, Any, Unpack, cast

from .._import import ImportStream, Producer, Unreadable, iter_line_blocks, unreadable
from .._settings.config import with_settings
from .._settings.project import Dialect
from ._config import AlbConfig, AlbMultiValueSetting
from ._http import DEFAULT_CLIENT_IP, TRACE_HEADERS, make_target_group_arn, query_parameters, seeded_trace_id
from ._log_entry import (
    ACTIONS,
    DEFAULT_PORT,
    FAST,
    FIELDS,
    MIN_FIELDS,
    PROTO,
    QUOTES,
    TRACE,
    LogField,
    Request,
    fast_log,
    parse_line,
    parse_request,
)

if TYPE_CHECKING:
    from ..types import AlbEvent

SOURCE = "alb"


class LoggedRequest:
    """One access-log entry rebuilt as a load balancer event, with what the log says happened.

    `event`: the event (method, path, raw query, host, user agent, trace header; the body is
    not in the log, so it is empty and `body_known` is False), made when first asked for.
    `log`: every field of the entry by its documented name, typed (`elb_status_code`,
    `target_processing_time`, `error_reason`, ...). `where`: file and line number. A replay
    adds `replay_columns` to its row, so what the handler would do can be compared with what
    the log says happened.
    """

    __slots__ = ("_event", "_file", "_groups", "_line", "_log", "_multi_value", "_seed", "_where", "body_known")

    #: the source of its event, which a replay need not detect
    event_source = SOURCE

    REPLAY_COLUMNS = (
        "file",
        "line",
        "logged_time",
        "logged_status",
        "logged_target_status",
        "logged_error_reason",
        "logged_target_ms",
        "actions_executed",
        "body_known",
        "depends_on",
        "replayable",
        "agrees",
    )

    def __init__(
        self,
        event: AlbEvent | None,
        log: dict[str, Any],
        where: str,
        body_known: bool = False,
        *,
        multi_value: bool = False,
        seed: int = 0,
    ) -> None:
        """`event` None: the event is made from `log` when first asked for (`multi_value`, `seed` as
        `request_event` takes them); the entry's request must then be complete."""
        self._event = event
        self._log: dict[str, Any] | None = log
        self._groups: tuple[Any, ...] | None = None
        self._where: str | None = where
        self._file: str | None = None  # with _line, the file and line number when `where` is not made yet
        self._line = 0
        self.body_known = body_known
        self._multi_value = multi_value
        self._seed = seed

    @classmethod
    def _matched(cls, groups: tuple[Any, ...], file: str, line: int, multi_value: bool, seed: int) -> LoggedRequest:
        """The request of an entry FAST took (its groups) at line `line` of `file`: its log typed, its event and
        its `where` made, when first read."""
        self = cls.__new__(cls)
        self._event = None
        self._log = None
        self._groups = groups
        self._where = None
        self._file = file
        self._line = line
        self.body_known = False
        self._multi_value = multi_value
        self._seed = seed
        return self

    @property
    def log(self) -> dict[str, Any]:
        """Every field of the entry by its documented name, typed."""
        log = self._log
        if log is None:
            assert self._groups is not None
            log = self._log = fast_log(self._groups)
            self._groups = None
        return log

    @property
    def where(self) -> str:
        """The file and line number of the entry (`access.log.gz:17`)."""
        where = self._where
        if where is None:
            where = self._where = f"{self._file}:{self._line}"
        return where

    @property
    def event(self) -> AlbEvent:
        """The event the load balancer sent the function for this request."""
        event = self._event
        if event is None:
            event = request_event(self.log, multi_value=self._multi_value, seed=self._seed)
            if event is None:
                raise ValueError(f"{self.where}: the load balancer logged no complete request here")
            self._event = event
        return event

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LoggedRequest):
            return NotImplemented
        return (self.event, self.log, self.where, self.body_known) == (
            other.event,
            other.log,
            other.where,
            other.body_known,
        )

    __hash__ = None  # type: ignore[assignment]  # holds dicts: as unhashable as they are

    def __repr__(self) -> str:
        return (
            f"LoggedRequest(event={self.event!r}, log={self.log!r}, where={self.where!r}, "
            f"body_known={self.body_known!r})"
        )

    @property
    def status(self) -> int | None:
        """The status the load balancer sent the client (elb_status_code), None when it sent none."""
        status: int | None = self.log["elb_status_code"]
        return status

    @property
    def error_reason(self) -> str | None:
        """The logged error reason (LambdaUnhandled, LambdaInvalidResponse, ...), or None."""
        reason: str | None = self.log["error_reason"]
        return reason

    @property
    def forwarded(self) -> bool:
        """False when the log shows the load balancer answered by itself (`actions_executed` without `forward`:
        a redirect, a fixed response, an authentication or a WAF action): the function never saw the request."""
        return forwarded(self.log)

    @property
    def depends_on(self) -> str | None:
        """What the log does not hold that a handler's answer may depend on: "body" when the request carried one
        (POST, PUT, PATCH: the log keeps no body, the event's is empty), else None."""
        if self.body_known:
            return None
        method = self.log["request"].partition(" ")[0]  # the event's httpMethod, without making the event
        return "body" if method in BODY_METHODS else None

    def replay_columns(self, row: dict[str, Any]) -> dict[str, Any]:
        """The columns a replay adds to this request's row: the logged facts, what the replay cannot know,
        and whether the replay agrees with the log (NA when it cannot be judged: a body the log lacks)."""
        log = self.log
        if self._file is not None:
            file, line = self._file, self._line
        else:
            file, _, number = self.where.rpartition(":")
            line = int(number)
        target = log["target_processing_time"]
        status = row.get("status")
        logged = log["elb_status_code"]
        depends_on = self.depends_on
        same = None
        if depends_on is None and type(status) is int and logged is not None:
            same = status == logged
        return {
            "file": file,
            "line": line,
            "logged_time": log["time"],
            "logged_status": logged,
            "logged_target_status": log["target_status_code"],
            "logged_error_reason": log["error_reason"],
            "logged_target_ms": None if target is None or target < 0 else round(target * 1000, 3),
            "actions_executed": log["actions_executed"],
            "body_known": self.body_known,
            "depends_on": depends_on,
            "replayable": depends_on is None,
            "agrees": same,
        }


#: methods whose requests carry a body (which the log does not keep)
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def forwarded(log: dict[str, Any]) -> bool:
    """True unless the entry's `actions_executed` shows the load balancer answered by itself (no `forward`)."""
    actions = log.get("actions_executed")
    return actions is None or "forward" in actions.split(",")


def _dialect(arn: str | None) -> Dialect:
    return "provider" if isinstance(arn, str) and arn.startswith("arn:provider:") else "aws"


@functools.lru_cache(maxsize=4_096)
def _request_parts(request: str, entry_type: str) -> tuple[str, str, str, str, str, str, bool] | None:
    """What the event takes from a request field (a log repeats a few thousand of them at most): method, path,
    host header, port, proto, the raw query, and whether it is a WebSocket; None when no complete request."""
    parsed = parse_request(request, entry_type)
    if parsed is None:
        return None
    scheme, port = parsed.scheme, parsed.port
    host = parsed.host if port == DEFAULT_PORT.get(scheme) else f"{parsed.host}:{port}"
    proto = PROTO.get(scheme, "https" if port == 443 else "http")
    websocket = entry_type in ("ws", "wss") or scheme in ("ws", "wss")
    return parsed.method, parsed.path, host, str(port), proto, parsed.query.removeprefix("?"), websocket


def request_event(log: dict[str, Any], *, multi_value: bool = False, seed: int = 0) -> AlbEvent | None:
    """The event the load balancer sent the function for a parsed entry; None when no complete request was logged.

    It is the event `request_to_event` makes of the request with no body, its host, user agent and (for a
    WebSocket) upgrade headers, and the entry's trace (or one drawn from `seed`), client and port: made
    directly, as a log's request carries none of the headers the load balancer replaces.
    """
    parts = _request_parts(log["request"], log["type"])
    if parts is None:
        return None
    method, path, host, port, proto, query, websocket = parts
    headers = {"host": host}
    if log["user_agent"] is not None:
        headers["user-agent"] = log["user_agent"]
    if websocket:
        headers["connection"] = "Upgrade"
        headers["upgrade"] = "websocket"
    arn = log["target_group_arn"]
    dialect = _dialect(arn)
    headers[TRACE_HEADERS[dialect]] = log["trace_id"] or seeded_trace_id(seed)
    client = log["client:port"]
    headers["x-forwarded-for"] = client[0] if client else DEFAULT_CLIENT_IP
    headers["x-forwarded-port"] = port
    headers["x-forwarded-proto"] = proto
    event: dict[str, Any] = {
        "requestContext": {"elb": {"targetGroupArn": arn or make_target_group_arn(dialect)}},
        "httpMethod": method,
        "path": path,
    }
    if multi_value:
        event["multiValueQueryStringParameters"] = query_parameters(query, True)
        event["multiValueHeaders"] = {name: [value] for name, value in headers.items()}
    else:
        event["queryStringParameters"] = query_parameters(query, False) if query else {}
        event["headers"] = headers
    event["body"] = ""
    event["isBase64Encoded"] = False
    return cast("AlbEvent", event)


def _block_entries(name: str, first: int, lines: list[str], multi_value: bool, stream: ImportStream) -> Producer:
    """The entries of lines `first`... of `name`, in order: the lines FAST takes typed at once, their events
    made when first asked for; each other line read by parse_line (what is wrong located)."""
    collecting = gc.isenabled()
    if collecting:  # the block's many small objects all live on: no collection looks for cycles among them
        gc.disable()
    try:
        items = _fast_entries(name, first, lines, multi_value)
    finally:
        if collecting:
            gc.enable()
    for item in items:
        if not isinstance(item, tuple):
            yield item
            continue
        where, line, log = item  # a line for parse_line, or the log of a request the function never saw
        if log is not None:
            _not_forwarded(where, log, stream)
            continue
        entry = _entry(where, line, multi_value, stream)
        if entry is not None:
            yield entry


def _fast_entries(
    name: str, first: int, lines: list[str], multi_value: bool
) -> list[LoggedRequest | tuple[str, str, dict[str, Any] | None]]:
    """Each line's request, when FAST takes it and the load balancer forwarded it; else (where, line, its log
    when FAST took it)."""
    fast, quotes = FAST.fullmatch, QUOTES
    out: list[LoggedRequest | tuple[str, str, dict[str, Any] | None]] = []
    for number, line in enumerate(lines, first):
        match = None if "\\" in line else fast(line)
        if match is None or line.count('"') != quotes.get(match.lastindex or 0):
            out.append((f"{name}:{number}", line, None))
            continue
        groups = match.groups()
        actions = groups[ACTIONS]
        if actions is not None and actions != "forward" and actions != "-" and "forward" not in actions.split(","):
            out.append((f"{name}:{number}", line, fast_log(groups)))
            continue
        seed = 0 if groups[TRACE] not in ("-", "") else zlib.crc32(line.encode("utf-8"))
        out.append(LoggedRequest._matched(groups, name, number, multi_value, seed))
    return out


def _entry(where: str, line: str, multi_value: bool, stream: ImportStream) -> LoggedRequest | Unreadable | None:
    """The entry of one line read field by field (what is wrong located), or None when it is not replayed."""
    if not line.strip():
        return unreadable(
            where, "The line is blank: an access log has one entry per line.", SOURCE, severity="warning", code="blank"
        )
    try:
        log = parse_line(line)
        event = request_event(log, multi_value=multi_value, seed=zlib.crc32(line.encode("utf-8")))
    except ValueError as exc:
        return unreadable(where, str(exc), SOURCE)
    if event is None:
        status = log["elb_status_code"]
        answered = f"it answered {status} itself" if status is not None else "it sent no answer"
        return unreadable(
            where,
            f"The load balancer logged no complete request here ({answered}, "
            "without a target), so there is nothing to replay.",
            SOURCE,
            severity="warning",
            code="incomplete",
        )
    if not forwarded(log):
        _not_forwarded(where, log, stream)
        return None
    return LoggedRequest(event, log, where)


def _not_forwarded(where: str, log: dict[str, Any], stream: ImportStream) -> None:
    stream.note(
        where,
        f"The load balancer answered {log['elb_status_code'] or 'nothing'} by itself "
        f"(actions_executed: {log['actions_executed']}): the function never saw this request, "
        "so it is not replayed.",
        severity="warning",
        code="not-forwarded",
    )


@with_settings(AlbConfig, "multi_value")
def events_from_access_log(
    path_or_lines: Any,
    *,
    progress: bool | None = None,
    config: AlbConfig | None = None,
    **settings: Unpack[AlbMultiValueSetting],
) -> ImportStream:
    """Stream a load balancer access log as `LoggedRequest`s (event + logged status, error reason, timings).

    What it accepts (`path_or_lines`): a log file (plain or .gz; a gzip file cut short is read
    up to the cut, and the cut reported), a folder of them (read in name order), a text
    holding lines, or any iterable of lines (str or bytes), each line one entry in the
    documented format above. Every line is either yielded or reported: a malformed line,
    and an entry with no complete request to replay, are recorded in `.issues` with their
    file and line number (and yielded in place by `.entries()`), never skipped silently and
    never raised. A request the load balancer answered by itself (`actions_executed` without
    `forward`: a redirect, a fixed response, an authentication or WAF action) never reached
    the function: it is reported as a warning (code "not-forwarded") and not yielded, so a
    replay has no row for it. `multi_value` (or `config`, an `AlbConfig`): build events
    as a target group with multi-value headers on would (None: off). `progress`: a tqdm bar
    (None: only in a notebook).
    """
    multi_value = AlbConfig.of(config, settings, events_from_access_log).multi_value_on
    if (
        not isinstance(path_or_lines, (str, bytes))
        and not hasattr(path_or_lines, "__iter__")
        and not hasattr(path_or_lines, "__fspath__")
    ):
        raise TypeError(f"events_from_access_log reads a path, a text or lines, not {type(path_or_lines).__name__}")
    if hasattr(path_or_lines, "__fspath__") or (isinstance(path_or_lines, str) and "\n" not in path_or_lines):
        from .._import import files_of

        files_of(path_or_lines)  # a missing path fails now, not on first use

    def produce(stream: ImportStream) -> Producer:
        for block in iter_line_blocks(path_or_lines, stream):
            if isinstance(block, Unreadable):
                yield block
            else:
                yield from _block_entries(*block, multi_value, stream)

    described = path_or_lines if isinstance(path_or_lines, str) and "\n" not in path_or_lines else None
    return ImportStream(
        produce,
        source=SOURCE,
        what="access log",
        unit="line",
        item="request",
        progress=progress,
        description=str(described) if described else "access log",
    )


__all__ = [
    "BODY_METHODS",
    "FIELDS",
    "MIN_FIELDS",
    "LogField",
    "LoggedRequest",
    "Request",
    "events_from_access_log",
    "forwarded",
    "parse_line",
    "parse_request",
    "request_event",
]
