"""Distribution agreement of a config with the baseline, from top-k logprobs (pure: no I/O).

Both sides are scored on the same tokens (the baseline's greedy continuation, teacher forced),
so each position has the baseline's top-k ``P`` and the config's top-k ``Q`` (token text →
logprob, nats). ``K`` is the set of tokens both list; ``p_o = 1 − P(K)`` and ``q_o = 1 − Q(K)``
are the masses outside it. Per position:

- **top-1**: the two top tokens are the same; where several tie for the top (bf16 logits of a
  random-weight model often do), the sides agree when their tied sets share a token, since the
  order an engine lists equal logprobs in says nothing;
- **KL(P ‖ Q)**, bounded from the top-k: the low end lumps everything outside ``K`` into one
  "other" bucket, ``Σ_K p log(p/q) + p_o log(p_o/q_o)`` — a lower bound of the true KL (data
  processing: KL cannot grow by merging outcomes); the high end replaces the bucket's term by
  ``p_o (log p_o − LOG_FLOOR)``, an upper bound whenever the config gives every token at least
  ``e^LOG_FLOOR`` (``Σ_tail p log(p/q) ≤ p_o log p_o − p_o log min q``);
- **TV**, ``½ Σ |p − q|``: low ``½(Σ_K |p − q| + |p_o − q_o|)``, high
  ``½(Σ_K |p − q| + p_o + q_o)``.

Over prompts: top-1 agreement and KL are pooled means per position (``Σ / positions``); the
largest TV is the maximum over positions of the low end. Each has a percentile bootstrap
interval over prompts (resampled whole, ``B`` times, seeded): the prompt is the unit that is
drawn, its positions are not independent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from inferlab.stats.intervals import percentile_interval
from inferlab.stats.summary import Interval

__all__ = [
    "LOG_FLOOR",
    "Agreement",
    "PositionFigures",
    "PromptFigures",
    "agreement",
    "position_figures",
    "prompt_figures",
]

#: the least logprob (nats) the KL's high end assumes the config gives any token
LOG_FLOOR = -30.0
#: logprobs this close (nats) tie for the top: equal values an engine may list in any order
TIE = 1e-9
_BOOTSTRAP = 2000

TopK = Mapping[str, float]


@dataclass(frozen=True, slots=True)
class PositionFigures:
    """One position's figures (KL in nats; ``tail``: the baseline's mass outside ``K``)."""

    top1: bool
    kl_low: float
    kl_high: float
    tv_low: float
    tv_high: float
    tail: float


def _mass(lp: float) -> float:
    return math.exp(lp) if lp > LOG_FLOOR * 10 else 0.0


def _tops(m: TopK) -> set[str]:
    """The tokens tied for the top logprob (within ``TIE`` nats)."""
    top = max(m.values())
    return {t for t, v in m.items() if v >= top - TIE}


def position_figures(base: TopK, cfg: TopK) -> PositionFigures:
    """The figures of one position from the two top-k maps (token text → logprob)."""
    if not base or not cfg:
        raise ValueError("a position needs the top logprobs of both sides")
    both = base.keys() & cfg.keys()
    p = {t: _mass(base[t]) for t in both}
    q = {t: _mass(cfg[t]) for t in both}
    floor = math.exp(LOG_FLOOR)
    p_o = max(0.0, 1.0 - sum(p.values()))
    q_o = max(floor, 1.0 - sum(q.values()))
    known = sum(pt * math.log(pt / max(q[t], floor)) for t, pt in p.items() if pt > 0.0)
    lumped = p_o * math.log(p_o / q_o) if p_o > 0.0 else 0.0
    high = p_o * (math.log(p_o) - LOG_FLOOR) if p_o > 0.0 else 0.0
    diff = sum(abs(p[t] - q[t]) for t in both)
    q_rest = max(0.0, 1.0 - sum(q.values()))
    return PositionFigures(
        top1=bool(_tops(base) & _tops(cfg)),
        kl_low=max(0.0, known + lumped),
        kl_high=max(0.0, known + high),
        tv_low=0.5 * (diff + abs(p_o - q_rest)),
        tv_high=min(1.0, 0.5 * (diff + p_o + q_rest)),
        tail=p_o,
    )


@dataclass(frozen=True, slots=True)
class PromptFigures:
    """One prompt's sums over its positions (the unit the bootstrap draws)."""

    positions: int
    top1: int
    kl_low: float
    kl_high: float
    tv_max: float
    tv_max_high: float
    tail: float


def prompt_figures(base: Sequence[TopK], cfg: Sequence[TopK]) -> PromptFigures:
    """Sum the figures of a prompt's positions (the two sides must have as many)."""
    if len(base) != len(cfg) or not base:
        raise ValueError(f"positions differ: baseline {len(base)}, config {len(cfg)}")
    figs = [position_figures(b, c) for b, c in zip(base, cfg)]
    return PromptFigures(
        positions=len(figs),
        top1=sum(f.top1 for f in figs),
        kl_low=sum(f.kl_low for f in figs),
        kl_high=sum(f.kl_high for f in figs),
        tv_max=max(f.tv_low for f in figs),
        tv_max_high=max(f.tv_high for f in figs),
        tail=sum(f.tail for f in figs),
    )


@dataclass(frozen=True)
class Agreement:
    """The figures over prompts, each with its bootstrap interval (``level``)."""

    prompts: int
    positions: int
    top1: Interval
    kl: Interval  # mean per position of the low (lumped) end, nats
    kl_high: float  # mean per position of the high end (assumes LOG_FLOOR), nats
    tv_max: Interval
    tail: float  # mean baseline mass outside the tokens both sides list

    def to_json(self) -> dict[str, object]:
        return {
            "prompts": self.prompts,
            "positions": self.positions,
            "top1": self.top1.to_json(),
            "kl": self.kl.to_json(),
            "kl_high": self.kl_high,
            "tv_max": self.tv_max.to_json(),
            "tail": self.tail,
            "log_floor": LOG_FLOOR,
        }


def agreement(figs: Sequence[PromptFigures], level: float = 0.95, seed: int = 0) -> Agreement:
    """Pool ``figs`` and bootstrap each figure over prompts (percentile, seeded)."""
    if not figs:
        raise ValueError("no prompt to pool")
    n = np.array([f.positions for f in figs], dtype=float)
    top1 = np.array([f.top1 for f in figs], dtype=float)
    kl = np.array([f.kl_low for f in figs])
    tv = np.array([f.tv_max for f in figs])
    idx = np.random.default_rng(seed).integers(0, len(figs), (_BOOTSTRAP, len(figs)))

    def interval(point: float, boot: np.ndarray) -> Interval:
        return percentile_interval(point, boot, level)

    total = float(n.sum())
    size = n[idx].sum(axis=1)
    return Agreement(
        prompts=len(figs),
        positions=int(total),
        top1=interval(float(top1.sum()) / total, top1[idx].sum(axis=1) / size),
        kl=interval(float(kl.sum()) / total, kl[idx].sum(axis=1) / size),
        kl_high=sum(f.kl_high for f in figs) / total,
        tv_max=interval(float(tv.max()), tv[idx].max(axis=1)),
        tail=sum(f.tail for f in figs) / total,
    )
