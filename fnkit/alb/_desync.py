"""How the load balancer reads a request's framing (A16) and its request line (A17): pure, no I/O.

`judge_head(raw)` reads the bytes of one request head (request line, header lines, up to the
empty line) as the load balancer's desync mitigation does: every request gets a tier,
"compliant", "acceptable", "ambiguous" or "severe", and the reason, in one sentence. The
server (`_serve`) then acts as the mode says (`action`): in the default "defensive" mode a
severe request is refused with 400 and never reaches the function, an ambiguous one is
answered and its connection closed (so no byte after it is ever read as a second request).

The tiers follow the load balancer's classifier, whose public test cases
(tests/data/http_desync_cases.json) the tests send to a real server:
- a header whose name or value holds CR, LF or NUL is severe; other control bytes in a name
  or value, and a line ending in a bare LF, make a request acceptable;
- a name that reads as Transfer-Encoding or Content-Length once its other characters are
  dropped (`Transfer_Encoding`, `Content-Length ` with a space, `\\x01Transfer-Encoding`) is
  ambiguous: one server's framing header is another's custom header;
- Content-Length beside Transfer-Encoding, Content-Length twice with one value, a body header
  on GET or HEAD, Transfer-Encoding before HTTP/1.1 or Content-Length before HTTP/1.0: ambiguous;
- a Content-Length that is not one decimal number, two different ones, a transfer coding
  that does not exist or `chunked` twice: severe (nobody can tell where the body ends);
- a folded header line (obs-fold) is ambiguous, and severe beside a bare LF (a reader that
  ends lines at LF and one that wants CRLF disagree where the header ends); a header line
  without a colon is severe;
- a request target with CR, LF or NUL is severe, with another control byte ambiguous, with a
  space acceptable; a version that is not HTTP/1.x (or HTTP/0.9) is severe; HTTP/0.9,
  HTTP/1.2-9 or spaces around the version are acceptable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..rules import id_of, rule
from ._http import Refusal

TIERS = ("compliant", "acceptable", "ambiguous", "severe")
MODES = ("defensive", "strictest", "monitor")
DEFAULT_MODE = "defensive"

_TCHAR = frozenset(b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_BAD = frozenset(b"\r\n\x00")  # never acceptable in a name, a value or a target
_CODINGS = frozenset({b"chunked", b"compress", b"deflate", b"gzip", b"identity"})
_OWS = b" \t"
_VERSION = re.compile(rb"HTTP/1\.[0-9]")
_NOT_ALNUM = re.compile(rb"[^a-z0-9]+")
_LOOKALIKES = ((b"\xc5\xbf", b"s"), (b"\xc4\xb1", b"i"))  # long s and dotless i: upper-case to S and I
_FRAMING = {b"transferencoding": b"transfer-encoding", b"contentlength": b"content-length"}
_MAX_LENGTH = 2**64 - 1


@dataclass(frozen=True, slots=True)
class Head:
    """One request head as read off the wire, judged (A16) and with its target read (A17)."""

    method: str
    target: bytes  # the request target as sent
    version: str  # "HTTP/1.1", "HTTP/1.0", ..., "" for an HTTP/0.9 request line
    header_pairs: list[tuple[bytes, bytes]]  # names as sent, values without surrounding whitespace
    tier: str
    why: str
    path: bytes  # the target's path and query (A17: an absolute-form target's path)
    host: bytes | None  # the host of an absolute-form target (A17), else None
    target_rule: str | None  # the rule that read the target ("A17" for absolute-form), else None

    @property
    def http11(self) -> bool:
        """An HTTP/1.1 (or later 1.x) request: its connection persists unless it says otherwise."""
        return self.version.strip(" \t")[:7] == "HTTP/1." and self.version.strip(" \t") >= "HTTP/1.1"


class _Verdict:
    __slots__ = ("tier", "why")

    def __init__(self) -> None:
        self.tier = 0
        self.why = "The request's framing is read one way by every HTTP parser (compliant)."

    def raise_to(self, tier: int, why: str) -> None:
        if tier > self.tier:  # the first reason of the highest tier is the one said
            self.tier, self.why = tier, why


def _shown(data: bytes) -> str:
    return repr(data.decode("latin-1"))


def _trim(data: bytes) -> bytes:
    return data.strip(_OWS)


_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]*")
_CR_LF_NUL = re.compile(rb"[\r\n\x00]")
_VALUE_CTL = re.compile(rb"[\x01-\x08\x0b-\x1f\x7f]")  # controls a field value may not hold (HTAB it may)


def _char_tier(data: bytes, allowed: frozenset[int] | None) -> int:
    """0 when every byte is allowed (a token for a name, `allowed`; a field value for None); 3 (severe) for CR,
    LF or NUL; else 1 (acceptable)."""
    if _CR_LF_NUL.search(data):
        return 3
    if allowed is None:  # a field value: VCHAR, obs-text, SP and HTAB
        return 1 if _VALUE_CTL.search(data) else 0
    return 0 if _TOKEN.fullmatch(data) else 1


def _framing_name(name: bytes) -> tuple[bytes | None, bool]:
    """(the framing header `name` reads as, or None; True when it is exactly that name)."""
    lower = name.lower()
    if lower in (b"transfer-encoding", b"content-length"):
        return lower, True
    for lookalike, letter in _LOOKALIKES:
        lower = lower.replace(lookalike, letter)
    letters = _NOT_ALNUM.sub(b"", lower)
    return _FRAMING.get(letters), False


def _content_length(value: bytes) -> int | None:
    digits = _trim(value)
    if not digits or not digits.isdigit() or not digits.isascii():
        return None
    number = int(digits) if len(digits) <= 20 else _MAX_LENGTH + 1
    return number if number <= _MAX_LENGTH else None


def _codings(value: bytes) -> list[bytes] | None:
    """The transfer codings a Transfer-Encoding value lists (names only), or None when one is not a coding."""
    found = []
    for item in value.split(b","):
        name = _trim(_trim(item).split(b";", 1)[0]).lower()
        if name not in _CODINGS:
            return None
        found.append(name)
    return found


def _split_lines(raw: bytes) -> tuple[list[bytes], list[bool]]:
    """The lines of a head (without the empty line that ends it) and, for each, whether it ended in a bare LF."""
    lines, bare = [], []
    for line in raw.split(b"\n"):
        if line.endswith(b"\r"):
            lines.append(line[:-1])
            bare.append(False)
        else:
            lines.append(line)
            bare.append(True)
    while lines and lines[-1] == b"":  # the empty line that ends the head, and what split() leaves after it
        lines.pop()
        bare.pop()
    return lines, bare


def _request_line(line: bytes, verdict: _Verdict) -> tuple[bytes, bytes, bytes]:
    """method, target, version of a request line, judged."""
    stripped = line.rstrip(_OWS)
    if stripped != line:
        verdict.raise_to(1, f"Whitespace after the version in the request line {_shown(line)} (acceptable).")
    method, space, rest = stripped.partition(b" ")
    target, space2, version = rest.rpartition(b" ")
    if not space2:
        target, version = rest, b""
    if not space or (not space2 and rest[:7] == b"HTTP/1.") or not (target or version):
        verdict.raise_to(2, f"The request line {_shown(line)} has no request target (ambiguous).")
    if any(byte not in _TCHAR for byte in method) or not method:
        verdict.raise_to(3, f"The method {_shown(method)} is not an HTTP token (severe).")
    if not version:
        if any(byte in b"\t\x0b\x0c" for byte in target):
            verdict.raise_to(
                3,
                f"The request line {_shown(line)} has no version, and a parser that splits on any whitespace "
                "reads one in its target (severe).",
            )
        verdict.raise_to(1, f"The request line {_shown(line)} is HTTP/0.9: no version (acceptable).")
    elif version == b"HTTP/0.9":
        verdict.raise_to(1, "HTTP/0.9 in the request line (acceptable).")
    elif not _VERSION.fullmatch(version) or any(_VERSION.fullmatch(piece) for piece in target.split(b" ")):
        verdict.raise_to(3, f"The request line {_shown(line)} has no HTTP/1.x version where it ends (severe).")
    elif version > b"HTTP/1.1":
        verdict.raise_to(1, f"The version {_shown(version)} is read as HTTP/1.1 (acceptable).")
    for byte in target:
        if byte in _BAD:
            verdict.raise_to(3, f"The request target {_shown(target)} holds CR, LF or NUL (severe).")
            break
        if byte == 0x20:
            verdict.raise_to(1, f"The request target {_shown(target)} holds a space (acceptable).")
        elif byte < 0x20 or byte == 0x7F:
            verdict.raise_to(2, f"The request target {_shown(target)} holds a control character (ambiguous).")
    return method, target, version


def _header_lines(lines: list[bytes], bare: list[bool], verdict: _Verdict) -> list[tuple[bytes, bytes]]:
    """The header fields of a head's lines (after the request line), judged line by line."""
    pairs: list[tuple[bytes, bytes]] = []
    for index in range(1, len(lines)):
        line = lines[index]
        folded = line[:1] in (b" ", b"\t")
        if folded:
            if bare[index] or bare[index - 1]:
                verdict.raise_to(
                    3,
                    f"A folded header line {_shown(line)} beside a bare LF: parsers disagree where the header "
                    "ends (severe).",
                )
            verdict.raise_to(2, f"A folded header line (obs-fold) {_shown(line)} (ambiguous).")
            if b":" not in line and pairs:
                name, value = pairs[-1]
                pairs[-1] = (name, value + b" " + _trim(line))
                continue
        name, colon, value = line.partition(b":")
        if not colon:
            verdict.raise_to(3, f"The header line {_shown(line)} has no colon (severe).")
            continue
        pairs.append((name, _trim(value)))
    return pairs


def _framing(method: bytes, version: bytes, pairs: list[tuple[bytes, bytes]], verdict: _Verdict) -> None:
    """Judge the headers, and Transfer-Encoding and Content-Length together."""
    codings: list[bytes] = []
    lengths: list[int] = []
    has_te = has_cl = False
    for name, value in pairs:
        tier = max(_char_tier(name, _TCHAR), _char_tier(value, None))
        if tier == 3:
            verdict.raise_to(3, f"The header {_shown(name)} holds CR, LF or NUL (severe).")
            continue
        if tier:
            verdict.raise_to(1, f"The header {_shown(name)} holds characters HTTP does not allow there (acceptable).")
        if not _trim(name) or _trim(name)[:1] == b":":
            verdict.raise_to(2, f"A header line without a name, {_shown(name)}: {_shown(value)} (ambiguous).")
            continue
        reads_as, exact = _framing_name(name)
        if reads_as is None:
            continue
        if not exact:
            verdict.raise_to(
                2,
                f"The header name {_shown(name)} is too close to {reads_as.decode()}: one parser's framing "
                "header is another's custom header (ambiguous).",
            )
        if reads_as == b"transfer-encoding":
            has_te = True
            found = _codings(value)
            if found is None:
                verdict.raise_to(3, f"Transfer-Encoding {_shown(value)} is not a list of transfer codings (severe).")
            else:
                codings += found
        else:
            has_cl = True
            length = _content_length(value)
            if length is None:
                verdict.raise_to(3, f"Content-Length {_shown(value)} is not one decimal number (severe).")
            else:
                lengths.append(length)
    if not has_te and not has_cl:
        return
    version = _trim(version) or b"HTTP/0.9"
    # (no return after these: what follows may be severe, two different lengths say, and the first reason of the
    # highest tier is the one said, so an ambiguous request keeps its version's reason)
    if version <= b"HTTP/1.0" and has_te:
        verdict.raise_to(2, f"Transfer-Encoding in an {version.decode('latin-1')} request (ambiguous).")
    if version < b"HTTP/1.0" and has_cl:
        verdict.raise_to(2, f"Content-Length in an {version.decode('latin-1')} request (ambiguous).")
    if codings.count(b"chunked") > 1:
        verdict.raise_to(3, "Transfer-Encoding names chunked more than once (severe).")
    if len(set(lengths)) > 1:
        verdict.raise_to(3, f"Content-Length is given twice, with different values {sorted(set(lengths))} (severe).")
    elif len(lengths) > 1:
        verdict.raise_to(2, "Content-Length is given twice (ambiguous).")
    if method in (b"GET", b"HEAD"):
        if has_te:
            verdict.raise_to(2, f"{method.decode()} with Transfer-Encoding: a body with no meaning (ambiguous).")
        if lengths and max(lengths) > 0:
            verdict.raise_to(2, f"{method.decode()} with a Content-Length above 0 (ambiguous).")
        elif lengths:
            verdict.raise_to(1, f"{method.decode()} with Content-Length: 0 (acceptable).")
    if has_te and lengths:
        verdict.raise_to(
            2, "Content-Length beside Transfer-Encoding: parsers disagree which one frames the body (ambiguous)."
        )


def _absolute_form(target: bytes) -> tuple[bytes, bytes | None]:
    """(path and query, host) of a request target: `http://host/p?q` is `/p?q` at `host` (A17)."""
    scheme, sep, rest = target.partition(b"://")
    if not sep or scheme.lower() not in (b"http", b"https"):
        return target, None
    cut = min((i for i in (rest.find(b"/"), rest.find(b"?")) if i >= 0), default=len(rest))
    authority, path = rest[:cut], rest[cut:]
    host = authority.rpartition(b"@")[2]
    if path[:1] != b"/":
        path = b"/" + path
    return path, host


def judge_head(raw: bytes) -> Head:
    """One request head (its bytes up to and including the empty line) read and judged (A16); never raises."""
    verdict = _Verdict()
    lines, bare = _split_lines(raw)
    if not lines:
        lines, bare = [b""], [False]
    if any(bare):
        verdict.raise_to(1, "A line of the head ends in a bare LF, not CRLF (acceptable).")
    method, target, version = _request_line(lines[0], verdict)
    pairs = _header_lines(lines, bare, verdict)
    _framing(method, version, pairs, verdict)
    path, host, target_rule = read_target(target)
    return Head(
        method.decode("latin-1"),
        target,
        version.decode("latin-1"),
        pairs,
        TIERS[verdict.tier],
        verdict.why,
        path,
        host,
        target_rule,
    )


@rule(
    "A17",
    "alb",
    "inferred",
    "A request line in absolute-form (GET http://host/p) reaches the function as path /p with that host "
    "(RFC 9112 section 3.2.2).",
    severity="behaviour",
)
def read_target(target: bytes) -> tuple[bytes, bytes | None, str | None]:
    """A17 (inferred): the path (with its query), and for an absolute-form target the host it names and "A17"."""
    path, host = _absolute_form(target)
    return path, host, None if host is None else id_of(read_target)


def action(tier: str, mode: str = DEFAULT_MODE) -> str:
    """What the load balancer does with a request of `tier` in `mode`: "forward", "forward-close" or "refuse"."""
    if mode == "monitor":
        return "forward"
    if mode == "strictest":
        return "forward" if tier == "compliant" else "refuse"
    return {"compliant": "forward", "acceptable": "forward", "ambiguous": "forward-close"}.get(tier, "refuse")


@rule(
    "A16",
    "alb",
    "doc",
    "Desync mitigation (default mode defensive): each request is compliant, acceptable, ambiguous or severe by "
    "how its framing reads; a severe one gets 400 and is not forwarded, an ambiguous one is forwarded and its "
    "connection closed; strictest forwards compliant requests only, monitor forwards all.",
    severity="refusal",
)
def decide(head: Head, mode: str = DEFAULT_MODE) -> tuple[bool, Refusal | None]:
    """A16: (close the connection after the answer, the refusal or None) for a judged head in `mode`.

    A body whose length cannot be read (a Content-Length that is not a number, a transfer
    coding other than chunked last) is refused in every mode: no reader could tell where it ends.
    """
    act = action(head.tier, mode)
    if act == "refuse":
        return True, Refusal(
            400, id_of(decide), f"{head.why} The load balancer answers 400 ({mode} mode): not invoked."
        )
    if body_framing(head)[0] == "unreadable":
        return True, Refusal(
            400, id_of(decide), f"{head.why} The body's length cannot be read: 400 whatever the mode, not invoked."
        )
    return act == "forward-close", None


def body_framing(head: Head) -> tuple[str, int]:
    """How the body of a forwarded request is read (RFC 9112 section 6): ("chunked", 0), ("length", n), or
    ("none", 0); ("unreadable", 0) when its length cannot be known (then 400, whatever the mode)."""
    if not head.version:
        return "none", 0  # HTTP/0.9 has no body
    codings: list[bytes] = []
    lengths: set[int] = set()
    has_cl = False
    for name, value in head.header_pairs:
        lower = name.lower()
        if lower == b"transfer-encoding":
            found = _codings(value)
            if found is None:
                return "unreadable", 0
            codings += found
        elif lower == b"content-length":
            has_cl = True
            length = _content_length(value)
            if length is None:
                return "unreadable", 0
            lengths.add(length)
    if codings:
        if codings[-1] != b"chunked" or codings.count(b"chunked") > 1:
            if has_cl and len(lengths) == 1:
                return "length", lengths.pop()  # ambiguous already: the connection closes after it
            return "unreadable", 0
        return "chunked", 0
    if len(lengths) > 1:
        return "unreadable", 0
    return ("length", lengths.pop()) if lengths else ("none", 0)


__all__ = ["DEFAULT_MODE", "MODES", "TIERS", "Head", "action", "body_framing", "decide", "judge_head", "read_target"]
