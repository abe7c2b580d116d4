"""The replay frame's columns: each one's dtype and its one meaning (`fnkit.columns()` shows the table).

`COLUMNS` is the schema `replay` holds its frames to (`typed`, called once on the whole
frame, and on every partition of a lazy Dask replay): whole numbers are nullable integers
(`Int16`, `Int32`), yes/no columns are `boolean` (NA: nothing to say), times are
`datetime64[ns, UTC]`, and text is categorical (rules, causes, sources, methods, files, items,
paths, recipients, reasons, warnings), which holds each distinct string once: the frame repeats no
string on its rows (`handler`, the `label=`, too, when the label is hashable). A categorical keeps its
`.str` methods; to look for a word, `frame["warnings"].str.contains("ignored", na=False)` (NA: no),
since `fillna("")` needs "" among the categories. Each column has one meaning whatever the sources
mixed: `reason` is a sentence on every row (a request's reason phrase is `reason_phrase`), `status`
is the HTTP status (a mail response's fate is `mail_status`). A column whose values do not fit its
dtype keeps them as they are, in an object column. The frame's columns come in the schema's order.
pandas is imported only when a frame is typed: this module is data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Column:
    """One column of a replay frame: its name, dtype, the sources whose rows have it, and what it means."""

    name: str
    dtype: str
    sources: str
    meaning: str


COLUMNS: tuple[Column, ...] = (
    Column("handler", "category", "all", "The `label=` given to replay (only when one was given)."),
    Column("event", "int64", "all", "The event's number in the input, from 0 (an event's rows share it)."),
    Column("source", "category", "all", "queue, mail or alb; missing for an input that is no event of any source."),
    Column("item", "category", "all", "What the row is about: a message id, a recipient, or 'METHOD /path'."),
    Column(
        "result",
        "category",
        "all",
        "What happened, in a word: a record's action (delete, retry), a recipient's action, the HTTP "
        "status the client got (as text), or 'unreadable' / 'invalid event' / 'not sent'.",
    ),
    Column("rule", "category", "all", "The id of the rule that decided the row (fnkit.rules explains it)."),
    Column(
        "cause",
        "category",
        "alb",
        "What made the rule apply, in a few words: for A5 'raised', 'timed out', 'throttled' or 'too large'; "
        "for A6 the response field and what was wrong with it ('statusCode: not an integer').",
    ),
    Column("inferred", "boolean", "all", "True when the deciding rule is fnkit's inference, not a documented fact."),
    Column(
        "reason",
        "category",
        "all",
        "Why, in one sentence, for every source (a request's: its status, the rule and what decided it).",
    ),
    Column(
        "file",
        "category",
        "alb log, queue dump, unreadable lines",
        "The file the row's line came from (access log, message dump).",
    ),
    Column(
        "line",
        "Int32",
        "alb log, queue dump, unreadable lines",
        "The line number in `file` (a message: the line its object starts on).",
    ),
    Column("index", "Int32", "queue", "The record's position in its batch."),
    Column("kind", "category", "queue", "What became of the batch: success, partial or failure."),
    Column("recipient", "category", "mail", "The recipient."),
    Column("action", "category", "queue, mail", "What the platform does with the record or recipient."),
    Column("via", "category", "mail", "How the action was decided."),
    Column("bounce_message", "category", "mail", "The bounce message, when the action is a bounce."),
    Column(
        "mail_status",
        "category",
        "mail",
        "What became of the mail handler's response: applied, fallback (the fallback action was taken) or "
        "ignored (asynchronous mode).",
    ),
    Column("method", "category", "alb", "The request's HTTP method."),
    Column("path", "category", "alb", "The request's path."),
    Column("status", "Int16", "alb", "The HTTP status the client would get; NA on every other row."),
    Column("reason_phrase", "category", "alb", "The status line's reason phrase (Bad Gateway)."),
    Column("invoked", "boolean", "alb", "False when the load balancer answered without invoking the function."),
    Column("body_bytes", "Int32", "alb", "Bytes in the response body the client gets."),
    Column("duration_ms", "float64", "alb", "How long the handler ran, in milliseconds (NaN: not invoked)."),
    Column("warnings", "category", "queue, alb", "Warnings on the response, joined by '; ' (empty: none)."),
    Column("logged_time", "datetime64[ns, UTC]", "alb log", "When the load balancer logged the request."),
    Column("logged_status", "Int16", "alb log", "The status the client got, as logged (elb_status_code)."),
    Column("logged_target_status", "Int16", "alb log", "The status the function's answer carried, as logged."),
    Column("logged_error_reason", "category", "alb log", "The logged error_reason (LambdaUnhandled, ...)."),
    Column("logged_target_ms", "float64", "alb log", "The logged target_processing_time in ms (NaN: none)."),
    Column(
        "actions_executed",
        "category",
        "alb log",
        "The logged actions (forward, waf,forward, ...); requests never forwarded are not replayed.",
    ),
    Column("body_known", "boolean", "alb log", "False: the log keeps no request body; the event's body is empty."),
    Column(
        "depends_on",
        "category",
        "alb log",
        "What the log does not hold that the outcome depends on: 'body' for a request that carried one.",
    ),
    Column("replayable", "boolean", "alb log", "False when the outcome depends on what the log does not hold."),
    Column(
        "agrees",
        "boolean",
        "alb log",
        "Whether the replayed status is the logged one; NA when nothing can be compared or the row is not replayable.",
    ),
    Column("receive_count", "Int16", "queue dump", "The dump's ApproximateReceiveCount for the message."),
    Column("message_bytes", "Int32", "queue dump", "Bytes in the message's body (UTF-8)."),
)
_BY_NAME = {c.name: c for c in COLUMNS}
ORDER = {c.name: i for i, c in enumerate(COLUMNS)}  # a frame's columns in this order, others after


#: the sources whose rows `replay_row` changes (a queue's rows have one meaning per column as they come)
RENAMING_SOURCES = frozenset(("alb", "mail"))


def replay_row(row: dict[str, Any]) -> dict[str, Any]:
    """An outcome's row as the replay frame holds it, one meaning per column: a request's `reason` is its
    sentence (the outcome's `explanation`) and its phrase `reason_phrase`; a mail row's status is `mail_status`."""
    source = row.get("source")
    if source == "alb" and "explanation" in row:
        row["reason_phrase"] = row["reason"]
        row["reason"] = row.pop("explanation")
    elif source == "mail" and "status" in row:
        row["mail_status"] = row.pop("status")
    return row


def ordered(names: Any) -> list[str]:
    """Column names in the schema's order; names outside the schema after, in their first order."""
    seen = list(dict.fromkeys(names))
    return sorted((n for n in seen if n in ORDER), key=ORDER.__getitem__) + [n for n in seen if n not in ORDER]


#: what an importer's entries add to their source's rows (the kinds of row in the `sources` field)
IMPORTED = {"alb": "alb log", "queue": "queue dump"}


def kinds_of_rows(kinds: set[str]) -> list[str]:
    """The columns, in order, of a frame whose rows are of these kinds ("all", a source, "alb log", "queue dump",
    "unreadable lines"): what a lazy frame declares before any row is made."""
    return [c.name for c in COLUMNS if c.name != "handler" and kinds & set(c.sources.split(", "))]


def empty_frame(names: list[str]) -> pd.DataFrame:
    """A frame with no row and these columns, each of its schema dtype (categoricals without categories yet)."""
    import pandas as pd

    out = {}
    for name in names:
        dtype = dtype_of(name)
        out[name] = pd.Series(dtype="category" if dtype == "category" else (dtype or object))
    return pd.DataFrame(out)


def labelled(frame: pd.DataFrame, label: Any) -> None:
    """Put the `handler` column first in the frame: the label on every row, held once (a categorical; a label
    that cannot be a category, being unhashable, in an object column)."""
    import pandas as pd

    try:
        hash(label)
        column: Any = pd.Categorical([label] * len(frame), categories=[label])
    except (TypeError, ValueError):  # unhashable, or NaN (no category)
        column = pd.Series([label] * len(frame), index=frame.index, dtype=object)
    frame.insert(0, "handler", column)


def columns() -> pd.DataFrame:
    """The replay frame's columns as a table: name, dtype, sources, meaning.

    Text columns are `category`: each distinct string is held once, so the frame repeats no string on its
    rows; `.str` methods work on them (`.str.contains(word, na=False)` rather than `.fillna("")`, which needs
    "" among the categories)."""
    import pandas as pd

    return pd.DataFrame([vars(c) for c in COLUMNS], columns=["name", "dtype", "sources", "meaning"])


_INTEGER = frozenset({"integer", "empty"})


def _typed_column(values: pd.Series, dtype: str) -> pd.Series | None:
    """The column in its schema dtype, or None when its values do not fit (they stay as they are)."""
    import pandas as pd

    kind = pd.api.types.infer_dtype(values, skipna=True)
    if dtype in ("Int16", "Int32", "int64"):
        if kind not in _INTEGER:
            return None
        for size in (dtype, "Int64"):
            try:
                target: Any = size if dtype != "int64" or values.hasnans else "int64"
                return values.astype(target)
            except (OverflowError, TypeError, ValueError):
                continue
        return None
    if dtype == "boolean":
        return values.astype("boolean") if kind in ("boolean", "empty") else None
    if dtype == "category":
        return values.astype("category") if kind in ("string", "empty") else None
    if dtype.startswith("datetime64"):
        if kind not in ("string", "empty"):
            return None
        try:
            when: Any = dtype
            return pd.to_datetime(values, utc=True, format="ISO8601").astype(when)
        except (TypeError, ValueError):
            return None
    if dtype == "float64":
        return values.astype("float64") if kind in ("integer", "floating", "mixed-integer-float", "empty") else None
    return None


def typed(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with every schema column in its dtype (when its values fit); other columns as pandas infers them."""
    texts = []
    for name in frame.columns:
        spec = _BY_NAME.get(name)
        if spec is None:
            continue
        if spec.dtype == "object":
            texts.append(name)
            continue
        column = _typed_column(frame[name], spec.dtype)
        if column is not None:
            frame[name] = column
    kept = {name: frame[name] for name in texts if frame[name].dtype == object}
    frame = frame.infer_objects()
    for name, column in kept.items():  # text stays in object columns, as the rows hold it
        frame[name] = column
    return frame


def dtype_of(name: str) -> Any:
    """The schema dtype of a column (None: not in the schema)."""
    spec = _BY_NAME.get(name)
    return None if spec is None else spec.dtype


_LOCATED = re.compile(r"^(?P<file>.+):(?P<line>\d+)$")


def unreadable_row(index: int, item: Any) -> dict[str, Any]:
    """The replay row of an `Unreadable` (a line or entry that could not be read): located by `file` and `line`
    when its place is a file's line, else by `item`."""
    row = {
        "event": index,
        "source": item.source,
        "item": item.where,
        "result": item.result,
        "rule": item.issue.rule,
        "inferred": False,
        "reason": item.issue.message,
    }
    located = _LOCATED.match(item.where)
    if located is not None:
        row["item"] = None
        row["file"], row["line"] = located.group("file"), int(located.group("line"))
    return row


def agreement(frame: pd.DataFrame) -> dict[str, int]:
    """How far a replay of a log agrees with it: rows that agree, rows compared, and rows not compared because
    their outcome depends on what the log does not hold (`replayable` False)."""
    compared = frame["agrees"].dropna()
    replayable = frame["replayable"] if "replayable" in frame.columns else None
    return {
        "agree": int(compared.sum()),
        "compared": len(compared),
        "not_replayable": 0 if replayable is None else int((replayable == False).sum()),  # noqa: E712 - NA: neither
    }


def agreement_text(agrees: dict[str, int]) -> str:
    """`agreement` in a sentence or two."""
    said = f"agrees with the log: {agrees['agree']} of {agrees['compared']} request(s)"
    if agrees.get("not_replayable"):
        said += (
            f"\nnot compared: {agrees['not_replayable']} request(s) whose outcome depends on what the log "
            "does not hold (the request body)"
        )
    return said


__all__ = [
    "COLUMNS",
    "IMPORTED",
    "ORDER",
    "RENAMING_SOURCES",
    "Column",
    "agreement",
    "agreement_text",
    "columns",
    "dtype_of",
    "empty_frame",
    "kinds_of_rows",
    "labelled",
    "ordered",
    "replay_row",
    "typed",
    "unreadable_row",
]
