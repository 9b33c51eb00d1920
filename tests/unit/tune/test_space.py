"""The pruned search space: counts worked out by hand, G equivalence, shared memory, split-K,
and the 24-cell H200 sweep of the measurement fixture reproduced exactly."""

from __future__ import annotations

import itertools

import pytest

from inferlab.tune.config import KernelConfig
from inferlab.tune.space import (
    DEFAULT_BATCH_SIZES,
    ENGINE_GRID,
    ENGINE_GRID_SIZE,
    SEARCH_GRID,
    candidates,
    distinct_binaries,
    next_pow2,
    plan_summary,
    smem_bytes_needed,
)


def test_engine_grid_is_the_engines_1280() -> None:
    # stages {2,3,4,5} × BM {16..256} × BK {64,128} × BN {32..256} × warps {4,8} × G {1,16,32,64}
    assert ENGINE_GRID_SIZE == 4 * 5 * 2 * 4 * 2 * 4 == 1280
    assert ENGINE_GRID["block_k"] == (64, 128) and SEARCH_GRID["block_k"] == (128,)
    assert len(list(itertools.product(*SEARCH_GRID.values()))) == 640


def test_next_pow2() -> None:
    assert [next_pow2(x) for x in (0, 1, 2, 3, 16, 17, 24, 4096)] == [1, 1, 2, 4, 16, 32, 32, 4096]


def test_m1_keeps_only_bm16_and_one_group() -> None:
    # BM ≤ max(16, 1) = 16; one tile row, so every G is the same order: keep G=1.
    # 4 BN × 2 warps × 4 stages; all fit 227 KiB (BN256 s5: 5 × (272·128 + 68) = 174,420 B).
    cs = candidates(1, 7168, 2048)
    assert len(cs) == 32
    assert {c.block_m for c in cs} == {16} and {c.group_m for c in cs} == {1}
    assert all(c.block_k == 128 and c.split_k == 1 for c in cs)


def test_m64_group_classes() -> None:
    # BM16: 4 rows → G classes {1}, {16,32,64}; BM32: 2 rows → 2 classes; BM64: 1 row → 1.
    cs = candidates(64, 4096, 7168)
    assert len(cs) == 4 * 2 * 4 * (2 + 2 + 1) == 160
    assert {(c.block_m, c.group_m) for c in cs} == {(16, 1), (16, 16), (32, 1), (32, 16), (64, 1)}


def test_m4096_smem_and_groups_by_hand() -> None:
    cs = candidates(4096, 7168, 2048)
    by_bm = {bm: [c for c in cs if c.block_m == bm] for bm in (16, 32, 64, 128, 256)}
    # BM ≤ 64: 256/128/64 tile rows ≥ 64 → all four G differ; nothing exceeds smem
    assert [len(by_bm[b]) for b in (16, 32, 64)] == [128, 128, 128]
    # BM128: 32 rows → G 32 and 64 coincide; BN256 s5 needs 5 × (384·128 + 516) > 232,448
    assert {c.group_m for c in by_bm[128]} == {1, 16, 32}
    assert len(by_bm[128]) == (3 * 4 + 3) * 2 * 3
    # BM256: 16 rows → G ∈ {1, 16}; (BN, stages) that fit: 4 + 4 + 3 + 2 = 13
    assert {c.group_m for c in by_bm[256]} == {1, 16}
    assert len(by_bm[256]) == 13 * 2 * 2
    assert KernelConfig(256, 256, 128, 1, 4, 4) not in cs
    assert KernelConfig(256, 256, 128, 1, 4, 3) in cs
    assert len(cs) == 526


def test_smem_limit_prunes() -> None:
    assert smem_bytes_needed(KernelConfig(16, 256, 128, 1, 4, 3)) == 3 * (272 * 128 + 4 * 17)
    # with 100,000 B: BN256 keeps only 2 stages (69,768 B); BN ≤ 128 keeps all 4
    cs = candidates(1, 7168, 2048, smem_bytes=100_000)
    assert len(cs) == (4 + 4 + 4 + 1) * 2
    assert all(smem_bytes_needed(c) <= 100_000 for c in cs)


def test_split_k_candidates_by_hand() -> None:
    # M=1, K=2048: 16 K-blocks; s must divide 16 and tiles × s ≤ 4 × 132 = 528.
    # BN32: 224 tiles → s=2; BN64: 112 → 2,4; BN128: 56 → 2,4,8; BN256: 28 → 2,4,8,16.
    cs = candidates(1, 7168, 2048, split_k=True)
    split = [c for c in cs if c.split_k > 1]
    assert len(split) == 8 * (1 + 2 + 3 + 4)
    assert {c.split_k for c in split if c.block_n == 64} == {2, 4}
    assert not any(c.engine_usable for c in split)
    # K=7168: 56 blocks, 16 does not divide them
    assert 16 not in {c.split_k for c in candidates(16, 2112, 7168, split_k=True)}
    # large M with many tiles: no split-K at all
    assert all(c.split_k == 1 for c in candidates(4096, 7168, 2048, split_k=True))


def test_distinct_binaries_ignore_m_and_group() -> None:
    a = candidates(1, 7168, 2048) + candidates(64, 7168, 2048)
    keys = distinct_binaries(a)
    assert len(keys) == len({(c.block_m, c.block_n, c.num_warps, c.num_stages) for c in a})
    assert len(distinct_binaries(a, group_m_constexpr=True)) > len(keys)
    split = distinct_binaries(candidates(1, 7168, 2048, split_k=True))
    assert {k.kernel for k in split} == {"plain", "splitk"}


def test_reproduces_the_h200_sweep_fixture() -> None:
    # fp8_block_gemm_h200.md: BM {16..128} × BN {64,128,256} × G × w × s over 4 shapes × 6 M,
    # pruned the same way: 3,880 configs timed, 94 distinct binaries compiled
    grid = {**SEARCH_GRID, "block_m": (16, 32, 64, 128), "block_n": (64, 128, 256)}
    shapes = [(7168, 2048), (4096, 7168), (24576, 1536), (2112, 7168)]
    total, bins = 0, set()
    for n, k in shapes:
        for m in (1, 16, 64, 256, 1024, 4096):
            cs = candidates(m, n, k, grid=grid)
            total += len(cs)
            bins |= distinct_binaries(cs)
    assert (total, len(bins)) == (3880, 94)


def test_plan_summary_against_exhaustive() -> None:
    shapes = [(7168, 2048), (4096, 7168), (24576, 1536), (2112, 7168)]
    p = plan_summary(shapes, DEFAULT_BATCH_SIZES, split_k=False)
    assert p.exhaustive_timings == 1280 * 18 * 4
    assert p.timings == sum(c.candidates for c in p.cells) and len(p.cells) == 72
    assert p.split_k_timings == 0 and p.saving > 5
    q = plan_summary(shapes, DEFAULT_BATCH_SIZES, split_k=True)
    assert q.split_k_timings > 0 and q.timings == p.timings + q.split_k_timings
    assert q.distinct_binaries > p.distinct_binaries
    assert q.to_json()["cells"][0] == {
        "n": 7168,
        "k": 2048,
        "m": 1,
        "candidates": 112,
        "split_k": 80,
    }


def test_bad_cell_rejected() -> None:
    with pytest.raises(ValueError, match="positive"):
        candidates(0, 7168, 2048)
