"""The roofline (``tune.roofline``) against the measurement table; copies to cover three L2s."""

from __future__ import annotations

import math

import pytest

from inferlab.tune.roofline import Ceilings, gemm_bytes, gemm_flops, roof_pct, roofline_us
from inferlab.tune.timing import copies_needed, median

H200 = Ceilings(copy_gbps=4270.0, fp8_tflops=1314.0)


# ------------------------------------------------------------------ roofline and timing


def test_roofline_matches_the_measurement_table() -> None:
    # Table B, N=7168 K=2048 M=1: best 8.9 µs at 1656 GB/s, 39 % of the measured roofline
    n, k, m = 7168, 2048, 1
    assert gemm_bytes(m, n, k) == 2048 + 7168 * 2048 + 4 * 16 + 4 * 56 * 16 + 2 * 7168
    assert gemm_bytes(m, n, k) / (8.9 * 1e3) == pytest.approx(1656, rel=0.01)
    assert roof_pct(m, n, k, 8.9, H200) == pytest.approx(39, abs=1)
    # N=4096 K=7168 M=4096: compute-bound, 776 TFLOP/s and 59 %
    n, k, m = 4096, 7168, 4096
    assert gemm_flops(m, n, k) / (309.8 * 1e6) == pytest.approx(776, rel=0.01)
    assert roofline_us(m, n, k, H200) == pytest.approx(gemm_flops(m, n, k) / 1314e6)
    assert roof_pct(m, n, k, 309.8, H200) == pytest.approx(59, abs=1)


def test_copies_cover_three_l2() -> None:
    l2 = 60 << 20
    b = gemm_bytes(1, 2112, 7168)
    c = copies_needed(b, l2)
    assert c * b >= 3 * l2 > (c - 1) * b
    assert copies_needed(10 * l2, l2) == 2
    with pytest.raises(ValueError):
        copies_needed(0, l2)
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([]) == math.inf
