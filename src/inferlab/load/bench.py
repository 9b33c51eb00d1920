"""One load sweep against a running endpoint: preflight, prompts, load points, summaries.

``run_bench`` is the typed library call behind ``inferlab bench``. It never prints: progress
goes to a ``BenchEvents`` object and results to the returned ``BenchResult`` and, when asked,
to a JSONL file written after every load point (so an interruption loses nothing finished).
"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as mp_wait
from pathlib import Path
from typing import IO, Any, Protocol

from inferlab import METRICS_VERSION, __version__
from inferlab.config.bench import BenchConfig
from inferlab.engines import EngineSpec, get_engine
from inferlab.errors import (
    ConfigError,
    ConnectError,
    MeasurementError,
    ServerRejected,
    TokenizerError,
)
from inferlab.load.http import Endpoint, HttpClient, run_loop
from inferlab.load.schedule import arrival_offsets
from inferlab.load.tokens import LocalTokenizer, ServerTokenizer, assign_token_counts
from inferlab.load.worker import Item, WorkerJob, WorkerResult, worker_process
from inferlab.load.workload import Prompt, build_body, make_prompts, workload_descriptor
from inferlab.records import RequestRecord
from inferlab.stats.metrics import PointSummary, summarize
from inferlab.stats.summary import Distribution, describe

__all__ = [
    "BenchEvents",
    "BenchResult",
    "BenchWarning",
    "LoadPoint",
    "PointResult",
    "ResultSink",
    "auto_workers",
    "plan_points",
    "run_bench",
    "workload_descriptor",
]

FORMAT = "inferlab.bench/1"
LAG_WARN_MS = 1.0
_STREAMS_PER_WORKER = 256


@dataclass(frozen=True)
class LoadPoint:
    """One load level: closed loop at ``concurrency`` or open loop at ``rate`` req/s."""

    label: str
    concurrency: int | None = None
    rate: float | None = None
    max_concurrency: int | None = None

    @property
    def streams(self) -> int:
        """Most requests this point may keep in flight (an estimate for open loop)."""
        if self.concurrency is not None:
            return self.concurrency
        return self.max_concurrency or 256


@dataclass(frozen=True)
class BenchWarning:
    """A measurement-quality warning with the fix that fits the options in use."""

    kind: str
    message: str
    fix: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "message": self.message, "fix": self.fix}


@dataclass
class PointResult:
    point: LoadPoint
    records: list[RequestRecord]
    summary: PointSummary
    loop_lag_ms: Distribution
    workers: int
    warnings: list[BenchWarning] = field(default_factory=list)
    interrupted: bool = False
    rejected: str | None = None
    trial: int = 0
    started_at: str | None = None  # wall clock, ISO 8601
    ended_at: str | None = None
    clients: dict[str, Any] | None = None  # several load hosts: offsets, bounds (cluster/)


@dataclass
class BenchResult:
    run_id: str
    model: str
    url: str
    points: list[PointResult]
    interrupted: bool = False
    engine_version: str | None = None


class ResultSink(Protocol):
    """Where finished load points go, each as soon as it ends (JSONL file, the store...)."""

    def start(self, meta: dict[str, Any]) -> None: ...

    def begin(self, point: LoadPoint, trial: int) -> None:
        """A load point is about to run (e.g. take a /metrics scrape)."""
        ...

    def point(self, res: PointResult) -> None: ...

    def close(self) -> None: ...


class BenchEvents:
    """Progress callbacks; the default does nothing. The CLI renders them with rich."""

    def message(self, text: str) -> None:
        """A status line (preflight, prompt generation...)."""

    def point_started(self, point: LoadPoint, total: int | None, warmup: bool) -> None:
        """A phase starts; ``total`` requests, or None when bounded by duration."""

    def progress(self, done: int, errors: int) -> None:
        """Requests finished so far in the current phase (polled ~10×/s)."""

    def point_finished(self, result: PointResult) -> None:
        """A load point is measured, summarized and (if asked) written."""


def plan_points(cfg: BenchConfig) -> list[LoadPoint]:
    pts = [LoadPoint(f"C={c}", concurrency=c) for c in cfg.concurrency]
    for r in cfg.rate:
        label = f"rate={r:g}/s" + (f" max C={cfg.max_concurrency}" if cfg.max_concurrency else "")
        pts.append(LoadPoint(label, rate=r, max_concurrency=cfg.max_concurrency))
    return pts


def auto_workers(streams: int, cpus: int | None = None, *, local_server: bool = False) -> int:
    """Measuring processes for ``streams`` concurrent streams: one per 256 streams, at most one
    per CPU, and at most half the CPUs when the server runs on this host (it needs them too).
    Measured on 2 CPUs with the reference engine on loopback at C=256: one worker read TTFT
    0.45 ms below the raw-socket floor client (loop lag p99 0.18 ms), two workers 3.5-6 ms above
    it (benchmarks/RESULTS.md)."""
    cpus = cpus or os.cpu_count() or 1
    cap = max(1, cpus // 2) if local_server else cpus
    return max(1, min(cap, math.ceil(streams / _STREAMS_PER_WORKER)))


def _is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


# ---------------------------------------------------------------------------------------
# preflight


def _headers(cfg: BenchConfig) -> dict[str, str]:
    if not cfg.api_key_env:
        return {}
    key = os.environ.get(cfg.api_key_env)
    if not key:
        raise ConfigError(f"--api-key-env: environment variable {cfg.api_key_env} is not set")
    return {"Authorization": f"Bearer {key}"}


def _preflight(
    cfg: BenchConfig, ep: Endpoint, engine: EngineSpec, headers: dict[str, str]
) -> tuple[str, str | None]:
    """Reach the server within 5 s; return the model (given, or the first listed) and the
    engine version it reports (None when it does not say)."""

    async def go() -> tuple[int, bytes, str | None, bytes]:
        client = HttpClient(
            ep, timeout_s=10, stall_timeout_s=5, connect_timeout_s=5, headers=headers
        )
        try:
            ex = await client.request(client.build("GET", engine.models_path))
            vbody = b""
            if ex.error_kind is None and engine.version_path:
                vex = await client.request(client.build("GET", engine.version_path))
                if vex.error_kind is None and vex.status == 200:
                    vbody = vex.body()
        finally:
            client.close()
        err = ex.error_message if ex.error_kind is not None else None
        return ex.status, ex.body(), err, vbody

    status, body, err, vbody = run_loop(go())
    if err is not None and status == 0:
        raise ConnectError(f"cannot reach {ep.base}: {err}")
    if status in (401, 403):
        hint = "" if cfg.api_key_env else " (pass --api-key-env VAR)"
        raise ServerRejected(f"{ep.base}{engine.models_path}: HTTP {status}{hint}")
    version: str | None = None
    try:
        v = json.loads(vbody).get("version") if vbody else None
        version = str(v) if v is not None else None
    except (ValueError, AttributeError):
        version = None
    if cfg.model:
        return cfg.model, version
    try:
        data = json.loads(body)["data"]
        return str(data[0]["id"]), version
    except (ValueError, KeyError, IndexError, TypeError):
        raise ConfigError(
            f"--model not given and {ep.base}{engine.models_path} did not list a model "
            f"(HTTP {status}); pass --model"
        ) from None


def _tokenizer(
    cfg: BenchConfig, ep: Endpoint, engine: EngineSpec, headers: dict[str, str]
) -> LocalTokenizer | ServerTokenizer | None:
    if cfg.tokenizer is not None:
        return LocalTokenizer(cfg.tokenizer)
    if engine.tokenize_path is None:
        return None
    tok = ServerTokenizer(ep, engine.tokenize_path, headers)
    try:
        tok.count_many(["hello world"])
    except TokenizerError:
        return None
    return tok


# ---------------------------------------------------------------------------------------
# running one phase in worker processes


@contextmanager
def _sigint_sets(stop: Any) -> Iterator[list[bool]]:
    """While inside: Ctrl-C sets ``stop`` (workers finish and report) instead of raising."""
    hit = [False]
    if threading.current_thread() is not threading.main_thread():
        yield hit
        return

    def handler(signum: int, frame: object) -> None:
        hit[0] = True
        stop.set()

    old = signal.signal(signal.SIGINT, handler)
    try:
        yield hit
    finally:
        signal.signal(signal.SIGINT, old)


def _run_phase(jobs: list[WorkerJob], events: BenchEvents) -> tuple[list[WorkerResult], bool]:
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    stop = ctx.Event()
    done = ctx.Array("q", len(jobs), lock=False)
    errs = ctx.Array("q", len(jobs), lock=False)
    procs: list[Any] = []
    conns: list[Connection[Any, Any]] = []
    with _sigint_sets(stop) as hit:
        for job in jobs:
            parent, child = ctx.Pipe()
            p = ctx.Process(target=worker_process, args=(job, child, stop, done, errs), daemon=True)
            p.start()
            child.close()
            procs.append(p)
            conns.append(parent)
        results: dict[int, WorkerResult] = {}
        try:
            ready = 0
            while ready < len(conns):
                for c in mp_wait(conns, timeout=60):
                    assert isinstance(c, Connection)
                    msg = c.recv()
                    if msg[0] == "ready":
                        ready += 1
                    else:
                        results[msg[1].worker] = msg[1]
                        ready += 1
                if not any(p.is_alive() for p in procs) and ready < len(conns):
                    raise RuntimeError("a measuring worker died before it was ready")
            t0 = time.perf_counter_ns() + 20_000_000
            for c, job in zip(conns, jobs):
                if job.worker not in results:
                    c.send(("start", t0))
            pending = [c for c, job in zip(conns, jobs) if job.worker not in results]
            while pending:
                for c in mp_wait(pending, timeout=0.1):
                    assert isinstance(c, Connection)
                    try:
                        msg = c.recv()
                    except EOFError:
                        pending.remove(c)
                        continue
                    if msg[0] == "result":
                        results[msg[1].worker] = msg[1]
                        pending.remove(c)
                events.progress(sum(done), sum(errs))
                if pending and not any(p.is_alive() for p in procs):
                    break
            events.progress(sum(done), sum(errs))
        finally:
            for p in procs:
                p.join(timeout=5)
                if p.is_alive():
                    p.kill()
    failures = [r.failure for r in results.values() if r.failure]
    if failures:
        raise MeasurementError("a measuring worker failed (a bug in inferlab):\n" + failures[0])
    if len(results) < len(jobs):
        codes = ", ".join(
            f"worker {j.worker}: exit code {p.exitcode}"
            + (f" ({signal.Signals(-p.exitcode).name})" if p.exitcode and p.exitcode < 0 else "")
            for j, p in zip(jobs, procs)
            if j.worker not in results
        )
        raise MeasurementError(f"a measuring worker exited without reporting ({codes})")
    return [results[j.worker] for j in jobs], hit[0]


def _split_jobs(
    point: LoadPoint,
    items: list[Item],
    workers: int,
    *,
    warmup: bool,
    cfg: BenchConfig,
    headers: dict[str, str],
    ep: Endpoint,
    offsets: list[float] | None,
    cycle: bool,
) -> list[WorkerJob]:
    if point.concurrency is not None:
        workers = max(1, min(workers, point.concurrency))
    jobs = []
    for w in range(workers):
        mine = items[w::workers]
        if not mine and not cycle:
            continue
        job = WorkerJob(
            worker=w,
            endpoint=ep,
            items=mine,
            warmup=warmup,
            timeout_s=cfg.timeout_s,
            stall_timeout_s=cfg.stall_timeout_s,
            headers=headers,
            duration_s=None if warmup else cfg.duration_s,
            cycle=cycle,
            not_before_ns=None if warmup else cfg.not_before_ns,
        )
        if point.concurrency is not None:
            job.concurrency = point.concurrency // workers + (w < point.concurrency % workers)
            if warmup:
                job.concurrency = min(job.concurrency, len(mine)) or 1
        else:
            assert offsets is not None
            job.offsets_s = offsets[w::workers]
            if point.max_concurrency:
                job.max_concurrency = max(
                    1, point.max_concurrency // workers + (w < point.max_concurrency % workers)
                )
        jobs.append(job)
    for i, j in enumerate(jobs):
        j.worker = i
    return jobs


# ---------------------------------------------------------------------------------------
# warnings


def _warnings(cfg: BenchConfig, res: PointResult, workers: int) -> list[BenchWarning]:
    out: list[BenchWarning] = []
    s = res.summary
    lag = res.loop_lag_ms
    if lag.count and (lag.p99 > LAG_WARN_MS or lag.max > 20 * LAG_WARN_MS):
        out.append(
            BenchWarning(
                "client-lag",
                f"the client ran late: p99 {lag.p99:.2f} ms, max {lag.max:.2f} ms with {workers} "
                "worker process(es); timestamps can be late by that much (a large max means "
                "the client was starved of CPU and read several events at once)",
                "give the client a CPU of its own (on one host: reserve a core from the "
                f"server), run with --workers {workers + 1} if CPUs are free, lower the "
                "concurrency, or run the client on another host",
            )
        )
    if res.point.rate is not None and s.queue_delay_ms.count:
        q = s.queue_delay_ms
        if res.point.max_concurrency is None and q.p99 > LAG_WARN_MS:
            out.append(
                BenchWarning(
                    "send-lag",
                    f"requests were sent late against the arrival schedule: p99 {q.p99:.2f} ms",
                    f"run with --workers {workers + 1} or a lower --rate",
                )
            )
    failed = s.requests - s.ok
    if failed:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(s.errors.items()))
        out.append(
            BenchWarning(
                "errors",
                f"{failed} of {s.requests} requests failed ({kinds}); they are excluded "
                "from latency statistics",
                "see the request records (--out) for the server's messages",
            )
        )
    if s.length_warnings:
        out.append(
            BenchWarning(
                "length-mismatch",
                f"{s.length_warnings} requests returned a different number of output tokens "
                "than requested, reported or counted",
                f"check --engine ({cfg.engine}) sends the server's ignore_eos/min_tokens fields, "
                "and --tokenizer matches the served model",
            )
        )
    if 0 < s.ok < 100:
        out.append(
            BenchWarning(
                "few-samples",
                f"only {s.ok} successful requests: p99 values rest on very few samples",
                "raise --requests or --duration",
            )
        )
    return out


# ---------------------------------------------------------------------------------------
# output


class JsonlSink:
    """Versioned JSONL: one ``meta`` line, then per load point its ``request`` lines and one
    ``point`` line, flushed to disk as each point ends. Format history: 1 = first version."""

    def __init__(self, path: Path) -> None:
        try:
            self._f: IO[str] = path.open("w", encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"--out: cannot write {path}: {exc}") from None
        self.path = path

    def _write(self, obj: dict[str, Any]) -> None:
        self._f.write(json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n")

    def _flush(self) -> None:
        self._f.flush()
        os.fsync(self._f.fileno())

    def start(self, meta: dict[str, Any]) -> None:
        self._write(meta)
        self._flush()

    def begin(self, point: LoadPoint, trial: int) -> None:
        pass

    def point(self, res: PointResult) -> None:
        for rec in res.records:
            self._write(
                {"type": "request", "point": res.point.label, "trial": res.trial, **rec.to_json()}
            )
        self._write(point_json(res))
        self._flush()

    def close(self) -> None:
        self._f.close()


def _meta(cfg: BenchConfig, run_id: str, model: str, version: str | None) -> dict[str, Any]:
    return {
        "type": "meta",
        "format": FORMAT,
        "run_id": run_id,
        "inferlab_version": __version__,
        "metrics_version": METRICS_VERSION,
        "model": model,
        "engine": cfg.engine,
        "engine_version": version,
        "workload": workload_descriptor(cfg),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": os.uname().nodename,
        "config": json.loads(cfg.model_dump_json()),  # holds the key's variable name, not its value
    }


def point_json(res: PointResult) -> dict[str, Any]:
    p = res.point
    return {
        "type": "point",
        "label": p.label,
        "trial": res.trial,
        "started_at": res.started_at,
        "ended_at": res.ended_at,
        "concurrency": p.concurrency,
        "rate": p.rate,
        "max_concurrency": p.max_concurrency,
        "workers": res.workers,
        "interrupted": res.interrupted,
        "rejected": res.rejected,
        "loop_lag_ms": res.loop_lag_ms.to_json(),
        "summary": res.summary.to_json(),
        "warnings": [w.to_json() for w in res.warnings],
        **({"clients": res.clients} if res.clients else {}),
    }


# ---------------------------------------------------------------------------------------
# the sweep


def run_bench(
    cfg: BenchConfig,
    events: BenchEvents | None = None,
    out: Path | None = None,
    sinks: Sequence[ResultSink] = (),
    cells: set[tuple[str, int]] | None = None,
) -> BenchResult:
    """Measure every load point × trial of ``cfg``; each finished point goes to every sink at
    once; with ``cells``, only those (label, trial) cells are measured. Raises ``ConnectError``/
    ``ServerRejected``/``ConfigError`` for what the user must fix (after handing what was
    measured to the sinks)."""
    events = events or BenchEvents()
    engine = get_engine(cfg.engine)
    ep = Endpoint.parse(cfg.url)
    headers = _headers(cfg)
    path = "/v1/chat/completions" if cfg.endpoint == "chat" else "/v1/completions"
    events.message(f"checking {ep.base} ...")
    model, version = _preflight(cfg, ep, engine, headers)
    tokenizer = _tokenizer(cfg, ep, engine, headers)
    if tokenizer is None and cfg.workload.kind == "random":
        raise TokenizerError(
            f"random prompts of exact length need a tokenizer: {ep.base} has no working "
            "/tokenize; pass --tokenizer DIR (a Hugging Face tokenizer directory)"
        )
    run_id = uuid.uuid4().hex[:12]
    all_sinks: list[ResultSink] = ([JsonlSink(out)] if out is not None else []) + list(sinks)
    meta = _meta(cfg, run_id, model, version)
    result = BenchResult(run_id=run_id, model=model, url=ep.base, points=[], engine_version=version)
    fmt = HttpClient(ep, headers={})  # builds request bytes only; never connects
    try:
        for sink in all_sinks:
            sink.start(meta)
        for pi, point in enumerate(plan_points(cfg)):
            for trial in range(cfg.trials):
                if cells is not None and (point.label, trial) not in cells:
                    continue  # already measured (a resumed campaign)
                for sink in all_sinks:
                    sink.begin(point, trial)
                res = _run_point(
                    cfg,
                    pi,
                    point,
                    ep,
                    engine,
                    headers,
                    path,
                    model,
                    tokenizer,
                    fmt,
                    run_id,
                    events,
                    trial,
                )
                result.points.append(res)
                for sink in all_sinks:
                    sink.point(res)
                events.point_finished(res)
                if res.rejected:
                    raise ServerRejected(
                        f"{ep.base}{path} rejected the first requests of {point.label}: "
                        f"{res.rejected}"
                    )
                if res.interrupted:
                    result.interrupted = True
                    return result
    finally:
        for sink in all_sinks:
            sink.close()
    return result


def _run_point(
    cfg: BenchConfig,
    pi: int,
    point: LoadPoint,
    ep: Endpoint,
    engine: EngineSpec,
    headers: dict[str, str],
    path: str,
    model: str,
    tokenizer: LocalTokenizer | ServerTokenizer | None,
    fmt: HttpClient,
    run_id: str,
    events: BenchEvents,
    trial: int = 0,
) -> PointResult:
    workers = cfg.workers or auto_workers(point.streams, local_server=_is_loopback(ep.host))
    started_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    pi = pi * 1000 + trial  # fresh prompts (and arrival draws) for every trial
    offsets: list[float] | None = None
    if point.rate is not None:
        offsets = arrival_offsets(
            point.rate,
            arrival=cfg.arrival,
            burstiness=cfg.burstiness,
            count=cfg.requests,
            duration_s=cfg.duration_s,
            seed=cfg.seed + pi,
        )
        n = len(offsets)
        cycle = False
    elif cfg.requests is not None:
        n, cycle = cfg.requests, False
    else:
        n, cycle = min(4096, max(256, 8 * (point.concurrency or 1))), True
    spec = cfg.workload.model_copy(update={"seed": cfg.workload.seed + 1000 * pi})
    events.message(f"{point.label}: preparing {n + cfg.warmup} prompts ...")
    prompts = make_prompts(spec, n + cfg.warmup, tokenizer)

    def items(ps: list[Prompt], base: int, tag: str) -> list[Item]:
        return [
            Item(
                index=base + i,
                request_id=f"{run_id}-{pi}-{tag}{i}",
                data=fmt.build(
                    "POST",
                    path,
                    build_body(p, model=model, endpoint=cfg.endpoint, engine=engine),
                    request_id=f"{run_id}-{pi}-{tag}{i}",
                ),
                input_tokens=p.input_tokens,
                output_tokens=p.output_tokens,
            )
            for i, p in enumerate(ps)
        ]

    records: list[RequestRecord] = []
    texts: list[list[str]] = []
    interrupted = False
    rejected: str | None = None
    if cfg.warmup:
        warm_items = items(prompts[: cfg.warmup], -cfg.warmup, "w")
        events.point_started(point, len(warm_items), True)
        wjobs = _split_jobs(
            point
            if point.concurrency
            else LoadPoint(point.label, concurrency=min(cfg.warmup, point.streams)),
            warm_items,
            workers,
            warmup=True,
            cfg=cfg,
            headers=headers,
            ep=ep,
            offsets=None,
            cycle=False,
        )
        wres, interrupted = _run_phase(wjobs, events)
        for r in wres:
            records.extend(r.records)
            texts.extend(r.texts)
            rejected = rejected or r.rejected
    main_items = items(prompts[cfg.warmup :], 0, "")
    lag: list[int] = []
    nworkers = 0
    if not interrupted and rejected is None:
        events.point_started(point, None if cycle else len(main_items), False)
        jobs = _split_jobs(
            point,
            main_items,
            workers,
            warmup=False,
            cfg=cfg,
            headers=headers,
            ep=ep,
            offsets=offsets,
            cycle=cycle,
        )
        nworkers = len(jobs)
        wres, interrupted = _run_phase(jobs, events)
        for r in wres:
            records.extend(r.records)
            texts.extend(r.texts)
            lag.extend(r.loop_lag_ns)
            rejected = rejected or r.rejected
        interrupted = interrupted or any(r.interrupted for r in wres)
    order = sorted(
        range(len(records)), key=lambda i: (records[i].warmup is False, records[i].send_ns)
    )
    records = [records[i] for i in order]
    texts = [texts[i] for i in order]
    counter = tokenizer
    events.message(f"{point.label}: counting tokens ...")
    try:
        assign_token_counts(records, texts, counter)
    except TokenizerError:
        assign_token_counts(records, texts, None)
    summary = summarize(
        records,
        slo_ttft_ms=cfg.slo.ttft_ms,
        slo_tpot_ms=cfg.slo.tpot_ms,
        slo_e2e_ms=cfg.slo.e2e_ms,
        seed=cfg.seed,
    )
    res = PointResult(
        point=point,
        records=records,
        summary=summary,
        loop_lag_ms=describe([x / 1e6 for x in lag]),
        workers=nworkers,
        interrupted=interrupted and rejected is None,
        rejected=rejected,
        trial=trial,
        started_at=started_at,
        ended_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )
    res.warnings = _warnings(cfg, res, nworkers)
    return res
