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

import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Unpack

from .._import import ImportStream, Producer, Unreadable, iter_lines, unreadable
from .._settings.config import with_settings
from .._settings.project import Dialect
from ._config import AlbConfig, AlbMultiValueSetting
from ._http import DEFAULT_CLIENT_IP, request_to_event, seeded_trace_id

if TYPE_CHECKING:
    from ..types import AlbEvent

SOURCE = "alb"


class _Bad(ValueError):
    """A field that does not hold what its documentation says."""


def _text(value: str) -> str | None:
    return None if value == "-" else value


def _digits(value: str) -> bool:
    """ASCII digits, at most 19 of them (a log's counts are 64-bit; '²' and 5,000 digits are no count)."""
    return value.isdigit() and value.isascii() and len(value) <= 19


def _int_or_none(value: str) -> int | None:
    if value == "-":
        return None
    if not _digits(value):
        raise _Bad("a whole number (at most 19 digits) or '-'")
    return int(value)


def _count(value: str) -> int:
    if not _digits(value):
        raise _Bad("a number of bytes (at most 19 digits)")
    return int(value)


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise _Bad("seconds (or -1)") from None
    if seconds < 0 and seconds != -1:
        raise _Bad("seconds (or -1)")
    return seconds


_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")


def _time(value: str) -> str:
    if not _TIME.match(value):
        raise _Bad("an ISO 8601 time such as 2026-01-05T10:00:00.123456Z")
    return value


def _time_or_none(value: str) -> str | None:
    return None if value == "-" else _time(value)


def _address(value: str) -> tuple[str, int] | None:
    if value == "-":
        return None
    host, colon, port = value.rpartition(":")
    if not colon or not host or not _digits(port):
        raise _Bad("an address and port (ip:port) or '-'")
    return host, int(port)


def _word(value: str) -> str:
    if not re.fullmatch(r"[a-z0-9]+", value):
        raise _Bad("a request type such as http, https, h2, grpcs, ws or wss")
    return value


@dataclass(frozen=True)
class LogField:
    """One documented field of an access-log entry: its name, whether it is quoted, how its text is read."""

    name: str
    quoted: bool
    read: Callable[[str], Any]


# The documented fields, in their order: the one declaration the parser and LoggedRequest.log follow.
FIELDS: tuple[LogField, ...] = (
    LogField("type", False, _word),
    LogField("time", False, _time),
    LogField("elb", False, str),
    LogField("client:port", False, _address),
    LogField("target:port", False, _address),
    LogField("request_processing_time", False, _seconds),
    LogField("target_processing_time", False, _seconds),
    LogField("response_processing_time", False, _seconds),
    LogField("elb_status_code", False, _int_or_none),
    LogField("target_status_code", False, _int_or_none),
    LogField("received_bytes", False, _count),
    LogField("sent_bytes", False, _count),
    LogField("request", True, str),
    LogField("user_agent", True, _text),
    LogField("ssl_cipher", False, _text),
    LogField("ssl_protocol", False, _text),
    LogField("target_group_arn", False, _text),
    LogField("trace_id", True, _text),
    LogField("domain_name", True, _text),
    LogField("chosen_cert_arn", True, _text),
    LogField("matched_rule_priority", False, _int_or_none),
    LogField("request_creation_time", False, _time_or_none),
    LogField("actions_executed", True, _text),
    LogField("redirect_url", True, _text),
    LogField("error_reason", True, _text),
    LogField("target:port_list", True, _text),
    LogField("target_status_code_list", True, _text),
    LogField("classification", True, _text),
    LogField("classification_reason", True, _text),
    LogField("conn_trace_id", False, _text),
)
# entries written before the later fields existed end after trace_id
MIN_FIELDS = [f.name for f in FIELDS].index("trace_id") + 1

_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"|([^ "]+)')
_UNESCAPE = re.compile(r"\\(.)")
_URL = re.compile(
    r"^(?P<scheme>[a-z][a-z0-9+.-]*)://(?P<host>\[[^\]]*\]|[^/:?#]*)(?::(?P<port>\d+))?"
    r"(?P<path>[^?#]*)(?:\?(?P<query>[^#]*))?$"
)
_METHOD = re.compile(r"^[A-Z]+$")
_DEFAULT_PORT = {"http": 80, "ws": 80, "https": 443, "wss": 443, "h2": 443, "grpcs": 443}
_PROTO = {"http": "http", "ws": "http", "https": "https", "wss": "https"}


_QUOTED = r'"((?:[^"\\]|\\.)*)"'
_PLAIN = r'([^ "]+)'
# an entry of exactly the documented fields, or of those up to trace_id: one match, the common case
_ENTRY = re.compile(" ".join(_QUOTED if f.quoted else _PLAIN for f in FIELDS[:MIN_FIELDS]))
_FULL_ENTRY = re.compile(" ".join(_QUOTED if f.quoted else _PLAIN for f in FIELDS))


def _tokens(line: str) -> list[tuple[str, bool]]:
    """(text, quoted) for each field of a line; raises _Bad at the first character that is not a field."""
    whole = _FULL_ENTRY.fullmatch(line) or _ENTRY.fullmatch(line)
    if whole is not None:  # the fast path: one match; the fields after it (if any) follow the documented order
        return [
            (_unescape(text), True) if field.quoted else (text, False)
            for field, text in zip(FIELDS, whole.groups(), strict=False)
        ]
    out: list[tuple[str, bool]] = []
    pos, end = 0, len(line)
    while pos < end:
        match = _TOKEN.match(line, pos)
        if match is None:
            if line[pos] == " ":
                raise _Bad(f"a single space between fields at character {pos}")
            raise _Bad(f"a field at character {pos + 1} (an unmatched double quote?)")
        quoted = match.group(1)
        out.append((_unescape(quoted), True) if quoted is not None else (match.group(2), False))
        pos = match.end()
        if pos < end:
            if line[pos] != " ":
                raise _Bad(f"a single space between fields at character {pos + 1}")
            pos += 1
            if pos == end:
                raise _Bad("no trailing space at the end of the entry")
    return out


def _unescape(text: str) -> str:
    return _UNESCAPE.sub(r"\1", text) if "\\" in text else text


def parse_line(line: str) -> dict[str, Any]:
    """The fields of one access-log entry by their documented names, typed; raises ValueError saying what is wrong."""
    try:
        tokens = _tokens(line)
    except _Bad as exc:
        raise ValueError(f"The entry cannot be split into fields: expected {exc}.") from None
    if len(tokens) < MIN_FIELDS:
        raise ValueError(
            f"The entry has {len(tokens)} field(s); an access-log entry has at least {MIN_FIELDS} (type … trace_id)."
        )
    log: dict[str, Any] = {}
    # fields past the documented ones (a newer log format) are left out
    for number, (field, (text, quoted)) in enumerate(zip(FIELDS, tokens, strict=False), 1):
        if quoted != field.quoted:
            how = "in double quotes" if field.quoted else "without quotes"
            raise ValueError(f"Field {number} ({field.name}) is {_show(text, quoted)}: it is written {how}.")
        try:
            log[field.name] = field.read(text)
        except _Bad as exc:
            raise ValueError(f"Field {number} ({field.name}) is {_show(text, quoted)}: expected {exc}.") from None
    for field in FIELDS[len(tokens) :]:
        log[field.name] = None
    log["extra"] = tuple(text for text, _ in tokens[len(FIELDS) :])
    return log


def _show(text: str, quoted: bool) -> str:
    shown = text if len(text) <= 60 else text[:57] + "..."
    return f'"{shown}"' if quoted else repr(shown)


@dataclass(frozen=True)
class Request:
    """The request of a log entry: method, scheme, host, port, raw path and raw query, HTTP version."""

    method: str
    scheme: str
    host: str
    port: int
    path: str
    query: str
    version: str


def parse_request(request: str, entry_type: str) -> Request | None:
    """The "request" field read; None when the load balancer logged no complete request ("- ... -")."""
    parts = request.split(" ")
    if len(parts) < 3:
        raise ValueError(f'The request field "{request}" is not "METHOD URL VERSION".')
    method, url, version = parts[0], " ".join(parts[1:-1]), parts[-1]
    if method == "-":
        return None
    if not _METHOD.match(method):
        raise ValueError(f"The request method {method!r} is not an HTTP method.")
    match = _URL.match(url)
    if match is None:
        raise ValueError(f"The request URL {url!r} is not scheme://host:port/path.")
    scheme = match.group("scheme")
    path = match.group("path") or "/"
    if not path.startswith("/"):
        raise ValueError(f"The request URL {url!r} has a path that does not start with '/'.")
    port = (
        int(match.group("port"))
        if match.group("port")
        else _DEFAULT_PORT.get(scheme, _DEFAULT_PORT.get(entry_type, 80))
    )
    return Request(method, scheme, match.group("host"), port, path, match.group("query") or "", version)


@dataclass(frozen=True)
class LoggedRequest:
    """One access-log entry rebuilt as a load balancer event, with what the log says happened.

    `event`: the event (method, path, raw query, host, user agent, trace header; the body is
    not in the log, so it is empty and `body_known` is False). `log`: every field of the entry
    by its documented name, typed (`elb_status_code`, `target_processing_time`, `error_reason`,
    ...). `where`: file and line number. A replay adds `replay_columns` to its row, so what the
    handler would do can be compared with what the log says happened.
    """

    event: AlbEvent
    log: dict[str, Any]
    where: str
    body_known: bool = False

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
        return "body" if self.event.get("httpMethod") in BODY_METHODS else None

    def replay_columns(self, row: dict[str, Any]) -> dict[str, Any]:
        """The columns a replay adds to this request's row: the logged facts, what the replay cannot know,
        and whether the replay agrees with the log (NA when it cannot be judged: a body the log lacks)."""
        target = self.log["target_processing_time"]
        status = row.get("status")
        logged = self.log["elb_status_code"]
        depends_on = self.depends_on
        same = None
        if depends_on is None and isinstance(status, int) and not isinstance(status, bool) and logged is not None:
            same = status == logged
        file, _, line = self.where.rpartition(":")
        return {
            "file": file,
            "line": int(line),
            "logged_time": self.log["time"],
            "logged_status": logged,
            "logged_target_status": self.log["target_status_code"],
            "logged_error_reason": self.log["error_reason"],
            "logged_target_ms": None if target is None or target < 0 else round(target * 1000, 3),
            "actions_executed": self.log["actions_executed"],
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


def request_event(log: dict[str, Any], *, multi_value: bool = False, seed: int = 0) -> AlbEvent | None:
    """The event the load balancer sent the function for a parsed entry; None when no complete request was logged."""
    request = parse_request(log["request"], log["type"])
    if request is None:
        return None
    headers: list[tuple[str, str]] = []
    default = _DEFAULT_PORT.get(request.scheme)
    host = request.host if request.port == default else f"{request.host}:{request.port}"
    headers.append(("host", host))
    if log["user_agent"] is not None:
        headers.append(("user-agent", log["user_agent"]))
    if log["type"] in ("ws", "wss") or request.scheme in ("ws", "wss"):
        headers += [("connection", "Upgrade"), ("upgrade", "websocket")]
    client = log["client:port"]
    arn = log["target_group_arn"]
    dialect = _dialect(arn)
    return request_to_event(
        request.method,
        request.path,
        request.query,
        headers,
        b"",
        multi_value,
        target_group_arn=arn,
        dialect=dialect,
        trace=log["trace_id"] or seeded_trace_id(seed),
        client_ip=client[0] if client else DEFAULT_CLIENT_IP,
        port=request.port,
        proto=_PROTO.get(request.scheme, "https" if request.port == 443 else "http"),
        host=request.host,
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
        for entry in iter_lines(path_or_lines, stream):
            if isinstance(entry, Unreadable):
                yield entry
                continue
            name, number, line = entry
            where = f"{name}:{number}"
            if not line.strip():
                yield unreadable(
                    where,
                    "The line is blank: an access log has one entry per line.",
                    SOURCE,
                    severity="warning",
                    code="blank",
                )
                continue
            try:
                log = parse_line(line)
                event = request_event(log, multi_value=multi_value, seed=zlib.crc32(line.encode("utf-8")))
            except ValueError as exc:
                yield unreadable(where, str(exc), SOURCE)
                continue
            if event is None:
                status = log["elb_status_code"]
                answered = f"it answered {status} itself" if status is not None else "it sent no answer"
                yield unreadable(
                    where,
                    f"The load balancer logged no complete request here ({answered}, "
                    "without a target), so there is nothing to replay.",
                    SOURCE,
                    severity="warning",
                    code="incomplete",
                )
                continue
            if not forwarded(log):
                stream.note(
                    where,
                    f"The load balancer answered {log['elb_status_code'] or 'nothing'} by itself "
                    f"(actions_executed: {log['actions_executed']}): the function never saw this request, "
                    "so it is not replayed.",
                    severity="warning",
                    code="not-forwarded",
                )
                continue
            yield LoggedRequest(event, log, where)

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
    "LogField",
    "LoggedRequest",
    "Request",
    "events_from_access_log",
    "forwarded",
    "parse_line",
    "parse_request",
    "request_event",
]
