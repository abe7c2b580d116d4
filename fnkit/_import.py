"""Real data in: the shared core of the importers (access logs, queue message dumps, event files).

An importer is a one-pass stream (`ImportStream`): iterating it yields what it could turn
into events, as it reads; every line or entry it could not use is reported as an `Issue`
located by file and line number (`stream.issues`), never skipped silently and never raised.
`stream.entries()` yields those `Unreadable` markers in place too, so that a replay shows
them as rows. Files may be gzip-compressed; a folder means every file in it, in name order.
"""

from __future__ import annotations

import gzip
import importlib.util
import io
import json
import re
import sys
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tqdm.auto import tqdm

from ._engine.report import Issue, Report, error, warning
from ._optional import require

GZIP_MAGIC = b"\x1f\x8b"
_SNIFF_BYTES = 65_536
_ACCESS_LOG_START = re.compile(rb"^(?:http|https|h2|grpcs|ws|wss) \d{4}-\d\d-\d\dT")


@dataclass(frozen=True)
class Unreadable:
    """A line or entry an importer (or a replay engine) could not turn into an event, and why.

    `issue.path` says where (`access.log.gz:17`), `issue.message` why, in one sentence.
    `result` is what a replay row says about it.
    """

    issue: Issue
    source: str | None = None
    result: str = "unreadable"

    @property
    def where(self) -> str:
        """The location: file and line number (or entry)."""
        return self.issue.path


def unreadable(
    where: str, message: str, source: str | None = None, *, severity: str = "error", code: str = "format"
) -> Unreadable:
    """An `Unreadable` for a line or entry at `where`."""
    make = error if severity == "error" else warning
    return Unreadable(make(where, code, message, None), source)


def loads_json(text: str) -> Any:
    """`json.loads` whose every failure is a ValueError in plain words: a value nested too deeply, or a number of
    more digits than Python reads, included (both are valid JSON no reader here can hold)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("it nests too deeply to be read") from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        if "integer string conversion" in str(exc):
            raise ValueError(
                "it holds a number of more than 4,300 digits (JSON allows it, but no reader here takes it)"
            ) from None
        raise


def in_notebook() -> bool:
    """True inside a Jupyter kernel (where progress bars are on by default)."""
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    try:
        ip = shell.get_ipython()
    except Exception:  # noqa: BLE001 - no shell, no notebook
        return False
    return ip is not None and hasattr(ip, "kernel")


def say(sentence: str, *, stacklevel: int = 2) -> None:
    """A sentence of fnkit's own about a run: in a notebook, a line of the cell's output (not a Python
    warning headed by a temporary file's path); elsewhere a RuntimeWarning pointing at the caller."""
    if in_notebook():
        import textwrap

        print(textwrap.fill(sentence, 88), flush=True)  # broken between words: the output pane breaks anywhere
        return
    import warnings

    warnings.warn(sentence, RuntimeWarning, stacklevel=stacklevel + 1)


#: What an importer's producer is: a generator of items and `Unreadable` markers (closed early by `close`).
Producer = Generator[Any, None, None]


class ImportStream(Iterator[Any]):
    """One pass over an importer's output: items as they are read, problems as they are met.

    `read` counts the lines (or entries) read, `yielded` the items handed out, `issues` the
    lines reported (each an `Issue` located by file and line). `report` gives them as a
    `Report`, `summary()` in one sentence. `progress=True` shows a tqdm bar (`tqdm.auto`:
    a widget in a notebook, text elsewhere); None shows one only inside a notebook.
    """

    def __init__(
        self,
        produce: Callable[[ImportStream], Producer],
        *,
        source: str | None,
        what: str,
        unit: str,
        item: str,
        progress: bool | None = None,
        description: str | None = None,
    ) -> None:
        self.source = source
        self.what = what  # "access log", "queue messages", "events"
        self.unit = unit  # what `read` counts: "line", "message"
        self.item = item  # what is yielded: "request", "event"
        self.read = 0
        self.yielded = 0
        self.issues: list[Issue] = []
        self._with_unreadable = False
        self._bar = _progress_bar(progress, description or what, unit)
        self._produce = produce(self)

    def count(self, n: int = 1) -> None:
        """The producer read `n` more lines or entries."""
        self.read += n
        if self._bar is not None:
            self._bar.update(n)

    def note(self, where: str, message: str, *, severity: str = "error", code: str = "mismatch") -> None:
        """Report a problem with something that is still yielded (an MD5 that does not match, say)."""
        self.issues.append((error if severity == "error" else warning)(where, code, message, None))
        if self._bar is not None:
            self._bar.set_postfix_str(f"{len(self.issues)} reported", refresh=False)

    def __next__(self) -> Any:
        while True:
            try:
                item = next(self._produce)
            except StopIteration:
                self._close_bar()
                raise
            if isinstance(item, Unreadable):
                self.issues.append(item.issue)
                if self._bar is not None:
                    self._bar.set_postfix_str(f"{len(self.issues)} reported", refresh=False)
                if self._with_unreadable:
                    return item
                continue
            self.yielded += 1
            return item

    def entries(self) -> Iterator[Any]:
        """Items and `Unreadable` markers in file order (what a replay consumes); issues are still recorded."""
        self._with_unreadable = True
        return self

    def _close_bar(self) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(f"{len(self.issues)} reported", refresh=False)
            self._bar.close()
            self._bar = None

    def close(self) -> None:
        """Stop reading (closes the files and the progress bar)."""
        self._produce.close()
        self._close_bar()

    @property
    def reported(self) -> int:
        """How many lines or entries were reported so far (one may carry several issues)."""
        return len({issue.path for issue in self.issues})

    @property
    def report(self) -> Report:
        """The reported lines as a `Report` (one located `Issue` each)."""
        return Report(self.issues, self.source, None, "input")

    def summary(self) -> str:
        """One sentence: lines read, items yielded, lines reported."""
        return (
            f"{self.what}: read {self.read} {self.unit}{'s' if self.read != 1 else ''}, "
            f"yielded {self.yielded} {self.item}{'s' if self.yielded != 1 else ''}, "
            f"reported {self.reported} {self.unit}{'s' if self.reported != 1 else ''}"
        )

    def __repr__(self) -> str:
        return f"<ImportStream {self.summary()}>"


def _progress_bar(progress: bool | None, description: str, unit: str) -> tqdm[Any] | None:
    """A tqdm bar when `progress` asks for one (None: only inside a notebook)."""
    if progress is None:  # the default: a bar inside a notebook where tqdm is installed, else none
        progress = in_notebook() and importlib.util.find_spec("tqdm") is not None
    if not progress:
        return None
    require("tqdm", extra="lab", feature="progress bars (progress=True)")
    from tqdm.auto import tqdm

    return tqdm(desc=description, unit=f" {unit}s", leave=True)


# --- reading lines from files, gzip files, folders, or text ----------------------------


def files_of(path: str | Path) -> list[Path]:
    """The files a path stands for: itself, or every file in a folder (recursively, by name; hidden ones skipped)."""
    path = Path(path)
    if path.is_dir():
        return sorted(
            p
            for p in path.rglob("*")
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
    if not path.exists():
        raise FileNotFoundError(f"no such file or folder: {path}")
    return [path]


@contextmanager
def _open_binary(path: Path) -> Iterator[io.BufferedIOBase]:
    """A file opened for reading bytes, decompressed on the fly when it is gzip."""
    with path.open("rb") as fh:
        if fh.peek(2)[:2] == GZIP_MAGIC:
            with gzip.GzipFile(fileobj=fh, mode="rb") as gz:
                yield gz
        else:
            yield fh


def iter_lines(source: Any, stream: ImportStream) -> Iterator[tuple[str, int, str] | Unreadable]:
    """(file, line number, text) for every line of `source`, counted on `stream`.

    `source`: a path (file, .gz file, or folder), a text holding newlines, or an iterable of
    lines (str or bytes). A line that is not UTF-8, and a gzip file that is cut short or
    corrupt, are reported (`Unreadable`), never raised.
    """
    if isinstance(source, (str, Path)) and not (isinstance(source, str) and "\n" in source):
        for path in files_of(source):
            yield from _file_lines(path, stream)
        return
    lines = source.splitlines() if isinstance(source, (str, bytes, bytearray)) else source
    for number, line in enumerate(lines, 1):
        stream.count()
        if isinstance(line, (bytes, bytearray)):
            try:
                line = bytes(line).decode("utf-8")
            except UnicodeDecodeError as exc:
                yield unreadable(
                    f"<lines>:{number}",
                    f"The line is not UTF-8 text (bad byte at position {exc.start}).",
                    stream.source,
                )
                continue
        yield "<lines>", number, line.rstrip("\r\n")


def _file_lines(path: Path, stream: ImportStream) -> Iterator[tuple[str, int, str] | Unreadable]:
    name = str(path)
    number = 0
    with _open_binary(path) as fh:
        try:
            for number, raw in enumerate(fh, 1):
                stream.count()
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    yield unreadable(
                        f"{name}:{number}",
                        f"The line is not UTF-8 text (bad byte at position {exc.start}).",
                        stream.source,
                    )
                    continue
                yield name, number, text.rstrip("\r\n")
        except (EOFError, OSError, zlib.error) as exc:
            # a gzip file cut short or corrupt: say where reading stopped, keep what came before
            yield unreadable(
                f"{name}:{number + 1}",
                f"The file cannot be read past line {number}: "
                f"{exc.__class__.__name__}: {str(exc) or 'the compressed data ends early'}.",
                stream.source,
            )


#: decompressed bytes read at a time by `iter_line_blocks` (lines are handed out a block at a time)
_BLOCK_BYTES = 1 << 20
#: lines handed out at a time when the source is a text or an iterable of lines
_BLOCK_LINES = 4_096


def iter_line_blocks(source: Any, stream: ImportStream) -> Iterator[tuple[str, int, list[str]] | Unreadable]:
    """The lines of `source` as `iter_lines` reads them, a block at a time: (file, number of the block's first
    line, the lines' text), counted on `stream` block by block.

    A file is read a megabyte of decompressed bytes at a time and decoded at once; a block that is not UTF-8
    is read line by line, so each bad line is reported at its number (`Unreadable`) and the others are kept.
    A gzip file cut short or corrupt is read up to the cut; the cut is reported as `iter_lines` reports it.
    """
    if isinstance(source, (str, Path)) and not (isinstance(source, str) and "\n" in source):
        for path in files_of(source):
            yield from _file_blocks(path, stream)
        return
    block: list[str] = []
    first = 1
    for entry in iter_lines(source, stream):
        if isinstance(entry, Unreadable):
            if block:
                yield "<lines>", first, block
                block = []
            yield entry
            continue
        _, number, line = entry
        if not block:
            first = number
        block.append(line)
        if len(block) == _BLOCK_LINES:
            yield "<lines>", first, block
            block = []
    if block:
        yield "<lines>", first, block


def _file_blocks(path: Path, stream: ImportStream) -> Iterator[tuple[str, int, list[str]] | Unreadable]:
    name = str(path)
    number = 0  # the lines handed out so far
    carry = b""  # the start of a line whose end is in the next read
    with _open_binary(path) as fh:
        read = getattr(fh, "read1", fh.read)  # one read of the decompressor at most: nothing held back at a cut
        try:
            while True:
                chunk = read(_BLOCK_BYTES)
                if not chunk:
                    break
                data = carry + chunk if carry else chunk
                end = data.rfind(b"\n")
                if end < 0:
                    carry = data
                    continue
                carry = data[end + 1 :]
                yield from _decoded(name, number + 1, data[:end], stream)
                number += data.count(b"\n", 0, end) + 1
            if carry:  # the last line, with no newline after it
                yield from _decoded(name, number + 1, carry, stream)
        except (EOFError, OSError, zlib.error) as exc:
            # a gzip file cut short or corrupt: say where reading stopped, keep what came before
            yield unreadable(
                f"{name}:{number + 1}",
                f"The file cannot be read past line {number}: "
                f"{exc.__class__.__name__}: {str(exc) or 'the compressed data ends early'}.",
                stream.source,
            )


def _decoded(
    name: str, first: int, data: bytes, stream: ImportStream
) -> Iterator[tuple[str, int, list[str]] | Unreadable]:
    """Lines `first`... of a file (`data`: whole lines, without the last newline) as text."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:  # some line is not UTF-8: line by line, each bad one reported at its number
        block: list[str] = []
        start = first
        for number, raw in enumerate(data.split(b"\n"), first):
            try:
                block.append(raw.decode("utf-8").rstrip("\r"))
            except UnicodeDecodeError as exc:
                if block:
                    stream.count(len(block))
                    yield name, start, block
                    block = []
                stream.count()
                yield unreadable(
                    f"{name}:{number}",
                    f"The line is not UTF-8 text (bad byte at position {exc.start}).",
                    stream.source,
                )
            else:
                if len(block) == 1:
                    start = number
        if block:
            stream.count(len(block))
            yield name, start, block
        return
    lines = text.split("\n")
    if "\r" in text:
        lines = [line.rstrip("\r") for line in lines]
    stream.count(len(lines))
    yield name, first, lines


def head_bytes(path: str | Path) -> bytes:
    """The first bytes of a file (decompressed when gzip), or of the first file in a folder."""
    files = files_of(path)
    if not files:
        return b""
    try:
        with _open_binary(files[0]) as fh:
            return fh.read(_SNIFF_BYTES)
    except (EOFError, OSError, zlib.error):
        return b""


def kind_of(path: str | Path) -> str:
    """What a file holds, from its first bytes: 'access-log', 'messages' (a queue dump) or 'events'."""
    head = head_bytes(path).lstrip()
    if _ACCESS_LOG_START.match(head):
        return "access-log"
    if head[:1] in (b"{", b"[") and b'"MessageId"' in head and b'"Records"' not in head:
        return "messages"
    return "events"


def is_json_lines(path: str | Path) -> bool:
    """True when an events file holds one JSON value per line; False for one JSON document (a list, or an event
    pretty-printed over several lines, whose first line is no JSON value by itself).

    A first line that is a value too deep (or with a number too long) to read, one that is not UTF-8 or is broken
    before its end, is a line of its own all the same, and a list on the first line with more lines after it
    cannot be one document: all are JSON Lines, so that the lines after them are read, not lost with them.
    """
    head = head_bytes(path)
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    head = head.lstrip()
    listed = head[:1] == b"["
    first, newline, rest = head.partition(b"\n")
    if not newline:
        return not listed  # one line (or longer than the sniffed bytes): JSON Lines and one document read the same
    try:
        text = first.decode("utf-8")
    except UnicodeDecodeError:  # a line that is not UTF-8 is reported as a line; the lines after it are read
        return True
    try:
        loads_json(text)
    except json.JSONDecodeError as exc:
        # a value that goes on past its first line (a pretty-printed document) stops at the line's end; text
        # broken before it is a bad line of its own
        return exc.pos < len(text.rstrip())
    except ValueError:  # nested too deeply, a number too long: a value that fills its line
        pass
    return not listed or bool(rest.strip())


def events_from_file(path: str | Path, *, progress: bool | None = False) -> ImportStream:
    """Events from a JSON Lines file (or .gz, or a folder of them), one per line, streamed; a JSON list, or one
    event pretty-printed over several lines, is read whole.

    A line that is not JSON is reported with its number, never raised.
    """
    files_of(path)  # a missing path fails now, not on first use

    def produce(stream: ImportStream) -> Producer:
        blanks: list[tuple[str, int]] = []
        for path_ in files_of(path):
            if not is_json_lines(path_):
                yield from _json_list(path_, stream)
                continue
            for entry in iter_lines(path_, stream):
                if isinstance(entry, Unreadable):
                    yield entry
                    continue
                name, number, text = entry
                if not text.strip():
                    blanks.append((name, number))
                    continue
                _say_blank_lines(blanks, stream)
                try:
                    yield loads_json(text)
                except ValueError as exc:
                    yield unreadable(f"{name}:{number}", f"The line is not valid JSON: {exc}.")
            _say_blank_lines(blanks, stream)

    return ImportStream(
        produce, source=None, what="events", unit="line", item="event", progress=progress, description=Path(path).name
    )


def _say_blank_lines(blanks: list[tuple[str, int]], stream: ImportStream) -> None:
    """A run of blank lines of a JSON Lines file, reported once (a warning: they hold no event), then forgotten."""
    if not blanks:
        return
    (name, first), last = blanks[0], blanks[-1][1]
    lines = f"line {first} is blank" if first == last else f"lines {first}-{last} are blank"
    stream.note(f"{name}:{first}", f"JSON Lines: {lines}, so no event is read there.", severity="warning", code="blank")
    blanks.clear()


def read_whole(path: Path) -> tuple[str | None, str]:
    """(the file's text, gzip or not, as UTF-8, "") or (None, the sentence saying why it cannot be read)."""
    try:
        with _open_binary(path) as fh:
            return fh.read().decode("utf-8"), ""
    except (EOFError, OSError, zlib.error, UnicodeDecodeError) as exc:
        return None, f"The file cannot be read: {exc.__class__.__name__}: {exc}."


def _json_list(path: Path, stream: ImportStream) -> Iterator[Any]:
    text, why = read_whole(path)
    if text is None:
        stream.count()
        yield unreadable(f"{path}:1", why)
        return
    try:
        value = loads_json(text.removeprefix("\ufeff"))
    except ValueError as exc:
        stream.count()
        line = getattr(exc, "lineno", 1)
        yield unreadable(f"{path}:{line}", f"The file is not valid JSON: {exc}.")
        return
    for event in value if isinstance(value, list) else [value]:
        stream.count()
        yield event


def chain(streams: Iterable[Any]) -> Iterator[Any]:
    """The entries of several inputs, one after the other (importer streams give their `Unreadable` markers too)."""
    for stream in streams:
        yield from (stream.entries() if isinstance(stream, ImportStream) else stream)


__all__ = [
    "ImportStream",
    "Unreadable",
    "chain",
    "events_from_file",
    "files_of",
    "in_notebook",
    "is_json_lines",
    "iter_line_blocks",
    "iter_lines",
    "kind_of",
    "unreadable",
]
