"""One keep-alive HTTP/1.1 connection of the timing client: only the response framing.

Every ``data_received`` call is stamped with ``perf_counter_ns()`` before anything else is done
with the bytes; the body is de-chunked into pieces kept with their arrival time (SSE and JSON
are parsed after the response has ended, ``inferlab.load.sse``).
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from inferlab.load.sse import event_end as _event_end
from inferlab.records import ErrorKind

__all__ = ["MAX_EVENT_BYTES", "Conn", "Exchange"]

_perf_ns = time.perf_counter_ns
_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)
_MAX_HEAD = 64 * 1024
MAX_EVENT_BYTES = 4 * 1024 * 1024  # an SSE event (or a body without one) longer is an error
_MERGE_BELOW = 4096

# framing states
_HEAD, _CSIZE, _CDATA, _CCRLF, _TRAILER, _LENGTH, _UNTIL_CLOSE, _DONE = range(8)


@dataclass(slots=True, eq=False)
class Exchange:
    """One request/response. ``pieces`` are body bytes (de-chunked) with their arrival time."""

    send_ns: int = 0
    first_byte_ns: int = 0
    last_ns: int = 0
    end_ns: int = 0
    status: int = 0
    keep_alive: bool = True
    pieces: list[tuple[int, bytes]] = field(default_factory=list)
    error_kind: ErrorKind | None = None
    error_message: str | None = None
    retry_after: str | None = None  # the server's Retry-After header, as sent
    reused_conn: bool = False
    done: asyncio.Future[None] | None = None

    def body(self) -> bytes:
        return b"".join(p for _, p in self.pieces)


class Conn(asyncio.Protocol):
    """One keep-alive connection; decodes HTTP framing only."""

    def __init__(self, on_lost: Callable[[Conn], None], max_event: int = MAX_EVENT_BYTES) -> None:
        self.transport: asyncio.Transport | None = None
        self.ex: Exchange | None = None
        self.closed = False
        self.used = 0
        self._on_lost = on_lost
        self._buf = b""
        self._state = _HEAD
        self._remaining = 0
        self._sock: Any = None
        self._max_event = max_event
        self._since = 0  # body bytes since the last event terminator (a blank line)
        self._tail = b""  # the last 2 body bytes (a terminator may straddle two reads)
        self._merge = False  # the last piece has no newline: no event can end in it

    # -- asyncio callbacks -------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if _QUICKACK is not None:
                self._sock = sock
                self._quickack()

    def _quickack(self) -> None:
        # Linux clears TCP_QUICKACK by itself; re-arm it so every segment is ACKed at once.
        # Against a server that leaves Nagle on, a delayed ACK holds its next small write
        # (the first token after the response head) for up to 40 ms: benchmarks/ttft_anomaly.py.
        sock = self._sock
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
            except OSError:
                self._sock = None

    def data_received(self, data: bytes) -> None:
        t = _perf_ns()
        if self._sock is not None:
            self._quickack()
        ex = self.ex
        if ex is None:  # bytes nobody asked for: the connection cannot be trusted
            self.abort()
            return
        if not ex.first_byte_ns:
            ex.first_byte_ns = t
        ex.last_ns = t
        try:
            self._feed(t, ex, data)
        except (ValueError, IndexError) as exc:
            self._finish(ex, ErrorKind.MALFORMED, f"bad HTTP framing: {exc}", keep=False)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        ex = self.ex
        if ex is not None:
            if self._state == _UNTIL_CLOSE:
                self._finish(ex, None, None, keep=False)
            else:
                got = "no response" if not ex.first_byte_ns else "response cut short"
                why = f": {exc}" if exc else ""
                self._finish(ex, ErrorKind.TRUNCATED, f"connection closed, {got}{why}", keep=False)
        self._on_lost(self)

    # -- requests ---------------------------------------------------------------------
    def send(self, ex: Exchange, data: bytes) -> None:
        assert self.transport is not None
        self.ex = ex
        self._buf = b""
        self._state = _HEAD
        self._since, self._tail, self._merge = 0, b"", False
        ex.reused_conn = self.used > 0
        self.used += 1
        if self._sock is not None:
            self._quickack()
        ex.send_ns = _perf_ns()
        self.transport.write(data)

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def fail(self, kind: ErrorKind, message: str) -> None:
        """End the current exchange with an error and drop the connection."""
        ex = self.ex
        if ex is not None:
            self._finish(ex, kind, message, keep=False)
        self.abort()

    # -- framing ----------------------------------------------------------------------
    def _finish(
        self, ex: Exchange, kind: ErrorKind | None, message: str | None, *, keep: bool
    ) -> None:
        if ex.done is None or ex.done.done():
            return
        ex.end_ns = _perf_ns()
        ex.error_kind = kind
        ex.error_message = message
        ex.keep_alive = keep and ex.keep_alive and not self.closed
        self.ex = None
        self._state = _DONE
        ex.done.set_result(None)

    def _feed(self, t: int, ex: Exchange, data: bytes) -> None:
        # the states of every chunk (size line, data, CRLF) are inline: this runs per read
        buf = self._buf + data if self._buf else data
        self._buf = b""
        pos = 0
        n = len(buf)
        while pos < n or self._state == _TRAILER:
            state = self._state
            if state == _CDATA:
                end = pos + self._remaining
                if end > n:
                    end = n
                if not self._body(t, ex, buf[pos:end]):
                    return
                self._remaining -= end - pos
                pos = end
                if self._remaining:
                    return
                self._state = _CCRLF
            elif state == _CSIZE:
                i = buf.find(b"\r\n", pos)
                if i < 0:
                    self._buf = buf[pos:]
                    return
                size = int(buf[pos:i].split(b";", 1)[0], 16)
                pos = i + 2
                if size:
                    self._remaining = size
                    self._state = _CDATA
                else:
                    self._state = _TRAILER
            elif state == _CCRLF:
                if n - pos < 2:
                    self._buf = buf[pos:]
                    return
                if buf[pos : pos + 2] != b"\r\n":
                    raise ValueError("missing CRLF after chunk")
                pos += 2
                self._state = _CSIZE
            else:
                pos = self._once(t, ex, buf, pos, n)
                if pos < 0:
                    return

    def _once(self, t: int, ex: Exchange, buf: bytes, pos: int, n: int) -> int:
        """The states met once an answer (head, trailers, a ``content-length`` or
        read-until-close body); the next position, or -1 when this read is used up or the
        exchange ended."""
        state = self._state
        if state == _TRAILER:
            i = buf.find(b"\r\n", pos)
            if i < 0:
                self._buf = buf[pos:]
                return -1
            if i == pos:
                self._finish(ex, None, None, keep=True)
                return -1
            return i + 2
        if state == _HEAD:
            i = buf.find(b"\r\n\r\n", pos)
            if i < 0:
                if n - pos > _MAX_HEAD:
                    raise ValueError("response head larger than 64 KiB")
                self._buf = buf[pos:]
                return -1
            self._parse_head(ex, buf[pos:i])
            return -1 if self._state == _DONE else i + 4
        if state == _LENGTH:
            take = min(self._remaining, n - pos)
            if self._body(t, ex, buf[pos : pos + take]):
                self._remaining -= take
                if not self._remaining:
                    self._finish(ex, None, None, keep=True)
            return -1  # either way this read is used up (bytes past the body are ignored)
        if state == _UNTIL_CLOSE:
            self._body(t, ex, buf[pos:])
        return -1  # _DONE: trailing bytes after a finished response

    def _body(self, t: int, ex: Exchange, chunk: bytes) -> bool:
        """Keep body bytes with their arrival time. False (the exchange failed, the connection
        dropped) once one event outgrows the cap: memory stays bounded. A piece without a
        newline cannot end an event, so the next read is merged into it while it is small (a
        slow drip of single bytes costs one piece per line or 4 KiB, not one per byte)."""
        end = _event_end(self._tail, chunk)
        self._since = len(chunk) - end if end else self._since + len(chunk)
        self._tail = (self._tail + chunk)[-2:] if len(chunk) < 2 else chunk[-2:]
        if self._since > self._max_event:
            self.fail(
                ErrorKind.OVERSIZED,
                f"an SSE event (or a body without one) passed {self._max_event} bytes; "
                "the rest was not read",
            )
            return False
        merge = self._merge and ex.pieces and len(ex.pieces[-1][1]) < _MERGE_BELOW
        self._merge = b"\n" not in chunk
        if merge:
            chunk = ex.pieces.pop()[1] + chunk
        ex.pieces.append((t, chunk))
        return True

    def _parse_head(self, ex: Exchange, head: bytes) -> None:
        lines = head.split(b"\r\n")
        status_line = lines[0].split(b" ", 2)
        if len(status_line) < 2 or not status_line[0].startswith(b"HTTP/"):
            raise ValueError(f"bad status line {lines[0][:80]!r}")
        ex.status = int(status_line[1])
        chunked = False
        length: int | None = None
        keep = status_line[0] == b"HTTP/1.1"
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            key = name.strip().lower()
            if key == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif key == b"content-length":
                length = int(value.strip())
            elif key == b"retry-after":
                ex.retry_after = value.strip().decode("latin-1")[:64]
            elif key == b"connection":
                v = value.strip().lower()
                keep = v != b"close" if keep else v == b"keep-alive"
        ex.keep_alive = keep
        if chunked:
            self._state = _CSIZE
        elif length is not None:
            if length == 0:
                self._finish(ex, None, None, keep=True)
            else:
                self._remaining = length
                self._state = _LENGTH
        else:
            self._state = _UNTIL_CLOSE
            ex.keep_alive = False
