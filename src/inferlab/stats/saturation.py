"""Saturation: where one config's output throughput stops growing with concurrency."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from inferlab.stats.verdict import pct

__all__ = ["Saturation", "find_saturation"]


@dataclass(frozen=True, slots=True)
class Saturation:
    """Where one config's output throughput stops growing with concurrency.

    ``saturated_at`` is the first concurrency after which throughput grows < ``min_gain``
    while TPOT grows; ``next_concurrency`` is the point that shows it, with its relative
    throughput gain and TPOT growth (0.026 = +2.6%). ``None`` when not saturated."""

    saturated_at: int | None
    next_concurrency: int | None
    throughput_gain: float | None
    tpot_growth: float | None
    max_concurrency: int | None
    sentence: str


def find_saturation(
    points: Sequence[tuple[int, float, float]], *, min_gain: float = 0.05
) -> Saturation:
    """Given ``(concurrency, output tok/s, median TPOT ms)`` per load point of one config, the
    first concurrency C after which no higher point gains ≥ ``min_gain`` (0.05 = 5%) tok/s
    while TPOT grows at the next point. Points with a non-finite or non-positive value are
    ignored."""
    pts = sorted(
        (int(c), float(t), float(p))
        for c, t, p in points
        if math.isfinite(t) and math.isfinite(p) and t > 0 and p > 0
    )
    if not pts:
        return Saturation(None, None, None, None, None, "no usable load points")
    top = pts[-1][0]
    for i in range(len(pts) - 1):
        c, tput, tpot = pts[i]
        c2, tput2, tpot2 = pts[i + 1]
        best_later = max(t for _, t, _ in pts[i + 1 :])
        if best_later < tput * (1.0 + min_gain) and tpot2 > tpot:
            gain, growth = tput2 / tput - 1.0, tpot2 / tpot - 1.0
            sentence = f"saturated by C={c}: C={c2} gives {pct(gain)} tok/s at {pct(growth)} TPOT"
            return Saturation(c, c2, gain, growth, top, sentence)
    if len(pts) == 1:
        return Saturation(None, None, None, None, top, f"one load point (C={top}): cannot tell")
    return Saturation(None, None, None, None, top, f"not saturated up to C={top}")
