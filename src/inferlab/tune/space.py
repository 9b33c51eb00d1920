"""The search space: the engines' grid, pruned to what can win, plus split-K candidates.

SGLang's ``benchmark/kernels/quantization/tuning_block_wise_kernel.py`` and vLLM's
``benchmarks/kernels/benchmark_w8a8_block_fp8.py`` time the same 1,280 configs for every batch
size M of every shape: ``num_stages`` {2,3,4,5} × ``BLOCK_SIZE_M`` {16,32,64,128,256} ×
``BLOCK_SIZE_K`` {64,128} × ``BLOCK_SIZE_N`` {32,64,128,256} × ``num_warps`` {4,8} ×
``GROUP_SIZE_M`` {1,16,32,64}. Here ``BLOCK_SIZE_K`` is the scale block (128), and three rules
drop configs that cannot be the best or that behave identically to one that is kept:

- shared memory: ``num_stages`` × (BM + BN) × BK bytes of fp8 tiles + the per-stage scales
  (BM + 1 fp32) must fit the per-block limit (232,448 B = 227 KiB on H100/H200);
- BLOCK_SIZE_M > max(16, next_pow2(M)) only computes padding rows;
- GROUP_SIZE_M only reorders tiles; G and G' give the same order when ``min(G, rows) ==
  min(G', rows)`` (rows = ⌈M/BM⌉ tile rows), so one G per class is kept (the smallest).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from inferlab.picks import pick
from inferlab.tune.config import KernelConfig

__all__ = [
    "DEFAULT_BATCH_SIZES",
    "ENGINE_GRID",
    "ENGINE_GRID_SIZE",
    "H100_SMEM_BYTES",
    "SCALE_BLOCK",
    "SEARCH_GRID",
    "SPLIT_K_FACTORS",
    "BinaryKey",
    "CellPlan",
    "PlanSummary",
    "candidates",
    "distinct_binaries",
    "next_pow2",
    "plan_summary",
    "smem_bytes_needed",
]

#: the batch sizes (M) both engines' tuners use by default
DEFAULT_BATCH_SIZES: tuple[int, ...] = (
    1,
    2,
    4,
    8,
    16,
    24,
    32,
    48,
    64,
    96,
    128,
    256,
    512,
    1024,
    1536,
    2048,
    3072,
    4096,
)

#: max dynamic shared memory per block on sm_90 (H100/H200/H20), bytes
H100_SMEM_BYTES = 232448
#: the DeepSeek-style quantization block: 1×128 activation groups, 128×128 weight blocks
SCALE_BLOCK = 128
#: split-K factors tried beyond the engines' grid
SPLIT_K_FACTORS: tuple[int, ...] = (2, 4, 8, 16)

#: the engines' exhaustive grid (identical in SGLang and vLLM)
ENGINE_GRID: dict[str, tuple[int, ...]] = {
    "block_m": (16, 32, 64, 128, 256),
    "block_n": (32, 64, 128, 256),
    "block_k": (64, 128),
    "group_m": (1, 16, 32, 64),
    "num_warps": (4, 8),
    "num_stages": (2, 3, 4, 5),
}
ENGINE_GRID_SIZE = len(list(itertools.product(*ENGINE_GRID.values())))

#: what is searched here: the engines' grid with BLOCK_SIZE_K fixed to the scale block
SEARCH_GRID: dict[str, tuple[int, ...]] = {**ENGINE_GRID, "block_k": (SCALE_BLOCK,)}


def next_pow2(x: int) -> int:
    """Smallest power of two ≥ x (1 for x ≤ 1)."""
    return 1 if x <= 1 else 1 << (x - 1).bit_length()


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def smem_bytes_needed(cfg: KernelConfig) -> int:
    """Shared memory the pipelined kernel stages, bytes: per stage an fp8 A tile (BM×BK), an fp8
    B tile (BN×BK), BM activation scales and one weight scale (fp32)."""
    per_stage = (cfg.block_m + cfg.block_n) * cfg.block_k + 4 * (cfg.block_m + 1)
    return cfg.num_stages * per_stage


def _base_grid(grid: dict[str, tuple[int, ...]]) -> list[KernelConfig]:
    return [
        KernelConfig(bm, bn, bk, g, w, s)
        for bm, bn, bk, g, w, s in itertools.product(
            grid["block_m"],
            grid["block_n"],
            grid["block_k"],
            grid["group_m"],
            grid["num_warps"],
            grid["num_stages"],
        )
    ]


def _split_factors(m: int, n: int, k: int, cfg: KernelConfig, sm_count: int) -> list[int]:
    """Split-K factors worth timing for ``cfg`` at (M, N, K): only for M ≤ 64 or when the tiles
    alone do not fill the SMs; K/128 must split evenly; at most 4 waves of CTAs."""
    tiles = _cdiv(m, cfg.block_m) * _cdiv(n, cfg.block_n)
    if not (m <= 64 or tiles < sm_count):
        return []
    k_blocks = _cdiv(k, cfg.block_k)
    return [
        s
        for s in SPLIT_K_FACTORS
        if k_blocks % s == 0 and k_blocks >= s and tiles * s <= 4 * sm_count
    ]


def candidates(
    m: int,
    n: int,
    k: int,
    *,
    split_k: bool = False,
    smem_bytes: int = H100_SMEM_BYTES,
    sm_count: int = 132,
    grid: dict[str, tuple[int, ...]] | None = None,
) -> list[KernelConfig]:
    """The configs worth timing for one cell (M, N, K), sorted; ``split_k`` adds split-K
    variants (``split_k`` > 1, never engine-usable) of the surviving configs."""
    if m < 1 or n < 1 or k < 1:
        raise ValueError(f"M, N, K must be positive, got M={m}, N={n}, K={k}")
    max_bm = max(16, next_pow2(m))
    kept: dict[tuple[int, ...], KernelConfig] = {}
    for cfg in _base_grid(grid or SEARCH_GRID):
        if cfg.block_m > max_bm or smem_bytes_needed(cfg) > smem_bytes:
            continue
        rows = _cdiv(m, cfg.block_m)
        cls = (
            cfg.block_m,
            cfg.block_n,
            cfg.block_k,
            min(cfg.group_m, rows),
            cfg.num_warps,
            cfg.num_stages,
        )
        if cls not in kept or cfg.group_m < kept[cls].group_m:
            kept[cls] = cfg
    out = sorted(kept.values())
    if split_k:
        out += [
            KernelConfig(c.block_m, c.block_n, c.block_k, c.group_m, c.num_warps, c.num_stages, s)
            for c in list(out)
            for s in _split_factors(m, n, k, c, sm_count)
        ]
    return sorted(out)


class BinaryKey(NamedTuple):
    """The compile-time part of a config: what one Triton binary is specialized on.
    ``kernel`` is ``plain`` (the engines' kernel) or ``splitk``; ``group_m`` is 0 when
    GROUP_SIZE_M is a runtime argument."""

    kernel: str
    #: the config's compile-time fields (``split_k`` 1, ``group_m`` as above)
    config: KernelConfig


def distinct_binaries(
    configs: Iterable[KernelConfig], *, group_m_constexpr: bool = False
) -> set[BinaryKey]:
    """What must be compiled. inferlab's kernels (``inferlab.tune.kernel``) do not specialize M,
    GROUP_SIZE_M, SPLIT_K or the scale strides, so one binary serves every M, G and split
    factor (N and K enter only through Triton's divisibility-by-16 specialization). The engines
    make GROUP_SIZE_M ``constexpr``: pass ``group_m_constexpr=True`` to count their way. The
    24-cell H200 sweep in ``fp8_block_gemm_h200.md`` compiled 94 binaries for 3,880 timings."""
    return {
        BinaryKey(
            "plain" if c.split_k == 1 else "splitk",
            replace(c, group_m=c.group_m if group_m_constexpr else 0, split_k=1),
        )
        for c in configs
    }


@dataclass(frozen=True)
class CellPlan:
    """Candidates for one (N, K, M) cell."""

    n: int
    k: int
    m: int
    candidates: int
    split_k: int


@dataclass(frozen=True)
class PlanSummary:
    """How much work the pruned search does, against what the engines' tuners do."""

    shapes: int
    batch_sizes: int
    cells: list[CellPlan]
    timings: int
    distinct_binaries: int
    split_k_timings: int
    exhaustive_timings: int
    exhaustive_binaries: int = ENGINE_GRID_SIZE
    notes: list[str] = field(default_factory=list)

    @property
    def saving(self) -> float:
        """Exhaustive timings / planned timings (×)."""
        return self.exhaustive_timings / self.timings if self.timings else float("nan")

    def to_json(self) -> dict[str, Any]:
        return {
            **pick(self, "shapes", "batch_sizes", "timings", "split_k_timings"),
            **pick(self, "distinct_binaries", "exhaustive_timings", "exhaustive_binaries"),
            "saving": self.saving,
            "cells": [c.__dict__ for c in self.cells],
        }


def plan_summary(
    shapes: Sequence[tuple[int, int]],
    batch_sizes: Sequence[int],
    split_k: bool,
    *,
    smem_bytes: int = H100_SMEM_BYTES,
    sm_count: int = 132,
) -> PlanSummary:
    """Candidates per cell, total timings and distinct binaries for ``shapes`` (N, K) ×
    ``batch_sizes``, and what the engines' exhaustive tuners would time for the same cells."""
    cells: list[CellPlan] = []
    binaries: set[BinaryKey] = set()
    total = split_total = 0
    for n, k in shapes:
        for m in batch_sizes:
            cs = candidates(m, n, k, split_k=split_k, smem_bytes=smem_bytes, sm_count=sm_count)
            nsplit = sum(1 for c in cs if c.split_k > 1)
            cells.append(CellPlan(n, k, m, len(cs), nsplit))
            binaries |= distinct_binaries(cs)
            total += len(cs)
            split_total += nsplit
    return PlanSummary(
        shapes=len(shapes),
        batch_sizes=len(batch_sizes),
        cells=cells,
        timings=total,
        distinct_binaries=len(binaries),
        split_k_timings=split_total,
        exhaustive_timings=ENGINE_GRID_SIZE * len(batch_sizes) * len(shapes),
    )
