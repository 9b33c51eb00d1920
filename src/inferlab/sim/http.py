"""The reference engine's HTTP/1.1 on ``asyncio.Protocol``: request parsing, in-order answers.

A request's receipt time is taken when its first byte arrives (``Request.recv_ns``). Answers
on one connection go out in request order: a request waits in ``pending`` until the one
before it has been answered (or its paced job has finished).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections import deque
from time import perf_counter_ns
from typing import TYPE_CHECKING

from inferlab.sim import api
from inferlab.sim.truth import Request

if TYPE_CHECKING:
    from inferlab.sim.faults import FaultJob
    from inferlab.sim.host import ConnHost
    from inferlab.sim.wheel import Answer

__all__ = ["CLIENT_GONE", "Conn"]

_MAX_HEAD = 64 * 1024
_MAX_BODY = 64 * 1024 * 1024
CLIENT_GONE = 499  # status recorded for a request whose client closed mid-answer


def _parse_head(head: bytes) -> tuple[str, str, str, dict[str, str], int]:
    """(method, target, version, headers, content length); ValueError when malformed."""
    lines = head.decode("latin-1").split("\r\n")
    method, target, version = lines[0].split(" ")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    if length < 0:
        raise ValueError(length)
    return method, target, version, headers, length


class Conn(asyncio.Protocol):
    """One client connection: parses requests, answers them in order (a
    :class:`~inferlab.sim.host.Client` of its ``srv``)."""

    def __init__(self, srv: ConnHost) -> None:
        self.srv = srv
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.first_ns = 0
        self.pending: deque[Request] = deque()
        self.job: Answer | None = None
        self.current: Request | None = None
        self.continued = False
        self.closed = False

    # -- asyncio callbacks -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.srv.connected(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.srv.disconnected(self)
        job = self.job
        if job is not None and not job.dead:
            job.dead = True
            self.job = None
            job.rec.status = CLIENT_GONE
            self.srv.finish(job.rec)

    def data_received(self, data: bytes) -> None:
        now = perf_counter_ns()
        if not self.buf:
            self.first_ns = now
        self.buf += data
        self._parse(now)

    # -- parsing -----------------------------------------------------------------------------

    def _parse(self, now: int) -> None:
        buf = self.buf
        while buf:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > _MAX_HEAD:
                    self._fatal(400, "Request headers too large.")
                return
            try:
                method, target, version, headers, length = _parse_head(bytes(buf[:end]))
            except ValueError:
                self._fatal(400, "Malformed HTTP request.")
                return
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self._fatal(400, "Chunked request bodies are not supported; send Content-Length.")
                return
            if length > _MAX_BODY:
                self._fatal(413, "Request body too large.")
                return
            total = end + 4 + length
            if len(buf) < total:
                self._maybe_continue(headers)
                return
            body = bytes(buf[end + 4 : total])
            del buf[:total]
            self.continued = False
            conn_hdr = headers.get("connection", "").lower()
            if version == "HTTP/1.0":
                keep_alive = "keep-alive" in conn_hdr
            else:
                keep_alive = "close" not in conn_hdr
            path = target.split("?", 1)[0]
            req = Request(method, path, headers, body, keep_alive, self.first_ns, perf_counter_ns())
            self.first_ns = now
            if self.current is None and not self.pending:
                self._start(req)
            else:
                self.pending.append(req)

    def _maybe_continue(self, headers: dict[str, str]) -> None:
        """Answer ``Expect: 100-continue`` once while the body is still to come."""
        if (
            not self.continued
            and headers.get("expect", "").lower() == "100-continue"
            and self.transport is not None
        ):
            self.continued = True
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def _fatal(self, status: int, message: str) -> None:
        self.buf.clear()
        if self.transport is not None:
            body = api.error_body(status, message, "BadRequestError")
            self.transport.write(self.srv.heads.head(status, len(body), False) + body)
            self.transport.close()
        self.closed = True

    # -- answering ---------------------------------------------------------------------------

    def _start(self, req: Request) -> None:
        if self.closed:
            return
        self.current = req
        self.srv.route(self, req)

    def respond(self, status: int, body: bytes, ctype: bytes = b"application/json") -> None:
        """Write a complete answer to the current request now."""
        req = self.current
        assert req is not None and self.transport is not None
        self.transport.write(self.srv.heads.head(status, len(body), req.keep_alive, ctype) + body)
        self.next()

    def job_done(self, job: Answer) -> None:
        rec = job.rec
        rec.done_ns = perf_counter_ns()
        self.job = None
        self.srv.finish(rec)
        self.next()

    def job_failed(self, job: FaultJob, close: bool) -> None:
        rec = job.rec
        rec.done_ns = perf_counter_ns()
        self.job = None
        self.srv.finish(rec)
        if close and self.transport is not None:
            self.closed = True
            self.transport.close()
        # a stalled answer keeps the connection busy: later requests on it are never answered

    def next(self) -> None:
        """The current request is answered: close (no keep-alive) or start the next one."""
        req = self.current
        self.current = None
        if req is not None and not req.keep_alive:
            self.closed = True
            if self.transport is not None:
                self.transport.close()
            return
        if self.pending:
            self._start(self.pending.popleft())
