"""Hypothesis strategies and checks shared by tests/test_fuzz.py (a few hundred examples each) and
tests/benchmarks/bench_fuzz.py (the soak: 10,000 examples each, and the time per input).

Inputs, as issue 10 lists them: arbitrary JSON; mutations of built events and responses;
huge strings; 10,000-deep nesting; NaN and Infinity; invalid UTF-8; lone surrogates; a BOM;
10 MB bodies; huge integers; containers whose own methods raise; each as a Python object,
as JSON text and as bytes. Every public validator must answer without raising anything
but its documented error (ContractError for parse_event and for mail.outcome's event).
"""

from __future__ import annotations

import copy
import inspect
import json
import math
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

import fnkit
from fnkit import ContractError, alb, mail, queue

SOURCES = {"queue": queue, "mail": mail, "alb": alb}

# --- values ---------------------------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=25,
)


class ExplodingDict(dict[str, Any]):
    """A dict subclass whose items() raises: a hostile Python object."""

    def items(self):
        raise RuntimeError("items() exploded")

    def keys(self):
        raise RuntimeError("keys() exploded")

    def _repr_pretty_(self, printer, cycle):  # how hypothesis shows it, without calling items()
        printer.text("ExplodingDict(...)")


def deep_list(depth: int = 10_000) -> list[Any]:
    root: list[Any] = []
    cur = root
    for _ in range(depth):
        nxt: list[Any] = []
        cur.append(nxt)
        cur = nxt
    return root


def deep_dict(depth: int = 10_000, key: str = "Records") -> dict[str, Any]:
    root: dict[str, Any] = {}
    cur = root
    for _ in range(depth):
        nxt: dict[str, Any] = {}
        cur[key] = [nxt]
        cur = nxt
    return root


HUGE_INT = 10**5000  # past Python's 4,300-digit limit for int <-> str (hypothesis cannot repr it: built lazily)


def huge_int(sign: int = 1) -> int:
    return sign * HUGE_INT


def big_text(unit: str) -> str:
    """A string of 300,000 characters (built lazily, so that hypothesis never prints it whole)."""
    return unit * (300_000 // len(unit))


strange_scalars = st.one_of(
    st.just(math.nan),
    st.just(math.inf),
    st.just(-math.inf),
    st.builds(huge_int),
    st.builds(huge_int, st.just(-1)),
    st.just("\ud800"),
    st.just("a\udfffb"),
    st.just("\ufeff{}"),
    st.just("\x00"),
    st.builds(big_text, st.sampled_from(["x", "é\u2028", "\ud800"])),
    st.binary(max_size=20),
    st.just(b"\xff\xfe\xfd"),
    st.builds(object),
    st.sets(st.integers(), max_size=3),
    st.just((1, 2)),
    st.builds(lambda: ExplodingDict(a=1)),
)
hostile_values = st.recursive(
    st.one_of(json_scalars, strange_scalars),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)


# --- built events and responses, and their mutations -----------------------------------------------


def built_events(source: str) -> st.SearchStrategy:
    seeds = st.integers(0, 10_000)
    if source == "queue":
        return st.builds(
            lambda bodies, seed, fifo: queue.build_event(
                bodies, seed=seed, fifo=fifo, group_ids=["g"] * len(bodies) if fifo else None
            ),
            st.lists(st.text(max_size=20), min_size=1, max_size=4),
            seeds,
            st.booleans(),
        )
    if source == "mail":
        return st.builds(
            lambda seed, n: mail.build_event(
                mail_from="a@example.org", recipients=[f"r{i}@example.com" for i in range(n)], seed=seed
            ),
            seeds,
            st.integers(1, 4),
        )
    return st.builds(
        lambda seed, method, body: alb.build_event(method, "/p", body=body, seed=seed),
        seeds,
        st.sampled_from(["GET", "POST", "PUT"]),
        st.binary(max_size=40),
    )


def built_responses(source: str) -> st.SearchStrategy:
    if source == "queue":
        return st.builds(
            lambda ids: {"batchItemFailures": [{"itemIdentifier": i} for i in ids]},
            st.lists(st.text(max_size=36), max_size=3),
        )
    if source == "mail":
        actions = st.sampled_from(["DEFAULT", "DROP", "BOUNCE", "MOVE_TO_JUNK", "BYPASS_SPAM_CHECK", "NOPE"])
        return st.builds(lambda a: {"actions": [{"action": {"type": a}, "allRecipients": True}]}, actions)
    return st.builds(
        lambda code, body: {"statusCode": code, "body": body, "headers": {"content-type": "text/plain"}},
        st.integers(-5, 700),
        st.text(max_size=30),
    )


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in list(dict.items(value))[:20]:
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:5]):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated(draw, base: st.SearchStrategy) -> Any:
    """A built value with one to three random edits: a value replaced, a key removed or added, a type changed."""
    value = copy.deepcopy(draw(base))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(value)
        path = draw(st.sampled_from(paths))
        if not path:
            continue
        parent = value
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        edit = draw(st.sampled_from(["replace", "delete", "add", "strange"]))
        if edit == "replace":
            parent[last] = draw(json_values)
        elif edit == "strange":
            parent[last] = draw(strange_scalars)
        elif edit == "delete" and isinstance(parent, dict):
            del parent[last]
        elif edit == "add" and isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = draw(json_values)
    return value


def as_forms(values: st.SearchStrategy) -> st.SearchStrategy:
    """A value as it is, as JSON text (NaN allowed, a BOM sometimes), or as bytes (invalid UTF-8 sometimes)."""

    def text(value: Any, bom: bool) -> Any:
        try:
            out = json.dumps(value, allow_nan=True)
        except Exception:  # noqa: BLE001 - not JSON: handed over as the Python object
            return value
        return ("\ufeff" + out) if bom else out

    def raw(value: Any, tail: bytes) -> Any:
        out = text(value, False)
        if not isinstance(out, str):
            return value
        return out.encode("utf-8", "surrogatepass") + tail

    return st.one_of(
        values,
        st.builds(text, values, st.booleans()),
        st.builds(raw, values, st.sampled_from([b"", b"\xff", b"\xc3\x28", b"\xed\xa0\x80"])),
    )


#: byte sequences that are not UTF-8: a lone FF or FE, an overlong slash, a lead byte before ASCII, a UTF-16
#: surrogate, a code point past U+10FFFF, a lone continuation byte, a three-byte sequence cut short
INVALID_UTF8 = (b"\xff", b"\xfe", b"\xc0\xaf", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80", b"\xe2\x82")
_MARK = "~fuzz~mark~"  # ASCII that no built value holds (so JSON writes it as is): replaced by the bad bytes


@st.composite
def invalid_utf8_inside(draw, source: str) -> tuple[bytes, int, str]:
    """(a built event or response of `source` as UTF-8 JSON bytes with one invalid UTF-8 sequence inside one of
    its keys or string values, the position of its first bad byte, "key" or "value")."""
    value = copy.deepcopy(draw(st.one_of(built_events(source), built_responses(source))))
    spots = [path for path in _paths(value) if path]
    path = draw(st.sampled_from(spots))
    parent = value
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    where = draw(st.sampled_from(["key", "value"])) if isinstance(parent, dict) else "value"
    cut = draw(st.integers(0, 4))
    if where == "key":  # the key keeps its place in the object
        items = list(parent.items())
        parent.clear()
        for k, v in items:
            parent[k[:cut] + _MARK + k[cut:] if k == last else k] = v
    else:
        old = parent[last]
        parent[last] = old[:cut] + _MARK + old[cut:] if isinstance(old, str) else _MARK
    data = json.dumps(value, ensure_ascii=draw(st.booleans())).encode("utf-8")
    mark = _MARK.encode("utf-8")
    at = data.index(mark)
    return data.replace(mark, draw(st.sampled_from(INVALID_UTF8)), 1), at, where


SPECIAL = [
    deep_list(),
    deep_dict(),
    deep_dict(key="actions"),
    "[" * 10_000 + "]" * 10_000,
    b"[" * 10_000,
    HUGE_INT,
    {"statusCode": HUGE_INT},
    {"Records": [{"messageId": HUGE_INT}]},
    math.nan,
    "NaN",
    "Infinity",
    "\ufeff{}",
    b"\xef\xbb\xbf{}",
    "\ud800",
    b"\xff",
    "",
    b"",
    ExplodingDict(Records=[]),
    {"statusCode": 200, "body": "x" * (10 * 1024 * 1024)},
    "x" * (10 * 1024 * 1024),
]


def inputs(source: str) -> st.SearchStrategy:
    """Everything a validator of `source` may be handed."""
    return st.one_of(
        as_forms(json_values),
        as_forms(mutated(built_events(source))),
        as_forms(mutated(built_responses(source))),
        hostile_values,
        invalid_utf8_inside(source).map(lambda found: found[0]),
        st.sampled_from(range(len(SPECIAL))).map(special),
    )


def special(index: int) -> Any:
    return SPECIAL[index]


# --- the checks: what must hold for every input ---------------------------------------------------------


def targets(source: str) -> dict[str, Callable[[Any], Any]]:
    """name -> f(value); each must return (or raise only its documented error)."""
    module = SOURCES[source]
    out: dict[str, Callable[[Any], Any]] = {
        f"{source}.validate_event": module.validate_event,
        f"{source}.validate_response": module.validate_response,
        f"{source}.parse_event": parse_or_report(module),
    }
    if source == "mail" and "mode" in inspect.signature(mail.validate_response).parameters:
        out["mail.validate_response(async)"] = lambda v: mail.validate_response(v, mode="async")
    return out


def parse_or_report(module: Any) -> Callable[[Any], Any]:
    def parse(value: Any) -> Any:
        try:
            return module.parse_event(value)
        except ContractError as exc:
            report = exc.report
        assert not report.ok
        return report

    return parse


def check_result(name: str, result: Any) -> None:
    """What a user may rely on: a Report says ok or lists located issues with a sentence."""
    if isinstance(result, fnkit.Report):
        for issue in result:
            assert issue.path.startswith("$") and issue.message and issue.severity in ("error", "warning"), (
                name,
                issue,
            )
            # a rule that could not run is excused only for a container whose own methods raise
            assert issue.code != "unchecked" or "exploded" in issue.message, (name, issue)
        str(result)
        result.ok  # noqa: B018


def outcome_of(source: str, event: Any, response: Any) -> Any:
    """`outcome(event, response)`; mail raises ContractError for an invalid event, as documented."""
    module = SOURCES[source]
    try:
        result = module.outcome(event, response)
    except ContractError:
        if source != "mail":
            raise
        return None
    repr(result)
    if source == "queue":
        assert result.kind in ("success", "partial", "failure")
    elif source == "mail":
        assert result.status in ("applied", "fallback", "ignored")
    else:
        assert 100 <= result.status <= 599
    return result


def validate_any(value: Any) -> Any:
    report = fnkit.validate(value)
    check_result("fnkit.validate", report)
    return report


# --- readers and HTTP framing (issue 32): pathological lines and heads -------------------------------

#: one line of a reader's input: an event, a blank, brackets too deep to read, a number of thousands of digits,
#: a lone surrogate (escaped, as JSON writes it, and raw), text that is not JSON
READER_LINES = [
    json.dumps({"Records": []}),
    "",
    "   \t",
    "[" * 10_000,
    "[" * 5_000 + "]" * 5_000,
    "9" * 5_000,
    '"\\ud800"',
    '{"Records": ["\\udfff"]}',
    "\ud800",
    "{",
    "\ufeff{}",
]
#: the fields of a ReceiveMessage message: each gets a number of 5,000 digits in turn
MESSAGE_FIELDS = ["MessageId", "ReceiptHandle", "Body", "MD5OfBody", "Attributes", "MessageAttributes"]


def message_with(field: str, raw_value: str) -> str:
    """A ReceiveMessage answer (JSON text) whose message has `raw_value` (JSON text) in `field`."""
    message = {"MessageId": "m1", "ReceiptHandle": "r1", "Body": "x", "MD5OfBody": "9dd4e461268c8034f5c8564e155c67a6"}
    parts = [f'"{k}": "{v}"' for k, v in message.items() if k != field] + [f'"{field}": {raw_value}']
    return '{"Messages": [{' + ", ".join(parts) + "}]}"


reader_texts = st.lists(st.sampled_from(READER_LINES), min_size=1, max_size=6).map("\n".join)

#: header names that are, or look like, the two framing headers (and a plain one)
FRAMING_NAMES = [
    "Transfer-Encoding",
    "Content-Length",
    "transfer-encoding",
    "Transfer_Encoding",
    "Transfer-Encoding ",
    " Transfer-Encoding",
    "\x01Content-Length",
    "Content_Length",
    "Tran\u017ffer-Encoding",
    "X-Other",
]
FRAMING_VALUES = ["chunked", "gzip, chunked", "chunked, chunked", "5", "0", "5, 5", "9" * 30, "-1", "\x00", "x\ry"]
framing_headers = st.lists(st.tuples(st.sampled_from(FRAMING_NAMES), st.sampled_from(FRAMING_VALUES)), max_size=4)


@st.composite
def request_heads(draw: st.DrawFn) -> bytes:
    """A request head (bytes up to the empty line): a method, a target, a version, framing headers, line endings."""
    method = draw(st.sampled_from(["GET", "HEAD", "POST", "PUT", "BAD\x01"]))
    target = draw(st.sampled_from(["/", "/a?b=c", "http://evil.test/p", "", "/a b", "/a\tb", "/\u00e9"]))
    version = draw(st.sampled_from(["HTTP/1.1", "HTTP/1.0", "", "HTTP/0.9", "HTTP/1.2", "HTTP/2.0"]))
    end = draw(st.sampled_from(["\r\n", "\n"]))
    lines = [f"{method} {target} {version}".rstrip(" ") if version else f"{method} {target}"]
    lines += [f"{name}: {value}" for name, value in draw(framing_headers)]
    if draw(st.booleans()):
        lines.insert(1, " folded")
    return (end.join(lines) + end + end).encode("utf-8", "surrogatepass")


def framing_of(head: bytes) -> tuple[set[str], list[int]]:
    """(the exact framing header names a head holds, lower-case; its Content-Length values that are numbers)."""
    names: set[str] = set()
    lengths: list[int] = []
    for line in head.split(b"\n")[1:]:
        name, colon, value = line.rstrip(b"\r").partition(b":")
        lower = name.decode("latin-1").lower()
        if colon and lower in ("transfer-encoding", "content-length"):
            names.add(lower)
            if lower == "content-length" and value.strip(b" \t").isdigit():
                lengths.append(int(value.strip(b" \t")))
    return names, lengths
