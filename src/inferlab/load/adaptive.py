"""The stopping rules of a load point and their registry (the protocol: ``load.stopping``).

- ``fixed`` (``requests = N`` or a duration): the workers stop at their count; never asked;
- ``precision`` (``requests = "auto"``): at request counts min, ×1.5, ... it computes the 95%
  intervals of the median TPOT and the output throughput (``stats.stopping``) and stops when
  both are within ±precision at two checks in a row (or at the cap / duration);
- ``sequential`` (``requests = "auto"`` against a stored baseline point, a sequential A/B): at
  planned looks (k/K of ``max_requests``, none before ``min_requests``) it tests each primary
  metric with a Lan–DeMets O'Brien–Fleming boundary at two-sided ``[load] alpha``
  (``stats.sequential``) and stops when every metric is settled (better, worse, or equivalent
  within ±min_effect), or at the last look; the stored test carries the ``alpha`` and
  ``min_effect`` it was decided at.

``STOPPING_RULES`` is the registry: the first kind whose ``for_point`` answers a rule stops the
point; ``plan_lines`` is how the kind reads in a campaign's plan.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from inferlab.config.bench import BenchConfig
from inferlab.config.campaign import LoadSection
from inferlab.load.stopping import Check, Stop, StoppingRule
from inferlab.records import RequestRecord
from inferlab.stats.dist import t_quantile
from inferlab.stats.metrics import METRICS, tpot_ms
from inferlab.stats.sequential import decide_look, ld_obrien_fleming, spending_boundaries
from inferlab.stats.spread import LaunchSpread, widen
from inferlab.stats.stopping import (
    BatchMeans,
    MedianCI,
    Precision,
    StopRecord,
    batch_means,
    block_bootstrap_median,
    block_length,
    check_schedule,
    request_span_rates,
)

__all__ = [
    "STOPPING_RULES",
    "BaselineRef",
    "FixedCount",
    "PointFacts",
    "PrecisionRule",
    "RuleKind",
    "SequentialRule",
    "baseline_ref",
    "choose_rule",
    "look_counts",
]


@dataclass(frozen=True)
class BaselineRef:
    """A stored baseline point a candidate is tested against: its median TPOT and its
    throughput, each with the standard error of its log; ``launch``: metric → the
    launch-to-launch spread at the point so far (``stats.spread``), counted in the A/B."""

    config: str
    tpot: MedianCI
    throughput: BatchMeans
    launch: Mapping[str, LaunchSpread] = field(default_factory=dict)


@dataclass(frozen=True)
class PointFacts:
    """What a rule is chosen by besides the config: the point's users and its baseline."""

    concurrency: int
    baseline: BaselineRef | None = None  # a stored point to run a sequential A/B against


class RuleKind(Protocol):
    """One entry of the registry: a rule class, chosen from the config."""

    def for_point(self, cfg: BenchConfig, point: PointFacts) -> StoppingRule | None:
        """This kind's rule for the point, or None when the config asks for another."""
        ...

    def plan_lines(self, load: LoadSection, reference: str) -> list[str]:
        """How the kind reads in a campaign's plan (none when not in use); ``reference``:
        the config a sequential A/B is against."""
        ...


def look_counts(max_requests: int, looks: int) -> list[int]:
    """Requests at each planned look: k/K of the cap."""
    return [math.ceil(max_requests * k / looks) for k in range(1, looks + 1)]


@dataclass
class FixedCount:
    """``requests = N`` or a duration: the workers stop by themselves; never asked."""

    live: bool = False

    @classmethod
    def for_point(cls, cfg: BenchConfig, point: PointFacts) -> FixedCount | None:
        return None if cfg.adaptive else cls()

    @classmethod
    def plan_lines(cls, load: LoadSection, reference: str) -> list[str]:
        return []

    def schedule(self) -> Sequence[int]:
        return []

    def check(self, at: Check) -> Stop | None:
        return None

    def fill(self, stop: StopRecord) -> None:
        pass


@dataclass
class PrecisionRule:
    """``requests = "auto"``: both intervals within ±``precision`` at two checks in a row;
    ``stop_on_precision`` False measures to the cap (a reference for a sequential A/B)."""

    precision: float
    min_requests: int
    max_requests: int  # 0: no cap
    stop_on_precision: bool = True
    live: bool = True
    _reached: bool = False  # the previous check was precise enough

    @classmethod
    def for_point(cls, cfg: BenchConfig, point: PointFacts) -> PrecisionRule | None:
        if not cfg.adaptive or point.baseline is not None:
            return None
        return cls(cfg.precision, cfg.min_requests, cfg.max_requests, cfg.stop_on_precision)

    @classmethod
    def plan_lines(cls, load: LoadSection, reference: str) -> list[str]:
        if load.requests != "auto":
            return []
        cap = f"max {load.max_requests}" if load.max_requests else "no cap"
        dur = f", at most {load.max_duration_s:g} s" if load.max_duration_s else ""
        return [
            f"requests: auto — stop at ±{load.precision:.0%} (95% interval of median TPOT and "
            f"output throughput), min {load.min_requests}, {cap}{dur}"
        ]

    def schedule(self) -> Sequence[int]:
        return check_schedule(self.min_requests, self.max_requests)

    def check(self, at: Check) -> Stop | None:
        reached = at.precision.reached(self.precision)
        stop = reached and self._reached and self.stop_on_precision
        self._reached = reached
        return Stop("precision") if stop else None  # two checks in a row: not one lucky window

    def fill(self, stop: StopRecord) -> None:
        stop.precision = self.precision


@dataclass
class SequentialRule:
    """A sequential A/B against ``baseline`` (see the module docstring); ``precision`` is only
    recorded."""

    baseline: BaselineRef
    max_requests: int
    precision: float
    looks: int = 4
    min_effect: float = 0.02
    alpha: float = 0.05
    #: no look before this many counted requests (``[load] min_requests``, which
    #: ``load.budget`` raises to MIN_WAVES waves of C): a point that a look settles is never
    #: one that ``compare`` then calls too short or too few
    min_requests: int = 0
    live: bool = True
    look: int | None = None
    sequential: dict[str, Any] | None = None  # the test at the last look, as stored
    _info: dict[str, list[float]] | None = None
    _bounds: dict[str, float] = field(default_factory=dict)  # metric → its last boundary

    def _bound(self, metric: str, info: list[float], t: float) -> float:
        """The z boundary of a look at information fraction ``t`` after the looks ``info``
        (appended to). Fractions increase by at least ``_MIN_INFO`` (a smaller step has no
        information to spend, and its boundary's grid would not fit in memory): a look with
        less left than that reuses the last boundary."""
        if info and info[-1] > 1.0 - _MIN_INFO:
            return self._bounds[metric]
        info.append(min(1.0, max(t, info[-1] + _MIN_INFO) if info else t))
        bound = spending_boundaries(info, ld_obrien_fleming(self.alpha))[-1]
        self._bounds[metric] = bound
        return bound

    @classmethod
    def for_point(cls, cfg: BenchConfig, point: PointFacts) -> SequentialRule | None:
        if not cfg.adaptive or point.baseline is None:
            return None
        return cls(
            point.baseline,
            cfg.max_requests,
            cfg.precision,
            cfg.looks,
            cfg.min_effect,
            cfg.alpha,
            min_requests=cfg.min_requests,  # raised to MIN_WAVES × C by load.budget
        )

    @classmethod
    def plan_lines(cls, load: LoadSection, reference: str) -> list[str]:
        if not load.sequential:
            return []
        return [
            f"sequential A/B vs {reference} (measured to the cap, {load.max_requests} "
            f"requests a point): {load.looks} looks, Lan-DeMets O'Brien-Fleming (two-sided "
            f"α = {load.alpha:g}), equivalence within ±{load.min_effect:.0%}"
        ]

    def schedule(self) -> Sequence[int]:
        """The planned looks (k/K of the cap), each at ``min_requests`` at the least: the
        looks that fall below it are taken there, as one (C=8: 64, 100, 150 for 50, 100, 150;
        C=32 with the cap raised to 256: one look at 256)."""
        floor = min(self.min_requests, self.max_requests) if self.max_requests else 0
        return sorted({max(c, floor) for c in look_counts(self.max_requests, self.looks)})

    def check(self, at: Check) -> Stop | None:
        self.look = at.index if not at.capped else len(self.schedule())
        out = self._test(at.precision, at.requests, at.last)
        self.sequential = out
        statuses = [v["status"] for v in out["metrics"].values()]
        if "open" in statuses:
            return None
        wins = {s for s in statuses if s != "equivalent"}
        verdict = "equivalent" if not wins else wins.pop() if len(wins) == 1 else "mixed"
        return Stop(f"sequential-{verdict}")

    def fill(self, stop: StopRecord) -> None:
        stop.precision = self.precision
        stop.look, stop.looks, stop.sequential = self.look, len(self.schedule()), self.sequential

    def _test(self, prec: Precision, n: int, last: bool) -> dict[str, Any]:
        base, info_by = self.baseline, self._info if self._info is not None else {}
        self._info = info_by
        # one estimator per primary metric of METRICS (tests/unit/stats/test_metric_table.py)
        estimates = {"tpot_ms": prec.tpot, "output_tok_s": prec.throughput}
        refs = {"tpot_ms": (base.tpot.median, base.tpot.se_log)}
        refs["output_tok_s"] = (base.throughput.mean, base.throughput.se_rel)
        out: dict[str, Any] = {"baseline": base.config, "looks": self.looks, "alpha": self.alpha}
        out.update(min_effect=self.min_effect, metrics={})
        for m, est in estimates.items():
            value = None if est is None else (est.median if isinstance(est, MedianCI) else est.mean)
            se_c = (
                None if est is None else (est.se_log if isinstance(est, MedianCI) else est.se_rel)
            )
            ref, se_b = refs[m]
            if value is None or se_c is None or value <= 0 or ref <= 0:
                out["metrics"][m] = {"status": "open", "why": "no estimate yet"}
                continue
            spread = base.launch.get(m)
            two_tau2 = 2.0 * spread.tau**2 if spread else 0.0
            var = se_c**2 + se_b**2 + two_tau2
            # a deterministic engine measures with no spread: an exact difference (tiny se)
            se = max(math.sqrt(var), _MIN_SE)
            info = info_by.setdefault(m, [])
            # the launch term does not shrink with requests: it is in the information at the cap
            at_cap = se_c**2 * n / max(self.max_requests, n) + se_b**2 + two_tau2
            # no spread at all: the first look holds all the information there is
            frac = at_cap / var if var > _MIN_SE**2 else 1.0
            t = 1.0 if last else min(1.0 - 1e-6, max(frac, _MIN_INFO))
            bound = z_bound = self._bound(m, info, t)
            if spread is not None and spread.tau > 0:  # t over the normal's, at the widened df
                w = widen(0.0, math.sqrt(se_c**2 + se_b**2), spread)
                level = 1.0 - self.alpha
                bound = z_bound * w.quantile(level) / t_quantile(1.0 - self.alpha / 2.0, 1e8)
            d = decide_look(
                math.log(value / ref),
                se,
                bound,
                higher_is_better=METRICS[m].higher_is_better,
                min_effect=self.min_effect,
            )
            out["metrics"][m] = {
                "status": d.status,
                "ratio": d.ratio,
                "low": d.low,
                "high": d.high,
                "z": d.z,
                "boundary": d.boundary,
                "info": info[-1],
                "z_boundary": z_bound,
                "alpha": self.alpha,  # what a re-look (report.verdicts.relook) scales by
                "launch_tau": spread.tau if spread else 0.0,
                "launch_df": spread.df if spread else 0,
                **({"counted": f"{spread.describe()} counted"} if spread else {}),
            }
        return out


#: the standard error (of a log ratio) below which a difference is read as exact
_MIN_SE = 1e-9
#: the smallest information fraction a look is given (its boundary stays finite)
_MIN_INFO = 0.01


#: the registry, in the order the kinds are asked (the first rule answered stops the point)
STOPPING_RULES: tuple[RuleKind, ...] = (FixedCount, PrecisionRule, SequentialRule)


def choose_rule(cfg: BenchConfig, point: PointFacts) -> StoppingRule:
    """The rule that stops ``point`` under ``cfg``: the first of ``STOPPING_RULES`` to answer."""
    for kind in STOPPING_RULES:
        rule = kind.for_point(cfg, point)
        if rule is not None:
            return rule
    raise AssertionError("no stopping rule answered (FixedCount answers every fixed config)")


def baseline_ref(
    config: str, records: Sequence[RequestRecord], window_ns: Sequence[int] | None, concurrency: int
) -> BaselineRef | None:
    """The reference a candidate is tested against, from a stored baseline point's counted
    requests (``window_ns``: its steady window; default first send → last end)."""
    good = [r for r in records if r.counted and r.ok and r.event_ns]
    good.sort(key=lambda r: r.send_ns)
    tpots = [t for t in (tpot_ms(r) for r in good) if t is not None]
    if len(tpots) < 10:
        return None
    w0, w1 = (
        (int(window_ns[0]), int(window_ns[1]))
        if window_ns
        else (min(r.send_ns for r in good), max(r.end_ns for r in good))
    )
    rates = request_span_rates(records, w0, w1)
    if len(rates) < 2:
        return None
    med = block_bootstrap_median(tpots, block_length(len(tpots), concurrency))
    return BaselineRef(config, med, batch_means(rates))
