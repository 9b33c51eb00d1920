"""Faults the reference engine injects on purpose, and how it paces a misbehaving answer.

Every kind is one declaration in :data:`FAULTS` (what the client sees, how inferlab's client
classifies it); :class:`FaultPlan` decides which requests get it — every Nth valid generation
request (a request fraction of 1/N), optionally only inside a time window counted from the
first generation request (when the load began). The server records each injection on the
request's ground truth (``fault``) and counts them in ``/truth/summary``, so a test can
compare the client's classification with what really happened.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from time import perf_counter_ns
from typing import TYPE_CHECKING, Literal, Protocol

from inferlab.sim.truth import Record
from inferlab.sim.wheel import Job, JobConn, slot_of

if TYPE_CHECKING:
    from array import array

__all__ = [
    "FAULTS",
    "OVERSIZED_BYTES",
    "Fault",
    "FaultJob",
    "FaultPlan",
    "bad_body",
    "bad_event",
    "check_kind",
]

Stage = Literal["answer", "stream", "server"]
OVERSIZED_BYTES = 10 * 1024 * 1024  # the oversized event: one 10 MiB line


@dataclass(frozen=True)
class Fault:
    """One fault kind: ``stage`` is when it strikes (``answer``: instead of the answer;
    ``stream``: at token chunk ``--fault-after``; ``server``: the whole process)."""

    name: str
    stage: Stage
    sees: str  # what the client sees
    classified: str  # how inferlab's client records it (an ErrorKind value, or a warning)


# left unformatted: a table, one fault a row, read down its columns (name, where, what, seen as)
FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault("exit", "server", "the server exits: streams cut, later connects refused",
              "truncated (in flight), connect (after)"),
        Fault("close", "stream", "the socket closes without the terminating chunk", "truncated"),
        Fault("reset", "stream", "a TCP reset (RST) mid-stream", "truncated"),
        Fault("hang", "stream", "nothing at all, not even the status line; the socket stays open",
              "stall"),
        Fault("stall", "stream", "the stream stops; the socket stays open and silent", "stall"),
        Fault("drip", "stream", "the rest of the answer one byte at a time (--drip-ms apart)",
              "timeout (when slower than the request deadline)"),
        Fault("malformed", "stream", "one event `data: {not json`, then the normal stream",
              "malformed"),
        Fault("nodata", "stream", "one event without its `data:` field, then the normal stream",
              "malformed"),
        Fault("garbage", "stream", "one line of binary garbage, then the normal stream",
              "malformed"),
        Fault("oversized", "stream", "one 10 MiB event line, then the normal stream",
              "oversized"),
        Fault("notsse", "answer", "HTTP 200 with an HTML body instead of SSE", "malformed"),
        Fault("http429", "answer", "429 with `Retry-After: 1` and an error body", "http"),
        Fault("http500", "answer", "500 with an error body", "http"),
        Fault("http503", "answer", "503 with an error body", "http"),
        Fault("usage", "answer", "a normal stream whose `usage` reports twice the tokens sent",
              "length warning (not a failure)"),
    )
}  # fmt: skip  # a table: one fault a row (see above)

_STATUS = {"http429": 429, "http500": 500, "http503": 503}
_ERRORS = {
    429: ("RateLimitError", "simulated rate limit: retry after 1 s"),
    500: ("InternalServerError", "simulated internal error"),
    503: ("ServiceUnavailableError", "simulated overload: service unavailable"),
}
_NOTSSE = b"<html><body><h1>502 Bad Gateway</h1>(SIMULATED by inferlab sim)</body></html>\n"
_BAD_EVENT = {
    "malformed": b"data: {not json\n\n",
    "nodata": b'{"choices":[{"index":0,"text":" lost"}]}\n\n',
    "garbage": b"\x00\xff\xfe\x80garbage\x9c\x00\n\n",
}


def check_kind(kind: str) -> str:
    """``kind`` when it is a known fault, else ValueError listing the kinds."""
    if kind not in FAULTS:
        raise ValueError(f"unknown fault {kind!r}; expected one of {', '.join(FAULTS)}")
    return kind


def status_answer(kind: str) -> tuple[int, bytes, bytes] | None:
    """(status, extra header lines, body) of an answer-stage error fault, else None."""
    status = _STATUS.get(kind)
    if status is None:
        return None
    import json

    type_, message = _ERRORS[status]
    err = {"message": message, "type": type_, "param": None, "code": status}
    extra = b"retry-after: 1\r\n" if status == 429 else b""
    return status, extra, json.dumps({"error": err}).encode()


def not_sse_body() -> bytes:
    return _NOTSSE


def bad_event(kind: str) -> bytes:
    """The SSE bytes a stream fault writes (HTTP chunk framing included)."""
    if kind == "oversized":
        event = b'data: {"pad":"' + b"x" * OVERSIZED_BYTES + b'"}\n\n'
    else:
        event = _BAD_EVENT[kind]
    return b"%x\r\n%s\r\n" % (len(event), event)


def bad_body(kind: str) -> bytes:
    """The body of a non-streaming answer hit by an event fault."""
    if kind == "oversized":
        return b'{"pad":"' + b"x" * OVERSIZED_BYTES + b'"}'
    return b"\x00\xff{not json" if kind == "garbage" else b"{not json"


class FaultPlan:
    """Which requests are hit: the ``n``-th valid generation request (from 1) when
    ``n % every == 0`` and, with ``at_s``/``for_s``, its receipt falls in
    ``[at_s, at_s + for_s)`` seconds after the first one's (``start_ns``)."""

    def __init__(
        self, kind: str | None, every: int, at_s: float | None, for_s: float | None
    ) -> None:
        self.kind = kind
        self.every = every
        self.at_s = at_s
        self.for_s = for_s
        self.start_ns = 0

    def pick(self, n: int, recv_ns: int) -> str | None:
        if not self.start_ns:
            self.start_ns = recv_ns
        if self.kind is None or n % self.every:
            return None
        t = (recv_ns - self.start_ns) / 1e9
        lo = self.at_s or 0.0
        if t < lo or (self.for_s is not None and t >= lo + self.for_s):
            return None
        return self.kind


class _Conn(JobConn, Protocol):
    def job_failed(self, job: FaultJob, close: bool) -> None: ...


class FaultJob(Job):
    """An answer paced by the wheel that misbehaves at chunk ``at`` (the ``stream`` faults)."""

    __slots__ = ("at", "drip_ns", "ends", "k", "kind", "pos", "rest")
    conn: _Conn

    def __init__(
        self,
        conn: _Conn,
        frames: tuple[bytes, ...],
        slots: array[int],
        rec: Record,
        kind: str,
        at: int,
        drip_ns: int,
    ) -> None:
        super().__init__(conn, frames, slots, rec)
        self.kind = kind
        self.at = at
        self.drip_ns = drip_ns
        self.rest = b""  # drip: every byte still to write, and the frame ends in it
        self.ends: list[int] = []
        self.pos = self.k = 0

    def fire(self) -> int:
        if self.dead:
            return -1
        if self.ends:
            return self._drip()
        if self.i == self.at:
            self.rec.fault = self.kind
            if self.kind == "drip":
                self._start_drip()
                return self._drip()
            if self.kind not in _BAD_EVENT and self.kind != "oversized":
                return self._cut()
            self.at = -1
            if self.rec.stream:
                self.write(bad_event(self.kind))
        self.writes.append(perf_counter_ns())
        self.write(self.frames[self.i])
        self.i += 1
        if self.i == self.n:
            self.conn.job_done(self)
            return -1
        return self.slots[self.i]

    def _start_drip(self) -> None:
        """Everything left, and where each token event in it ends (its blank line)."""
        start = 0
        for f in self.frames[self.i :]:
            self.ends.append(start + f.find(b"\n\n") + 2)
            start += len(f)
        self.rest = b"".join(self.frames[self.i :])

    def _drip(self) -> int:
        """One byte now; a token chunk's write time is when its event's last byte was handed
        to the kernel (stamped before the write, as every chunk's is: no byte can arrive
        before it)."""
        pos = self.pos
        now = perf_counter_ns()
        self.write(self.rest[pos : pos + 1])
        self.pos = pos = pos + 1
        if self.k < len(self.ends) and pos == self.ends[self.k]:
            self.writes.append(now)
            self.k += 1
        if pos == len(self.rest):
            self.conn.job_done(self)
            return -1
        return slot_of(perf_counter_ns() + self.drip_ns)

    def _cut(self) -> int:
        """stall, hang: fall silent; close: FIN without the last chunk; reset: RST."""
        self.dead = True
        transport = self.conn.transport
        if self.kind == "reset" and transport is not None:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.conn.job_failed(self, close=self.kind in ("close", "reset"))
        return -1
