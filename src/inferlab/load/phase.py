"""One phase of a load point (warmup or measured) run in worker processes.

The parent forks one process per job, waits until every worker is ready, gives them a common
start time, then collects one result per worker. A worker that sent its result and exited is
never reported as lost: the collector reads every connection until it has a result or EOF,
and looks at the workers' liveness *before* its last read, so a result that arrives in the
window after a wait timed out is still read (the defect behind "a measuring worker exited
without reporting (worker 0: exit code 0)").

With a ``PhaseMonitor`` (adaptive stopping), workers also stream light per-request summaries
(``("progress", ...)`` messages); the monitor may set the ``finish`` flag: workers then stop
issuing requests and let the ones in flight end (the drain).
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as mp_wait
from typing import Any, Protocol

from inferlab import interrupts
from inferlab.errors import MeasurementError
from inferlab.load.jobs import WorkerJob, WorkerResult
from inferlab.load.worker import worker_process

__all__ = ["PhaseMonitor", "PhaseOutcome", "collect_results", "run_phase"]

_POLL_S = 0.05


class PhaseMonitor(Protocol):
    """Reads the workers' progress messages; decides when the phase should finish."""

    def progress(self, worker: int, payload: Any) -> None:
        """One ``("progress", worker, payload)`` message from a worker."""
        ...

    def should_finish(self, done: int) -> bool:
        """True once the phase has measured enough; ``done``: requests finished so far
        (checked after every batch of messages)."""
        ...


@dataclass
class PhaseOutcome:
    results: list[WorkerResult]
    interrupted: bool  # Ctrl-C
    finish_ns: int | None = None  # perf_counter_ns when the monitor asked the workers to finish


def collect_results(
    pending: list[Connection[Any, Any]],
    alive: Callable[[], bool],
    on_message: Callable[[Any], None],
    *,
    poll_s: float = _POLL_S,
    tick: Callable[[], None] | None = None,
) -> None:
    """Read messages from ``pending`` connections until each has delivered a ``"result"`` or
    reached EOF (each finished connection is removed from the list). ``alive()`` says whether
    any worker still runs; it is asked *before* a read, so when it says no, everything the
    workers sent is already in the pipes and the last read (without waiting) sees it."""
    while pending:
        running = alive()
        ready = mp_wait(pending, timeout=poll_s if running else 0)
        for c in ready:
            assert isinstance(c, Connection)
            try:
                msg = c.recv()
            except EOFError:
                pending.remove(c)
                continue
            on_message(msg)
            if msg[0] == "result":
                pending.remove(c)
        if tick is not None:
            tick()
        if not running and not ready:
            return  # every worker has exited and nothing is left to read


def _check(jobs: Sequence[WorkerJob], procs: Sequence[Any], results: dict[int, Any]) -> None:
    """A worker that failed (its traceback) or exited without its result is an error."""
    failures = [r.failure for r in results.values() if r.failure]
    if failures:
        raise MeasurementError("a measuring worker failed (a bug in inferlab):\n" + failures[0])
    if len(results) < len(jobs):
        raise MeasurementError(
            f"a measuring worker exited without reporting ({_lost(jobs, procs, results)})"
        )


def _lost(jobs: Sequence[WorkerJob], procs: Sequence[Any], results: dict[int, Any]) -> str:
    return ", ".join(
        f"worker {j.worker}: exit code {p.exitcode}"
        + (f" ({signal.Signals(-p.exitcode).name})" if p.exitcode and p.exitcode < 0 else "")
        for j, p in zip(jobs, procs)
        if j.worker not in results
    )


def run_phase(
    jobs: list[WorkerJob],
    on_progress: Callable[[int, int], None],
    monitor: PhaseMonitor | None = None,
    *,
    target: Callable[..., None] = worker_process,
) -> PhaseOutcome:
    """Run ``jobs`` in one process each; ``on_progress(done, errors)`` ~10×/s. ``target`` is
    the worker entry point (a seam for tests: a real process, a real pipe)."""
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    stop, finish = ctx.Event(), ctx.Event()
    done = ctx.Array("q", len(jobs), lock=False)
    errs = ctx.Array("q", len(jobs), lock=False)
    procs: list[Any] = []
    conns: list[Connection[Any, Any]] = []
    results: dict[int, WorkerResult] = {}
    finish_ns: list[int] = []

    def alive() -> bool:
        return any(p.is_alive() for p in procs)

    def on_message(msg: Any) -> None:
        if msg[0] == "result":
            results[msg[1].worker] = msg[1]
        elif msg[0] == "progress" and monitor is not None:
            monitor.progress(msg[1], msg[2])

    def tick() -> None:
        n = sum(done)
        on_progress(n, sum(errs))
        if monitor is not None and not finish_ns and monitor.should_finish(n):
            finish_ns.append(time.perf_counter_ns())
            finish.set()

    with interrupts.on_sigint(stop.set) as hit:  # workers finish and report
        for job in jobs:
            parent, child = ctx.Pipe()
            p = ctx.Process(target=target, args=(job, child, stop, done, errs, finish), daemon=True)
            p.start()
            child.close()
            procs.append(p)
            conns.append(parent)
        try:
            _wait_ready(conns, alive, results)
            t0 = time.perf_counter_ns() + 20_000_000
            pending = [c for c, job in zip(conns, jobs) if job.worker not in results]
            for c in pending:
                c.send(("start", t0))
            collect_results(pending, alive, on_message, tick=tick)
            on_progress(sum(done), sum(errs))
        finally:
            for p in procs:
                p.join(timeout=5)
                if p.is_alive():
                    p.kill()
    _check(jobs, procs, results)
    return PhaseOutcome(
        [results[j.worker] for j in jobs], hit[0], finish_ns[0] if finish_ns else None
    )


def _wait_ready(
    conns: list[Connection[Any, Any]], alive: Callable[[], bool], results: dict[int, Any]
) -> None:
    """Until every worker said "ready" (or already reported: it failed before the start)."""
    waiting = list(conns)
    while waiting:
        running = alive()
        ready = mp_wait(waiting, timeout=60 if running else 0)
        for c in ready:
            assert isinstance(c, Connection)
            try:
                msg = c.recv()
            except EOFError:
                raise MeasurementError("a measuring worker died before it was ready") from None
            if msg[0] == "result":
                results[msg[1].worker] = msg[1]
            waiting.remove(c)
        if not running and not ready and waiting:
            raise MeasurementError("a measuring worker died before it was ready")
