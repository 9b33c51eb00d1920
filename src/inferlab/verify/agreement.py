"""Distribution agreement of a config with the baseline, from top-k logprobs (pure: no I/O).

Both sides are scored on the same tokens (the baseline's greedy continuation, teacher forced),
so each position has the baseline's listed map ``P`` and the config's ``Q`` (token text →
logprob, nats). ``K`` is the set of tokens both list; ``p_o = 1 − P(K)`` is the baseline's mass
outside it (the **tail**). Per position (docs/verify.md, "The KL's two bounds"):

- **top-1**: the two top tokens are the same; where several tie for the top (bf16 logits of a
  random-weight model often do), the sides agree when their tied sets share a token;
- **KL(P ‖ Q)**, two bounds. The **lumped** (low) end merges everything outside ``K`` into one
  bucket: ``Σ_K p log(p/q) + p_o log(p_o/q_o)``, a lower bound (data processing). The **upper
  bound** (the gated end) assumes only that the config gives every token at least
  ``e^log_floor``: ``Σ_K p log(p/q) + Σ_{P lists, Q not} p (log p − F) + r (log c − F)``, with
  ``r`` the baseline's unlisted mass and ``c = min(r, p_k)`` (``p_k``: its ``top_k``-th listed
  probability, which no unlisted token exceeds). Every term bounds its part of the true sum
  from above, so it cannot flatter; it is the exact KL when both maps hold every token;
- **TV**, ``½ Σ |p − q|``: low ``½(Σ_K |p − q| + |p_o − q_o|)``, high
  ``½(Σ_K |p − q| + p_o + q_o)``.

Over prompts: top-1 agreement and both KL bounds are pooled means per position (``Σ /
positions``), each with an expanded percentile bootstrap interval over prompts (resampled
whole, ``B`` times, seeded: the prompt is the unit that is drawn; :func:`expanded_level`).
The **largest TV** is a statement about the positions scored, not a sampled estimate: its
bracket ``[max low, max high]`` holds the largest true TV over those positions with certainty
(level 1).
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
    "expanded_level",
    "position_figures",
    "prompt_figures",
]

#: the least logprob (nats) the KL's upper bound assumes the config gives any token (default)
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


def _kl_upper(pb: dict[str, float], q: dict[str, float], top_k: int | None, lf: float) -> float:
    """The KL's upper bound: the shared tokens exactly (a listed 0 at the floor), the rest of
    the baseline's mass at the config's floor ``e^lf`` (``q``: the config's shared masses)."""
    known = sum(
        p * (math.log(p) - (math.log(q[t]) if q[t] > 0.0 else lf))
        for t, p in pb.items()
        if t in q and p > 0.0
    )
    alone = sum(p * (math.log(p) - lf) for t, p in pb.items() if t not in q and p > 0.0)
    rest = max(0.0, 1.0 - sum(pb.values()))
    if rest <= 0.0:
        return known + alone
    listed = sorted(pb.values(), reverse=True)
    kth = listed[min(len(listed), top_k or len(listed)) - 1] if listed else 1.0
    return known + alone + rest * (math.log(min(rest, max(kth, 1e-300))) - lf)


def position_figures(
    base: TopK, cfg: TopK, *, top_k: int | None = None, log_floor: float = LOG_FLOOR
) -> PositionFigures:
    """The figures of one position from the two listed maps (token text → logprob);
    ``top_k``: how many each side was asked for (None: as many as the baseline lists; vLLM's
    echo may add the scored token past them); ``log_floor``: the upper bound's assumption."""
    if not base or not cfg:
        raise ValueError("a position needs the top logprobs of both sides")
    both = base.keys() & cfg.keys()
    pb = {t: _mass(v) for t, v in base.items()}
    p = {t: pb[t] for t in both}
    q = {t: _mass(cfg[t]) for t in both}
    floor = math.exp(log_floor)
    p_o = max(0.0, 1.0 - sum(p.values()))
    q_o = max(floor, 1.0 - sum(q.values()))
    known = sum(pt * math.log(pt / max(q[t], floor)) for t, pt in p.items() if pt > 0.0)
    lumped = p_o * math.log(p_o / q_o) if p_o > 0.0 else 0.0
    diff = sum(abs(p[t] - q[t]) for t in both)
    q_rest = max(0.0, 1.0 - sum(q.values()))
    low = max(0.0, known + lumped)
    return PositionFigures(
        top1=bool(_tops(base) & _tops(cfg)),
        kl_low=low,
        kl_high=max(low, _kl_upper(pb, q, top_k, log_floor)),
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


def prompt_figures(
    base: Sequence[TopK],
    cfg: Sequence[TopK],
    *,
    top_k: int | None = None,
    log_floor: float = LOG_FLOOR,
) -> PromptFigures:
    """Sum the figures of a prompt's positions (the two sides must have as many)."""
    if len(base) != len(cfg) or not base:
        raise ValueError(f"positions differ: baseline {len(base)}, config {len(cfg)}")
    figs = [position_figures(b, c, top_k=top_k, log_floor=log_floor) for b, c in zip(base, cfg)]
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
    """The figures over prompts: top-1 and the two KL bounds with their bootstrap intervals
    (``level``), the largest TV's certain bracket over the positions scored."""

    prompts: int
    positions: int
    top1: Interval
    kl: Interval  # the lumped (lower) bound, mean per position, nats
    kl_upper: Interval  # the upper bound (assumes log_floor), mean per position, nats: gated
    tv_max: Interval  # [max low, max high] over the positions scored, level 1
    tail: float  # mean baseline mass outside the tokens both sides list
    log_floor: float = LOG_FLOOR

    def to_json(self) -> dict[str, object]:
        return {
            "prompts": self.prompts,
            "positions": self.positions,
            "top1": self.top1.to_json(),
            "kl": self.kl.to_json(),
            "kl_upper": self.kl_upper.to_json(),
            "kl_high": self.kl_upper.estimate,
            "tv_max": self.tv_max.to_json(),
            "tail": self.tail,
            "log_floor": self.log_floor,
        }


def expanded_level(level: float, n: int) -> float:
    """The percentile level that gives ``level`` coverage over ``n`` prompts: Hesterberg's
    expanded percentile interval (2015, "What teachers should know about the bootstrap",
    The American Statistician 69(4)), whose tails are ``Φ(−√(n/(n−1)) · t_{n−1})`` so that it
    is as wide as Student's t interval on normal data: the plain percentile interval is too
    narrow over few prompts."""
    if n < 2:
        return level
    from scipy.stats import norm, t

    tail = float(norm.cdf(-math.sqrt(n / (n - 1)) * t.ppf(1.0 - (1.0 - level) / 2.0, n - 1)))
    return 1.0 - 2.0 * tail


def agreement(
    figs: Sequence[PromptFigures],
    level: float = 0.95,
    seed: int = 0,
    *,
    log_floor: float = LOG_FLOOR,
    expand: bool = True,
) -> Agreement:
    """Pool ``figs`` and bootstrap top-1 and the KL bounds over prompts (expanded percentile at
    ``level``, seeded; ``expand`` False: the plain percentile interval of 82ddb2d);
    ``log_floor``: the floor the figures' upper bounds assumed (recorded)."""
    if not figs:
        raise ValueError("no prompt to pool")
    n = np.array([f.positions for f in figs], dtype=float)
    top1 = np.array([f.top1 for f in figs], dtype=float)
    kl = np.array([f.kl_low for f in figs])
    up = np.array([f.kl_high for f in figs])
    idx = np.random.default_rng(seed).integers(0, len(figs), (_BOOTSTRAP, len(figs)))
    total = float(n.sum())
    size = n[idx].sum(axis=1)

    wide = expanded_level(level, len(figs)) if expand else level

    def pooled(x: np.ndarray) -> Interval:
        iv = percentile_interval(float(x.sum()) / total, x[idx].sum(axis=1) / size, wide)
        return Interval(iv.estimate, iv.low, iv.high, level)

    tv_lo = max(f.tv_max for f in figs)
    return Agreement(
        prompts=len(figs),
        positions=int(total),
        top1=pooled(top1),
        kl=pooled(kl),
        kl_upper=pooled(up),
        tv_max=Interval(tv_lo, tv_lo, max(f.tv_max_high for f in figs), 1.0),
        tail=sum(f.tail for f in figs) / total,
        log_floor=log_floor,
    )
