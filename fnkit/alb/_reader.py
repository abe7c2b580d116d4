"""Requests off one connection's bytes, one at a time: a head, its body's pieces, its end (pure, no I/O).

The server judges each head (`_desync.judge_head`) before it says how its body is framed
(`expect`), so that no byte after a request it will not read whole is ever read as a request.
"""

from __future__ import annotations

_HEAD, _LENGTH, _SIZE, _DATA, _DATA_END, _TRAILER, _DONE = range(7)
MAX_CHUNK_LINE = 4096  # a chunk-size line (with its extensions) longer than this gets 400


class Reader:
    """Feed bytes with `feed`; `next()` says what is whole: ("head", bytes), ("data", bytes), ("end", None),
    ("need", None) for more bytes, ("done", None) until `next_cycle()`, or ("error", status)."""

    __slots__ = ("_buf", "_left", "_max_head", "_state")

    def __init__(self, max_head: int) -> None:
        self._buf = bytearray()
        self._state = _HEAD
        self._left = 0
        self._max_head = max_head

    def feed(self, data: bytes) -> None:
        """Bytes that arrived."""
        self._buf += data

    @property
    def idle(self) -> bool:
        """Between requests, with nothing of the next one read."""
        return self._state == _HEAD and not self._buf

    @property
    def body_started(self) -> bool:
        """Some of the current request's body has arrived (or it has none left to come)."""
        return self._state != _HEAD and (bool(self._buf) or self._state == _DONE)

    @property
    def done(self) -> bool:
        """The current request has been read whole."""
        return self._state == _DONE

    def expect(self, framing: str, length: int = 0) -> None:
        """The head just read frames its body so: "length" (of `length` bytes), "chunked" or "none"."""
        if framing == "chunked":
            self._state = _SIZE
        elif framing == "length" and length > 0:
            self._state, self._left = _LENGTH, length
        else:
            self._state, self._left = _LENGTH, 0

    def next_cycle(self) -> None:
        """The answer went out and the connection persists: read the next request."""
        self._state = _HEAD

    def next(self) -> tuple[str, bytes | int | None]:
        buf = self._buf
        state = self._state
        if state == _HEAD:
            start = 0
            while start < len(buf) and buf[start] in b"\r\n":  # empty lines before a request line (RFC 9112 2.2)
                start += 1
            if start:
                del buf[:start]
            ends = [i for i in (buf.find(b"\n\r\n"), buf.find(b"\n\n")) if i >= 0]
            if not ends:
                return ("error", 431) if len(buf) > self._max_head else ("need", None)
            end = min(ends)
            end += 3 if buf[end + 1] == 0x0D else 2
            if end > self._max_head:
                return "error", 431
            head = bytes(buf[:end])
            del buf[:end]
            self._state = _DONE  # until `expect` says how its body is read
            return "head", head
        if state == _LENGTH:
            if not self._left:
                self._state = _DONE
                return "end", None
            if not buf:
                return "need", None
            piece = bytes(buf[: self._left])
            del buf[: len(piece)]
            self._left -= len(piece)
            return "data", piece
        if state == _SIZE:
            cut = buf.find(b"\n")
            if cut < 0:
                return ("error", 400) if len(buf) > MAX_CHUNK_LINE else ("need", None)
            line = bytes(buf[:cut]).rstrip(b"\r")
            del buf[: cut + 1]
            digits = line.split(b";", 1)[0].strip(b" \t")
            if not digits or len(digits) > 16 or digits.strip(b"0123456789abcdefABCDEF"):
                return "error", 400
            size = int(digits, 16)
            if size:
                self._state, self._left = _DATA, size
            else:
                self._state, self._left = _TRAILER, 0
            return self.next()
        if state == _DATA:
            if not buf:
                return "need", None
            piece = bytes(buf[: self._left])
            del buf[: len(piece)]
            self._left -= len(piece)
            if not self._left:
                self._state = _DATA_END
            return "data", piece
        if state == _DATA_END:
            if len(buf) < 2:
                return ("error", 400) if bytes(buf[:1]) not in (b"", b"\r", b"\n") else ("need", None)
            if buf[:2] == b"\r\n":
                del buf[:2]
            elif buf[:1] == b"\n":
                del buf[:1]
            else:
                return "error", 400
            self._state = _SIZE
            return self.next()
        if state == _TRAILER:
            while True:
                cut = buf.find(b"\n")
                if cut < 0:
                    return ("error", 400) if len(buf) > self._max_head else ("need", None)
                blank = bytes(buf[:cut]).rstrip(b"\r") == b""
                del buf[: cut + 1]
                self._left += cut + 1
                if self._left > self._max_head:
                    return "error", 400
                if blank:  # trailer fields before it are read and dropped, as the load balancer drops them
                    self._state = _DONE
                    return "end", None
        return "done", None


__all__ = ["Reader"]
