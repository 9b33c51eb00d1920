"""A minimal HTTP/1.1 streaming client built for timing.

Every ``data_received`` call is stamped with ``perf_counter_ns()`` before anything else is done
with the bytes, and only HTTP framing is decoded on that path; SSE and JSON are parsed after the
response has ended (``inferlab.load.sse``). Requests are written in one ``write`` (head and
body together, ``TCP_NODELAY``), so no Nagle delay can split them. Stall and deadline checks are
done by one sweeper per client, not one timer per request.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from inferlab.load.endpoint import Endpoint, run_loop
from inferlab.load.sse import event_end as _event_end
from inferlab.records import ErrorKind

__all__ = ["MAX_EVENT_BYTES", "Endpoint", "Exchange", "HttpClient", "run_loop"]

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


class _Conn(asyncio.Protocol):
    """One keep-alive connection; decodes HTTP framing only."""

    def __init__(self, on_lost: Callable[[_Conn], None], max_event: int = MAX_EVENT_BYTES) -> None:
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
        buf = self._buf + data if self._buf else data
        self._buf = b""
        pos = 0
        n = len(buf)
        while pos < n or self._state == _TRAILER:
            state = self._state
            if state == _CDATA:
                take = min(self._remaining, n - pos)
                if not self._body(t, ex, buf[pos : pos + take]):
                    return
                pos += take
                self._remaining -= take
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
            elif state == _TRAILER:
                i = buf.find(b"\r\n", pos)
                if i < 0:
                    self._buf = buf[pos:]
                    return
                if i == pos:
                    self._finish(ex, None, None, keep=True)
                    return
                pos = i + 2
            elif state == _HEAD:
                i = buf.find(b"\r\n\r\n", pos)
                if i < 0:
                    if n - pos > _MAX_HEAD:
                        raise ValueError("response head larger than 64 KiB")
                    self._buf = buf[pos:]
                    return
                self._parse_head(ex, buf[pos:i])
                pos = i + 4
                if self._state == _DONE:
                    return
            elif state == _LENGTH:
                take = min(self._remaining, n - pos)
                if not self._body(t, ex, buf[pos : pos + take]):
                    return
                pos += take
                self._remaining -= take
                if not self._remaining:
                    self._finish(ex, None, None, keep=True)
                    return
            elif state == _UNTIL_CLOSE:
                self._body(t, ex, buf[pos:])
                return
            else:  # _DONE: trailing bytes after a finished response
                return

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


class HttpClient:
    """A pool of keep-alive connections to one endpoint, with one stall/deadline sweeper.

    ``timeout_s`` bounds a whole request; ``stall_timeout_s`` bounds the silence between two
    reads once the request is sent; ``max_event_bytes`` bounds one SSE event (memory).
    """

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        timeout_s: float = 600.0,
        stall_timeout_s: float = 60.0,
        connect_timeout_s: float = 5.0,
        headers: dict[str, str] | None = None,
        max_event_bytes: int = MAX_EVENT_BYTES,
    ) -> None:
        self.endpoint = endpoint
        self.max_event_bytes = max_event_bytes
        self.timeout_ns = int(timeout_s * 1e9)
        self.stall_ns = int(stall_timeout_s * 1e9)
        self.connect_timeout_s = connect_timeout_s
        self._idle: list[_Conn] = []
        self._active: set[_Conn] = set()
        self._sweeper: asyncio.TimerHandle | None = None
        self._closed = False
        hdrs = dict(headers or {})
        if endpoint.auth and not any(k.lower() == "authorization" for k in hdrs):
            hdrs["Authorization"] = endpoint.auth
        extra = "".join(f"{k}: {v}\r\n" for k, v in hdrs.items())
        self._head_common = (
            f"Host: {endpoint.host_header}\r\nUser-Agent: inferlab\r\n"
            f"Accept: text/event-stream, application/json\r\n{extra}"
        ).encode("latin-1")
        self._ssl: ssl.SSLContext | None = (
            ssl.create_default_context() if endpoint.scheme == "https" else None
        )

    # -- building ---------------------------------------------------------------------
    def build(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        *,
        request_id: str | None = None,
        content_type: str = "application/json",
    ) -> bytes:
        """The exact bytes of a request (head and body in one buffer)."""
        target = self.endpoint.prefix + path
        rid = f"X-Request-Id: {request_id}\r\n".encode() if request_id else b""
        ctype = f"Content-Type: {content_type}\r\n".encode() if body else b""
        return b"".join(
            (
                f"{method} {target} HTTP/1.1\r\n".encode("latin-1"),
                self._head_common,
                rid,
                ctype,
                f"Content-Length: {len(body)}\r\n\r\n".encode()
                if body or method != "GET"
                else b"\r\n",
                body,
            )
        )

    # -- connections ------------------------------------------------------------------
    async def _connect(self) -> _Conn:
        loop = asyncio.get_running_loop()
        try:
            _, proto = await asyncio.wait_for(
                loop.create_connection(
                    lambda: _Conn(self._lost, self.max_event_bytes),
                    self.endpoint.host,
                    self.endpoint.port,
                    ssl=self._ssl,
                ),
                self.connect_timeout_s,
            )
        except asyncio.TimeoutError as exc:
            raise OSError(f"connect to {self.endpoint.base} timed out") from exc
        return proto

    def _lost(self, conn: _Conn) -> None:
        if conn in self._idle:
            self._idle.remove(conn)

    async def warm(self, n: int) -> None:
        """Open ``n`` idle connections ahead of a load point (connect time stays out of it)."""
        missing = n - len(self._idle)
        if missing > 0:
            conns = await asyncio.gather(*(self._connect() for _ in range(missing)))
            self._idle.extend(conns)

    def _ensure_sweeper(self) -> None:
        if self._sweeper is None and not self._closed:
            loop = asyncio.get_running_loop()
            self._sweeper = loop.call_later(0.05, self._sweep)

    def _sweep(self) -> None:
        self._sweeper = None
        now = _perf_ns()
        for conn in list(self._active):
            ex = conn.ex
            if ex is None or not ex.send_ns:
                continue
            if now - ex.send_ns > self.timeout_ns:
                conn.fail(ErrorKind.TIMEOUT, f"no complete response in {self.timeout_ns / 1e9:g} s")
            elif now - max(ex.last_ns, ex.send_ns) > self.stall_ns:
                conn.fail(
                    ErrorKind.STALL,
                    f"server silent for {self.stall_ns / 1e9:g} s after "
                    f"{'the request' if not ex.first_byte_ns else 'a partial response'}",
                )
        if self._active:
            self._ensure_sweeper()

    async def request(self, data: bytes, *, retry_stale: bool = True) -> Exchange:
        """Send one prepared request and wait for the whole response. Never raises for
        server faults: they are recorded on the returned ``Exchange``."""
        loop = asyncio.get_running_loop()
        ex = Exchange(done=loop.create_future())
        conn: _Conn | None = None
        while self._idle:
            c = self._idle.pop()
            if not c.closed:
                conn = c
                break
        if conn is None:
            try:
                conn = await self._connect()
            except OSError as exc:
                ex.send_ns = ex.end_ns = _perf_ns()
                ex.error_kind = ErrorKind.CONNECT
                ex.error_message = str(exc) or type(exc).__name__
                return ex
        self._active.add(conn)
        self._ensure_sweeper()
        try:
            conn.send(ex, data)
            assert ex.done is not None
            await ex.done
        except asyncio.CancelledError:
            conn.abort()
            ex.end_ns = ex.end_ns or _perf_ns()
            ex.error_kind = ErrorKind.CANCELLED
            ex.error_message = "interrupted"
            raise
        finally:
            self._active.discard(conn)
        if (
            retry_stale
            and ex.error_kind is ErrorKind.TRUNCATED
            and ex.reused_conn
            and not ex.first_byte_ns
        ):
            # the server closed an idle keep-alive connection just as we wrote: not a fault
            return await self.request(data, retry_stale=False)
        if ex.keep_alive and not conn.closed and not self._closed:
            self._idle.append(conn)
        else:
            conn.abort()
        return ex

    def abort_all(self, kind: ErrorKind, message: str) -> None:
        """Fail every in-flight exchange (used on interruption)."""
        for conn in list(self._active):
            conn.fail(kind, message)

    def close(self) -> None:
        self._closed = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for conn in self._idle:
            conn.abort()
        self._idle.clear()
        for conn in list(self._active):
            conn.abort()
