"""What a queue message carries, and the rules over it: the body's digest (Q13), the message attributes (their
keys and values, Q12 and Q14, and their digest) and the sizes the platform refuses (a message, Q16; the event, Q17).
`._event` cites these declarations in the record's shape and runs these checks with its own."""

from __future__ import annotations

import base64
import binascii
import hashlib

try:  # the builtin MD5 is faster than OpenSSL's for short bodies
    from _md5 import md5 as _md5
except ImportError:  # pragma: no cover
    from hashlib import md5 as _md5
import re
import struct
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import msgspec

from .._engine.findings import Finding, Row, caution, problem
from .._engine.shape import STR, F, ListOf, Nullable, Shape, Text
from .._engine.validate import Seen, reads
from ..rules import rule
from ._tables import RECORDS

MAX_MESSAGE_BYTES = 1_048_576  # Q16: 1 MiB, body and message attributes (256 KiB, 262,144, before August 2025)
MAX_PAYLOAD_BYTES = 6_291_456  # Q17: "6 MB", as the platform counts a synchronous invocation's payload


#: Q12 and Q14, declared before the shapes that cite them; implemented by record_keys, check_message_attributes
RECORD_KEYS = rule(
    "Q12",
    "queue",
    "doc",
    "Record keys include md5OfMessageAttributes when there are message attributes; a message "
    "attribute is {stringValue | binaryValue, stringListValues, binaryListValues, dataType}; awsRegion is the region "
    "of the ARN.",
    severity="error or warning",
)
ATTRIBUTE_LIMITS = rule(
    "Q14",
    "queue",
    "doc",
    "At most 10 message attributes; names 1-256 of [A-Za-z0-9_.-] without leading, trailing "
    "or double dots; data type String, Number or Binary with an optional .suffix.",
)


ATTRIBUTE_NAME = Text(
    pattern=r"^(?!\.)(?!.*\.\.)(?!.*\.$)[A-Za-z0-9_.\-]{1,256}$",
    rule=ATTRIBUTE_LIMITS.id,
    message="'{value}' is not a valid attribute name: 1-256 letters, digits, '_', '-' or '.', without leading, "
    "trailing or double dots.",
)
DATA_TYPE = Text(
    pattern=r"^(String|Number|Binary)(\.[^\s]+)?$",
    rule=ATTRIBUTE_LIMITS.id,
    code="enum",
    message="dataType '{value}' is not String, Number or Binary (optionally with a .suffix).",
)

MESSAGE_ATTRIBUTE = Shape(
    "MessageAttribute",
    [
        F(
            "stringValue",
            Nullable(STR),
            required=False,
            doc="The value of a String or Number attribute.",
            rule=RECORD_KEYS.id,
        ),
        F(
            "binaryValue",
            Nullable(STR),
            required=False,
            doc="The base64 value of a Binary attribute.",
            rule=RECORD_KEYS.id,
        ),
        F(
            "stringListValues",
            ListOf(STR),
            required=False,
            doc="Reserved by the platform; an empty list.",
            rule=RECORD_KEYS.id,
        ),
        F(
            "binaryListValues",
            ListOf(STR),
            required=False,
            doc="Reserved by the platform; an empty list.",
            rule=RECORD_KEYS.id,
        ),
        F("dataType", DATA_TYPE, doc="String, Number or Binary, optionally with a .suffix.", rule=ATTRIBUTE_LIMITS.id),
    ],
    rule=RECORD_KEYS.id,
    doc="One message attribute as it appears in the event.",
)

MessageAttribute = MESSAGE_ATTRIBUTE.struct
_NUMBER = re.compile(r"^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def md5_of_body(body: str) -> str:
    """The md5OfBody of a body: MD5 hex of its UTF-8 bytes (Q13)."""
    return _md5(body.encode("utf-8", "surrogatepass")).hexdigest()


@rule(
    "Q13",
    "queue",
    "doc",
    "md5OfBody is the MD5 hex of the UTF-8 body; md5OfMessageAttributes is the MD5 of the "
    "attributes encoded by name order, lengths and transport bytes.",
)
def digest_mismatch(key: str, digest: str, expected: str | None, row: Row, note: str = "") -> list[Finding]:
    """Q13: a record's digest (`key`: md5OfBody, md5OfMessageAttributes) is the MD5 of what it covers, `expected`
    (None: what it covers cannot be hashed, and the walk or another rule says why); `note` ends the sentence. The
    checks that compute the MD5s (`check_md5_of_body`, `check_message_attributes`) ask it; its findings name it."""
    if expected is None or digest == expected:
        return []
    covered = "this body" if key == "md5OfBody" else "these attributes"
    return [
        problem(
            "mismatch",
            f"{key} is '{digest}' but the MD5 of {covered} is '{expected}'.{note}",
            key,
            row=row,
            of=digest_mismatch,
        )
    ]


@reads(RECORDS, "body", "md5_of_body")
def check_md5_of_body(event: Any, seen: Seen) -> Sequence[Finding]:
    """Q13 of the bodies: each record's md5OfBody against the MD5 of its body (`digest_mismatch` decides)."""
    table = seen.tables[RECORDS]
    bodies, digests = table["body"], table["md5_of_body"]
    try:  # (UTF-8 without surrogates first: the usual body, and a cheaper call; a loop: no comprehension's frame)
        for body, digest in zip(bodies, digests):  # noqa: B905 - two columns of one table (strict= costs a keyword)
            if _md5(body.encode()).hexdigest() != digest:
                break
        else:
            return ()
    except UnicodeEncodeError:  # a lone surrogate, hashed as the platform would (below)
        pass
    expected = [*map(md5_of_body, bodies)]
    return [
        found
        for i, want, digest in zip(table["at"], expected, digests, strict=True)
        for found in digest_mismatch("md5OfBody", digest, want, RECORDS.row(i))
    ]


def _attr_value_bytes(dtype: Any, string_value: Any, binary_value: Any) -> bytes | None:
    if not isinstance(dtype, str):
        return None
    if dtype.startswith("Binary"):
        if not isinstance(binary_value, str):
            return None
        try:
            return base64.b64decode(binary_value, validate=True)
        except (binascii.Error, ValueError):
            return None
    return string_value.encode("utf-8", "surrogatepass") if isinstance(string_value, str) else None


def md5_of_message_attributes(attributes: Mapping[str, Any]) -> str | None:
    """The md5OfMessageAttributes of event-shaped attributes (Q13); None when there are none.

    Takes the attributes as dicts (`{"dataType": ..., "stringValue": ...}`) or typed.
    """
    if not attributes:
        return None
    buf = bytearray()
    for name in sorted(attributes):
        attr = attributes[name]
        if isinstance(attr, Mapping):
            dtype, string_value, binary_value = attr["dataType"], attr.get("stringValue"), attr.get("binaryValue")
        else:
            dtype, string_value, binary_value = attr.data_type, attr.string_value, attr.binary_value
        raw_name, raw_type = name.encode("utf-8"), dtype.encode("utf-8")
        value = _attr_value_bytes(dtype, string_value, binary_value)
        if value is None:
            raise ValueError(f"message attribute {name!r} has no value")
        buf += struct.pack(">I", len(raw_name)) + raw_name
        buf += struct.pack(">I", len(raw_type)) + raw_type
        buf += b"\x02" if dtype.startswith("Binary") else b"\x01"
        buf += struct.pack(">I", len(value)) + value
    return hashlib.md5(bytes(buf)).hexdigest()


@ATTRIBUTE_LIMITS
def check_message_attributes(event: Any, seen: Seen) -> Sequence[Finding]:
    """Q12/Q13/Q14: how many attributes, each one's value for its type, and their MD5 (names and types are declared)."""
    table = seen.tables[RECORDS]
    attributes, digests = table["message_attributes"], table["md5_of_message_attributes"]
    if not any(attributes) and digests.count(None) == len(digests):  # (C-level: no digest is held)
        return ()  # no attributes and no digest anywhere: nothing to check
    return [*_message_attribute_issues(table["at"], attributes, digests)]


@RECORD_KEYS
def record_keys(
    row: Row,
    *,
    region: tuple[str, str] | None = None,
    lists: tuple[str, Any] | None = None,
    value: tuple[str, str, Any] | None = None,
    other: tuple[str, str, Any] | None = None,
    digest: tuple[Any, str | None, str] | None = None,
) -> list[Finding]:
    """Q12, for one record (`row`): each keyword asks one of its facts, where the check that reads it asks
    (`check_arn_region` per queue, the message attributes' one loop per attribute, so that the report keeps its
    order). `region`: (awsRegion, the region its ARN names), which must agree; `lists`: (an attribute's name, the
    attribute), whose reserved lists the platform always sends empty; `value`: (name, dataType, the value in the key
    the type names), present, and base64 for a Binary; `other`: (name, dataType, the value in the other key), absent;
    `digest`: (md5OfMessageAttributes, the digest the attributes have or None when there are none, what explains how
    it was computed), there exactly when there are attributes. Its findings name it, whichever check returns them."""
    found: list[Finding] = []
    if region is not None and region[0] != region[1]:
        found.append(
            problem(
                "mismatch",
                f"awsRegion is '{region[0]}' but the queue's ARN is in '{region[1]}'; they must agree.",
                "awsRegion",
                row=row,
                of=record_keys,
            )
        )
    if lists is not None:
        name, attr = lists
        for key, values in (
            ("stringListValues", attr.string_list_values),
            ("binaryListValues", attr.binary_list_values),
        ):
            if values and isinstance(values, (tuple, list)):
                found.append(
                    caution(
                        "reserved",
                        f"{key} of '{name}' holds {len(values)} value(s), but the platform reserves it and always "
                        "sends []. fnkit leaves it out of md5OfMessageAttributes, which it computes from the "
                        f"attribute's {'binaryValue' if key[0] == 'b' else 'stringValue'} alone.",
                        "messageAttributes",
                        name,
                        key,
                        row=row,
                        of=record_keys,
                    )
                )
    if value is not None:
        name, dtype, held = value
        want = "binaryValue" if dtype.startswith("Binary") else "stringValue"
        if not isinstance(held, str):
            found.append(
                problem(
                    "missing",
                    f"A {dtype.split('.')[0]} attribute carries its value in {want}.",
                    "messageAttributes",
                    name,
                    want,
                    row=row,
                    of=record_keys,
                )
            )
        elif want == "binaryValue" and _attr_value_bytes(dtype, None, held) is None:
            found.append(
                problem(
                    "format",
                    "binaryValue is not valid base64.",
                    "messageAttributes",
                    name,
                    want,
                    row=row,
                    of=record_keys,
                )
            )
    if other is not None and other[2] is not None:
        name, dtype, _ = other
        unwanted = "stringValue" if dtype.startswith("Binary") else "binaryValue"
        found.append(
            caution(
                "unexpected",
                f"A {dtype.split('.')[0]} attribute has no {unwanted}.",
                "messageAttributes",
                name,
                unwanted,
                row=row,
                of=record_keys,
            )
        )
    if digest is not None:
        held, expected, treated = digest
        if expected is None and isinstance(held, str):
            found.append(
                caution(
                    "unexpected",
                    "md5OfMessageAttributes appears only when the message has attributes.",
                    "md5OfMessageAttributes",
                    row=row,
                    of=record_keys,
                )
            )
        elif expected is not None and held is None:
            found.append(
                problem(
                    "missing",
                    "md5OfMessageAttributes is missing (or null), but the message has attributes: the platform "
                    f"always sends their digest with them (expected '{expected}').{treated}",
                    "md5OfMessageAttributes",
                    row=row,
                    of=record_keys,
                )
            )
    return found


def _message_attribute_issues(
    positions: Any, attributes: tuple[Any, ...], digests: tuple[Any, ...]
) -> Iterator[Finding]:
    """Q14 (this check's rule), and what the same reading finds of Q12 (what `record_keys` says) and of the
    attributes' digest (Q13, what `digest_mismatch` says), each at its keys below its record."""
    for i, attrs, digest in zip(positions, attributes, digests, strict=True):
        if not attrs and digest is None:
            continue  # no attributes and no digest: nothing to check
        if type(attrs) is not dict:
            continue
        row = RECORDS.row(i)
        if len(attrs) > 10:
            yield problem(
                "limit",
                f"A message has at most 10 message attributes; this one has {len(attrs)}.",
                "messageAttributes",
                row=row,
            )
        complete = True
        listed: list[str] = []  # the reserved lists that hold values (Q12), named when the digest is explained
        for name, attr in attrs.items():
            dtype = attr.data_type if type(attr) is MessageAttribute else None
            if type(attr) is MessageAttribute and (attr.string_list_values or attr.binary_list_values):
                for found in record_keys(row, lists=(name, attr)):
                    listed.append(f"{name}.{found.at[-1]}")
                    yield found
            if type(dtype) is not str or DATA_TYPE.broken(dtype):
                complete = False  # the walk reported it
                continue
            is_binary = dtype.startswith("Binary")
            value, other_value = (
                (attr.binary_value, attr.string_value) if is_binary else (attr.string_value, attr.binary_value)
            )
            wrong = record_keys(row, value=(name, dtype, value)) if is_binary or not isinstance(value, str) else ()
            if wrong:
                complete = False
                yield from wrong
            elif dtype.startswith("Number") and not _NUMBER.match(value):
                yield problem(
                    "format",
                    f"'{value}' is not a number, but the dataType is Number.",
                    "messageAttributes",
                    name,
                    "stringValue",
                    row=row,
                )
            if other_value is not None:
                yield from record_keys(row, other=(name, dtype, other_value))
        if not attrs:
            yield from record_keys(row, digest=(digest, None, ""))
            continue
        if not complete or not all(isinstance(name, str) for name in attrs):
            continue
        expected = md5_of_message_attributes(attrs)
        treated = (
            (
                f" fnkit computed it without the reserved lists ({', '.join(listed)}): the digest covers an "
                "attribute's stringValue or binaryValue, and the lists are always empty on the real platform."
            )
            if listed
            else ""
        )
        if digest is None:
            yield from record_keys(row, digest=(digest, expected, treated))
        elif isinstance(digest, str):
            yield from digest_mismatch("md5OfMessageAttributes", digest, expected, row, treated)


# --- limits: what the platform refuses to carry ---------------------------------------------


def _attribute_value_size(attr: Any) -> int:
    """The bytes the queue counts of one message attribute's value: a Binary's decoded bytes, else UTF-8 text."""
    if type(attr) is not MessageAttribute:
        return 0
    dtype, string_value, binary_value = attr.data_type, attr.string_value, attr.binary_value
    value = _attr_value_bytes(dtype, string_value, binary_value)
    if value is not None:
        return len(value)
    raw = binary_value if type(binary_value) is str else string_value  # unreadable: its text, as a bound
    return len(raw.encode("utf-8", "surrogatepass")) if type(raw) is str else 0


def _attributes_size(attrs: Any) -> int:
    """The bytes the queue counts of a message's attributes: each name, data type and value (Q16)."""
    if type(attrs) is not dict or not attrs:
        return 0
    total = 0
    for name, attr in attrs.items():
        if type(name) is str:
            total += len(name.encode("utf-8", "surrogatepass"))
        if type(attr) is MessageAttribute and type(attr.data_type) is str:
            total += len(attr.data_type.encode("utf-8", "surrogatepass"))
        total += _attribute_value_size(attr)
    return total


def _attributes_bound(attrs: Any) -> int:
    """An upper bound of `_attributes_size` from lengths alone (UTF-8 takes at most 4 bytes a character)."""
    if type(attrs) is not dict or not attrs:
        return 0
    total = 0
    for name, attr in attrs.items():
        total += 4 * len(name) if type(name) is str else 0
        if type(attr) is MessageAttribute:
            for text in (attr.data_type, attr.string_value, attr.binary_value):
                total += 4 * len(text) if type(text) is str else 0
    return total


def message_size(body: str, message_attributes: Mapping[str, Any] | None = None) -> int:
    """The size the queue counts of a message (Q16): UTF-8 bytes of the body, plus each attribute's name, data type
    and value (a Binary value's decoded bytes). Attributes as the event holds them or as `build_event` takes them."""
    size = len(body.encode("utf-8", "surrogatepass"))
    if message_attributes:
        typed = {}
        for name, attr in normalize_message_attributes(message_attributes).items():
            typed[name] = MESSAGE_ATTRIBUTE.compiled(attr)  # every type and declared pattern held, else:
            if typed[name] is None:
                issue = MESSAGE_ATTRIBUTE.walk(attr)[0]
                raise ValueError(f"message attribute {name!r}: {issue.message} ({issue.rule})")
        size += _attributes_size(typed)
    return size


_SIZES = "sizes bound"  # the records' table's key for `_sizes_bound`, worked out once per call


def _sizes_bound(table: dict[str, Any]) -> tuple[int, int]:
    """(the characters of the bodies together, the most bytes their message attributes can take) of the records'
    table: what the two size rules (Q16, Q17) bound a batch by, worked out once per call (kept in the table: each rule
    asks `table.get(_SIZES)` first)."""
    attributes, bodies = table["message_attributes"], table["body"]
    held = sum([_attributes_bound(a) for a in attributes if a]) if any(attributes) else 0
    try:  # (one body, the usual event a replay hands over: no map to make)
        characters = len(bodies[0]) if len(bodies) == 1 else sum(map(len, bodies))
    except TypeError:  # a body without a length (the walk named its type) counts nothing
        characters = sum([len(b) for b in bodies if type(b) is str])
    found = table[_SIZES] = (characters, held)
    return found


@rule(
    "Q16",
    "queue",
    "doc",
    "A message, its body and message attributes (names, data types, values) together, is at most 1 MiB (1,048,576 "
    "bytes; 256 KiB before August 2025): the queue refuses to take a larger one, so a record over it never reaches "
    "a function (a warning; QueueSim.send refuses it).",
    severity="warning",
)
@reads(RECORDS, "body")
def check_message_size(event: Any, seen: Seen) -> Sequence[Finding]:
    """Q16: no record is larger than the queue accepts a message (exact sizes only where lengths alone cannot tell)."""
    table = seen.tables[RECORDS]
    characters, attribute_bytes = table.get(_SIZES) or _sizes_bound(table)  # (worked out once per call)
    # UTF-8 takes at most 4 bytes a character, and no body is longer than the bodies together (a sum: cheaper than max)
    if 4 * characters + attribute_bytes <= MAX_MESSAGE_BYTES:
        return ()  # the bodies and every attribute together could not reach the limit: no record can
    bodies, attributes = table["body"], table["message_attributes"]
    out = []
    for i, body, attrs in zip(table["at"], bodies, attributes, strict=True):
        if 4 * len(body) + _attributes_bound(attrs) <= MAX_MESSAGE_BYTES:
            continue
        body_bytes = len(body.encode("utf-8", "surrogatepass"))
        size = body_bytes + _attributes_size(attrs)
        if size > MAX_MESSAGE_BYTES:
            out.append(
                caution(
                    "limit",
                    f"This message is {size:,} bytes (body {body_bytes:,}, message attributes {size - body_bytes:,}); "
                    f"a queue takes messages of at most {MAX_MESSAGE_BYTES:,} bytes (1 MiB) and refuses larger ones, "
                    "so the platform never delivers this record.",
                    "body",
                    row=RECORDS.row(i),
                )
            )
    return out


# What a record's fields other than its body and message attributes take in the event's JSON, at most: ids, the
# receipt handle, digests, ARN, region and attributes are a few hundred bytes on the platform.
_RECORD_ALLOWANCE = 8192


@rule(
    "Q17",
    "queue",
    "doc",
    "A synchronous invocation's payload (the event, as JSON) is at most 6 MB (6,291,456 bytes): the poller delivers "
    "fewer records rather than build a larger batch, and the platform refuses a larger invocation (a warning).",
    severity="warning",
)
def check_payload_size(event: Any, seen: Seen) -> Sequence[Finding]:
    """Q17: the event's JSON fits one invocation (measured only when the lengths alone cannot tell)."""
    table = seen.tables[RECORDS]
    bodies = table["body"]
    characters, attribute_bytes = table.get(_SIZES) or _sizes_bound(table)  # (worked out once per call)
    # JSON takes at most 6 bytes a character (a control character as \u00XX)
    if 6 * characters + len(bodies) * _RECORD_ALLOWANCE + 2 * attribute_bytes <= MAX_PAYLOAD_BYTES:
        return ()
    try:
        size, exact = len(msgspec.json.encode(event)), True
    except (TypeError, ValueError, UnicodeEncodeError, OverflowError):  # a lenient value JSON cannot carry as it is
        size, exact = sum(len(b.encode("utf-8", "surrogatepass")) for b in bodies if type(b) is str), False
    if size <= MAX_PAYLOAD_BYTES:
        return ()
    return [
        caution(
            "limit",
            f"The event is {'' if exact else 'at least '}{size:,} bytes of JSON ({len(bodies)} record(s)); a "
            f"synchronous invocation carries at most {MAX_PAYLOAD_BYTES:,} bytes (6 MB), so the poller never builds "
            "this batch: it delivers fewer records per invocation instead.",
            "Records",
        )
    ]


def normalize_message_attributes(attrs: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Message attributes in the event's own shape; plain str, int/float and bytes values are accepted too."""
    out: dict[str, dict[str, Any]] = {}
    for name, value in (attrs or {}).items():
        if isinstance(value, Mapping):
            dtype = value.get("dataType") or value.get("DataType") or "String"
            string_value = value.get("stringValue", value.get("StringValue"))
            binary_value = value.get("binaryValue", value.get("BinaryValue"))
        elif isinstance(value, (bytes, bytearray)):
            dtype, string_value, binary_value = "Binary", None, bytes(value)
        elif isinstance(value, bool):
            dtype, string_value, binary_value = "String", str(value).lower(), None
        elif isinstance(value, (int, float)):
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError(
                    f"message attribute {name!r}: a Number is finite, not {value!r} ({ATTRIBUTE_LIMITS.id})"
                )
            dtype, string_value, binary_value = "Number", repr(value), None
        else:
            dtype, string_value, binary_value = "String", str(value), None
        entry: dict[str, Any] = {}
        if dtype.startswith("Binary"):
            if isinstance(binary_value, (bytes, bytearray)):
                binary_value = base64.b64encode(bytes(binary_value)).decode("ascii")
            entry["binaryValue"] = binary_value
        else:
            entry["stringValue"] = string_value
        entry["stringListValues"] = []
        entry["binaryListValues"] = []
        entry["dataType"] = dtype
        out[name] = entry
    return out
