"""Fault injection in the reference engine's request path (the kinds: :mod:`inferlab.sim.faults`).

``answer`` faults replace the answer, ``stream`` faults pace a misbehaving one
(:class:`~inferlab.sim.faults.FaultJob`), the ``exit`` fault drops the whole server. Each
injection is recorded on the request's ground truth (``fault``).
"""

from __future__ import annotations

from time import perf_counter_ns
from typing import TYPE_CHECKING

from inferlab.sim.faults import FaultJob, bad_body, not_sse_body, status_answer
from inferlab.sim.http import CLIENT_GONE

if TYPE_CHECKING:
    from array import array

    from inferlab.sim.host import Client, SimHost
    from inferlab.sim.truth import Record, Request

__all__ = ["answer_fault", "exit_now", "stream_fault_job"]

_EVENT_FAULTS = ("malformed", "nodata", "garbage", "oversized")


def answer_fault(
    srv: SimHost, conn: Client, req: Request, rec: Record, fault: str, usage: bool
) -> bool:
    """Inject an ``answer``/``server`` fault; False when it leaves the answer to be paced
    (``usage`` marks the record and the answer reports the wrong count)."""
    if fault == "exit":
        exit_now(srv, rec)
        return True
    if fault == "usage":
        rec.fault = fault if usage else None
        return False
    rec.fault = fault
    answer = status_answer(fault)
    if answer is None:  # notsse
        srv.fail(conn, rec, 200, not_sse_body(), b"text/html; charset=utf-8")
        return True
    status, extra, body = answer
    assert conn.transport is not None and conn.current is not None
    conn.transport.write(srv.heads.head(status, len(body), req.keep_alive, extra=extra) + body)
    rec.status = status
    rec.done_ns = perf_counter_ns()
    srv.finish(rec)
    conn.next()
    return True


def stream_fault_job(
    srv: SimHost,
    conn: Client,
    req: Request,
    rec: Record,
    stream: bool,
    frames: tuple[bytes, ...],
    slots: array[int],
    fault: str,
) -> FaultJob:
    """The paced answer that misbehaves at chunk ``--fault-after`` (a non-streaming answer hit
    by an event fault gets a bad body instead)."""
    cfg = srv.config
    at = cfg.fault_after if stream and fault != "hang" else 0
    if not stream and fault in _EVENT_FAULTS:
        body = bad_body(fault)
        frames = (srv.heads.head(200, len(body), req.keep_alive) + body,)
        fault = "malformed" if fault == "nodata" else fault
    return FaultJob(conn, frames, slots, rec, fault, at, round(cfg.drip_ms * 1e6))


def exit_now(srv: SimHost, trigger: Record | None) -> None:
    """The ``exit`` fault: stop listening and drop every connection, as a crash would;
    every request in flight (and ``trigger``) is recorded with ``fault: "exit"``."""
    if srv.exited.is_set():
        return
    srv.exited.set()
    srv.stop_listening()
    if trigger is not None:
        trigger.fault, trigger.status = "exit", CLIENT_GONE
        trigger.done_ns = perf_counter_ns()
        srv.finish(trigger)
    for conn in srv.clients():
        if conn.job is not None and not conn.job.dead:
            conn.job.rec.fault = "exit"
        if conn.transport is not None:
            conn.transport.abort()
