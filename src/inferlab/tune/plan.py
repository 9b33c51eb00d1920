"""How a tuning run is cut into work and put back together (pure: runs on any CPU).

Batch sizes alternate anchors (fully screened) and neighbours (screening only the config
families their anchors led with, :func:`plan_batch_sizes`); (shape, run of M) work units are
spread over devices longest-first (:func:`split_units`); per-device results are merged per
shape by :func:`merge_results`, which refuses a merge that lost or duplicated any batch size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from inferlab.errors import TuneError
from inferlab.tune.config import KernelConfig
from inferlab.tune.results import CellResult

__all__ = [
    "RETIME_ENGINE",
    "RETIME_SPLIT",
    "TOP_ENGINE",
    "TOP_SPLIT",
    "MPlan",
    "WorkUnit",
    "cell_candidates",
    "engine_device_name",
    "family",
    "leaders",
    "merge_results",
    "neighbour_candidates",
    "plan_batch_sizes",
    "select_retime",
    "split_units",
    "unit_cost",
    "work_units",
]

#: how many of the screen's fastest are re-timed, engine-usable and split-K
RETIME_ENGINE = 8
RETIME_SPLIT = 3
#: how many of an anchor's screen leaders its neighbours inherit, engine-usable and split-K
TOP_ENGINE = 16
TOP_SPLIT = 8


def engine_device_name(raw: str) -> str:
    """The device name as the engines spell it in file names: spaces replaced by ``_``."""
    return raw.replace(" ", "_")


class MPlan(NamedTuple):
    """One batch size of a shape's plan: ``sources`` empty = screen fully (an anchor), else the
    anchors whose screen leaders this neighbour inherits."""

    m: int
    sources: tuple[int, ...] = ()


def plan_batch_sizes(batch_sizes: Sequence[int], *, max_ratio: float = 2.0) -> list[MPlan]:
    """Sorted distinct batch sizes, alternating anchor / neighbour: even positions and the last
    are anchors; each neighbour inherits from the anchors just below and above it, but only
    when those are within ``max_ratio`` of each other (else it is screened fully too: between
    M=512 and 1536 the best family changed and the M=1024 neighbour missed its optimum by 4.5 %
    on N=2112, K=7168, H200)."""
    ms = sorted(set(batch_sizes))
    if any(m < 1 for m in ms):
        raise TuneError(f"batch sizes must be ≥ 1, got {ms}")
    anchors = {m for i, m in enumerate(ms) if i % 2 == 0 or i == len(ms) - 1}
    plan = []
    for i, m in enumerate(ms):
        if m in anchors or ms[i + 1] > max_ratio * ms[i - 1]:
            plan.append(MPlan(m))
        else:
            plan.append(MPlan(m, (ms[i - 1], ms[i + 1])))
    return plan


def _chunk(plan: Sequence[MPlan], parts: int) -> list[list[MPlan]]:
    """Cut a plan into ``parts`` contiguous runs; a neighbour keeps only sources in its run and
    becomes an anchor if none is left."""
    parts = max(1, min(parts, len(plan)))
    size = math.ceil(len(plan) / parts)
    runs = [list(plan[i : i + size]) for i in range(0, len(plan), size)]
    out = []
    for run in runs:
        inside = {p.m for p in run if not p.sources}
        fixed = []
        for p in run:
            srcs = tuple(s for s in p.sources if s in inside)
            fixed.append(MPlan(p.m, srcs) if (srcs or not p.sources) else MPlan(p.m))
        out.append(fixed)
    return out


class WorkUnit(NamedTuple):
    """Cells one device process tunes together: a shape and a run of its batch sizes."""

    n: int
    k: int
    plan: tuple[MPlan, ...]


def work_units(
    shapes: Sequence[tuple[int, int]], batch_sizes: Sequence[int], devices: int
) -> list[WorkUnit]:
    """One unit per shape, or, with more devices than shapes, each shape's batch sizes cut into
    ⌈devices / shapes⌉ contiguous runs so every device gets work."""
    if not shapes:
        raise TuneError("no shapes to tune")
    plan = plan_batch_sizes(batch_sizes)
    parts = max(1, math.ceil(devices / len(shapes))) if devices > len(shapes) else 1
    units = []
    for n, k in dict.fromkeys(shapes):
        for run in _chunk(plan, parts):
            units.append(WorkUnit(n, k, tuple(run)))
    return units


def unit_cost(unit: WorkUnit) -> float:
    """Relative cost estimate of a unit: per cell a fixed part plus one growing with M·N·K;
    neighbours (fewer candidates) count a quarter."""
    cost = 0.0
    for p in unit.plan:
        cell = 1.0 + p.m * unit.n * unit.k / 2**31
        cost += cell * (0.25 if p.sources else 1.0)
    return cost


def split_units(units: Sequence[WorkUnit], devices: int) -> list[list[WorkUnit]]:
    """Longest-processing-time-first assignment of units to ``devices`` lists (every unit in
    exactly one list; lists may be empty when units are fewer than devices)."""
    if devices < 1:
        raise TuneError(f"need at least one device, got {devices}")
    bins: list[list[WorkUnit]] = [[] for _ in range(devices)]
    loads = [0.0] * devices
    for u in sorted(units, key=unit_cost, reverse=True):
        i = loads.index(min(loads))
        bins[i].append(u)
        loads[i] += unit_cost(u)
    return bins


def family(cfg: KernelConfig) -> tuple[int, ...]:
    """A config without its GROUP_SIZE_M (whose effect depends on M)."""
    return (cfg.block_m, cfg.block_n, cfg.block_k, cfg.num_warps, cfg.num_stages, cfg.split_k)


def neighbour_candidates(
    cands: Sequence[KernelConfig], tops: Sequence[Sequence[KernelConfig]]
) -> list[KernelConfig]:
    """The candidates of a neighbour batch size whose family is among the anchors' leaders
    (every GROUP_SIZE_M of such a family is kept: its effect changes with M)."""
    fams = {family(c) for top in tops for c in top}
    return [c for c in cands if family(c) in fams]


def cell_candidates(
    cands: Sequence[KernelConfig], p: MPlan, tops: dict[int, list[KernelConfig]]
) -> tuple[list[KernelConfig], str]:
    """What plan entry ``p`` screens and the source it records: every candidate for an
    anchor; for a neighbour, those of its anchors' leading families (``tops`` per anchor M)
    when at least two of them are engine-usable, else every candidate."""
    if p.sources:
        near = neighbour_candidates(cands, [tops.get(s, []) for s in p.sources])
        if sum(1 for c in near if c.split_k == 1) >= 2:
            return near, "neighbour:" + ",".join(map(str, p.sources))
    return list(cands), "screen"


def select_retime(
    screened: Sequence[tuple[KernelConfig, float]],
    default: KernelConfig,
    *,
    n_engine: int = RETIME_ENGINE,
    n_split: int = RETIME_SPLIT,
) -> list[KernelConfig]:
    """The configs to re-time: the ``n_engine`` fastest engine-usable and ``n_split`` fastest
    split-K of the screen (finite times only), then the default."""
    out = leaders(screened, n_engine=n_engine, n_split=n_split)
    if default not in out:
        out.append(default)
    return out


def leaders(
    screened: Sequence[tuple[KernelConfig, float]],
    *,
    n_engine: int = TOP_ENGINE,
    n_split: int = TOP_SPLIT,
) -> list[KernelConfig]:
    """An anchor's screen leaders handed to its neighbours: the ``n_engine`` fastest
    engine-usable and ``n_split`` fastest split-K configs (finite times only)."""
    ranked = sorted((t, c) for c, t in screened if math.isfinite(t))
    eng = [c for _, c in ranked if c.split_k == 1][:n_engine]
    return eng + [c for _, c in ranked if c.split_k > 1][:n_split]


def merge_results(
    parts: Sequence[Sequence[CellResult]],
    shapes: Sequence[tuple[int, int]],
    batch_sizes: Sequence[int],
) -> list[CellResult]:
    """Merge per-device results into one list ordered by shape then M; raises
    :class:`TuneError` naming every (N, K, M) that is missing or came back twice."""
    seen: dict[tuple[int, int, int], CellResult] = {}
    dups = []
    for part in parts:
        for r in part:
            key = (r.n, r.k, r.m)
            if key in seen:
                dups.append(key)
            seen[key] = r
    want = [(n, k, m) for n, k in dict.fromkeys(shapes) for m in sorted(set(batch_sizes))]
    missing = [key for key in want if key not in seen]
    extra = [key for key in seen if key not in set(want)]
    problems = []
    if missing:
        problems.append("missing " + ", ".join(f"N={n},K={k},M={m}" for n, k, m in missing))
    if dups:
        problems.append("duplicated " + ", ".join(f"N={n},K={k},M={m}" for n, k, m in dups))
    if extra:
        problems.append("unrequested " + ", ".join(f"N={n},K={k},M={m}" for n, k, m in extra))
    if problems:
        raise TuneError("tuning results do not cover the requested cells: " + "; ".join(problems))
    return [seen[key] for key in want]
