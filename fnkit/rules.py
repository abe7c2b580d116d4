"""The rules catalogue: every rule fnkit applies, with its source and evidence.

Ids `Q…`, `M…`, `A…` are the rules of PLATFORM-RULES.md; ids with an `S` (`QS1`, `MS2`,
`AS3`) are facts of the contract spec itself; `G…` are general rules of the kit
(input must be JSON, unknown fields, spellings); `H…` are about invoking a handler.
Every `Issue.rule` and every outcome's `rule` is an id of this catalogue.
"""

from __future__ import annotations

from dataclasses import dataclass

EVIDENCE = ("contract", "doc", "observed", "inferred")


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: `id`, `source` (queue, mail, alb, any), `summary`, `evidence`."""

    id: str
    source: str
    summary: str
    evidence: str
    origin: str = "platform-rules"  # "spec", "platform-rules" or "kit"

    @property
    def inferred(self) -> bool:
        """True when nobody states the rule: it is fnkit's most plausible reading."""
        return self.evidence == "inferred"


def _r(id: str, source: str, evidence: str, summary: str, origin: str = "platform-rules") -> Rule:
    return Rule(id, source, summary, evidence, origin)


_CATALOGUE: tuple[Rule, ...] = (
    # general
    _r("G0", "any", "inferred", "An event or response given as text or bytes must be UTF-8 JSON.", "kit"),
    _r("G1", "any", "inferred", "A field the contract does not know is ignored by the platform; fnkit warns, since it is often a misspelling.", "kit"),
    _r("G2", "any", "inferred", "Each field has one spelling per dialect ('provider' as in the spec, 'aws' as on the real platform); an event should not mix them.", "kit"),
    _r("G3", "any", "inferred", "The source of an event is recognised from its shape: Records (queue), envelope and summaryVersion (mail), httpMethod and requestContext.elb (load balancer).", "kit"),
    # handler invocation
    _r("H1", "any", "contract", "The handler is called as handler(event, context); what it returns is serialised to JSON.", "kit"),
    _r("H2", "any", "inferred", "A returned value that JSON cannot encode (a set, bytes, NaN) is an invalid JSON response.", "kit"),
    _r("H3", "any", "doc", "A handler that raises is an invocation error; its message and traceback are captured.", "kit"),
    _r("H4", "any", "doc", "A handler still running at its timeout is a timed-out invocation; the caller is never kept waiting.", "kit"),
    # queue: the spec
    _r("QS1", "queue", "contract", "The queue event is an object whose `Records` is an array of queue records (default batch of up to 10).", "spec"),
    _r("QS2", "queue", "contract", "A record has messageId, receiptHandle, body, attributes, messageAttributes, md5OfBody, eventSource, eventSourceARN and awsRegion, each of its type.", "spec"),
    _r("QS3", "queue", "contract", "Record attributes are strings; ApproximateReceiveCount, SentTimestamp, SenderId and ApproximateFirstReceiveTimestamp are present; timestamps are epoch milliseconds.", "spec"),
    _r("QS4", "queue", "contract", "Each record's eventSource is `provider:queue` (`aws:sqs` on the real platform).", "spec"),
    _r("QS5", "queue", "contract", "SequenceNumber, MessageGroupId and MessageDeduplicationId appear in records of ordered (FIFO) queues and are absent for standard queues.", "spec"),
    _r("QS6", "queue", "contract", "The response is an object with `batchItemFailures`, a list of objects with `itemIdentifier` (a messageId of the batch), or empty/null.", "spec"),
    _r("QS7", "queue", "contract", "Message ids are unique: one batch never holds the same messageId twice.", "spec"),
    # queue: platform rules
    _r("Q1", "queue", "doc", "Batch size 1-10,000 (standard) or 1-10 (FIFO), default 10; window 0-300 s, needed (>= 1 s) above 10; no window for FIFO; at most 6 MB per invocation payload."),
    _r("Q2", "queue", "observed", "A configuration whose queue visibility timeout is below the function timeout is refused."),
    _r("Q3", "queue", "doc", "Visibility timeout 30 s by default (0-43,200); maxReceiveCount 10 by default with a dead-letter queue; FIFO queues have FIFO dead-letter queues."),
    _r("Q4", "queue", "doc", "Every receive adds 1 to ApproximateReceiveCount (\"1\" on first delivery); a received message stays hidden for the visibility timeout."),
    _r("Q5", "queue", "doc", "A message whose next receive would exceed maxReceiveCount moves to the dead-letter queue instead."),
    _r("Q6", "queue", "doc", "The function raises, times out or crashes: nothing is deleted and the whole batch returns after the visibility timeout."),
    _r("Q7", "queue", "inferred", "Reporting (ReportBatchItemFailures) off and the function succeeded: the response is ignored and the whole batch is deleted; returned failures are lost."),
    _r("Q8", "queue", "contract", "Reporting on: null, {}, null or [] batchItemFailures is complete success; invalid JSON or an itemIdentifier that is \"\", null, under another key or not in the batch is complete failure; otherwise the listed messages fail."),
    _r("Q8a", "queue", "inferred", "Also complete failure: a top level that is not an object or null, batchItemFailures not a list, an entry not an object, an itemIdentifier not a string."),
    _r("Q8b", "queue", "inferred", "A misspelled top-level key (e.g. BatchItemFailures) reads as no failures: complete success, with a loud warning."),
    _r("Q8c", "queue", "inferred", "An itemIdentifier listed twice counts once."),
    _r("Q9", "queue", "doc", "FIFO: at most one batch in flight per message group; order kept within a group; a batch may mix groups."),
    _r("Q10", "queue", "inferred", "FIFO partial response: a listed message of a group followed by an unlisted message of the same group breaks the group's order (the unlisted one is deleted); report every failed and unprocessed message instead."),
    _r("Q11", "queue", "contract", "FIFO deduplication: a 5-minute window over the whole queue; a duplicate send is accepted but not delivered; content-based id = SHA-256 hex of the body."),
    _r("Q12", "queue", "doc", "Record keys include md5OfMessageAttributes when there are message attributes; a message attribute is {stringValue | binaryValue, stringListValues, binaryListValues, dataType}; awsRegion is the region of the ARN."),
    _r("Q13", "queue", "doc", "md5OfBody is the MD5 hex of the UTF-8 body; md5OfMessageAttributes is the MD5 of the attributes encoded by name order, lengths and transport bytes."),
    _r("Q14", "queue", "doc", "At most 10 message attributes; names 1-256 of [A-Za-z0-9_.-] without leading, trailing or double dots; data type String, Number or Binary with an optional .suffix."),
    # mail: the spec
    _r("MS1", "mail", "contract", "The mail event has summaryVersion, envelope.mailFrom.address, envelope.recipients[].address, sender.address, subject, messageId, invocationId, flowDirection and truncated, each of its type.", "spec"),
    _r("MS2", "mail", "contract", "flowDirection is INBOUND or OUTBOUND.", "spec"),
    _r("MS3", "mail", "contract", "Addresses are email addresses.", "spec"),
    _r("MS4", "mail", "contract", "Outbound rules handle up to 500 recipients.", "spec"),
    # mail: platform rules
    _r("M1", "mail", "doc", "Event: summaryVersion is a date-style string; subject keeps its first 256 characters; over 128 KB, recipients are cut from the end and truncated is true; one invocationId per message and rule."),
    _r("M2", "mail", "doc", "A rule is synchronous or asynchronous, has a fallback action, and a rule timeout of 0-240 minutes."),
    _r("M3", "mail", "contract", "A synchronous attempt fails when the function raises, does not answer within 15 s, or returns an invalid response; it is retried with backoff until the rule timeout, then the fallback applies to all recipients."),
    _r("M4", "mail", "contract", "A valid response has at least one action; each action.type is BOUNCE, DROP or DEFAULT; bounceMessage only for BOUNCE; recipients a list of strings; allRecipients a boolean; at most 256 KB."),
    _r("M5", "mail", "doc", "Explicit recipients first; allRecipients covers the rest; a recipient covered by nothing gets the fallback; named recipients absent from the envelope are added."),
    _r("M6", "mail", "contract", "Only 10 unique actions count; what only later actions cover gets the fallback action. Outbound responses over 500 recipients are invalid (inferred)."),
    _r("M7", "mail", "inferred", "One recipient in two explicit actions is a conflict; by default the most restrictive wins (DROP > BOUNCE > MOVE_TO_JUNK > DEFAULT > BYPASS_SPAM_CHECK)."),
    _r("M8", "mail", "contract", "An asynchronous rule does not affect delivery; its response is ignored."),
    _r("M9", "mail", "doc", "The raw message of a message in flight can be read and replaced; a replacement counts only during a synchronous invocation and must be valid MIME."),
    # load balancer: the spec
    _r("AS1", "alb", "contract", "The request event has requestContext.elb.targetGroupArn, httpMethod (DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT), path, isBase64Encoded, and optionally query parameters, headers and body.", "spec"),
    _r("AS2", "alb", "contract", "The event carries the single-value forms (queryStringParameters, headers) or, with multi-value headers on, the multi-value forms.", "spec"),
    _r("AS3", "alb", "contract", "The trace header (x-provider-trace-id) holds the correlation id.", "spec"),
    # load balancer: platform rules
    _r("A1", "alb", "contract", "Before invoking: a WebSocket upgrade gets 400; a body over 1 MB gets 413; the function is not invoked."),
    _r("A2", "alb", "doc", "Event: lower-case header names; trace and x-forwarded-* headers added; query keys and values as in the raw URL; queryStringParameters {} without a query; a GET has body \"\"."),
    _r("A3", "alb", "doc", "Multi-value headers off: a repeated header or query key keeps its last value; on: multiValueHeaders and multiValueQueryStringParameters with all values, never both forms."),
    _r("A4", "alb", "doc", "Request body: with content-encoding, base64; text/*, application/json, application/javascript, application/xml as text; anything else base64; empty body \"\"."),
    _r("A5", "alb", "observed", "The function raises, is throttled or times out: 502; a response over 1 MB: 502."),
    _r("A6", "alb", "observed", "Invalid response (not an object, statusCode missing or not an integer, bad isBase64Encoded, body or statusDescription not a string, header field null, header values not strings, bad base64): 502."),
    _r("A7", "alb", "contract", "Multi-value off: only headers is read; on: only multiValueHeaders; cookies as a list under one key; hop-by-hop headers dropped, Content-Length recomputed."),
    _r("A8", "alb", "doc", "isBase64Encoded true: the body is decoded before it reaches the client."),
    _r("A9", "alb", "inferred", "statusDescription is optional; when absent the standard reason phrase is used."),
    _r("A10", "alb", "inferred", "HEAD reaches the function as httpMethod HEAD; the client gets the headers and no body."),
    _r("A11", "alb", "doc", "Health check event: GET /, queryStringParameters {}, headers {user-agent: ELB-HealthChecker/2.0}, body \"\", isBase64Encoded false."),
    _r("A12", "alb", "inferred", "statusCode outside 100-599 is an invalid response (502)."),
    # load balancer: appended by the alb package
    _r("AS4", "alb", "contract", "A valid response object (statusCode, statusDescription, isBase64Encoded, headers or multiValueHeaders, body) becomes the HTTP response the client receives.", "spec"),
    _r("A13", "alb", "inferred", "What HTTP cannot carry is not sent: a header name that is not a token, a header value with a line break or control character, or a 1xx statusCode makes the response invalid (502); a 204 or 304 response goes without a body."),
    _r("A14", "alb", "inferred", "A request whose method is not DELETE, GET, HEAD, OPTIONS, PATCH, POST or PUT is answered 405 by the load balancer; the function is not invoked."),
    # mail: appended by the mail package
    _r("MS5", "mail", "inferred", "envelope.recipients names at least one recipient (SMTP needs one RCPT TO) and each address once; a repeated address is delivered once.", "kit"),
)

_BY_ID = {r.id: r for r in _CATALOGUE}


def catalogue(source: str | None = None) -> list[Rule]:
    """Every rule, in catalogue order (optionally only one source's, plus the general ones)."""
    if source is None:
        return list(_CATALOGUE)
    return [r for r in _CATALOGUE if r.source in (source, "any")]


def get(rule_id: str) -> Rule:
    """The rule with this id; KeyError naming the id when there is none."""
    try:
        return _BY_ID[rule_id]
    except KeyError:
        raise KeyError(f"no rule {rule_id!r} in the fnkit catalogue") from None


def ids() -> frozenset[str]:
    """Every rule id."""
    return frozenset(_BY_ID)


def table(source: str | None = None):
    """The catalogue as a pandas DataFrame (id, source, evidence, origin, summary)."""
    import pandas as pd

    return pd.DataFrame(
        [{"id": r.id, "source": r.source, "evidence": r.evidence, "origin": r.origin, "summary": r.summary} for r in catalogue(source)],
        columns=["id", "source", "evidence", "origin", "summary"],
    )
