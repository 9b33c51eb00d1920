"""A minimal HTTP/1.1 streaming client built for timing.

Every ``data_received`` call is stamped with ``perf_counter_ns()`` before anything else is done
with the bytes, and only HTTP framing is decoded on that path; SSE and JSON are parsed after the
response has ended (``inferlab.load.sse``). Requests are written in one ``write`` (head and
body together, ``TCP_NODELAY``), so no Nagle delay can split them. Stall and deadline checks are
done by one sweeper per client, not one timer per request.
"""

from __future__ import annotations

import asyncio
import ssl
import time

from inferlab.load.endpoint import Endpoint, run_loop
from inferlab.load.framing import MAX_EVENT_BYTES, Exchange
from inferlab.load.framing import Conn as _Conn
from inferlab.records import ErrorKind

__all__ = ["MAX_EVENT_BYTES", "Endpoint", "Exchange", "HttpClient", "run_loop"]

_perf_ns = time.perf_counter_ns


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
