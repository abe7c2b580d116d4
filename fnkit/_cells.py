"""How a value shows in a table cell: for the widgets, `fnkit.tabulate`, the reports' and outcomes' HTML.

Text left-aligned, numbers right-aligned, an absent value as "—", nothing cut without an
ellipsis ("…"), and long ids cut in the middle only where room is short (the full id stays
in the cell's tooltip). No pandas and nothing else of fnkit here, so every module may use it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from html import escape
from typing import Any

ELLIPSIS = "…"
ABSENT = "—"

_CELL = "border:1px solid #d0d7de;padding:2px 6px;vertical-align:top;line-height:1.4"
_HEAD = _CELL + ";text-align:left;font-weight:600;background:#f6f8fa"
_TABLE = "border-collapse:collapse;font-size:12px;margin:2px 0"


def shorten(text: Any, width: int) -> str:
    """`text` on one line, cut to at most `width` characters; a cut always ends with an ellipsis."""
    flat = " ".join(str(text).split())
    if len(flat) <= width:
        return flat
    return flat[: max(width - 1, 1)].rstrip() + ELLIPSIS


def short_id(value: Any, head: int = 8, tail: int = 4) -> str:
    """A long id cut in the middle with an ellipsis ('05b6e6e3…f339'); short ids as they are."""
    text = str(value)
    if len(text) <= head + tail + 2:
        return text
    return text[:head] + ELLIPSIS + text[-tail:]


_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-]{24,}")


def _cut_token(match: re.Match[str]) -> str:
    token = match.group(0)
    # an id holds digits; a long name such as multiValueQueryStringParameters does not, and stays whole
    return short_id(token) if any(c.isdigit() for c in token) else token


def short_ids_in(text: str) -> str:
    """`text` with every long id-like token (a messageId, a receiptHandle, a hash) cut in the middle by an ellipsis."""
    return _LONG_TOKEN.sub(_cut_token, text)


def is_absent(value: Any) -> bool:
    """None, NaN, pandas' NA/NaT, or an empty string: a cell with nothing to say."""
    if value is None or (isinstance(value, str) and value == ""):
        return True
    if isinstance(value, float):
        return value != value  # NaN
    return type(value).__name__ in ("NAType", "NaTType")


def cell_text(value: Any) -> str:
    """A value as the plain text of a table cell ("—" when absent)."""
    if is_absent(value):
        return ABSENT
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(cell_text(v) for v in value) if value else ABSENT
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, Mapping):
        return json.dumps(dict(value), ensure_ascii=False, default=str)
    return str(value)


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    return type(value).__module__ == "numpy" and hasattr(value, "dtype") and value.dtype.kind in "iuf"


def cell_html(value: Any, *, is_id: bool = False) -> str:
    """One <td>: text left, numbers right, "—" for absent values, long ids cut with an ellipsis (full id as tooltip)."""
    if _is_number(value) and not is_absent(value):
        number = value.item() if hasattr(value, "item") else value
        return f"<td style='{_CELL};text-align:right;white-space:nowrap'>{escape(cell_text(number))}</td>"
    text = cell_text(value)
    if text == ABSENT:
        return f"<td style='{_CELL};text-align:left;color:#8c959f'>{ABSENT}</td>"
    if is_id and short_id(text) != text:
        return (
            f"<td style='{_CELL};text-align:left;white-space:nowrap' title='{escape(text, quote=True)}'>"
            f"<code>{escape(short_id(text))}</code></td>"
        )
    if len(text) <= _WORD and not any(c.isspace() for c in text):
        # one short word (a code, a severity, a rule id): never broken in the middle
        return f"<td style='{_CELL};text-align:left;white-space:nowrap'>{escape(text)}</td>"
    return f"<td style='{_CELL};text-align:left;white-space:pre-wrap;overflow-wrap:anywhere'>{escape(text)}</td>"


_WORD = 24  # a cell of one word up to this long stays on one line


def html_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
    *,
    ids: Collection[str] = (),
    index: Sequence[Any] | None = None,
    index_name: str = "",
    caption: str = "",
    css_class: str = "fnkit-grid",
) -> str:
    """A readable HTML table of row dicts (no pandas needed); `ids`: columns whose long values are cut in the middle."""
    if columns is None:
        columns = []
        for row in rows:
            columns.extend(k for k in row if k not in columns)
    lead = f"<th style='{_HEAD}'>{escape(index_name)}</th>" if index is not None else ""
    head = lead + "".join(f"<th style='{_HEAD}'>{escape(str(c))}</th>" for c in columns)
    body = []
    for n, row in enumerate(rows):
        if row is _GAP:
            body.append(
                f"<tr><td style='{_CELL};text-align:left;color:#57606a' colspan='{len(columns) + bool(lead)}'>"
                f"{ELLIPSIS}</td></tr>"
            )
            continue
        first = f"<th style='{_HEAD};font-weight:400'>{escape(cell_text(index[n]))}</th>" if index is not None else ""
        body.append("<tr>" + first + "".join(cell_html(row.get(c), is_id=c in ids) for c in columns) + "</tr>")
    note = (
        f"<caption style='caption-side:bottom;text-align:left;color:#57606a'>{escape(caption)}</caption>"
        if caption
        else ""
    )
    return (
        f"<table class='{css_class}' style='{_TABLE}'>{note}"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def text_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None, *, width: int = 60) -> str:
    """Row dicts as a plain-text table (no pandas needed): a header line, then one line per row.

    Text is left-aligned and numbers right-aligned, an absent value is "—", and a cell longer
    than `width` is cut with an ellipsis. Columns default to every key, in order of first appearance.
    """
    if columns is None:
        columns = []
        for row in rows:
            columns.extend(k for k in row if k not in columns)
    cells = [[shorten(cell_text(row.get(c)), width) for c in columns] for row in rows]
    numeric = [
        all(_is_number(row.get(c)) or is_absent(row.get(c)) for row in rows)
        and any(_is_number(row.get(c)) for row in rows)
        for c in columns
    ]
    widths = [max([len(str(c))] + [len(line[i]) for line in cells]) for i, c in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if right else v.ljust(w) for v, w, right in zip(values, widths, numeric, strict=True)
        ).rstrip()

    return "\n".join([line([str(c) for c in columns]), *(line(values) for values in cells)])


_GAP: dict[str, Any] = {}  # the row standing for the rows left out of a long table

#: the colours of a result's tone (outcomes, checks, widget badges)
TONE_COLOURS = {"good": "#1a7f37", "mixed": "#9a6700", "bad": "#cf222e", "none": "#57606a"}


def panel_html(
    headline: str,
    *,
    tone: str | None = None,
    note: str = "",
    sentence: str = "",
    items: Sequence[str] = (),
    rows: Sequence[Mapping[str, Any]] | None = None,
    columns: Sequence[str] | None = None,
    ids: Collection[str] = (),
    tables: Sequence[Any] = (),
    preformatted: str | None = None,
    after: str = "",
    css_class: str = "",
    style: str = "",
) -> str:
    """The one way fnkit shows a result in a notebook: a bold headline (coloured by `tone`), a `note` (HTML,
    such as the deciding rule), a sentence, a bullet list of `items`, tables (`rows`, or `tables` of
    (rows, columns, ids)), preformatted text, then `after` (HTML); in a div when `css_class` or `style`."""
    colour = f" style='color:{TONE_COLOURS[tone]}'" if tone else ""
    parts = [f"<b{colour}>{escape(headline)}</b>"]
    if note:
        parts.append(f" · {note}")
    if sentence:
        parts.append(f"<br>{escape(sentence)}")
    if items:
        parts.append("<ul style='margin:2px 0'>" + "".join(f"<li>{escape(i)}</li>" for i in items) + "</ul>")
    if rows:
        parts.append(html_table(rows, columns, ids=ids))
    for table_rows, table_columns, table_ids in tables:
        if table_rows:
            parts.append(html_table(table_rows, table_columns, ids=table_ids))
    if preformatted is not None:
        parts.append(f"<pre style='white-space:pre-wrap;margin:2px 0'>{escape(preformatted)}</pre>")
    parts.append(after)
    body = "".join(parts)
    if not css_class and not style:
        return body
    return f"<div class='{css_class}' style='{style}'>{body}</div>"


def frame_html(frame: Any, *, max_rows: int = 60, shown_rows: int = 10) -> str:
    """A DataFrame (flat index and columns) as `html_table`; long frames show their first and last rows."""
    records = frame.to_dict("records")
    # an unnamed index of row numbers (tabulate's, or what a filter left of it) says nothing: not shown
    numbered = frame.index.name is None and frame.index.dtype.kind in "iu"
    labels: list[Any] | None = None if numbered else list(frame.index)
    if len(records) > max_rows:
        half = shown_rows // 2
        records = [*records[:half], _GAP, *records[-half:]]
        if labels is not None:
            labels = [*labels[:half], None, *labels[-half:]]
    caption = f"{len(frame)} rows × {len(frame.columns)} columns" if len(frame) > max_rows else ""
    names = [str(n) for n in (frame.columns.name, frame.index.name) if n is not None]
    return html_table(
        records, [str(c) for c in frame.columns], index=labels, index_name=" / ".join(names), caption=caption
    )
