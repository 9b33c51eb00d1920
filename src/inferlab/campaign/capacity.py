"""Capacity at SLO against a running endpoint: closed-loop probes chosen by bracketing and
bisection (``stats.capacity``), each a stored load point that stops by the sweep's own rule
(``requests = "auto"``: adaptive stopping), the result stored as a ``capacity`` analysis.

``find_capacity`` is the library call behind ``inferlab bench --capacity UP_TO``. A probe
measured with a starved client (untrusted) or interrupted counts as undecided: it narrows
nothing."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferlab.campaign.bench import bench_with_record
from inferlab.campaign.clock import ModelClock
from inferlab.config.bench import BenchConfig
from inferlab.errors import ConfigError
from inferlab.load.bench import BenchEvents, BenchResult
from inferlab.stats.capacity import (
    Bracket,
    MarginSample,
    bracket,
    isotonic_capacity,
    next_probe,
)
from inferlab.stats.slo import LIMITS, SloState, assess_slo, margin_replicates
from inferlab.stats.summary import Interval
from inferlab.store import Store

__all__ = ["CAPACITY_KIND", "CapacityResult", "Probe", "check_capacity", "find_capacity"]

#: the ``analyses.kind`` a capacity result is stored under (its name: the SLO's text)
CAPACITY_KIND = "capacity"


@dataclass(frozen=True)
class Probe:
    """One measured concurrency: the SLO's state there, its margin (largest percentile/limit
    ratio), goodput share, requests counted, the stored run ids and why it stopped."""

    concurrency: int
    state: SloState
    margin: float
    goodput: float
    requests: int
    run_ids: tuple[int, ...] = ()
    stop: str | None = None
    trusted: bool = True  # False: a starved client or an interruption (then undecided)

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["run_ids"] = list(self.run_ids)
        d["margin"] = None if math.isnan(self.margin) else self.margin
        return d


@dataclass(frozen=True)
class CapacityResult:
    """The capacity at ``slo``: the verdicts' bracket, the isotonic estimate with its
    bootstrap interval (None with fewer than two probes), every probe, and why the search
    stopped (``bracketed``, ``top holds``, ``holds nowhere``, ``budget``, ``interrupted``)."""

    slo: str
    engine: str
    probes: tuple[Probe, ...]
    bracket: Bracket
    estimate: Interval | None
    stopped: str
    up_to: int
    simulated: bool = field(default=False)
    workload: str = ""  # the workload as JSON (two capacities compare only under the same)

    def to_json(self) -> dict[str, Any]:
        b = self.bracket
        return {
            "slo": self.slo,
            "engine": self.engine,
            "simulated": self.simulated,
            "holds_at": b.holds_at,
            "fails_at": b.fails_at,
            "low": b.low,
            "high": b.high,
            "estimate": self.estimate.to_json() if self.estimate is not None else None,
            "stopped": self.stopped,
            "up_to": self.up_to,
            "workload": self.workload,
            "probes": [p.to_json() for p in self.probes],
        }

    @property
    def sentence(self) -> str:
        """``capacity at SLO …: 10–11 (holds at 10, fails at 12); isotonic 10.6 [10.2–11.0]``."""
        b = self.bracket
        top = max((p.concurrency for p in self.probes), default=0)
        span = f"{b.low}" if b.high == b.low else f"{b.low}–{b.high}"
        if b.high is None:
            span = f"≥ {b.low} (nothing failed with confidence up to C={top})"
        fails = f", fails at C={b.fails_at}" if b.fails_at is not None else ""
        text = f"capacity at SLO {self.slo}: C {span} (holds at C={b.holds_at}{fails})"
        e = self.estimate
        if e is not None and not math.isnan(e.low):
            text += f"; isotonic estimate C≈{e.estimate:.1f} [{e.low:.1f}–{e.high:.1f}]"
        sim = "SIMULATED " if self.simulated else ""
        return f"{sim}{text}; {len(self.probes)} probes, stopped: {self.stopped}"


def check_capacity(cfg: BenchConfig, up_to: int) -> None:
    """ConfigError for what the search cannot do: no percentile limit, or rate points."""
    dist = [k for k in cfg.slo.limits() if LIMITS[k].statistic is not None]
    if not dist:
        keys = ", ".join(k for k, v in LIMITS.items() if v.statistic is not None)
        raise ConfigError(f"--capacity: needs a percentile limit in --slo / [slo] ({keys})")
    if cfg.rate:
        raise ConfigError("--capacity: searches closed-loop concurrency; give no --rate")
    if up_to < 1:
        raise ConfigError(f"--capacity: the highest concurrency to try must be ≥ 1, got {up_to}")


def find_capacity(
    cfg: BenchConfig,
    up_to: int,
    *,
    max_probes: int = 12,
    events: BenchEvents | None = None,
    db: Path | Store | None = None,
    campaign: str = "bench",
    config: str | None = None,
    clock: ModelClock | None = None,
    config_id: int | None = None,
    resamples: int = 1000,
    on_probe: Callable[[Probe], None] | None = None,
) -> tuple[CapacityResult, list[int]]:
    """The highest concurrency ≤ ``up_to`` at which ``cfg.slo`` holds (see the module
    docstring), starting at ``cfg.concurrency[0]`` (1 when not given); every probe is stored
    with ``db`` and the result too. Returns it with the stored run ids."""
    check_capacity(cfg, up_to)
    limits = cfg.slo.limits()
    start = cfg.concurrency[0] if cfg.concurrency else 1
    states: dict[int, SloState] = {}
    probes: list[Probe] = []
    samples: list[MarginSample] = []
    run_ids: list[int] = []
    engine, model, stopped = cfg.engine or "openai", "", "budget"
    while len(probes) < max_probes:
        c = next_probe(states, start, up_to)
        if c is None:
            stopped = _why_stopped(states, up_to)
            break
        pcfg = cfg.model_copy(update={"concurrency": [c], "rate": []})
        result, ids = bench_with_record(
            pcfg, events, db=db, campaign=campaign, config=config, clock=clock,
            config_id=config_id,
        )  # fmt: skip
        engine, model = result.engine, result.model
        run_ids += ids
        probe, sample = _judge(result, c, limits, tuple(ids), cfg.seed + c, resamples)
        probes.append(probe)
        states[c] = probe.state
        samples += [sample] if probe.trusted else []
        if on_probe is not None:
            on_probe(probe)
        if result.interrupted:
            stopped = "interrupted"
            break
    out = CapacityResult(
        cfg.slo.text, engine, tuple(probes), bracket(states), isotonic_capacity(samples),
        stopped, up_to, simulated=engine == "sim",
        workload=json.dumps(cfg.workload.model_dump(mode="json"), sort_keys=True),
    )  # fmt: skip
    if db is not None and probes:
        _store(db, out, campaign, config or f"{engine}:{model}", config_id)
    return out, run_ids


def _judge(
    result: BenchResult,
    c: int,
    limits: dict[str, float],
    ids: tuple[int, ...],
    seed: int,
    resamples: int,
) -> tuple[Probe, MarginSample]:
    """One probe's verdict and margin from its records (every trial's)."""
    recs = [r for p in result.points for r in p.records]
    slo = assess_slo(recs, limits, seed=seed)
    untrusted = any(p.trust.state != "trusted" or p.interrupted for p in result.points)
    state: SloState = "undecided" if untrusted or slo.state is None else slo.state
    margin, reps = margin_replicates(recs, limits, resamples=resamples, seed=seed)
    stop = result.points[-1].stop if result.points else None
    probe = Probe(
        c, state, margin, slo.goodput.estimate, slo.requests, ids,
        stop.reason if stop is not None else None, not untrusted,
    )  # fmt: skip
    return probe, MarginSample(c, margin, reps, slo.requests)


def _why_stopped(states: dict[int, SloState], up_to: int) -> str:
    b = bracket(states)
    if b.fails_at is None:
        return "top holds" if states.get(up_to) == "holds" else "top undecided"
    return "holds nowhere" if b.fails_at == 1 else "bracketed"


def _store(
    db: Path | Store, result: CapacityResult, campaign: str, config: str, config_id: int | None
) -> None:
    store = db if isinstance(db, Store) else Store(db)
    try:
        with store.transaction():
            found = store.latest_config(campaign, config) if config_id is None else None
            store.add_analysis(
                CAPACITY_KIND,
                result.slo,
                result.to_json(),
                campaign=campaign,
                config_id=config_id if found is None else found[0],
            )
    finally:
        if store is not db:
            store.close()
