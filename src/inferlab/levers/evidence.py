"""What the lever rules read, gathered from the store once per campaign: configs, their
concurrency sweeps (median TPOT, throughput, scraped server values), decode profiles per load
point, log findings, recon, launch records and lever-applied evidence. Nothing is measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from inferlab.config.pattern import ClosedLoop, closed_concurrency
from inferlab.errors import ConfigError
from inferlab.stats.metrics import tpot_ms
from inferlab.stats.recheck import recheck_points
from inferlab.stats.summary import percentile
from inferlab.store import RunRow, Store
from inferlab.store.checks import LeverCheckItem
from inferlab.store.interleave import baseline_passes, nearest_pass
from inferlab.store.models import ProfileCapture, ReconBody
from inferlab.store.recheck import recheck_groups

__all__ = [
    "ConfigEvidence",
    "Evidence",
    "StoredProfile",
    "SweepPoint",
    "gather",
]


@dataclass(frozen=True)
class SweepPoint:
    """One closed-loop load point of a config: median TPOT (ms) over the measured requests of
    every trial, mean output throughput (tok/s) over trials, the per-trial TPOT samples, and
    scraped server values (each the maximum over trials)."""

    concurrency: int
    tpot_ms: float
    output_tok_s: float
    trials: tuple[tuple[float, ...], ...]
    server: Mapping[str, Any]
    started_at: str | None


@dataclass(frozen=True)
class StoredProfile:
    """A stored decode profile (``Profile.to_dict()``), with the load point it was captured at
    (``capture.point``; None when the store does not say)."""

    id: int
    name: str
    config: str | None
    concurrency: int | None
    rank: int
    data: Mapping[str, Any]
    created_at: str

    @property
    def label(self) -> str:
        return "?" if self.concurrency is None else ClosedLoop(self.concurrency).label

    @property
    def simulated(self) -> bool:
        return bool((self.data.get("capture") or {}).get("simulated"))


@dataclass
class ConfigEvidence:
    """Everything stored about one config (its newest content when the name was reused)."""

    name: str
    engine: str | None
    argv: list[str]
    env: dict[str, str]
    extra: dict[str, Any]
    sweep: dict[int, SweepPoint] = field(default_factory=dict)
    profiles: list[StoredProfile] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    lever_items: list[LeverCheckItem] | None = None  # None: no lever-applied record stored
    #: labels of its finished points that are not closed loop (``rate=4/s``): left out, said so
    open_loop: list[str] = field(default_factory=list)
    log_mined: bool = False
    first_run_at: str | None = None
    #: C → the baseline's nearest pass to this config's point when that is an interleaved
    #: one (``[load] interleave``, ``store.interleave``), and its description
    near: dict[int, tuple[SweepPoint, str]] = field(default_factory=dict)

    def series(self) -> list[tuple[int, float]]:
        """(C, median TPOT ms) per measured point, by C."""
        return [(c, p.tpot_ms) for c, p in sorted(self.sweep.items())]

    def found(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.findings if f["kind"] == kind]


@dataclass
class Evidence:
    """One campaign's evidence; ``configs`` in store order (the first is the baseline)."""

    campaign: str
    simulated: bool
    configs: dict[str, ConfigEvidence]
    loose_profiles: list[StoredProfile]  # stored without a config
    recon: list[dict[str, Any]]
    #: concurrency → why no measured ratio there counts (the baseline drifted, stats.recheck)
    refused: dict[int, str] = field(default_factory=dict)

    @property
    def baseline(self) -> str | None:
        return next(iter(self.configs), None)

    def has_anything(self) -> bool:
        return bool(self.loose_profiles) or any(
            c.sweep or c.profiles for c in self.configs.values()
        )


def _usable(r: RunRow, newest_hash: dict[str, str]) -> bool:
    """A finished closed-loop point of a config's newest content that may enter a verdict.
    ``trust`` and ``purpose`` are read when the store has them (untrusted points and
    profiling passes never count)."""
    if r.interrupted or r.rate is not None or closed_concurrency(r.label) is None:
        return False
    if newest_hash.get(r.config) != r.config_hash:
        return False
    if getattr(r, "trust", "trusted") == "untrusted":
        return False
    return getattr(r, "purpose", "measure") in (None, "measure")


def _configs(store: Store, campaign: str) -> dict[str, ConfigEvidence]:
    out: dict[str, ConfigEvidence] = {}
    for g in store.configs(campaign):  # a later row is newer content of its name;
        # assigning keeps the name's first position (the baseline stays first)
        out[g.name] = ConfigEvidence(g.name, g.engine, g.argv, g.env, g.extra)
    return out


def _sweeps(store: Store, campaign: str, configs: dict[str, ConfigEvidence]) -> None:
    hashes = {g.name: g.hash for g in store.configs(campaign)}
    groups: dict[tuple[str, int], list[RunRow]] = {}
    for r in store.runs(campaign=campaign):
        if _usable(r, hashes):
            groups.setdefault((r.config, closed_concurrency(r.label) or 0), []).append(r)
        elif (
            not r.interrupted
            and closed_concurrency(r.label) is None
            and r.config in configs
            and r.label not in configs[r.config].open_loop
        ):
            configs[r.config].open_loop.append(r.label)
    for (name, c), runs in groups.items():
        point = _point(store, c, runs)
        if point is not None and name in configs:
            configs[name].sweep[c] = point
    for ev in configs.values():
        starts = [p.started_at for p in ev.sweep.values() if p.started_at]
        ev.first_run_at = min(starts) if starts else None
    _nearest(store, campaign, configs, groups, hashes)


def _point(store: Store, c: int, runs: list[RunRow]) -> SweepPoint | None:
    """The ``SweepPoint`` of one config's runs at C=c; None without a TPOT sample."""
    trials = []
    for r in runs:
        recs = [x for x in store.requests(r.id) if x.counted and x.ok and x.event_ns]
        trials.append(tuple(t for t in (tpot_ms(x) for x in recs) if t is not None))
    pooled = [t for tr in trials for t in tr]
    if not pooled:
        return None
    server: dict[str, Any] = {}
    for r in runs:
        for k, v in (r.summary.get("server") or {}).items():
            if isinstance(v, (int, float)):
                server[k] = max(v, server.get(k, v))
    starts = sorted(r.started_at for r in runs if r.started_at)
    return SweepPoint(
        concurrency=c,
        tpot_ms=percentile(pooled, 50),
        output_tok_s=sum(float(r.summary.get("output_tok_s") or 0.0) for r in runs) / len(runs),
        trials=tuple(trials),
        server=server,
        started_at=starts[0] if starts else None,
    )


def _nearest(
    store: Store,
    campaign: str,
    configs: dict[str, ConfigEvidence],
    groups: Mapping[tuple[str, int], list[RunRow]],
    hashes: Mapping[str, str],
) -> None:
    """Each candidate's ``near``: the baseline's nearest pass at each of its points, where
    that is an interleaved pass whose runs are all trusted (``store.interleave``)."""
    base = next(iter(configs), None)
    passes = baseline_passes(store, campaign, base, hashes.get(base)) if base else {}
    for lb, ps in passes.items():
        c = closed_concurrency(lb)
        for name, ev in configs.items():
            runs = groups.get((name, c or 0), [])
            near = nearest_pass(ps, runs) if name != base and c is not None else None
            if near is None or near.before is None:
                continue
            if all(r.trust != "untrusted" for r in near.runs):
                point = _point(store, c or 0, list(near.runs))
                if point is not None:
                    ev.near[c or 0] = (point, near.describe())


#: a profiled decode step this much longer than the measured TPOT was slowed by the profiler
PROFILER_SLOWDOWN = 1.10


def at_measured_step(p: StoredProfile, sweep: Mapping[int, SweepPoint]) -> StoredProfile:
    """``p`` with its decode span taken at the measured TPOT of its point when the profiler
    visibly slowed the step (span > 1.1 × steps × TPOT). Kernel times barely move under the
    profiler but the host's time between them does (H200, vLLM 0.26, C=1: 4.54 ms profiled
    steps, 3.07 ms measured TPOT), so shares of the profiled span understate each kernel's
    share of the real step, and Amdahl ceilings drawn from them would be too low to bound.
    The host's time per step (``host``) is scaled by the same measured / profiled ratio: the
    profiler slowed the host by at least that much. A SIMULATED trace is left alone: it is
    synthesized from the timing model, at the story's time rather than the server's
    ``--time-scale``, and no profiler slows it."""
    if p.simulated:
        return p
    sw = sweep.get(p.concurrency) if p.concurrency is not None else None
    n = len(p.data.get("steps") or [])
    span = float(p.data.get("span_us") or 0.0)
    if sw is None or n == 0 or sw.tpot_ms <= 0 or span <= PROFILER_SLOWDOWN * n * sw.tpot_ms * 1e3:
        return p
    step = sw.tpot_ms * 1e3
    mean = dict(p.data.get("mean_step") or {})
    busy = float(mean.get("busy_us") or 0.0)
    mean.update(span_us=max(step, busy), idle_us=max(step - busy, 0.0))
    data = {**p.data, "span_us": n * max(step, busy), "profiled_span_us": span, "mean_step": mean}
    host = p.data.get("host")
    if host:
        r = n * step / span
        data["host"] = {**host, **{k: float(host[k]) * r for k in ("loop_us", "range_us")}}
    return replace(p, data=data)


def _profiles(store: Store, campaign: str) -> list[StoredProfile]:
    """Decode profiles, one per (config, load point): the newest of the lowest rank."""
    best: dict[tuple[str | None, int | None], StoredProfile] = {}
    for a in store.analyses.profiles(campaign):
        if a.data.segment != "decode":
            continue
        cap = a.data.capture or ProfileCapture()
        p = StoredProfile(
            id=a.id,
            name=a.name,
            config=a.config,
            concurrency=closed_concurrency(cap.point),
            rank=cap.rank or 0,
            data=a.data.to_json(),
            created_at=a.created_at,
        )
        key = (p.config, p.concurrency)
        old = best.get(key)
        if old is None or p.rank < old.rank or (p.rank == old.rank and p.id > old.id):
            best[key] = p
    return sorted(best.values(), key=lambda p: (p.concurrency or 0, p.id))


def _verifications(store: Store, campaign: str, configs: dict[str, ConfigEvidence]) -> None:
    for launch in store.verifications.launches(campaign):
        ev = configs.get(launch.config)
        if ev is not None and launch.detail.log_path:
            ev.log_mined = True  # the runner mines every launch log it started
    for lc in store.verifications.lever_checks(campaign):
        ev = configs.get(lc.config)
        if ev is not None:
            ev.lever_items = list(lc.detail.items)


def gather(store: Store, campaign: str) -> Evidence:
    """The campaign's evidence; ``ConfigError`` for an unknown campaign (naming the known)."""
    known = store.configs.names()
    if campaign not in known:
        raise ConfigError(
            f"levers: no campaign {campaign!r} in {store.path}"
            + (f" (campaigns: {', '.join(known)})" if known else " (the store has no campaigns)")
        )
    configs = _configs(store, campaign)
    _sweeps(store, campaign, configs)
    _verifications(store, campaign, configs)
    loose: list[StoredProfile] = []
    for p in _profiles(store, campaign):
        if p.config in configs:
            configs[p.config].profiles.append(at_measured_step(p, configs[p.config].sweep))
        else:
            loose.append(p)
    for f in store.findings(campaign):
        if f.config in configs:
            configs[f.config].findings.append(asdict(f))
            configs[f.config].log_mined = configs[f.config].log_mined or bool(f.source)
    simulated = any(c.engine == "sim" for c in configs.values()) or any(
        p.simulated for c in configs.values() for p in c.profiles
    )
    return Evidence(
        campaign=campaign,
        simulated=simulated,
        configs=configs,
        loose_profiles=loose,
        recon=[a.data.to_json() for a in store.analyses.of(ReconBody, "recon", campaign)],
        refused=_drifted(store, campaign, next(iter(configs), None)),
    )


def _drifted(store: Store, campaign: str, baseline: str | None) -> dict[int, str]:
    """The closed-loop points where the baseline's recheck moved (default thresholds, the
    same as the measured ratios of ``levers.predict``)."""
    if baseline is None:
        return {}
    out: dict[int, str] = {}
    for p in recheck_points(recheck_groups(store, campaign, baseline)):
        c = closed_concurrency(p.label)
        if p.drift and c is not None:
            out[c] = p.reason()
    return out
