"""The fixed-timing schedule: when each chunk of an answer is due, and the job that writes it.

A chunk is due at the request's receipt time plus the TTFT, then ``ntokens × ITL`` later per
chunk (with ``--jitter-ms``, a normal draw on the TTFT and on each token gap, clipped at 0).
A :class:`~inferlab.sim.wheel.Job` on the server's timer wheel writes each chunk when due
(:class:`Pacer`).
"""

from __future__ import annotations

import random
import time
from array import array
from typing import TYPE_CHECKING

from inferlab.sim import api
from inferlab.sim.faults import FAULTS, FaultJob
from inferlab.sim.inject import stream_fault_job
from inferlab.sim.truth import Record
from inferlab.sim.wheel import Job, slot_of

if TYPE_CHECKING:
    from inferlab.sim.host import Client, SimHost
    from inferlab.sim.truth import Request
    from inferlab.sim.wheel import TimerWheel

__all__ = ["Pacer", "Schedule"]


class Schedule:
    """Due times of an answer's chunks: TTFT, then ``ntokens × ITL`` per chunk (ns)."""

    def __init__(
        self, ttft_ms: float, itl_ms: float, jitter_ms: float, seed: int, launch: int | None = None
    ) -> None:
        """``launch``: the launch number (``--launch-state``), mixed into the jitter's seed."""
        self._ttft_ns = round(ttft_ms * 1e6)
        self._itl_ns = round(itl_ms * 1e6)
        self._jitter_ns = jitter_ms * 1e6
        self._rng = random.Random(seed if launch is None else f"jitter:{seed}:{launch}")

    def dues(self, recv_ns: int, sizes: list[int]) -> list[int]:
        """Due times (perf_counter ns) of chunks of ``sizes`` tokens received at ``recv_ns``."""
        itl = self._itl_ns
        jitter = self._jitter_ns
        if jitter <= 0.0:
            due = recv_ns + self._ttft_ns
            dues = [due]
            for n in sizes[1:]:
                due += n * itl
                dues.append(due)
            return dues
        gauss = self._rng.gauss
        due = recv_ns + max(0, round(self._ttft_ns + gauss(0.0, jitter)))
        dues = [due]
        for n in sizes[1:]:
            for _ in range(n):
                due += max(0, round(itl + gauss(0.0, jitter)))
            dues.append(due)
        return dues


class Pacer:
    """Fixed-timing mode: renders each answer and puts it on ``wheel``, its chunks due as
    ``schedule`` says."""

    def __init__(self, host: SimHost, schedule: Schedule, wheel: TimerWheel) -> None:
        self.host = host
        self.schedule = schedule
        self.wheel = wheel

    def pace(
        self,
        conn: Client,
        req: Request,
        rec: Record,
        gen: api.GenRequest,
        ids: list[int],
        fault: str | None,
    ) -> None:
        """Render the answer and put it on the wheel; a ``stream`` fault paces a misbehaving
        one."""
        host = self.host
        cfg = host.config
        out = api.render(
            gen,
            rec.id,
            int(time.time()),
            host.model_json,
            host.words,
            ids,
            cfg.tokens_per_chunk,
            host.heads.answer_head(gen.stream, req.keep_alive),
            reported=2 * gen.max_tokens if rec.fault == "usage" else None,
        )
        sizes = api.chunk_sizes(gen.max_tokens, cfg.tokens_per_chunk)
        dues = self.schedule.dues(req.recv_ns, sizes)
        if gen.stream:
            rec.dues = array("q", dues)
            rec.ntokens = array("q", out.ntokens)
        else:
            rec.dues = array("q", dues[-1:])
            rec.ntokens = array("q", (gen.max_tokens,))
        rec.completion_tokens = gen.max_tokens
        frames = tuple(out.frames)
        slots = array("q", [slot_of(d) for d in rec.dues])
        job: Job | FaultJob
        if fault is None or FAULTS[fault].stage != "stream":
            job = Job(conn, frames, slots, rec)
        else:
            job = stream_fault_job(host, conn, req, rec, gen.stream, frames, slots, fault)
        conn.job = job
        if out.head and fault != "hang":
            assert conn.transport is not None
            conn.transport.write(out.head)
        self.wheel.add(job, job.slots[0])
