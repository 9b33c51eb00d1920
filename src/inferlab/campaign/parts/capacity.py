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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from inferlab.campaign.parts.bench import NOT_STORED, Recording
from inferlab.campaign.parts.capacity_probe import (
    CONCURRENCY,
    Ladder,
    Probe,
    ProbeJudge,
    stored_term,
)
from inferlab.config.bench import BenchConfig
from inferlab.engines import is_simulated
from inferlab.errors import ConfigError
from inferlab.load.bench import BenchEvents
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
)
from inferlab.stats.slo import LIMITS, SloState
from inferlab.stats.summary import Interval
from inferlab.store import Store

if TYPE_CHECKING:
    from pydantic import JsonValue

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

    def to_json(self) -> dict[str, JsonValue]:
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
    record: Recording = NOT_STORED,
    resamples: int | None = None,
    on_probe: Callable[[Probe], None] | None = None,
    level: float = 0.95,
    launch: LaunchTerm | None = None,
    stored_spread: bool = True,
) -> tuple[CapacityResult, list[int]]:
    """The highest point of ``ladder`` ≤ ``up_to`` (a concurrency, or a rate in req/s) at
    which ``cfg.slo`` holds (see the module docstring), starting at the first concurrency or
    rate given (one step when none is); every probe is stored as ``record`` says, and the
    result too. ``level``: the bracket's confidence for the whole search; ``launch``: the
    launch spread (default, ``stored_spread``: ``record.db``'s for the first probe's engine,
    model and host). Returns it with the stored run ids."""
    check_capacity(cfg, up_to, ladder)
    limits = cfg.slo.limits()
    start, top = _start(cfg, ladder), ladder.top(up_to)
    budget = ErrorBudget(level, max_probes, sum(LIMITS[k].statistic is not None for k in limits))
    judge = ProbeJudge(limits, ladder, budget, resamples or budget.resamples, cfg.seed, launch)
    states: dict[int, SloState] = {}
    probes, samples, run_ids = list[Probe](), list[MarginSample](), list[int]()
    engine, model, stopped = cfg.engine or "openai", "", "budget"
    while len(probes) < max_probes:
        c = next_probe(states, start, top)
        if c is None:
            stopped = _why_stopped(states, top)
            break
        result, ids = record.sweep(cfg.model_copy(update=ladder.load(c)), events)
        engine, model = result.engine, result.model
        if not run_ids and ids and record.db is not None and stored_spread and launch is None:
            judge = replace(judge, launch=stored_term(record.db, ids[0], limits))  # before judging
        run_ids += ids
        probe, sample = judge(result, c, tuple(ids))
        probes.append(probe)
        states[c], samples = probe.state, samples + ([sample] if probe.trusted else [])
        if on_probe is not None:
            on_probe(probe)
        if result.interrupted:
            stopped = "interrupted"
            break
    out = CapacityResult(
        cfg.slo.text,
        engine,
        tuple(probes),
        bracket(states),
        _estimate(samples, ladder),
        stopped,
        top,
        is_simulated(engine),
        _workload(cfg),
        ladder,
        budget,
        judge.launch,
    )
    if record.db is not None and probes:
        _store(record.db, out, record, record.config or f"{engine}:{model}")
    return out, run_ids


def _workload(cfg: BenchConfig) -> str:
    return json.dumps(cfg.workload.model_dump(mode="json"), sort_keys=True)


def _estimate(samples: list[MarginSample], ladder: Ladder) -> Interval | None:
    """The isotonic estimate, fitted over the ladder's indices, in its unit."""
    e = isotonic_capacity(samples)
    if e is None or ladder.unit == "concurrency":
        return e
    k = ladder.step
    return Interval(e.estimate * k, e.low * k, e.high * k, e.level)


def _why_stopped(states: dict[int, SloState], up_to: int) -> str:
    b = bracket(states)
    if b.fails_at is None:
        return "top holds" if states.get(up_to) == "holds" else "top undecided"
    return "holds nowhere" if b.fails_at == 1 else "bracketed"


def _store(db: Path | Store, result: CapacityResult, record: Recording, config: str) -> None:
    campaign, config_id = record.campaign, record.config_id
    store = db if isinstance(db, Store) else Store(db)
    try:
        with store.transaction():
            found = store.configs.latest(campaign, config) if config_id is None else None
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
