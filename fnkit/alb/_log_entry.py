"""An access-log entry read: its documented fields (`FIELDS`), the field-by-field reader that says what is
wrong and where (`parse_line`), the one pattern that takes a well-formed entry at once (`FAST`, typed by
`fast_log`), and the request field read (`parse_request`). The format is described in `_access_log`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


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


_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z$")


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
DEFAULT_PORT = {"http": 80, "ws": 80, "https": 443, "wss": 443, "h2": 443, "grpcs": 443}
PROTO = {"http": "http", "ws": "http", "https": "https", "wss": "https"}


_QUOTED = r'"((?:[^"\\]|\\.)*)"'
_PLAIN = r'([^ "]+)'
# an entry of exactly the documented fields, or of those up to trace_id: one match, the common case
_ENTRY = re.compile(" ".join(_QUOTED if f.quoted else _PLAIN for f in FIELDS[:MIN_FIELDS]))
_FULL_ENTRY = re.compile(" ".join(_QUOTED if f.quoted else _PLAIN for f in FIELDS))

# The common case read at once: an entry of the documented fields (or of those up to trace_id) whose every
# field already has the shape its reader accepts. FAST's patterns are loose about two characters, for speed:
# a line is only taken when it holds no backslash (no escape to undo) and no double quote but the two around
# each quoted field (QUOTES, by the last field matched). Such a line reads exactly as parse_line reads it
# (each pattern accepts a part of what the field's reader accepts); any other line goes to parse_line, which
# says what is wrong and where.
_DIGITS = "[0-9]{1,19}"
_ISO = _TIME.pattern.strip("^$").replace(r"\d", "[0-9]")  # ASCII digits (a part of what \d takes): faster
_URL_SHAPE = r"[A-Z]+ [a-z][a-z0-9+.-]*://(?:\[[^\] ]*\]|[^/:?# ]*)(?::[0-9]+)?(?:/[^?# ]*)?(?:\?[^# ]*)? [^ ]+"
_SHAPES: dict[tuple[Callable[[str], Any], bool], str] = {
    (_word, False): "([a-z0-9]+)",
    (_time, False): f"({_ISO})",
    (str, False): "([^ ]+)",
    (str, True): f'"({_URL_SHAPE})"',  # the request: METHOD scheme://host[:port][/path][?query] VERSION
    (_address, False): f"(-|[^ ]+:{_DIGITS})",
    (_seconds, False): r"(-1|[0-9]+(?:\.[0-9]+)?)",
    (_int_or_none, False): f"(-|{_DIGITS})",
    (_count, False): f"({_DIGITS})",
    (_text, False): "([^ ]+)",
    (_text, True): '"([^"]*)"',
    (_time_or_none, False): f"(-|{_ISO})",
}
# the double quotes of an entry by its last field (FAST's last group matched): two per quoted field
QUOTES = {
    MIN_FIELDS: 2 * sum(f.quoted for f in FIELDS[:MIN_FIELDS]),
    len(FIELDS): 2 * sum(f.quoted for f in FIELDS),
}


def _fast_pattern() -> re.Pattern[str]:
    head = " ".join(_SHAPES[f.read, f.quoted] for f in FIELDS[:MIN_FIELDS])
    tail = " ".join(_SHAPES[f.read, f.quoted] for f in FIELDS[MIN_FIELDS:])
    return re.compile(f"{head}(?: {tail})?")


FAST = _fast_pattern()


ACTIONS = [f.name for f in FIELDS].index("actions_executed")
TRACE = [f.name for f in FIELDS].index("trace_id")


def fast_log(g: tuple[Any, ...]) -> dict[str, Any]:
    """The log of an entry FAST took, from its groups (one per field, in FIELDS' order): as parse_line types it."""
    client, target, priority = g[3], g[4], g[20]
    return {
        "type": g[0],
        "time": g[1],
        "elb": g[2],
        "client:port": None if client == "-" else (client[: client.rindex(":")], int(client[client.rindex(":") + 1 :])),
        "target:port": None if target == "-" else (target[: target.rindex(":")], int(target[target.rindex(":") + 1 :])),
        "request_processing_time": float(g[5]),
        "target_processing_time": float(g[6]),
        "response_processing_time": float(g[7]),
        "elb_status_code": None if g[8] == "-" else int(g[8]),
        "target_status_code": None if g[9] == "-" else int(g[9]),
        "received_bytes": int(g[10]),
        "sent_bytes": int(g[11]),
        "request": g[12],
        "user_agent": None if g[13] == "-" else g[13],
        "ssl_cipher": None if g[14] == "-" else g[14],
        "ssl_protocol": None if g[15] == "-" else g[15],
        "target_group_arn": None if g[16] == "-" else g[16],
        "trace_id": None if g[17] == "-" else g[17],
        "domain_name": None if g[18] == "-" else g[18],
        "chosen_cert_arn": None if g[19] == "-" else g[19],
        "matched_rule_priority": None if priority is None or priority == "-" else int(priority),
        "request_creation_time": None if g[21] == "-" else g[21],
        "actions_executed": None if g[22] == "-" else g[22],
        "redirect_url": None if g[23] == "-" else g[23],
        "error_reason": None if g[24] == "-" else g[24],
        "target:port_list": None if g[25] == "-" else g[25],
        "target_status_code_list": None if g[26] == "-" else g[26],
        "classification": None if g[27] == "-" else g[27],
        "classification_reason": None if g[28] == "-" else g[28],
        "conn_trace_id": None if g[29] == "-" else g[29],
        "extra": (),
    }


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
        int(match.group("port")) if match.group("port") else DEFAULT_PORT.get(scheme, DEFAULT_PORT.get(entry_type, 80))
    )
    return Request(method, scheme, match.group("host"), port, path, match.group("query") or "", version)


__all__ = [
    "ACTIONS",
    "DEFAULT_PORT",
    "FAST",
    "FIELDS",
    "MIN_FIELDS",
    "PROTO",
    "QUOTES",
    "TRACE",
    "LogField",
    "Request",
    "fast_log",
    "parse_line",
    "parse_request",
]
