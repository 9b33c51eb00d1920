"""Amdahl ceilings of a share of the decode step, computed as ``inferlab profile`` does.

With ``s`` the fraction of the decode step's GPU span a lever acts on (the thing's GPU time /
the step span; in a host-bound step that is much less than its share of kernel time), the step —
and so TPOT — speeds up at most ``1/(1 − s)`` if the thing became free and ``1/(1 − s/2)`` if it
became 2× faster; TPOT falls by at most ``s`` (``s/2``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from inferlab.profile.analysis import amdahl

from .evidence import ConfigEvidence, StoredProfile
from .model import PointBound

__all__ = [
    "amdahl",
    "category_share",
    "ceiling_clause",
    "pct",
    "share_clause",
    "share_points",
    "span_share",
    "tpot_floor",
]


def pct(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{100 * x:.{digits}f}%"


def span_share(p: Mapping[str, Any], time_us: float) -> float | None:
    """``time_us`` as a fraction of the profile's total decode span (None without a span)."""
    span = float(p.get("span_us") or 0.0)
    return min(max(time_us / span, 0.0), 1.0) if span > 0 else None


def category_share(p: Mapping[str, Any], name: str) -> float | None:
    """A category's GPU time as a fraction of the decode span (0 when absent)."""
    t = sum(float(r["time_us"]) for r in p.get("categories") or [] if r["name"] == name)
    return span_share(p, t)


def share_points(
    profiles: Sequence[StoredProfile],
    share: Callable[[Mapping[str, Any]], float | None],
    *,
    note: str = "",
) -> list[PointBound]:
    """One ceiling per profiled load point from ``share(profile_data) -> s``."""
    out = []
    for p in profiles:
        s = share(p.data)
        if s is None:
            continue
        out.append(
            PointBound(
                p.label,
                p.concurrency,
                high=amdahl(s, math.inf),
                share=s,
                at_2x=amdahl(s, 2.0),
                note=note,
            )
        )
    return out


def _at(label: str) -> str:
    return "at an unknown load point" if label == "?" else f"at {label}"


def share_clause(what: str, points: Sequence[PointBound], verb: str = "is") -> str:
    """``fp8_gemm is 6.1% of decode at C=1 and 0.6% at C=16``."""
    parts = [
        f"{pct(p.share)}{' of decode' if i == 0 else ''} {_at(p.label)}"
        for i, p in enumerate(points)
    ]
    tail = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{what} {verb} {tail}"


def ceiling_clause(points: Sequence[PointBound]) -> str:
    """``at most ×1.065 (−6.1% TPOT) even if free`` (per point when there are several)."""

    def one(p: PointBound) -> str:
        ch = p.tpot_change
        tp = "" if ch is None else f" ({100 * ch:+.1f}% TPOT)".replace("-", "−")
        return f"×{p.high:.3f}{tp}" if p.high is not None and math.isfinite(p.high) else "×∞"

    if len(points) == 1:
        return f"at most {one(points[0])} even if free"
    return "at most " + ", ".join(f"{one(p)} {_at(p.label)}" for p in points) + " even if free"


def tpot_floor(cfg: ConfigEvidence, points: Sequence[PointBound]) -> list[str]:
    """``TPOT at C=1: 94.0 ms measured → at best 88.3 ms`` where the config's sweep has the
    profiled point."""
    out = []
    for p in points:
        sw = cfg.sweep.get(p.concurrency) if p.concurrency is not None else None
        if sw is not None and p.high:
            out.append(
                f"TPOT at {p.label}: {sw.tpot_ms:.1f} ms measured (median) → at best "
                f"{sw.tpot_ms / p.high:.1f} ms"
            )
    return out
