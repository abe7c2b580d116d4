"""The load balancer's target group ARN: its form (AS1, declared as `ARN_TEXT` on the event's shape), the
dialect its partition tells, and its parts as the platform writes them (A15, read by `check_target_group`)."""

from __future__ import annotations

import re
from typing import Any

from .._engine.memo import Readings
from .._engine.shape import Text

# arn:<partition>:elasticloadbalancing:<region>:<account>:targetgroup/<name>/<id>: the only form the spec
# gives. Every part present and no whitespace, else the event breaks the contract (AS1); anything unusual
# beyond that is a warning (A15, check_target_group).
TARGET_GROUP_ARN_FORM = r"^arn:[^:\s]+:elasticloadbalancing:[^:\s]+:[^:\s]+:targetgroup/[^/\s]+/[^/\s]+$"
_ARN_EXAMPLE = (
    "arn:provider:elasticloadbalancing:<region>:<account>:targetgroup/<name>/<id> (arn:aws:… on the real platform)"
)
_ARN_SPACE_NAMES = {" ": "a space", "\t": "a tab", "\n": "a line break", "\r": "a carriage return"}


def _arn_sentence(arn: str) -> str:
    """What is wrong with a target group ARN that breaks the spec's form, in the words of what the file shows."""
    space = re.search(r"\s", arn)
    if space:
        what = _ARN_SPACE_NAMES.get(space.group(), f"the whitespace character {space.group()!r}")
        return (
            f"The target group ARN '{arn}' holds {what} at position {space.start()}; an ARN has none: {_ARN_EXAMPLE}."
        )
    parts = arn.split(":", 5)
    if parts[0] != "arn":
        return f"'{arn}' is not a target group ARN; expected {_ARN_EXAMPLE}."
    if len(parts) < 6:
        return (
            f"The target group ARN '{arn}' has {len(parts)} colon-separated part(s), not 6 (arn, partition, "
            f"service, region, account, targetgroup/<name>/<id>); expected {_ARN_EXAMPLE}."
        )
    names = ("arn", "partition", "service", "region", "account")
    empty = [name for name, part in zip(names, parts, strict=False) if not part]  # parts: 6 or more
    if empty:
        return f"The target group ARN '{arn}' has no {' and no '.join(empty)}; expected {_ARN_EXAMPLE}."
    if parts[2] != "elasticloadbalancing":
        return (
            f"The ARN '{arn}' names the service '{parts[2]}', not elasticloadbalancing: it is not a target "
            f"group ARN; expected {_ARN_EXAMPLE}."
        )
    resource = parts[5].split("/")
    if resource[0] != "targetgroup":
        return f"The ARN '{arn}' names a '{resource[0]}' resource, not a targetgroup; expected {_ARN_EXAMPLE}."
    if len(resource) != 3 or not all(resource):
        return (
            f"The target group ARN '{arn}' does not end in targetgroup/<name>/<id> (its resource part is "
            f"'{parts[5]}'); expected {_ARN_EXAMPLE}."
        )
    return f"'{arn}' is not a target group ARN; expected {_ARN_EXAMPLE}."


# (an ARN that breaks the form cites the rule of the shape that holds it: AS1)
ARN_TEXT = Text(
    pattern=TARGET_GROUP_ARN_FORM,
    message=_arn_sentence,
    doc="arn:<partition>:elasticloadbalancing:<region>:<account>:targetgroup/<name>/<id>",
)


def _partition_dialect(arn: str) -> str | None:
    """'provider' or 'aws' from an ARN's partition (any aws-* partition is the real platform's); None otherwise."""
    partition = arn.split(":", 2)[1] if arn.count(":") >= 2 else ""
    if partition == "provider":
        return "provider"
    return "aws" if partition == "aws" or partition.startswith("aws-") else None


def arn_dialect(arn: Any) -> str | None:
    """'provider' or 'aws' for a target group ARN of the spec's form, read from its partition; None otherwise."""
    if type(arn) is not str or ARN_TEXT.broken(arn):
        return None
    return _partition_dialect(arn)


# the parts of a target group ARN as the platform writes them (ELB's naming rules; ids as seen in real ARNs), A15
_USUAL_ARN_PARTS = (
    (
        "partition",
        r"provider|aws|aws-cn|aws-us-gov|aws-iso|aws-iso-[a-z]|aws-eusc",
        "a known partition (provider; aws, aws-cn, aws-us-gov, ... on the real platform)",
    ),
    ("region", r"[a-z]{2}(?:-[a-z]+)+-[0-9]+", "a region name such as us-east-1"),
    ("account", r"[0-9]{12}", "a 12-digit account id"),
    (
        "name",
        r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?",
        "a name of 1-32 letters, digits and hyphens, not starting or ending with a hyphen",
    ),
    ("id", r"[0-9a-f]{16}", "an id of 16 hexadecimal digits"),
)
# the same parts, in their places: one match tells an ARN whose every part is usual
_USUAL_ARN = re.compile(
    "arn:({}):elasticloadbalancing:({}):({}):targetgroup/({})/({})".format(*(p for _, p, _ in _USUAL_ARN_PARTS))
).fullmatch


def unusual_arn_parts(arn: str) -> list[str]:
    """The parts of a target group ARN of the spec's form that the platform would not write, each said in words."""
    if _USUAL_ARN(arn):
        return []
    head, _, resource = arn.partition(":targetgroup/")
    _, partition, _, region, account = head.split(":")
    name, _, ident = resource.partition("/")
    values = (partition, region, account, name, ident)
    return [
        f"its {part} '{value}' is not {usual}"
        for (part, pattern, usual), value in zip(_USUAL_ARN_PARTS, values, strict=True)
        if not re.fullmatch(pattern, value)
    ]


def target_group_reading(arn: str) -> tuple[str | None, tuple[str, ...]] | None:
    """(the dialect the partition tells, AS1; the unusual parts, A15) of a target group ARN; None when the ARN
    breaks the spec's form (its declared pattern says what is wrong, AS1)."""
    if ARN_TEXT.broken(arn):
        return None
    return _partition_dialect(arn), tuple(unusual_arn_parts(arn))


# A function's events name one target group: its ARN is read once (two regular expressions, about 0.1 x json.loads
# of a 15-header event), then found here (a bounded memo of the reading, not a second statement of it)
ARN_READINGS: Readings[str, tuple[str | None, tuple[str, ...]]] = Readings()
