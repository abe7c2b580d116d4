"""The response codec: what a handler's answer is as JSON, both ways, and the record of one call.

Below everything that calls handlers: a validator reads a response (a value, `Raw` text or
bytes, or an `Invocation`) with these alone, without importing the machinery that runs them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Self


@dataclass(frozen=True, slots=True)
class Raw:
    """The exact text or bytes a function produced (so that invalid JSON can be expressed)."""

    data: str | bytes

    def text(self) -> str | None:
        """The data as text, or None when the bytes are not UTF-8."""
        if isinstance(self.data, str):
            return self.data
        try:
            return bytes(self.data).decode("utf-8")
        except UnicodeDecodeError:
            return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


# Python's json accepts NaN and Infinity; JSON (and the platform) does not.
_STRICT = json.JSONDecoder(parse_constant=_reject_constant)


def loads_strict(text: str) -> Any:
    """`json.loads` of text that rejects NaN and Infinity, as every JSON parser but Python's does."""
    return _STRICT.decode(text)


@dataclass(frozen=True, slots=True)
class HandlerError:
    """What a raising handler raised: exception type, message, traceback text."""

    type: str
    message: str
    traceback: str

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type


class _Fields:
    """Where an `Invocation`'s fields live: a plain class's slots, which a new one is given as any object's attributes
    are (see `Invocation.__new__`)."""

    __slots__ = (
        "duration_ms",
        "encode_error",
        "error",
        "logs",
        "reports",
        "response_report",
        "response_size",
        "response_text",
        "returned",
        "timed_out",
        "timeout_s",
    )


@dataclass(frozen=True, slots=True, init=False)
class Invocation(_Fields):
    """What happened when a handler was called."""

    returned: Any = None
    response_text: str | None = None
    error: HandlerError | None = None
    timed_out: bool = False
    duration_ms: float = 0.0
    logs: str = ""
    timeout_s: float | None = None
    encode_error: str | None = field(default=None)
    reports: tuple[tuple[str, Any], ...] = ()  # (topic, value) pairs sent by `fnkit.isolation.report` during the call
    #: the response JSON's size in UTF-8 bytes when it was over the caller's bound (a server's limit), so the worker
    #: sent its size, not the value: `returned` and `response_text` are None then
    response_size: int | None = None
    response_report: Any = None  # what the caller's rule made of that response in the worker, as data

    def __new__(
        cls,
        returned: Any = None,
        response_text: str | None = None,
        error: HandlerError | None = None,
        timed_out: bool = False,
        duration_ms: float = 0.0,
        logs: str = "",
        timeout_s: float | None = None,
        encode_error: str | None = None,
        reports: tuple[tuple[str, Any], ...] = (),
        response_size: int | None = None,
        response_report: Any = None,
    ) -> Self:
        # the fields, in order, with their defaults (a test holds the two to each other). Every call a replay makes
        # ends in an Invocation, and a frozen class's fields can only be set through object.__setattr__ or their
        # slots' setters, at about 0.05 us each; so a new one is made as a `_Fields` (the same slots, writable as
        # any object's attributes are) and then becomes an Invocation: about half the instructions in all
        new: Any = _new(_Fields)
        new.returned = returned
        new.response_text = response_text
        new.error = error
        new.timed_out = timed_out
        new.duration_ms = duration_ms
        new.logs = logs
        new.timeout_s = timeout_s
        new.encode_error = encode_error
        new.reports = reports
        new.response_size = response_size
        new.response_report = response_report
        new.__class__ = cls
        made: Self = new
        return made  # (no __init__ follows: `object.__init__`, which accepts what `__new__` took)

    @property
    def succeeded(self) -> bool:
        """The handler returned (it may still have returned junk)."""
        return self.error is None and not self.timed_out

    @property
    def status(self) -> str:
        """`returned`, `error` or `timeout`."""
        if self.timed_out:
            return "timeout"
        return "error" if self.error is not None else "returned"

    def response(self) -> Any:
        """The response as the platform reads it: a decoded JSON value, or `Raw` when it is not JSON."""
        if self.response_text is None:
            return Raw(b"") if self.encode_error else None
        try:
            return loads_strict(self.response_text)
        except (ValueError, RecursionError):
            return Raw(self.response_text)


_new = object.__new__


def returned_invocation(
    returned: Any,
    response_text: str | None,
    duration_ms: float,
    logs: str,
    timeout_s: float | None,
    encode_error: str | None,
    reports: tuple[tuple[str, Any], ...],
) -> Invocation:
    """`Invocation(returned, response_text, None, False, duration_ms, logs, timeout_s, encode_error, reports)`: a call
    that returned, made by `Invocation.__new__` called as a function (a class call goes through `type.__call__`
    first; a replay makes one per event)."""
    made: Invocation = _make_invocation(
        Invocation, returned, response_text, None, False, duration_ms, logs, timeout_s, encode_error, reports
    )
    return made


_make_invocation = Invocation.__new__  # (the fields are set in one place: `__new__`)


#: what `json.dumps(value, allow_nan=False, separators=(",", ":"), ensure_ascii=False)` makes afresh on
#: every call, made once (it holds no state between calls)
_ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"), ensure_ascii=False)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match[0]):04x}"


def encode_response(value: Any) -> tuple[str | None, str | None]:
    """The JSON text the platform would receive, or (None, why) when JSON cannot encode it.

    The one decision of what a returned value is, whichever isolation mode ran the handler:
    the text is always valid UTF-8, so it reads the same after travelling from a worker. A
    surrogate in a string is written as its escape (`\\ud800`), as the platform's runtime
    writes it; `Raw` text holding one is not text the function could send.
    """
    if value is None:  # what most handlers of a queue or a mail flow return
        return "null", None
    if isinstance(value, Raw):
        text = value.text()
        if text is None:
            return None, "the bytes are not UTF-8"
        if not text.isascii() and _SURROGATE.search(text) is not None:
            return None, "the text holds a surrogate code point (U+D800 to U+DFFF), which UTF-8 cannot encode"
        return text, None
    try:
        text = _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        return None, str(exc)
    except Exception as exc:  # noqa: BLE001 - a container whose own methods raise (a dict subclass, say)
        return None, f"{type(exc).__name__}: {exc}"
    if not text.isascii() and _SURROGATE.search(text) is not None:  # (only inside a JSON string: escape it there)
        text = _SURROGATE.sub(_escaped, text)
    return text, None
