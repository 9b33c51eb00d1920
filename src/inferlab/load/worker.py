"""One measuring process: its own event loop (uvloop when installed), its own connection pool.

A worker receives prepared requests, waits for a common start time, drives them closed-loop or
open-loop, and only after the load point parses what it received and returns the records.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from inferlab.load.http import Endpoint, Exchange, HttpClient, run_loop
from inferlab.load.sse import error_message_of, parse_stream
from inferlab.records import ErrorKind, RequestRecord

__all__ = ["Item", "WorkerJob", "WorkerResult", "worker_process"]

_perf_ns = time.perf_counter_ns
_LAG_PERIOD_S = 0.005
_TIMER_GRANULARITY_NS = 1_100_000  # libuv/epoll timers: 1 ms resolution, plus slack
_TRANSIENT = (408, 429)  # overload, not a refusal of the requests themselves


@dataclass(slots=True, frozen=True)
class Item:
    """A prepared request: global index, id sent as ``X-Request-Id``, exact bytes to write."""

    index: int
    request_id: str
    data: bytes
    input_tokens: int | None
    output_tokens: int


@dataclass(slots=True)
class WorkerJob:
    worker: int
    endpoint: Endpoint
    items: list[Item]
    warmup: bool = False
    concurrency: int | None = None  # closed loop: users in this worker
    offsets_s: list[float] | None = None  # open loop: send offsets, parallel to items
    max_concurrency: int | None = None  # open loop cap in this worker
    duration_s: float | None = None  # closed loop: stop issuing after this
    cycle: bool = False  # closed loop with duration: reuse items round-robin
    timeout_s: float = 600.0
    stall_timeout_s: float = 60.0
    headers: dict[str, str] = field(default_factory=dict)
    not_before_ns: int | None = None  # start no earlier (perf_counter_ns): hosts start together


@dataclass(slots=True)
class WorkerResult:
    worker: int
    records: list[RequestRecord]
    texts: list[list[str]]
    loop_lag_ns: list[int]
    start_ns: int
    stop_ns: int
    interrupted: bool = False
    rejected: str | None = None  # the server's message when it refused the first requests
    failure: str | None = None  # the worker itself broke (a bug): the traceback


@dataclass(slots=True)
class _Raw:
    item: Item
    scheduled_ns: int | None
    ex: Exchange


@dataclass(slots=True)
class _State:
    ok_seen: bool = False
    rejected: str | None = None
    stopped: bool = False


class _Control:
    """Shared flags: ``stop`` (set by the parent on Ctrl-C or by any worker on rejection)."""

    def __init__(self, stop: Any, done: Any, errors: Any, worker: int) -> None:
        self._stop = stop
        self._done = done
        self._errors = errors
        self._w = worker

    def stopping(self) -> bool:
        return bool(self._stop.is_set())

    def stop(self) -> None:
        self._stop.set()

    def count(self, ok: bool) -> None:
        self._done[self._w] += 1
        if not ok:
            self._errors[self._w] += 1


async def _drive(job: WorkerJob, ctl: _Control, start: Callable[[], int]) -> WorkerResult:
    client = HttpClient(
        job.endpoint,
        timeout_s=job.timeout_s,
        stall_timeout_s=job.stall_timeout_s,
        headers=job.headers,
    )
    n_conn = job.concurrency or min(len(job.items), job.max_concurrency or 64)
    try:
        await client.warm(min(n_conn, len(job.items)))
    except OSError:
        pass  # each request will record its own connect error
    loop = asyncio.get_running_loop()
    t0 = await loop.run_in_executor(None, start)
    raws: list[_Raw] = []
    lag: list[int] = []
    state = _State()

    def probe(t1: int, timer_late: int) -> None:
        # the larger of: a ready callback's wait to run (what a byte arriving now waits), and
        # how late the 5 ms timer fired beyond the loop's 1 ms timer granularity (a process
        # starved of CPU fires it late and reads everything that arrived meanwhile at once)
        lag.append(max(_perf_ns() - t1, timer_late - _TIMER_GRANULARITY_NS))

    def monitor(expected: int) -> None:
        now = _perf_ns()
        if ctl.stopping() and not state.stopped:
            state.stopped = True
            client.abort_all(ErrorKind.CANCELLED, "interrupted")
        loop.call_soon(probe, _perf_ns(), max(0, now - expected))
        if not done_evt.is_set():
            loop.call_later(_LAG_PERIOD_S, monitor, _perf_ns() + int(_LAG_PERIOD_S * 1e9))

    done_evt = asyncio.Event()
    wait = max(t0, job.not_before_ns or 0) - _perf_ns()
    if wait > 0:
        await asyncio.sleep(wait / 1e9)
    start_ns = _perf_ns()
    loop.call_soon(monitor, _perf_ns())

    async def one(item: Item, scheduled: int | None) -> None:
        ex = await client.request(item.data)
        raws.append(_Raw(item, scheduled, ex))
        ok = ex.error_kind is None and 200 <= ex.status < 300
        ctl.count(ok)
        if ok:
            state.ok_seen = True
        elif (
            400 <= ex.status < 500
            and ex.status not in _TRANSIENT
            and not state.ok_seen
            and state.rejected is None
        ):
            msg = error_message_of(
                _json_or_none(ex.body()), ex.body()[:300].decode(errors="replace")
            )
            state.rejected = f"HTTP {ex.status}: {msg}"
            ctl.stop()

    items = job.items
    if job.offsets_s is None:
        deadline = start_ns + int(job.duration_s * 1e9) if job.duration_s else None
        counter = iter(range(1 << 62 if job.cycle else len(items)))

        async def user() -> None:
            for i in counter:
                if ctl.stopping() or (deadline is not None and _perf_ns() >= deadline):
                    return
                if i >= len(items) and not job.cycle:
                    return
                it = items[i % len(items)]
                if i >= len(items):
                    it = Item(
                        it.index + (i // len(items)) * (1 << 32),
                        f"{it.request_id}-r{i}",
                        it.data,
                        it.input_tokens,
                        it.output_tokens,
                    )
                await one(it, None)

        await asyncio.gather(*(user() for _ in range(job.concurrency or 1)))
    else:
        sem = asyncio.Semaphore(job.max_concurrency) if job.max_concurrency else None

        async def capped(item: Item, due: int) -> None:
            if sem is None:
                await one(item, due)
                return
            async with sem:
                if not ctl.stopping():
                    await one(item, due)

        tasks = []
        for item, off in zip(items, job.offsets_s):
            due = start_ns + int(off * 1e9)
            delay = due - _perf_ns()
            if delay > 0:
                await asyncio.sleep(delay / 1e9)
            if ctl.stopping():
                break
            tasks.append(asyncio.ensure_future(capped(item, due)))
        await asyncio.gather(*tasks)
    stop_ns = _perf_ns()
    done_evt.set()
    client.close()
    records, texts = _finish(raws, job)
    return WorkerResult(
        worker=job.worker,
        records=records,
        texts=texts,
        loop_lag_ns=lag,
        start_ns=start_ns,
        stop_ns=stop_ns,
        interrupted=ctl.stopping() and state.rejected is None,
        rejected=state.rejected,
    )


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def _finish(raws: list[_Raw], job: WorkerJob) -> tuple[list[RequestRecord], list[list[str]]]:
    """Parse every response after the load point (off the timing path)."""
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


def worker_process(job: WorkerJob, conn: Connection, stop: Any, done: Any, errors: Any) -> None:
    """Entry point of a worker process: ignores SIGINT (the parent decides), reports back."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    ctl = _Control(stop, done, errors, job.worker)

    def start() -> int:
        conn.send(("ready", job.worker))
        msg = conn.recv()
        return int(msg[1])

    try:
        result = run_loop(_drive(job, ctl, start))
    except BaseException:  # a bug in the worker: report it, never hang the parent
        import traceback

        result = WorkerResult(job.worker, [], [], [], 0, 0, failure=traceback.format_exc())
    conn.send(("result", result))
    conn.close()
