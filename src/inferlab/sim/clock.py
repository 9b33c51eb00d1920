"""The reference engine's model clock: request records re-timed from its ground truth.

The engine knows when each request arrived (``recv_ns``) and when each of its token chunks was
due (``chunks``: due, written, tokens), on ``perf_counter_ns`` of the same host as the
client's own timestamps. ``on_model_clock`` puts a client's records on that clock: sent at
arrival, each token-bearing event at its chunk's due time, ended at the last one. What the
client, the kernel and a loaded machine add (late writes, late reads) is gone (token counts
and everything else the client read are kept). ``back_to_back`` takes out the client's
turnaround too: in closed loop each user sends its next request the moment its last one ended,
so a point's window, and its throughput, are the timing model's as well, so what is
derived from the records is the timing model's own: a verdict or a trust flag read from them
does not depend on the wall clock of the machine that ran them.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inferlab.records import RequestRecord

__all__ = ["Retimed", "back_to_back", "on_model_clock", "on_schedule"]


@dataclass(frozen=True)
class Retimed:
    """How many records were put on the model clock, and how many kept their own timing
    (no ground truth for their request id, or a different number of token chunks)."""

    retimed: int
    kept: int


def _token_chunks(truth: Mapping[str, Any]) -> list[int]:
    """Due times (ns) of the chunks of one truth record that carried output tokens."""
    return [int(c[0]) for c in truth.get("chunks") or () if int(c[2]) > 0]


def on_model_clock(records: Sequence[RequestRecord], truth: Iterable[Mapping[str, Any]]) -> Retimed:
    """Re-time ``records`` in place from the engine's ground truth (``GET /truth`` records,
    matched on the request id the client sent). A failed request, or one whose token events
    do not match the engine's chunks one to one, keeps the client's timing."""
    by_id = {str(t["request_id"]): t for t in truth if t.get("request_id")}
    retimed = 0
    for rec in records:
        t = by_id.get(rec.request_id)
        chunks = _token_chunks(t) if t is not None else []
        if t is None or not rec.ok or len(chunks) != len(rec.event_ns):
            continue
        rec.send_ns = int(t["recv_ns"])
        rec.event_ns = chunks
        rec.end_ns = rec.event_ns[-1] if rec.event_ns else rec.send_ns
        retimed += 1
    return Retimed(retimed, len(records) - retimed)


def on_schedule(records: Sequence[RequestRecord], late_ns: int = 0) -> None:
    """Shift each record that has a scheduled time (open loop, replay) to be sent ``late_ns``
    after it (each keeps its own durations): the schedule is the timing model's, the client's
    own lateness is replaced by ``late_ns``."""
    for rec in records:
        if rec.scheduled_ns is None or not rec.end_ns:
            continue
        shift = rec.scheduled_ns + late_ns - rec.send_ns
        rec.send_ns += shift
        rec.end_ns += shift
        rec.event_ns = [t + shift for t in rec.event_ns]


def back_to_back(records: Sequence[RequestRecord], users: int) -> None:
    """Shift the measured (non-warmup) records of a closed-loop point of ``users`` users, in
    the order they were sent, so that the first ``users`` start together and every later one
    starts the moment the earliest-free user's last request ended (each keeps its own
    durations)."""
    todo = sorted((r for r in records if not r.warmup and r.end_ns), key=lambda r: r.send_ns)
    if not todo or users < 1:
        return
    t0 = todo[0].send_ns
    free: list[int] = []
    for rec in todo:
        start = t0 if len(free) < users else heapq.heappop(free)
        shift = start - rec.send_ns
        rec.send_ns += shift
        rec.end_ns += shift
        rec.event_ns = [t + shift for t in rec.event_ns]
        if rec.scheduled_ns is not None:
            rec.scheduled_ns += shift
        heapq.heappush(free, max(rec.end_ns, rec.send_ns))
