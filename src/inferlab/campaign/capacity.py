"""Capacity at SLO against a running endpoint: probes chosen by bracketing and bisection
(``stats.capacity``), each a stored load point that stops by the sweep's own rule
(``requests = "auto"``: adaptive stopping), the result stored as a ``capacity`` analysis.

The probes lie on a ``Ladder``: closed-loop concurrency 1, 2, 3, … (``bench --capacity
UP_TO``), or open-loop request rates of one step apart, ``step``, 2·``step``, … req/s
(``bench --capacity-rate UP_TO [--rate-step S]``); the bisection works on the ladder's index,
so a rate capacity is resolved to one step. A probe measured with a starved client
(untrusted) or interrupted counts as undecided: it narrows nothing.

The bracket's confidence is for the whole bisection (``stats.capacity_error``): each probe's
limits are decided at the Bonferroni level of the search's probe budget, each probe with its
own recorded bootstrap seed, and with a known launch-to-launch spread (``launch``) the bracket
is of the config's capacity across launches; without one, of this launch's."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from inferlab.campaign.bench import bench_with_record
from inferlab.campaign.clock import ModelClock
from inferlab.config.bench import BenchConfig
from inferlab.errors import ConfigError
from inferlab.load.bench import BenchEvents, BenchResult
from inferlab.records import RequestRecord
from inferlab.stats.capacity import (
    Bracket,
    MarginSample,
    bracket,
    isotonic_capacity,
    next_probe,
)
from inferlab.stats.capacity_error import (
    ONE_LAUNCH,
    ErrorBudget,
    LaunchTerm,
    launch_offsets,
    probe_seed,
)
from inferlab.stats.slo import LIMITS, SloPoint, SloState, assess_with_margin
from inferlab.stats.summary import Interval
from inferlab.store import Store

__all__ = [
    "CAPACITY_KIND",
    "CONCURRENCY",
    "CapacityResult",
    "Ladder",
    "Probe",
    "ProbeJudge",
    "check_capacity",
    "find_capacity",
]

#: the ``analyses.kind`` a capacity result is stored under (its name: the SLO's text)
CAPACITY_KIND = "capacity"


@dataclass(frozen=True)
class Ladder:
    """The points a capacity search may probe, index ``i`` ≥ 1 → ``i × step``: closed-loop
    concurrency (``step`` 1) or open-loop request rate (req/s)."""

    unit: Literal["concurrency", "rate"] = "concurrency"
    step: float = 1.0

    @classmethod
    def rates(cls, up_to: float, step: float | None = None) -> Ladder:
        """Request rates up to ``up_to`` req/s, ``step`` apart (default: ``up_to`` / 32)."""
        return cls("rate", step if step is not None else up_to / 32)

    def at(self, i: int) -> float | int:
        """The point of index ``i``: a concurrency (int) or a rate (req/s)."""
        return i if self.unit == "concurrency" else round(i * self.step, 9)

    def index(self, value: float) -> int:
        """The nearest index of ``value`` (at least 1)."""
        return max(1, round(value / self.step))

    def top(self, up_to: float) -> int:
        """The highest index whose point is ≤ ``up_to``."""
        return max(1, math.floor(up_to / self.step + 1e-9))

    def text(self, value: float | None) -> str:
        """``C=4`` or ``2.5 req/s``."""
        if value is None:
            return "?"
        return f"C={value:g}" if self.unit == "concurrency" else f"{value:g} req/s"

    def load(self, i: int) -> dict[str, list[Any]]:
        """The bench config's load for probe ``i``: one point."""
        if self.unit == "concurrency":
            return {"concurrency": [i], "rate": []}
        return {"concurrency": [], "rate": [float(self.at(i))]}


#: the closed-loop ladder of ``bench --capacity``
CONCURRENCY = Ladder()


@dataclass(frozen=True)
class Probe:
    """One measured point (a concurrency, or a rate in req/s): the SLO's state there, its
    margin (largest percentile/limit ratio), goodput share, requests counted, the stored run
    ids, why it stopped and the seed of its bootstrap (``capacity_error.probe_seed``)."""

    point: float | int
    state: SloState
    margin: float
    goodput: float
    requests: int
    run_ids: tuple[int, ...] = ()
    stop: str | None = None
    trusted: bool = True  # False: a starved client or an interruption (then undecided)
    seed: int | None = None

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
    #: the probes' ladder: ``bracket`` and ``up_to`` are its indices, ``estimate`` its unit's
    ladder: Ladder = CONCURRENCY
    #: the bracket's confidence, for the whole bisection
    budget: ErrorBudget = field(default_factory=ErrorBudget)
    launch: LaunchTerm | None = None  # None: one launch (the capacity of this launch)

    @property
    def definition(self) -> str:
        """What the bracket covers, and with what confidence."""
        of = self.launch.describe() if self.launch is not None else ONE_LAUNCH
        return f"bracket {self.budget.describe()}; {of}"

    def value(self, i: int | None) -> float | int | None:
        """The ladder's point of index ``i`` (0: none held; None: none failed)."""
        return None if i is None else (self.ladder.at(i) if i else 0)

    def to_json(self) -> dict[str, Any]:
        b, v = self.bracket, self.value
        return {
            "slo": self.slo,
            "engine": self.engine,
            "simulated": self.simulated,
            "unit": self.ladder.unit,
            "step": self.ladder.step,
            "holds_at": v(b.holds_at),
            "fails_at": v(b.fails_at),
            "low": v(b.low),
            "high": v(b.high),
            "estimate": self.estimate.to_json() if self.estimate is not None else None,
            "stopped": self.stopped,
            "up_to": v(self.up_to),
            "workload": self.workload,
            "confidence": self.budget.to_json(),
            "launch": self.launch.to_json() if self.launch is not None else None,
            "definition": self.definition,
            "probes": [p.to_json() for p in self.probes],
        }

    @property
    def sentence(self) -> str:
        """``capacity at SLO …: C 10–11 (holds at C=10, fails at C=12); isotonic estimate
        C≈10.6 [10.2–11.0]`` (a rate: ``2.5–2.75 req/s (holds at 2.5 req/s, …)``)."""
        b, v, t = self.bracket, self.value, self.ladder.text
        top = max((p.point for p in self.probes), default=0)
        rate = self.ladder.unit == "rate"
        low, high = v(b.low), v(b.high)
        head, tail = ("rate ", " req/s") if rate else ("C ", "")
        if high is None:
            span = f"≥ {low:g}{tail} (nothing failed with confidence up to {t(top)})"
        else:
            span = (f"{low:g}" if high == low else f"{low:g}–{high:g}") + tail
        fails = f", fails at {t(v(b.fails_at))}" if b.fails_at is not None else ""
        held = t(v(b.holds_at)) if b.holds_at else "no probed point"
        text = f"capacity at SLO {self.slo}: {head}{span} (holds at {held}{fails})"
        e = self.estimate
        if e is not None and not math.isnan(e.low):
            u, f = (("", " req/s"), ".3g") if rate else (("C≈", ""), ".1f")
            text += f"; isotonic estimate {u[0]}{e.estimate:{f}}{u[1]} [{e.low:{f}}–{e.high:{f}}]"
        sim = "SIMULATED " if self.simulated else ""
        runs = f"{len(self.probes)} probes, stopped: {self.stopped}"
        return f"{sim}{text}; {runs}; {self.definition}"


def check_capacity(cfg: BenchConfig, up_to: float, ladder: Ladder = CONCURRENCY) -> None:
    """ConfigError for what the search cannot do: no percentile limit, points of the other
    kind (rates for a concurrency search, concurrencies for a rate search), a top below one
    step."""
    opt = "--capacity" if ladder.unit == "concurrency" else "--capacity-rate"
    dist = [k for k in cfg.slo.limits() if LIMITS[k].statistic is not None]
    if not dist:
        keys = ", ".join(k for k, v in LIMITS.items() if v.statistic is not None)
        raise ConfigError(f"{opt}: needs a percentile limit in --slo / [slo] ({keys})")
    if ladder.unit == "concurrency":
        if cfg.rate:
            raise ConfigError("--capacity: searches closed-loop concurrency; give no --rate")
        if up_to < 1:
            raise ConfigError(
                f"--capacity: the highest concurrency to try must be ≥ 1, got {up_to}"
            )
        return
    if cfg.concurrency:
        raise ConfigError("--capacity-rate: searches open-loop request rate; give no --concurrency")
    if not ladder.step > 0:
        raise ConfigError(f"--rate-step: must be > 0 req/s, got {ladder.step:g}")
    if up_to < ladder.step:
        raise ConfigError(
            f"--capacity-rate: the highest rate to try ({up_to:g} req/s) is below one "
            f"--rate-step ({ladder.step:g} req/s)"
        )


def _start(cfg: BenchConfig, ladder: Ladder) -> int:
    """The first probe's index: the first --concurrency / --rate given, else one step."""
    given = cfg.concurrency if ladder.unit == "concurrency" else cfg.rate
    return ladder.index(given[0]) if given else 1


def find_capacity(
    cfg: BenchConfig,
    up_to: float,
    *,
    ladder: Ladder = CONCURRENCY,
    max_probes: int = 12,
    events: BenchEvents | None = None,
    db: Path | Store | None = None,
    campaign: str = "bench",
    config: str | None = None,
    clock: ModelClock | None = None,
    config_id: int | None = None,
    resamples: int | None = None,
    on_probe: Callable[[Probe], None] | None = None,
    level: float = 0.95,
    launch: LaunchTerm | None = None,
) -> tuple[CapacityResult, list[int]]:
    """The highest point of ``ladder`` ≤ ``up_to`` (a concurrency, or a rate in req/s) at
    which ``cfg.slo`` holds (see the module docstring), starting at the first concurrency or
    rate given (one step when none is); every probe is stored with ``db`` and the result too.
    ``level``: the bracket's confidence for the whole search (spent over ``max_probes``);
    ``launch``: the launch-to-launch spread, when known; ``resamples``: bootstrap resamples a
    probe (default: the budget's). Returns it with the stored run ids."""
    check_capacity(cfg, up_to, ladder)
    limits = cfg.slo.limits()
    start, top = _start(cfg, ladder), ladder.top(up_to)
    dist = sum(LIMITS[k].statistic is not None for k in limits)
    budget = ErrorBudget(level, max_probes, dist)
    judge = ProbeJudge(limits, ladder, budget, resamples or budget.resamples, cfg.seed, launch)
    states: dict[int, SloState] = {}
    probes: list[Probe] = []
    samples: list[MarginSample] = []
    run_ids: list[int] = []
    engine, model, stopped = cfg.engine or "openai", "", "budget"
    while len(probes) < max_probes:
        c = next_probe(states, start, top)
        if c is None:
            stopped = _why_stopped(states, top)
            break
        pcfg = cfg.model_copy(update=ladder.load(c))
        result, ids = bench_with_record(
            pcfg, events, db=db, campaign=campaign, config=config, clock=clock,
            config_id=config_id,
        )  # fmt: skip
        engine, model = result.engine, result.model
        run_ids += ids
        probe, sample = judge(result, c, tuple(ids))
        probes.append(probe)
        states[c] = probe.state
        samples += [sample] if probe.trusted else []
        if on_probe is not None:
            on_probe(probe)
        if result.interrupted:
            stopped = "interrupted"
            break
    out = CapacityResult(
        cfg.slo.text, engine, tuple(probes), bracket(states), _estimate(samples, ladder),
        stopped, top,
        simulated=engine == "sim",
        workload=json.dumps(cfg.workload.model_dump(mode="json"), sort_keys=True),
        ladder=ladder, budget=budget, launch=launch,
    )  # fmt: skip
    if db is not None and probes:
        _store(db, out, campaign, config or f"{engine}:{model}", config_id)
    return out, run_ids


def _estimate(samples: list[MarginSample], ladder: Ladder) -> Interval | None:
    """The isotonic estimate, fitted over the ladder's indices, in its unit."""
    e = isotonic_capacity(samples)
    if e is None or ladder.unit == "concurrency":
        return e
    k = ladder.step
    return Interval(e.estimate * k, e.low * k, e.high * k, e.level)


@dataclass(frozen=True)
class ProbeJudge:
    """One search's verdicts: each probe's limits at the budget's level, from ``resamples``
    resamples seeded by the probe (``probe_seed``), with the launch's offsets (one draw per
    resample, the same for every probe: they read one launch)."""

    limits: dict[str, float]
    ladder: Ladder
    budget: ErrorBudget
    resamples: int
    seed: int
    launch: LaunchTerm | None

    def seed_of(self, c: int, what: str = "probe") -> int:
        return probe_seed(self.seed, self.ladder.unit, self.ladder.step, c, what)

    @property
    def offsets(self) -> np.ndarray | None:
        return launch_offsets(self.launch, self.resamples, self.seed_of(0, "launch"))

    def decide(self, recs: list[RequestRecord], c: int) -> tuple[SloPoint, float, np.ndarray, int]:
        """The SLO at probe ``c`` from its records, its margin and the margin's replicates,
        and the probe's seed."""
        seed, offsets, n = self.seed_of(c), self.offsets, self.resamples
        slo, margin, reps = assess_with_margin(
            recs, self.limits, level=self.budget.probe_level, resamples=n, seed=seed,
            offsets=offsets,
        )  # fmt: skip
        return slo, margin, reps, seed

    def __call__(
        self, result: BenchResult, c: int, ids: tuple[int, ...]
    ) -> tuple[Probe, MarginSample]:
        """One probe's verdict and margin from its records (every trial's); the margin
        sample is at the ladder's index ``c``."""
        recs = [r for p in result.points for r in p.records]
        slo, margin, reps, seed = self.decide(recs, c)
        untrusted = any(p.trust.state != "trusted" or p.interrupted for p in result.points)
        state: SloState = "undecided" if untrusted or slo.state is None else slo.state
        stop = result.points[-1].stop if result.points else None
        probe = Probe(
            self.ladder.at(c), state, margin, slo.goodput.estimate, slo.requests, ids,
            stop.reason if stop is not None else None, not untrusted, seed,
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
