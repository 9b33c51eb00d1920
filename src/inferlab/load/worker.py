"""One measuring process: its own event loop (uvloop when installed), its own connection pool.

A worker receives prepared requests, waits for a common start time, drives them closed-loop or
open-loop, and only after the load point parses what it received and returns the records.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from inferlab.load.http import Exchange, HttpClient, run_loop
from inferlab.load.jobs import Item, WorkerJob, WorkerResult
from inferlab.load.pacer import Pacer
from inferlab.load.progress import Progress
from inferlab.load.sessions import SessionScript, run_sessions
from inferlab.load.sse import error_message_of, parse_stream
from inferlab.records import ErrorKind, RequestRecord

__all__ = ["worker_process"]

_perf_ns = time.perf_counter_ns
_LAG_PERIOD_S = 0.005
_TIMER_GRANULARITY_NS = 1_100_000  # libuv/epoll timers: 1 ms resolution, plus slack
_REPORT_EVERY = 4  # adaptive points: progress to the parent every 4 lag probes (20 ms)
_TRANSIENT = (408, 429)  # overload, not a refusal of the requests themselves


@dataclass(slots=True)
class _Raw:
    item: Item
    scheduled_ns: int | None
    ex: Exchange
    session: int | None = None
    turn: int | None = None


@dataclass(slots=True)
class _State:
    ok_seen: bool = False
    rejected: str | None = None
    stopped: bool = False


class _Control:
    """Shared flags: ``stop`` (set by the parent on Ctrl-C or by any worker on rejection:
    abort what is in flight) and ``finish`` (adaptive stop: issue nothing more, let the
    requests in flight end)."""

    def __init__(self, stop: Any, done: Any, errors: Any, worker: int, finish: Any) -> None:
        self._stop = stop
        self._done = done
        self._errors = errors
        self._w = worker
        self._finish = finish

    def stopping(self) -> bool:
        return bool(self._stop.is_set())

    def finishing(self) -> bool:
        return self._finish is not None and bool(self._finish.is_set())

    def stop(self) -> None:
        self._stop.set()

    def count(self, ok: bool) -> None:
        self._done[self._w] += 1
        if not ok:
            self._errors[self._w] += 1


One = Callable[[Item, "int | None", bool], Awaitable[_Raw]]


async def _closed_loop(job: WorkerJob, ctl: _Control, one: One, start_ns: int) -> None:
    """C users, each sending its next request when the last ended (cycling items if asked)."""
    items = job.items
    deadline = start_ns + int(job.duration_s * 1e9) if job.duration_s else None
    counter = iter(range(1 << 62 if job.cycle else len(items)))

    async def user() -> None:
        first = True
        for i in counter:
            if ctl.stopping() or ctl.finishing():
                return
            if deadline is not None and _perf_ns() >= deadline:
                return
            if i >= len(items) and not job.cycle:
                return
            it = items[i % len(items)]
            if i >= len(items):
                rid = f"{it.request_id}-r{i}"
                idx = it.index + (i // len(items)) * (1 << 32)
                it = Item(idx, rid, it.data, it.input_tokens, it.output_tokens)
            await one(it, None, first)
            first = False

    await asyncio.gather(*(user() for _ in range(job.concurrency or 1)))


async def _open_loop(job: WorkerJob, ctl: _Control, one: One, start_ns: int) -> None:
    """Requests sent at their scheduled offsets, at most ``max_concurrency`` in flight.

    The due times are kept by a pacer thread (``load.pacer``), not by the loop's timers: those
    are millisecond-granular (libuv rounds a delay to ms and reads a cached ms clock, so one
    fires up to ~1.5 ms late or early), which put the replay's p99 at 1.2 ms (RESULTS.md).
    """
    assert job.offsets_s is not None
    loop = asyncio.get_running_loop()
    sem = asyncio.Semaphore(job.max_concurrency) if job.max_concurrency else None
    tasks: list[asyncio.Future[None]] = []
    ended: asyncio.Future[None] = loop.create_future()

    async def capped(item: Item, due: int) -> None:
        if sem is None:
            await one(item, due, False)
            return
        async with sem:
            if not ctl.stopping():
                await one(item, due, False)

    def fire(k: int, due: int) -> bool:
        if ctl.stopping() or ctl.finishing():
            return False
        tasks.append(asyncio.ensure_future(capped(job.items[k], due)))
        return True

    dues = [start_ns + int(off * 1e9) for off in job.offsets_s[: len(job.items)]]

    def end() -> None:
        if not ended.done():
            ended.set_result(None)

    pacer = Pacer(loop, dues, fire, end, halt=lambda: ctl.stopping() or ctl.finishing())
    pacer.start()
    try:
        await ended
    finally:
        pacer.stop()
    await asyncio.gather(*tasks)


class _Monitor:
    """Every 5 ms: a loop-lag probe, the interrupt check, and (adaptive points) progress."""

    def __init__(
        self, client: HttpClient, ctl: _Control, state: _State, prog: Progress | None
    ) -> None:
        self.loop = asyncio.get_running_loop()
        self.client = client
        self.ctl = ctl
        self.state = state
        self.prog = prog
        self.lag: list[int] = []
        self.ticks = 0
        self.done = False

    def start(self) -> None:
        self.loop.call_soon(self._tick, _perf_ns())

    def _probe(self, t1: int, timer_late: int) -> None:
        # the larger of: a ready callback's wait to run (what a byte arriving now waits), and
        # how late the 5 ms timer fired beyond the loop's 1 ms timer granularity (a process
        # starved of CPU fires it late and reads everything that arrived meanwhile at once)
        self.lag.append(max(_perf_ns() - t1, timer_late - _TIMER_GRANULARITY_NS))

    def _tick(self, expected: int) -> None:
        now = _perf_ns()
        if self.ctl.stopping() and not self.state.stopped:
            self.state.stopped = True
            self.client.abort_all(ErrorKind.CANCELLED, "interrupted")
        self.loop.call_soon(self._probe, _perf_ns(), max(0, now - expected))
        self.ticks += 1
        if self.prog is not None and self.ticks % _REPORT_EVERY == 0:
            self.prog.flush()
        if not self.done:
            self.loop.call_later(_LAG_PERIOD_S, self._tick, _perf_ns() + int(_LAG_PERIOD_S * 1e9))


async def _warm_client(job: WorkerJob) -> HttpClient:
    """The worker's client, with the connections of its concurrency already open."""
    client = HttpClient(
        job.endpoint,
        timeout_s=job.timeout_s,
        stall_timeout_s=job.stall_timeout_s,
        headers=job.headers,
    )
    if job.sessions is not None:
        n_conn = len(job.sessions)
    else:
        n_conn = job.concurrency or min(len(job.items), job.max_concurrency or 64)
    try:
        await client.warm(n_conn if job.sessions is not None else min(n_conn, len(job.items)))
    except OSError:
        pass  # each request will record its own connect error
    return client


async def _drive(
    job: WorkerJob,
    ctl: _Control,
    start: Callable[[], int],
    report: Callable[[Any], None] | None = None,
) -> WorkerResult:
    client = await _warm_client(job)
    loop = asyncio.get_running_loop()
    t0 = await loop.run_in_executor(None, start)
    raws: list[_Raw] = []
    state = _State()
    prog = Progress(report) if job.progress else None
    monitor = _Monitor(client, ctl, state, prog)
    wait = max(t0, job.not_before_ns or 0) - _perf_ns()
    if wait > 0:
        await asyncio.sleep(wait / 1e9)
    start_ns = _perf_ns()
    monitor.start()

    async def one(item: Item, scheduled: int | None, first: bool) -> _Raw:
        if prog is not None:
            prog.issued(item.index, first)
        ex = await client.request(item.data)
        raw = _Raw(item, scheduled, ex)
        raws.append(raw)
        if prog is not None:
            prog.finished(item.index, ex, item.output_tokens, first)
        _judge(ex, ctl, state)
        return raw

    if job.sessions is not None:
        await _converse(job, client, one, ctl)
    else:
        drive = _closed_loop if job.offsets_s is None else _open_loop
        await drive(job, ctl, one, start_ns)
    stop_ns = _perf_ns()
    monitor.done = True
    if prog is not None:
        prog.flush()
    client.close()
    records, texts = _finish(raws, job, prog.ramp if prog is not None else set())
    return WorkerResult(
        worker=job.worker,
        records=records,
        texts=texts,
        loop_lag_ns=monitor.lag,
        start_ns=start_ns,
        stop_ns=stop_ns,
        interrupted=ctl.stopping() and state.rejected is None,
        rejected=state.rejected,
    )


async def _converse(job: WorkerJob, client: HttpClient, one: One, ctl: _Control) -> None:
    """A sessions point: each turn sent through ``one`` (so it is measured and recorded as any
    request is), marked with its conversation and turn."""
    assert job.sessions is not None and job.target is not None
    path = job.target.path

    async def turn(sc: SessionScript, t: int, body: bytes) -> Exchange:
        rid, n = sc.request_ids[t], sc.output_tokens[t]
        data = client.build("POST", path, body, request_id=rid)
        raw = await one(Item(sc.index0 + t, rid, data, None, n), None, t == 0)
        raw.session, raw.turn = sc.session, t
        return raw.ex

    await run_sessions(job.sessions, job.target, turn, lambda: ctl.stopping() or ctl.finishing())


def _judge(ex: Exchange, ctl: _Control, state: _State) -> None:
    """Count a finished request; the server's 4xx before any success stops the point."""
    ok = ex.error_kind is None and 200 <= ex.status < 300
    ctl.count(ok)
    if ok:
        state.ok_seen = True
    elif 400 <= ex.status < 500 and ex.status not in _TRANSIENT and not state.ok_seen:
        if state.rejected is not None:
            return
        msg = error_message_of(_json_or_none(ex.body()), ex.body()[:300].decode(errors="replace"))
        state.rejected = f"HTTP {ex.status}: {msg}"
        ctl.stop()


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def _finish(
    raws: list[_Raw], job: WorkerJob, ramp: set[int]
) -> tuple[list[RequestRecord], list[list[str]]]:
    """Parse every response after the load point (off the timing path); the requests in
    ``ramp`` are marked ramp-up."""
    records: list[RequestRecord] = []
    texts: list[list[str]] = []
    for raw in raws:
        ex, item = raw.ex, raw.item
        rec = RequestRecord(
            index=item.index,
            request_id=item.request_id,
            warmup=job.warmup,
            scheduled_ns=raw.scheduled_ns,
            send_ns=ex.send_ns,
            end_ns=ex.end_ns,
            status=ex.status,
            error_kind=ex.error_kind,
            error_message=ex.error_message,
            input_tokens=item.input_tokens,
            requested_output_tokens=item.output_tokens,
            worker=job.worker,
            dropped="ramp-up" if item.index in ramp else None,
            session=raw.session,
            turn=raw.turn,
        )
        parsed = parse_stream(ex.pieces, ex.end_ns)
        if rec.error_kind is None and not 200 <= ex.status < 300:
            rec.error_kind = ErrorKind.HTTP
            rec.error_message = f"HTTP {ex.status}: " + error_message_of(
                _json_or_none(ex.body()), ex.body()[:300].decode(errors="replace")
            )
            if ex.retry_after is not None:
                rec.error_message += f" (Retry-After: {ex.retry_after})"
        elif rec.error_kind is None and parsed.error_kind is not None:
            rec.error_kind = parsed.error_kind
            rec.error_message = parsed.error_message
        rec.event_ns = parsed.event_ns
        rec.finish_reason = parsed.finish_reason
        rec.usage_prompt_tokens = parsed.usage_prompt_tokens
        rec.usage_completion_tokens = parsed.usage_completion_tokens
        if rec.error_kind is None and not parsed.event_ns:
            rec.error_kind = ErrorKind.MALFORMED
            rec.error_message = "response carried no output tokens"
        if rec.error_kind is None and not parsed.saw_done and parsed.finish_reason is None:
            rec.warnings.append("stream ended without finish_reason or [DONE]")
        records.append(rec)
        texts.append(parsed.texts)
    return records, texts


def _die_with_parent() -> None:
    """Linux: get SIGKILL when the parent dies (a killed ``bench`` leaves no load behind)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def worker_process(
    job: WorkerJob, conn: Connection, stop: Any, done: Any, errors: Any, finish: Any = None
) -> None:
    """Entry point of a worker process: ignores SIGINT (the parent decides), reports back."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    if job.cpus:
        os.sched_setaffinity(0, job.cpus)
    ctl = _Control(stop, done, errors, job.worker, finish)

    def report(payload: Any) -> None:
        conn.send(("progress", job.worker, payload))

    def start() -> int:
        conn.send(("ready", job.worker))
        msg = conn.recv()
        return int(msg[1])

    try:
        result = run_loop(_drive(job, ctl, start, report if job.progress else None))
    except BaseException:  # a bug in the worker: report it, never hang the parent
        import traceback

        result = WorkerResult(job.worker, [], [], [], 0, 0, failure=traceback.format_exc())
    conn.send(("result", result))
    conn.close()
