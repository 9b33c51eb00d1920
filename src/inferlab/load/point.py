"""One load point × trial: prompts, warmup, the measured phase, then its summary and trust.

A fixed-count point (``requests = N``, or a duration) runs its requests and stops. An adaptive
point (``requests = "auto"``) runs until its stopping rule (``load.adaptive.choose_rule``, asked
by ``load.stopping.RuleMonitor``) says its estimate is precise enough (or a sequential A/B
against a stored baseline is settled, or the cap or duration is reached); its ramp-up (each
user's first request) and drain (requests in flight at the stop) are stored marked and left out
of the statistics, and its throughput is measured over the steady window between them.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field, replace

from inferlab.config.bench import BenchConfig
from inferlab.config.pattern import Replay
from inferlab.config.schedule import Schedule
from inferlab.engines import EngineSpec
from inferlab.errors import TokenizerError
from inferlab.load.adaptive import BaselineRef, PointFacts, choose_rule
from inferlab.load.budget import point_budget
from inferlab.load.http import Endpoint, HttpClient
from inferlab.load.jobs import Item, WorkerJob
from inferlab.load.phase import run_phase
from inferlab.load.quality import point_warnings
from inferlab.load.replay import plan_replay
from inferlab.load.results import BenchEvents, LoadPoint, PointResult
from inferlab.load.schedule import arrival_offsets
from inferlab.load.sessions import ChatTarget, SessionScript, conversations
from inferlab.load.steady import final_stop, summarize_steady
from inferlab.load.stopping import RuleMonitor
from inferlab.load.tokens import LocalTokenizer, ServerTokenizer, assign_token_counts
from inferlab.load.traces import TraceRequest
from inferlab.load.workload import Prompt, build_body, make_prompts
from inferlab.records import RequestRecord
from inferlab.stats.metrics import PointSummary, summarize
from inferlab.stats.slo import assess_slo
from inferlab.stats.stopping import StopRecord
from inferlab.stats.summary import describe
from inferlab.stats.trust import assess

__all__ = ["Sweep", "auto_workers", "judge", "run_point", "summary_of", "with_slo"]

_STREAMS_PER_WORKER = 256


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


@dataclass
class Sweep:
    """What every point of one sweep shares."""

    cfg: BenchConfig
    ep: Endpoint
    engine: EngineSpec
    headers: dict[str, str]
    path: str
    model: str
    tokenizer: LocalTokenizer | ServerTokenizer | None
    fmt: HttpClient
    run_id: str
    events: BenchEvents
    baselines: dict[str, BaselineRef] = field(default_factory=dict)  # label → sequential ref
    traces: dict[str, list[TraceRequest]] = field(default_factory=dict)  # file → parsed trace
    max_model_len: int | None = None  # the model's context (tokens), when the server says
    #: the conversations of the sessions point being measured (``split_jobs`` deals them)
    pending_scripts: list[SessionScript] = field(default_factory=list)

    def workers(self, point: LoadPoint) -> int:
        cfg = self.cfg
        if cfg.workers:
            return cfg.workers
        if cfg.client_cpus:
            return auto_workers(point.streams, len(cfg.client_cpus))
        return auto_workers(point.streams, local_server=_is_loopback(self.ep.host))

    def items(self, prompts: list[Prompt], base: int, tag: str, pi: int) -> list[Item]:
        cfg = self.cfg
        out = []
        for i, p in enumerate(prompts):
            rid = f"{self.run_id}-{pi}-{tag}{i}"
            body = build_body(p, model=self.model, endpoint=cfg.endpoint, engine=self.engine)
            out.append(
                Item(
                    index=base + i,
                    request_id=rid,
                    data=self.fmt.build("POST", self.path, body, request_id=rid),
                    input_tokens=p.input_tokens,
                    output_tokens=p.output_tokens,
                )
            )
        return out


@dataclass
class _Tools:
    """What a point's pattern may ask of the sweep while it plans (``config.schedule.Tools``)."""

    sw: Sweep
    pi: int

    def arrivals(
        self,
        rate: float,
        arrival: str,
        burstiness: float,
        count: int | None,
        duration_s: float | None,
    ) -> list[float]:
        seed = self.sw.cfg.seed + self.pi
        return arrival_offsets(
            rate,
            arrival=arrival,
            burstiness=burstiness,
            count=count,
            duration_s=duration_s,
            seed=seed,
        )

    def trace(self, pattern: Replay) -> Schedule:
        sw, cfg = self.sw, self.sw.cfg
        sw.events.message(f"{pattern.label}: synthesising the trace's prompts ...")
        seed = cfg.workload.seed + 1000 * self.pi
        plan = plan_replay(
            pattern,
            sw.traces,
            sw.tokenizer,
            warmup=cfg.warmup,
            seed=seed,
            max_model_len=sw.max_model_len,
        )
        given = (plan.warmup, plan.prompts)
        return Schedule(
            len(plan.prompts), pattern.streams, plan.offsets, given=given, refused=plan.refused
        )


def split_jobs(
    sw: Sweep, plan: Schedule, items: list[Item], workers: int, *, warmup: bool
) -> list[WorkerJob]:
    """One job per worker: its share of the items and of the streams (or of the arrivals and
    their cap), or of the conversations."""
    cfg = sw.cfg
    if plan.offsets is None and plan.streams is not None:
        workers = max(1, min(workers, plan.streams))
    if plan.turns is not None and not warmup:
        return _session_jobs(sw, workers)
    cycle = plan.cycle
    jobs = []
    for w in range(workers):
        mine = items[w::workers]
        if not mine and not cycle:
            continue
        job = WorkerJob(
            worker=w,
            endpoint=sw.ep,
            items=mine,
            warmup=warmup,
            timeout_s=cfg.timeout_s,
            stall_timeout_s=cfg.stall_timeout_s,
            headers=sw.headers,
            duration_s=None if warmup else cfg.duration_s,
            cycle=cycle,
            progress=cfg.adaptive and not warmup,
            cpus=cfg.client_cpus,
            not_before_ns=None if warmup else cfg.not_before_ns,
        )
        if plan.offsets is None:  # closed loop: a share of the streams
            c = plan.streams or 1
            job.concurrency = c // workers + (w < c % workers)
            if warmup:
                job.concurrency = min(job.concurrency, len(mine)) or 1
        else:
            job.offsets_s = plan.offsets[w::workers]
            if plan.streams:
                mc = plan.streams
                job.max_concurrency = max(1, mc // workers + (w < mc % workers))
        jobs.append(job)
    for i, j in enumerate(jobs):
        j.worker = i
    return jobs


def _session_jobs(sw: Sweep, workers: int) -> list[WorkerJob]:
    """A sessions point's jobs: the conversations dealt round-robin to the workers."""
    scripts = sw.pending_scripts
    workers = max(1, min(workers, len(scripts)))
    target = ChatTarget(sw.path, sw.model, sw.cfg.endpoint == "chat")
    return [
        WorkerJob(
            worker=w,
            endpoint=sw.ep,
            items=[],
            timeout_s=sw.cfg.timeout_s,
            stall_timeout_s=sw.cfg.stall_timeout_s,
            headers=sw.headers,
            cpus=sw.cfg.client_cpus,
            not_before_ns=sw.cfg.not_before_ns,
            sessions=scripts[w::workers],
            target=target,
        )
        for w in range(workers)
    ]


@dataclass
class _Measured:
    records: list[RequestRecord] = field(default_factory=list)
    texts: list[list[str]] = field(default_factory=list)
    lag_ns: list[int] = field(default_factory=list)
    workers: int = 0
    interrupted: bool = False
    rejected: str | None = None
    monitor: RuleMonitor | None = None
    finish_ns: int | None = None
    refused: int = 0  # replay: requests beyond the model's context, not sent


def _plan(sw: Sweep, point: LoadPoint, pi: int) -> tuple[Schedule, list[Prompt], list[Prompt]]:
    """(schedule, warm-up prompts, measured prompts) of a point: its pattern's schedule, the
    workload's prompts for it (or the pattern's own, a trace's)."""
    cfg = sw.cfg
    budget = point_budget(cfg, point.pattern.loop_concurrency)
    plan = point.pattern.schedule(budget, _Tools(sw, pi))
    if plan.given is not None:
        return plan, list(plan.given[0]), list(plan.given[1])
    n = plan.prompts
    spec = cfg.workload.model_copy(update={"seed": cfg.workload.seed + 1000 * pi})
    kind = f" ({spec.label})" if spec.label != spec.kind else ""
    sw.events.message(f"{point.label}: preparing {n + cfg.warmup} prompts{kind} ...")
    prompts = make_prompts(spec, n + cfg.warmup, sw.tokenizer)
    return plan, prompts[: cfg.warmup], prompts[cfg.warmup :]


def _warmup(sw: Sweep, point: LoadPoint, items: list[Item], workers: int, m: _Measured) -> None:
    """The warm-up, as a closed loop: the point's own, or its streams' (at most one per item)."""
    sw.events.point_started(point, len(items), True)
    c = point.pattern.loop_concurrency or min(len(items), point.streams)
    jobs = split_jobs(sw, Schedule(len(items), c), items, workers, warmup=True)
    out = run_phase(jobs, sw.events.progress)
    m.interrupted = out.interrupted
    for r in out.results:
        m.records.extend(r.records)
        m.texts.extend(r.texts)
        m.rejected = m.rejected or r.rejected


def _measure(
    sw: Sweep, point: LoadPoint, plan: Schedule, items: list[Item], workers: int, m: _Measured
) -> None:
    loop = point.pattern.loop_concurrency
    cfg = point_budget(sw.cfg, loop)  # ≥ MIN_WAVES waves of C (load.budget)
    sw.events.point_started(point, None if plan.cycle else plan.prompts, False)
    jobs = split_jobs(sw, plan, items, workers, warmup=False)
    m.workers = len(jobs)
    c = loop or 1
    rule = choose_rule(cfg, PointFacts(c, sw.baselines.get(point.label)))
    if rule.live:
        m.monitor = RuleMonitor(rule, c, cfg.max_requests, cfg.max_duration_s, cfg.seed)
    out = run_phase(jobs, sw.events.progress, m.monitor)
    m.finish_ns = out.finish_ns
    for r in out.results:
        m.records.extend(r.records)
        m.texts.extend(r.texts)
        m.lag_ns.extend(r.loop_lag_ns)
        m.rejected = m.rejected or r.rejected
    m.interrupted = out.interrupted or any(r.interrupted for r in out.results)
    if m.finish_ns is not None:
        for rec in m.records:
            if not rec.warmup and rec.dropped is None and rec.end_ns > m.finish_ns:
                rec.dropped = "drain"


def run_point(sw: Sweep, pi: int, point: LoadPoint, trial: int = 0) -> PointResult:
    """Measure one point × trial (see the module docstring)."""
    workers = sw.workers(point)
    started_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    pi = pi * 1000 + trial  # fresh prompts (and arrival draws) for every trial
    plan, warm, prompts = _plan(sw, point, pi)
    m = _Measured(refused=plan.refused)
    if warm:
        _warmup(sw, point, sw.items(warm, -len(warm), "w", pi), workers, m)
    if not m.interrupted and m.rejected is None:
        main: list[Item] = []
        if plan.turns is not None:
            said, lengths = [p.text or "" for p in prompts], [p.output_tokens for p in prompts]
            ids, fixed = f"{sw.run_id}-{pi}", sw.engine.fixed_length_fields
            sw.pending_scripts = conversations(plan.turns, plan.think_s, said, lengths, ids, fixed)
        else:
            main = sw.items(prompts, 0, "", pi)
        _measure(sw, point, plan, main, workers, m)
    order = sorted(
        range(len(m.records)), key=lambda i: (not m.records[i].warmup, m.records[i].send_ns)
    )
    records = [m.records[i] for i in order]
    texts = [m.texts[i] for i in order]
    for rec in records:  # a first turn's prompt is its message, as the client counted it
        if rec.turn == 0 and not rec.warmup and 0 <= rec.index < len(prompts):
            rec.input_tokens = prompts[rec.index].input_tokens
    sw.events.message(f"{point.label}: counting tokens ...")
    try:
        assign_token_counts(records, texts, sw.tokenizer)
    except TokenizerError:
        assign_token_counts(records, texts, None)
    return _result(sw, point, trial, records, m, started_at)


def summary_of(
    cfg: BenchConfig, records: list[RequestRecord], stop: StopRecord | None
) -> PointSummary:
    """The point's summary: over its steady window when it stopped adaptively (``stop``),
    else over every measured request."""
    if stop is not None:
        return with_slo(cfg, records, summarize_steady(records, stop.window_ns, seed=cfg.seed))
    return with_slo(cfg, records, summarize(records, seed=cfg.seed))


def with_slo(cfg: BenchConfig, records: list[RequestRecord], s: PointSummary) -> PointSummary:
    """``s`` with the SLO of ``cfg`` at its point (``stats.slo``): goodput as a share and per
    second of the window, whether it holds; ``s`` itself when no SLO was given."""
    if cfg.slo.empty:
        return s
    slo = assess_slo(records, cfg.slo.limits(), seed=cfg.seed)
    rate = slo.good / s.duration_s if s.duration_s > 0 else 0.0
    return replace(s, slo=slo, slo_attainment=slo.goodput.estimate, goodput_req_s=rate)


def judge(cfg: BenchConfig, res: PointResult) -> None:
    """Set the point's trust (``stats.trust``) and measurement-quality warnings from its
    summary and client loop lag."""
    summary, lag = res.summary, res.loop_lag_ms
    late = summary.queue_delay_ms
    scheduled = res.point.pattern.lateness.untrusts
    res.trust = assess(
        lag_p99_ms=lag.p99 if lag.count else None,
        late_p99_ms=late.p99 if scheduled and late.count else None,
        tpot_median_ms=summary.tpot_ms.p50 if summary.tpot_ms.count else None,
        interrupted=res.interrupted,
        lag_limit_ms=cfg.lag_limit_ms,
        workers=res.workers,
        failed=(summary.requests - summary.ok, summary.requests),
    )
    res.warnings = point_warnings(cfg, res, res.workers)


def _result(
    sw: Sweep,
    point: LoadPoint,
    trial: int,
    records: list[RequestRecord],
    m: _Measured,
    started_at: str,
) -> PointResult:
    cfg = sw.cfg
    stop = None
    if m.monitor is not None:
        c = point.pattern.loop_concurrency or 1
        stop = final_stop(records, m.monitor, m.finish_ns, m.interrupted, c)
    res = PointResult(
        point=point,
        records=records,
        summary=summary_of(cfg, records, stop),
        loop_lag_ms=describe([x / 1e6 for x in m.lag_ns]),
        workers=m.workers,
        interrupted=m.interrupted and m.rejected is None,
        rejected=m.rejected,
        trial=trial,
        started_at=started_at,
        ended_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        stop=stop,
        refused=m.refused,
        context=sw.max_model_len,
    )
    judge(cfg, res)
    return res
