"""The verdict table's rule: ratio interval + test of difference → "better" / "worse" / "~"."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from inferlab.stats.difference import (
    mann_whitney_u,
    min_attainable_p,
    permutation_test,
    welch_t_test,
)
from inferlab.stats.dist import t_quantile
from inferlab.stats.intervals import (
    Statistic,
    reducer,
    sample_ratio,
    throughput_ratio_batches,
    throughput_ratio_trials,
)
from inferlab.stats.metrics import METRICS
from inferlab.stats.spread import LaunchSpread, widen
from inferlab.stats.summary import Interval

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "HIGHER_IS_BETTER",
    "RULE",
    "Claim",
    "Rule",
    "ThroughputSample",
    "Verdict",
    "compare_samples",
    "compare_throughput",
    "decide",
    "pct",
]

Claim = Literal["better", "worse", "~"]


class _Directions(Mapping[str, bool]):
    """A live view of ``METRICS``: the name of each metric with a direction → True when a
    higher value is better."""

    def __getitem__(self, name: str) -> bool:
        m = METRICS.get(name)
        if m is None or m.direction is None:
            raise KeyError(name)
        return m.higher_is_better

    def __iter__(self) -> Iterator[str]:
        return (name for name, m in METRICS.items() if m.direction is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


#: metric name (as in ``PointSummary``) → True when a higher value is better
HIGHER_IS_BETTER: Mapping[str, bool] = _Directions()

_NAN_INTERVAL_LEVEL = 0.95


@dataclass(frozen=True, slots=True)
class Verdict:
    """One comparison cell: ratio candidate/baseline with its interval, the test's p-value,
    and the claim ("better" / "worse" for the metric's direction, "~" within noise)."""

    ratio: Interval
    p_value: float | None
    claim: Claim
    reason: str
    #: launch-level verdicts left unsettled: the launches a side that would settle them if the
    #: estimate and the launch spread held (``LaunchAB.needed``; inf: none would)
    needed: float | None = None

    def to_json(self) -> dict[str, JsonValue]:
        p = self.p_value
        out: dict[str, JsonValue] = {
            "ratio": self.ratio.to_json(),
            "p_value": None if p is None or math.isnan(p) else p,
            "claim": self.claim,
            "reason": self.reason,
        }
        if self.needed is not None:  # null: no number of launches would settle it
            out["launches_needed"] = self.needed if math.isfinite(self.needed) else None
        return out


@dataclass(frozen=True, slots=True)
class ThroughputSample:
    """Throughput of one config at one load point, tok/s: one value per trial; with a single
    trial, ``batch_rates`` holds the rates of equal slices of its window (``batch_rates()``)."""

    trials: tuple[float, ...]
    batch_rates: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class Rule:
    """How both comparisons decide: a claim needs p < ``alpha`` and |ratio − 1| ≥
    ``min_effect`` (a fraction: 0.02 = 2%); the ratio's interval is at ``level``, bootstrapped
    with ``resamples`` draws from ``seed``."""

    alpha: float = 0.05
    min_effect: float = 0.02
    level: float = 0.95
    resamples: int = 2000
    seed: int = 0

    def settle(
        self, ratio: Interval, p_value: float | None, higher: bool, launch: LaunchSpread | None
    ) -> Verdict:
        """``decide`` on ``ratio`` and ``p_value``; with ``launch`` (each side one launch),
        on ``ratio`` widened by the launch-to-launch spread (``_one_launch``) instead."""
        if launch is not None:
            return _one_launch(
                ratio, launch, higher_is_better=higher, alpha=self.alpha, min_effect=self.min_effect
            )
        return decide(
            ratio, p_value, higher_is_better=higher, alpha=self.alpha, min_effect=self.min_effect
        )


#: the rule by default: alpha 0.05, 2% minimum effect, 95% intervals of 2000 resamples
RULE = Rule()


def _nan_interval(level: float = _NAN_INTERVAL_LEVEL) -> Interval:
    return Interval(math.nan, math.nan, math.nan, level)


def pct(x: float) -> str:
    """A relative change as a signed percentage: 0.026 → "+2.6%"."""
    return f"{x * 100:+.1f}%"


def decide(
    ratio: Interval,
    p_value: float | None,
    *,
    higher_is_better: bool,
    alpha: float = 0.05,
    min_effect: float = 0.02,
) -> Verdict:
    """The decision rule: "better"/"worse" only when p < ``alpha`` AND |ratio − 1| ≥
    ``min_effect`` (0.02 = 2%) AND the interval excludes 1 on the estimate's side."""
    if not 0.0 < alpha < 1.0 or min_effect < 0:
        raise ValueError(f"need 0 < alpha < 1 and min_effect ≥ 0, got {alpha}, {min_effect}")
    est, low, high = ratio.estimate, ratio.low, ratio.high
    if not all(math.isfinite(v) for v in (est, low, high)):
        return Verdict(ratio, p_value, "~", "no verdict: the ratio or its interval is undefined")
    if p_value is None or not math.isfinite(p_value):
        return Verdict(ratio, p_value, "~", "no verdict: no p-value")
    ci = f"{ratio.level:.0%} CI {pct(low - 1)} … {pct(high - 1)}"
    if p_value >= alpha:
        return Verdict(
            ratio, p_value, "~", f"within noise: {pct(est - 1)}, p = {p_value:.2g} ≥ {alpha:g}"
        )
    if low <= 1.0 <= high:
        return Verdict(ratio, p_value, "~", f"within noise: {pct(est - 1)}, {ci} includes 0")
    if (est > 1.0) != (low > 1.0):
        return Verdict(ratio, p_value, "~", f"no verdict: estimate {est:.4g} lies outside {ci}")
    if abs(est - 1.0) < min_effect:
        return Verdict(
            ratio,
            p_value,
            "~",
            f"below the minimum effect: {pct(est - 1)} (|change| < {min_effect:.0%}), "
            f"although p = {p_value:.2g}",
        )
    claim: Claim = "better" if (est > 1.0) == higher_is_better else "worse"
    return Verdict(ratio, p_value, claim, f"{pct(est - 1)} ({ci}), p = {p_value:.2g}")


def _one_launch(
    ratio: Interval,
    launch: LaunchSpread,
    *,
    higher_is_better: bool,
    alpha: float,
    min_effect: float,
) -> Verdict:
    """The verdict of a one-launch-per-side ``ratio`` with both launches' offsets counted
    (``stats.spread``): its sampling error read back from its interval, ``2τ²`` added, a t
    interval and p-value with Welch–Satterthwaite degrees of freedom."""
    est, level = ratio.estimate, ratio.level
    q = t_quantile(1.0 - (1.0 - level) / 2.0, 1e8)  # the normal's
    se_within = math.log(ratio.high / ratio.low) / (2.0 * q) if ratio.low > 0 else math.inf
    w = widen(math.log(est), se_within, launch)
    half = w.quantile(level) * w.se
    wide = Interval(est, est * math.exp(-half), est * math.exp(half), level)
    v = decide(
        wide, w.p_value, higher_is_better=higher_is_better, alpha=alpha, min_effect=min_effect
    )
    why = f"{v.reason} [one launch a side, {launch.describe()} counted]"
    return Verdict(v.ratio, v.p_value, v.claim, why)


def _direction(metric: str) -> bool:
    try:
        return HIGHER_IS_BETTER[metric]
    except KeyError:
        known = ", ".join(sorted(HIGHER_IS_BETTER))
        raise ValueError(f"unknown metric {metric!r}; known: {known}") from None


def _failed(exc: Exception, ratio: Interval | None = None, p: float | None = None) -> Verdict:
    if isinstance(exc, ValueError):
        reason = f"no verdict: {exc}"
    else:
        reason = f"no verdict: the statistics failed ({type(exc).__name__}: {exc})"
    return Verdict(ratio or _nan_interval(), p, "~", reason)


def compare_samples(
    metric: str,
    baseline: Sequence[Sequence[float]],
    candidate: Sequence[Sequence[float]],
    *,
    statistic: Statistic = "median",
    rule: Rule = RULE,
    launch: LaunchSpread | None = None,
) -> Verdict:
    """Verdict for a per-request metric (``tpot_ms``, ``ttft_ms``, ``e2e_ms``, ``itl_ms``,
    ``user_tok_s``...), each side a list of trials of raw samples: ratio of ``statistic``
    (``sample_ratio``) and a Mann–Whitney U test on the pooled requests. With ``launch`` (each
    side one launch): the launch-to-launch spread is counted (``_one_launch``)."""
    higher = _direction(metric)
    reducer(statistic)  # an unknown statistic is the caller's mistake: raise, don't "~"
    ratio: Interval | None = None
    try:
        ratio = sample_ratio(
            baseline,
            candidate,
            statistic=statistic,
            level=rule.level,
            resamples=rule.resamples,
            seed=rule.seed,
        )
        pooled_b = [float(v) for t in baseline for v in t]
        pooled_c = [float(v) for t in candidate for v in t]
        p = mann_whitney_u(pooled_b, pooled_c).p_value
        return rule.settle(ratio, p, higher, launch)
    except Exception as exc:
        return _failed(exc, ratio)


def compare_throughput(
    baseline: ThroughputSample,
    candidate: ThroughputSample,
    *,
    metric: str = "output_tok_s",
    rule: Rule = RULE,
    launch: LaunchSpread | None = None,
) -> Verdict:
    """Verdict for a throughput (tok/s or req/s, one value per trial). ≥ 2 trials per side:
    bootstrap over trials and a permutation test on the trial values. One trial per side:
    batch-means interval (``throughput_ratio_batches``) and a permutation test on the batch
    rates, or with ``launch`` the launch-to-launch spread counted (``_one_launch``). Any other
    shape is "~" with the reason."""
    higher = _direction(metric)
    ratio: Interval | None = None
    try:
        na, nb = len(baseline.trials), len(candidate.trials)
        if na >= 2 and nb >= 2:
            ratio = throughput_ratio_trials(
                baseline.trials,
                candidate.trials,
                level=rule.level,
                resamples=rule.resamples,
                seed=rule.seed,
            )
            if min_attainable_p(na, nb) < rule.alpha:
                p = permutation_test(baseline.trials, candidate.trials, seed=rule.seed)
                how = "permutation test on trial values"
            else:
                # too few trials for any permutation test to reach alpha: a trial's throughput
                # is a mean over thousands of tokens, close to normal, so Welch's t applies
                p = welch_t_test(baseline.trials, candidate.trials)
                how = f"Welch t-test on trial values ({na} vs {nb} trials)"
            verdict = rule.settle(ratio, p, higher, None)
            return Verdict(
                verdict.ratio, verdict.p_value, verdict.claim, f"{verdict.reason} [{how}]"
            )
        if na == 1 and nb == 1:
            if not baseline.batch_rates or not candidate.batch_rates:
                raise ValueError("one trial per side and no batch rates: no interval possible")
            ratio = throughput_ratio_batches(
                baseline.trials[0],
                baseline.batch_rates,
                candidate.trials[0],
                candidate.batch_rates,
                level=rule.level,
            )
            if launch is not None:  # the spread counted: no test on the batch rates
                return rule.settle(ratio, None, higher, launch)
            p = permutation_test(baseline.batch_rates, candidate.batch_rates, seed=rule.seed)
            return rule.settle(ratio, p, higher, None)
        raise ValueError(
            f"baseline has {na} trial(s), candidate {nb}: need ≥ 2 on both sides, or 1 on both "
            "with batch rates"
        )
    except Exception as exc:
        return _failed(exc, ratio)
