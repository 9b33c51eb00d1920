"""Diff of two profiles: per-category and per-kernel time (B − A), per step when both have
steps. Kernels are matched by full name (never by correlation: CUDA graph replays share one)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from inferlab.errors import ConfigError
from inferlab.store.models import ProfileRow

from .categories import short_name
from .result import Profile, finite

__all__ = ["DiffRow", "ProfileDiff", "diff_profiles"]


@dataclass
class DiffRow:
    """A category or kernel in two profiles: time per step (µs; per segment without steps)."""

    name: str
    short: str
    a_us: float
    b_us: float
    delta_us: float
    ratio: float | None


@dataclass
class ProfileDiff:
    a: str
    b: str
    unit: str
    span_a_us: float
    span_b_us: float
    categories: list[DiffRow]
    kernels: list[DiffRow]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = finite(asdict(self))
        return out


def _per(p: Profile) -> float:
    return float(p.n_steps) if p.n_steps and p.segment != "all" else 1.0


def diff_profiles(a: Profile, b: Profile, top: int = 20) -> ProfileDiff:
    """Per-category and per-kernel deltas (B − A), per step when both have steps. Kernels are
    matched by full name (never by correlation: CUDA graph replays share one)."""
    if a.mode != b.mode:
        raise ConfigError(
            f"--vs: {a.trace} is a {a.mode.upper()} profile and {b.trace} a {b.mode.upper()} "
            "one: their times are not comparable"
        )
    na, nb = _per(a), _per(b)
    unit = "per step" if na > 1 or nb > 1 or (a.n_steps and b.n_steps) else "per segment"
    if unit == "per segment":
        na = nb = 1.0

    def rows(xa: Sequence[ProfileRow], xb: Sequence[ProfileRow], short: bool) -> list[DiffRow]:
        ta = {r.name: r for r in xa}
        tb = {r.name: r for r in xb}
        out = []
        for n in dict.fromkeys([*ta, *tb]):
            va = ta[n].time_us / na if n in ta else 0.0
            vb = tb[n].time_us / nb if n in tb else 0.0
            s = short_name(n) if short else n
            out.append(DiffRow(n, s, va, vb, vb - va, vb / va if va > 0 else None))
        out.sort(key=lambda r: -abs(r.delta_us))
        return out

    # kernels: all of them, not only each side's top list
    return ProfileDiff(
        a=a.trace,
        b=b.trace,
        unit=unit,
        span_a_us=a.span_us / na,
        span_b_us=b.span_us / nb,
        categories=rows(a.categories, b.categories, False),
        kernels=rows(a.kernel_rows, b.kernel_rows, True)[:top],
    )
