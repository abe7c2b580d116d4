"""Mail flow: a mail-flow rule invoking a function with a message summary.

Verbs shared with the other sources: `build_event`, `validate_event`, `parse_event`,
`validate_response`, `outcome`, `run`; the rule simulator `MailRule`; the message
content API (`MessageStore`, reached by handlers as `context.message_content`, or through
boto3's message flow client, as the provider's templates call it: fnkit/mail/_workmail.py).
"""

from typing import Any

from ._config import MailConfig
from ._content import (
    InvalidContentError,
    MessageContent,
    MessageContentError,
    MessageFrozenError,
    MessageNotFoundError,
    MessageStore,
    default_store,
    mime_problems,
)
from ._decision import Decision
from ._event import (
    EVENT_SHAPE,
    build_event,
    correlation_ids,
    looks_like,
    parse_event,
    validate_event,
)
from ._outcome import MailOutcome, outcome, run
from ._response import RESPONSE_SHAPE, json_schema, validate_response
from ._rule import Attempt, MailRule, MailRun

Config = MailConfig  # every source names its configuration `Config`

__all__ = [
    "EVENT_SHAPE",
    "RESPONSE_SHAPE",
    "Attempt",
    "Config",
    "Decision",
    "InvalidContentError",
    "MailConfig",
    "MailOutcome",
    "MailRule",
    "MailRun",
    "MessageContent",
    "MessageContentError",
    "MessageFrozenError",
    "MessageNotFoundError",
    "MessageStore",
    "build_event",
    "correlation_ids",
    "default_store",
    "json_schema",
    "looks_like",
    "mime_problems",
    "outcome",
    "parse_event",
    "run",
    "serve",
    "validate_event",
    "validate_response",
]


def __getattr__(name: str) -> Any:
    # serve (SMTP front end) pulls in asyncio, mailbox and email: import it only when used
    if name == "serve":
        from ._serve import serve

        return serve
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
