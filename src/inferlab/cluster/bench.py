"""``inferlab bench --ray ADDRESS --clients N``: one load sweep from several client hosts.

One load-generator actor per client node (nodes started with the ``inferlab_client`` custom
resource), placed ``STRICT_SPREAD`` so no two share a host; each runs the existing worker
processes. The total concurrency, rate, cap and request count are split across the clients
(each with its own prompts), and every load point starts on all of them at one instant:
driver time + ``lead_s``, turned into each host's clock with its estimated offset
(:mod:`inferlab.cluster.clock`). The driver merges the records on its clock, tags each with
its client host, summarizes the whole, and stores it as one load point.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferlab import errors
from inferlab.campaign.parts.bench import StoreSink
from inferlab.cluster.actors import ClientActor, Measured
from inferlab.cluster.clock import ClockOffset, measure_offset, on_driver_clock, window_error_ns
from inferlab.cluster.connect import CLIENT_RESOURCE, alive_nodes, connect
from inferlab.config.bench import BenchConfig
from inferlab.errors import ConfigError, InferlabError
from inferlab.load.bench import (
    BenchEvents,
    BenchResult,
    JsonlSink,
    LoadPoint,
    PointResult,
    ResultSink,
    plan_points,
    workload_descriptor,
)
from inferlab.load.point import with_slo
from inferlab.load.results import BenchWarning
from inferlab.stats.metrics import summarize
from inferlab.stats.summary import describe

__all__ = ["LATE_START_MS", "bench_ray", "merge_point", "split_config"]

#: a client whose first request went out later than this after the common start is named
LATE_START_MS = 100.0


def _share(total: int, n: int, i: int) -> int:
    return total // n + (i < total % n)


def split_config(cfg: BenchConfig, clients: int) -> list[BenchConfig]:
    """The sweep each of ``clients`` hosts runs: concurrency, rate, cap, requests and warmup
    split so that they add up to ``cfg``'s, with its own prompt and arrival seeds."""
    if clients < 1:
        raise ConfigError(f"--clients {clients}: give at least 1")
    small = [c for c in cfg.concurrency if c < clients]
    if small:
        raise ConfigError(
            f"--concurrency {small[0]} is below --clients {clients}: every client needs at "
            "least one stream"
        )
    if cfg.max_concurrency is not None and cfg.max_concurrency < clients:
        raise ConfigError(f"--max-concurrency {cfg.max_concurrency} is below --clients {clients}")
    if cfg.points and clients > 1:  # each host would send the whole of each point
        raise ConfigError("[[load.points]]: not split across client hosts (--clients 1)")
    if cfg.trace is not None and clients > 1:  # each host would send the whole trace
        raise ConfigError("--trace: replay from one client (--clients 1), not split across hosts")
    if cfg.requests == "auto":  # one host's stopping rule cannot see the other hosts' requests
        raise ConfigError("--requests auto: not with --ray --clients; give a count or --duration")
    if isinstance(cfg.requests, int) and cfg.requests < clients:
        raise ConfigError(f"--requests {cfg.requests} is below --clients {clients}")
    out = []
    for i in range(clients):
        out.append(
            cfg.model_copy(
                update={
                    "concurrency": [_share(c, clients, i) for c in cfg.concurrency],
                    "rate": [r / clients for r in cfg.rate],
                    "max_concurrency": None
                    if cfg.max_concurrency is None
                    else _share(cfg.max_concurrency, clients, i),
                    "requests": _share(cfg.requests, clients, i)
                    if isinstance(cfg.requests, int)
                    else None,
                    "warmup": -(-cfg.warmup // clients),
                    "seed": cfg.seed + i,
                    "workload": cfg.workload.model_copy(
                        update={"seed": cfg.workload.seed + 7919 * i}
                    ),
                }
            )
        )
    return out


@dataclass(frozen=True)
class _Client:
    host: str  # "hostname:node-id prefix": unique even for several nodes on one host
    node_id: str
    actor: Any
    labels: list[str]  # its own label of every load point (its share of the load)


def merge_point(
    point: LoadPoint,
    trial: int,
    parts: Sequence[tuple[str, Measured, ClockOffset]],
    cfg: BenchConfig,
    start_ns: int,
) -> PointResult:
    """One load point from every client's part: records on the driver's clock (each host's
    offset subtracted), tagged with their host; the summary recomputed over all of them; the
    worst host's loop lag; every host's warnings, named; offsets, bounds and late starts in
    ``clients``."""
    results = [(h, m.point, off) for h, m, off in parts if m.point is not None]
    records = [on_driver_clock(r, off.offset_ns, h) for h, p, off in results for r in p.records]
    records.sort(key=lambda r: (r.warmup is False, r.send_ns))
    hosts: list[dict[str, Any]] = []
    warnings: list[BenchWarning] = []
    for h, p, off in results:
        mine = [r for r in records if r.client == h and not r.warmup and r.send_ns]
        late = (min(r.send_ns for r in mine) - start_ns) / 1e6 if mine else None
        hosts.append({"client": h, **off.to_json(), "requests": len(mine), "late_start_ms": late})
        warnings += [BenchWarning(w.kind, f"{h}: {w.message}", w.fix) for w in p.warnings]
        if late is not None and late > LATE_START_MS:
            warnings.append(
                BenchWarning(
                    "late-start",
                    f"{h} sent its first request {late:.0f} ms after the common start",
                    "give the clients a longer lead before the start (lead_s), or fewer prompts "
                    "to prepare per point",
                )
            )
    bounds = {h["client"]: int(h["bound_ns"]) for h in hosts}
    worst = max((p for _, p, _ in results), key=lambda p: p.loop_lag_ms.p99, default=None)
    summary = with_slo(cfg, records, summarize(records, seed=cfg.seed))
    starts = [p.started_at for _, p, _ in results if p.started_at]
    ends = [p.ended_at for _, p, _ in results if p.ended_at]
    return PointResult(
        point=point,
        records=records,
        summary=summary,
        loop_lag_ms=worst.loop_lag_ms if worst is not None else describe([]),
        workers=sum(p.workers for _, p, _ in results),
        warnings=warnings,
        interrupted=any(p.interrupted for _, p, _ in results),
        rejected=next((p.rejected for _, p, _ in results if p.rejected), None),
        trial=trial,
        started_at=min(starts) if starts else None,
        ended_at=max(ends) if ends else None,
        clients={
            "hosts": hosts,
            "window_error_ms": window_error_ns(records, bounds) / 1e6,
            "offset_method": "Cristian, minimum-RTT exchange; bound = RTT/2 per host",
        },
    )


def _place(ray: Any, cfgs: list[BenchConfig], skews: Sequence[int]) -> tuple[Any, list[_Client]]:
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    n = len(cfgs)
    pg = placement_group([{"CPU": 1.0, CLIENT_RESOURCE: 1.0}] * n, strategy="STRICT_SPREAD")
    try:
        ray.get(pg.ready(), timeout=60)
    except Exception:
        remove_placement_group(pg)
        raise ConfigError(
            f"--clients {n}: Ray could not place {n} load generators on distinct client nodes "
            "within 60 s (are the client nodes busy with another run?)"
        ) from None
    actors = [
        ray.remote(ClientActor)
        .options(
            num_cpus=1,
            resources={CLIENT_RESOURCE: 1},
            scheduling_strategy=PlacementGroupSchedulingStrategy(
                placement_group=pg, placement_group_bundle_index=i
            ),
        )
        .remote(c, scrape=False, skew_ns=skews[i] if i < len(skews) else 0)
        for i, c in enumerate(cfgs)
    ]
    placed = ray.get([a.placed.remote() for a in actors])
    clients = [
        _Client(f"{p.hostname}:{p.node_id[:8]}", p.node_id, a, [x.label for x in plan_points(c)])
        for a, p, c in zip(actors, placed, cfgs)
    ]
    return pg, clients


def _offset(ray: Any, actor: Any, rounds: int) -> ClockOffset:
    """The client's clock offset, from ``rounds`` round trips of a Ray call."""

    def read() -> int:
        return int(ray.get(actor.clock.remote()))

    return measure_offset(read, rounds)


def _raise_client_error(parts: Sequence[tuple[str, Measured, ClockOffset]]) -> None:
    for host, m, _ in parts:
        if m.error is not None:
            kind, message = m.error
            cls = getattr(errors, kind, InferlabError)
            if not (isinstance(cls, type) and issubclass(cls, InferlabError)):
                cls = InferlabError
            raise cls(f"client {host}: {message}")


def bench_ray(
    cfg: BenchConfig,
    *,
    address: str,
    clients: int,
    events: BenchEvents | None = None,
    out: Path | None = None,
    db: Path | None = None,
    campaign: str = "bench",
    config: str | None = None,
    lead_s: float = 2.0,
    skews_ns: Sequence[int] = (),
    rounds: int = 8,
) -> tuple[BenchResult, list[int]]:
    """Run the sweep from ``clients`` client nodes of the Ray cluster at ``address`` (see the
    module docstring); with ``db``, every merged point is stored as it ends. ``skews_ns``
    shifts each client's clock (a test seam). Returns the result and the stored run ids."""
    events = events or BenchEvents()
    parts_cfg = split_config(cfg, clients)
    ray = connect(address)
    have = [n for n in alive_nodes(ray) if n.resources.get(CLIENT_RESOURCE, 0) >= 1]
    if clients > len(have):
        raise ConfigError(
            f"--clients {clients}: the cluster has {len(have)} client node(s) (nodes started "
            f"with ray start --resources='{{\"{CLIENT_RESOURCE}\": 1}}')"
        )
    from ray.util.placement_group import remove_placement_group

    pg, hosts = _place(ray, parts_cfg, skews_ns)
    store = StoreSink(db, cfg, campaign, config) if db is not None else None
    sinks: list[ResultSink] = ([JsonlSink(out)] if out is not None else []) + (
        [store] if store is not None else []
    )
    result = BenchResult(run_id="", model=cfg.model or "", url=cfg.url, points=[])
    try:
        _sweep(ray, cfg, hosts, sinks, result, events, lead_s, rounds)
    finally:
        for s in sinks:
            s.close()
        for h in hosts:
            ray.kill(h.actor)
        remove_placement_group(pg)
    return result, store.run_ids if store is not None else []


def _sweep(
    ray: Any,
    cfg: BenchConfig,
    hosts: list[_Client],
    sinks: list[ResultSink],
    result: BenchResult,
    events: BenchEvents,
    lead_s: float,
    rounds: int,
) -> None:
    started = False
    for pi, point in enumerate(plan_points(cfg)):
        for trial in range(cfg.trials):
            events.message(f"{point.label}: clock offsets of {len(hosts)} client(s) ...")
            offs = [_offset(ray, h.actor, rounds) for h in hosts]
            for s in sinks:
                s.begin(point, trial)
            start = time.perf_counter_ns() + int(lead_s * 1e9)
            events.point_started(point, None, False)
            refs = [
                h.actor.measure.remote(h.labels[pi], trial, start + off.offset_ns)
                for h, off in zip(hosts, offs)
            ]
            got: list[Measured] = ray.get(refs)
            parts = [(h.host, m, off) for h, m, off in zip(hosts, got, offs)]
            if not started and any(m.point is not None for m in got):
                meta = next(m.meta for m in got if m.meta)
                meta = {**meta, "config": cfg.model_dump(mode="json"), "clients": len(hosts)}
                meta["workload"] = workload_descriptor(cfg)
                result.run_id, result.model = str(meta.get("run_id", "")), str(meta["model"])
                result.engine_version = meta.get("engine_version")
                for s in sinks:
                    s.start(meta)
                started = True
            if started:
                res = merge_point(point, trial, parts, cfg, start)
                result.points.append(res)
                for s in sinks:
                    s.point(res)
                events.point_finished(res)
                if res.interrupted:
                    result.interrupted = True
                    return
            _raise_client_error(parts)
