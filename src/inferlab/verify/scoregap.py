"""The lm-eval gate's figures: a config's task score against the reference's, paired over the
same documents (pure: no I/O; docs/verify.md, "lm-eval").

Each document ``i`` (a task and its ``doc_id``) has the harness's score ``r_i`` on the
reference and ``c_i`` on the config (0/1 for exact_match). The **score difference** is
``D = mean(c_i − r_i)`` over the documents both have. Its interval is a **paired percentile
bootstrap**: the documents are resampled with replacement (``B = 2000`` times, seeded), each
resample's mean difference recomputed, and the interval is its ``(1 − level)/2`` and
``(1 + level)/2`` quantiles; pairing keeps the documents both sides get right (or wrong) out of
the noise. Each side's own score gets a Wilson interval when its scores are 0/1 (a bootstrap
one otherwise), for information. A config passes when ``D``'s low end is at least
``−max_drop``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from inferlab.stats.intervals import percentile_interval
from inferlab.stats.slo import wilson
from inferlab.stats.summary import Figures, Interval

__all__ = ["DocKey", "ScoreGap", "gap_passes", "score_gap", "side_interval"]

DocKey = tuple[str, int]  # (task, doc_id)
_BOOTSTRAP = 2000


@dataclass(frozen=True)
class ScoreGap(Figures):
    """The paired comparison over ``docs`` documents (``changed``: how many scored apart)."""

    docs: int
    changed: int
    reference: Interval
    config: Interval
    diff: Interval


def side_interval(scores: np.ndarray, level: float, seed: int = 0) -> Interval:
    """One side's mean score: Wilson's interval when every score is 0 or 1, else a
    percentile bootstrap over documents."""
    n = len(scores)
    if np.isin(scores, (0.0, 1.0)).all():
        return wilson(int(scores.sum()), n, level)
    idx = np.random.default_rng(seed).integers(0, n, (_BOOTSTRAP, n))
    return percentile_interval(float(scores.mean()), scores[idx].mean(axis=1), level)


def score_gap(
    reference: Mapping[DocKey, float],
    config: Mapping[DocKey, float],
    level: float = 0.95,
    seed: int = 0,
) -> ScoreGap:
    """Pair the two sides' scores on the documents both have and bootstrap the difference
    (``ValueError`` when they share none)."""
    keys = sorted(reference.keys() & config.keys())
    if not keys:
        raise ValueError("the config and the reference share no scored document")
    r = np.array([reference[k] for k in keys], dtype=float)
    c = np.array([config[k] for k in keys], dtype=float)
    d = c - r
    idx = np.random.default_rng(seed).integers(0, len(keys), (_BOOTSTRAP, len(keys)))
    return ScoreGap(
        docs=len(keys),
        changed=int(np.count_nonzero(d)),
        reference=side_interval(r, level, seed),
        config=side_interval(c, level, seed),
        diff=percentile_interval(float(d.mean()), d[idx].mean(axis=1), level),
    )


def gap_passes(gap: ScoreGap, max_drop: float) -> bool:
    """The gate: the difference's pessimistic (low) end is at least ``−max_drop``."""
    return gap.diff.low >= -max_drop
