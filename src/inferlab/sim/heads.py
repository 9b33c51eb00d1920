"""The reference engine's answer heads: the status line and headers of every answer it writes.

:mod:`inferlab.sim.http` and the handlers write them through the server's one ``Heads``
(``ConnHost.heads``), whose ``date`` header is formatted once a second."""

from __future__ import annotations

import time
from email.utils import formatdate

__all__ = ["Heads"]

_REASONS = {
    100: "Continue",
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Payload Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class Heads:
    """Builds response heads; the ``date`` header is formatted once a second."""

    def __init__(self) -> None:
        self._date = b""
        self._date_s = -1

    def head(
        self,
        status: int,
        length: int | None,
        keep_alive: bool,
        ctype: bytes = b"application/json",
        extra: bytes = b"",
    ) -> bytes:
        """The head of an answer; ``length`` None: a chunked body; ``extra``: header lines."""
        now = int(time.time())
        if now != self._date_s:
            self._date_s = now
            self._date = formatdate(now, usegmt=True).encode()
        parts = [
            b"HTTP/1.1 %d %s\r\n" % (status, _REASONS.get(status, "Error").encode()),
            b"date: %s\r\nserver: inferlab-sim (simulated)\r\ncontent-type: %s\r\n"
            % (self._date, ctype),
        ]
        if length is None:
            parts.append(b"transfer-encoding: chunked\r\n")
        else:
            parts.append(b"content-length: %d\r\n" % length)
        if not keep_alive:
            parts.append(b"connection: close\r\n")
        parts.append(extra + b"x-inferlab-simulated: true\r\n\r\n")
        return b"".join(parts)

    def answer_head(self, stream: bool, keep_alive: bool) -> bytes:
        """A generation answer's head: SSE (chunked), or JSON with ``content-length: %d`` to
        fill in once the body is known."""
        if stream:
            return self.head(200, None, keep_alive, b"text/event-stream; charset=utf-8")
        return self.head(200, 0, keep_alive).replace(
            b"content-length: 0\r\n", b"content-length: %d\r\n"
        )
