"""One probe of a capacity search (``campaign.parts.capacity``): where it may be (``Ladder``), what
it measured (``Probe``) and how its verdict is reached (``ProbeJudge``: the error budget's
level, the probe's own seed, the launch's offsets; ``stats.capacity_error``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from inferlab.load.bench import BenchResult
from inferlab.records import RequestRecord
from inferlab.stats.capacity import MarginSample
from inferlab.stats.capacity_error import ErrorBudget, LaunchTerm, launch_offsets, probe_seed
from inferlab.stats.slo import SloPoint, SloState, resample
from inferlab.store import Store

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["CONCURRENCY", "Ladder", "Probe", "ProbeJudge", "stored_term"]


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

    def to_json(self) -> dict[str, JsonValue]:
        d = dict(self.__dict__)
        d["run_ids"] = list(self.run_ids)
        d["margin"] = None if math.isnan(self.margin) else self.margin
        return d


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
        drawn = resample(recs, self.limits, resamples=n, seed=seed, offsets=offsets)
        return drawn.assess(self.budget.probe_level), *drawn.margin(), seed

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
            self.ladder.at(c),
            state,
            margin,
            slo.goodput.estimate,
            slo.requests,
            ids,
            stop.reason if stop is not None else None,
            not untrusted,
            seed,
        )
        return probe, MarginSample(c, margin, reps, slo.requests)


def stored_term(db: Path | Store, run_id: int, limits: dict[str, float]) -> LaunchTerm | None:
    """The stored launch term for a search whose first probe is run ``run_id``."""
    from inferlab.campaign.parts.capacity_launch import stored_launch_term

    if isinstance(db, Store):
        return stored_launch_term(db, run_id, limits)
    with Store(db) as store:
        return stored_launch_term(store, run_id, limits)
