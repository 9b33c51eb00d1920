"""Amdahl ceilings (``levers.amdahl``), pinned against hand-computed cases: the TPOT change
and a category's share of the span."""

from __future__ import annotations

import math

import pytest

from inferlab.levers import PointBound
from inferlab.levers.amdahl import amdahl, category_share, ceiling_clause, share_clause


def test_amdahl_ceiling_and_tpot_change() -> None:
    # the seeds' sentence: FP8 GEMM at 6.1% of decode → at most ×1.065 even if free
    assert amdahl(0.061, math.inf) == pytest.approx(1 / 0.939)
    assert amdahl(0.061, 2) == pytest.approx(1 / (1 - 0.0305))
    assert amdahl(0.0, math.inf) == 1.0 and math.isinf(amdahl(1.0, math.inf))
    p = PointBound("C=1", 1, amdahl(0.061, math.inf), share=0.061)
    assert p.tpot_change == pytest.approx(-0.061)
    assert ceiling_clause([p]) == "at most ×1.065 (−6.1% TPOT) even if free"
    q = PointBound("C=16", 16, amdahl(0.006, math.inf), share=0.006)
    assert share_clause("fp8_gemm", [p, q]) == "fp8_gemm is 6.1% of decode at C=1 and 0.6% at C=16"
    assert ceiling_clause([p, q]) == (
        "at most ×1.065 (−6.1% TPOT) at C=1, ×1.006 (−0.6% TPOT) at C=16 even if free"
    )


def test_category_share_is_of_the_span_not_of_kernel_time() -> None:
    # a host-bound step: 4.67 ms of kernels in a 20.3 ms step; fp8_gemm 2 ms of kernel time is
    # 43% of kernel time but only 9.9% of the step, and the ceiling uses the step
    prof = {
        "span_us": 20_300.0,
        "kernel_us": 4_670.0,
        "categories": [
            {"name": "fp8_gemm", "time_us": 2_000.0},
            {"name": "attention", "time_us": 2_670.0},
        ],
    }
    assert category_share(prof, "fp8_gemm") == pytest.approx(2_000 / 20_300)
    assert category_share(prof, "moe") == 0.0
    assert category_share({"span_us": 0, "categories": []}, "moe") is None
