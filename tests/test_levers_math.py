"""The arithmetic of ``inferlab levers``, pinned against hand-computed cases: Amdahl ceilings,
the speculative-decoding band, interpolation of the baseline TPOT, combined predictions and the
verdicts (above the bound, below, consistent)."""

from __future__ import annotations

import math

import pytest

from inferlab.errors import ConfigError
from inferlab.levers import Measured, PointBound, check_accept_length, judge, spec_band, tpot_at
from inferlab.levers.amdahl import amdahl, category_share, ceiling_clause, share_clause
from inferlab.levers.load_rules import spec_sentence
from inferlab.levers.predict import _combine, _Part, at_2x
from inferlab.levers.specdec import first_without_help, spec_flags
from inferlab.stats.compare import find_saturation

# the seed campaign's config A on the reference engine (ms per decode step at C=1, 8, 16)
SWEEP = [(1, 88.0), (8, 327.3), (16, 683.7)]


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


def test_interpolation_linear_in_c_and_extrapolation_marked() -> None:
    assert tpot_at(SWEEP, 8) == (327.3, False)
    t2, ext = tpot_at(SWEEP, 2)  # between C=1 and C=8: 88 + (327.3 − 88) / 7
    assert t2 == pytest.approx(88 + 239.3 / 7) and not ext
    t12, ext = tpot_at(SWEEP, 12)
    assert t12 == pytest.approx(327.3 + (683.7 - 327.3) / 2) and not ext
    t32, ext = tpot_at(SWEEP, 32)  # beyond C=16: the last segment's slope (356.4 / 8 per C)
    assert t32 == pytest.approx(683.7 + 16 * 356.4 / 8) and ext
    # a falling last segment (noise) extrapolates flat, never below the last point
    assert tpot_at([(1, 10.0), (4, 20.0), (8, 19.0)], 16) == (19.0, True)
    # one point: the step grows at most in proportion to the batch
    assert tpot_at([(4, 10.0)], 8) == (20.0, True)
    with pytest.raises(ConfigError, match="no measured TPOT"):
        tpot_at([], 2)


def test_spec_band_against_hand_computed_values() -> None:
    band = spec_band(SWEEP, k=1, tau=1.6, delta=0.05)
    assert [p.concurrency for p in band] == [1, 8, 16]
    t2 = 88 + 239.3 / 7
    assert band[0].verify_ms == pytest.approx(t2) and band[0].draft_ms == pytest.approx(4.4)
    assert band[0].low == pytest.approx(1.6 * 88 / (t2 + 4.4))  # 1.1123
    assert band[0].low == pytest.approx(1.1123, abs=1e-4)
    assert band[1].low == pytest.approx(1.6 * 327.3 / (683.7 + 0.05 * 327.3))  # 0.7480
    t32 = 683.7 + 16 * 356.4 / 8
    assert band[2].low == pytest.approx(1.6 * 683.7 / (t32 + 0.05 * 683.7))  # 0.7646
    assert all(p.high == 1.6 for p in band)
    assert [p.extrapolated for p in band] == [False, False, True]
    first = first_without_help(band)
    assert first is not None and first.concurrency == 8
    sat = find_saturation([(1, 11.4, 88.0), (8, 24.4, 327.3), (16, 23.4, 683.7)])
    assert spec_sentence(band, sat) == (
        "helps at C=1 (×1.11–×1.60), not from C=8 (×0.75–×1.60): decode saturates by C=8"
    )
    # n-gram with k = 3 on a flat (memory-bound) sweep: no draft model (δ = 0), helps everywhere
    flat = spec_band([(1, 10.0), (4, 10.2), (16, 10.8)], k=3, tau=2.0, delta=0.0)
    assert flat[0].low == pytest.approx(2.0 * 10.0 / 10.2)  # verify ≤ t(4)
    assert flat[1].low == pytest.approx(2.0 * 10.2 / 10.8)  # t(16)
    assert flat[2].low == pytest.approx(2.0 * 10.8 / (10.8 + 48 * 0.6 / 12))  # t(64), extrap.
    assert first_without_help(flat) is None
    # a sweep whose TPOT falls with C (noise on a real CPU engine: 5.4 → 4.8 ms): verifying
    # never costs less than a step at C, so the band never inverts
    noisy = spec_band([(1, 5.4), (4, 4.8)], k=3, tau=2.27, delta=0.0)
    assert [p.low for p in noisy] == [pytest.approx(2.27), pytest.approx(2.27)]
    assert spec_sentence(flat, None) == (
        "helps at every measured point: C=1 (×1.96–×2.00), C=4 (×1.89–×2.00), "
        "C=16 (×1.64–×2.00 extrapolated)"
    )


def test_accept_length_range_is_named() -> None:
    check_accept_length(2.0, 1)
    with pytest.raises(ConfigError, match=r"1 < τ ≤ 2 .*got 1$"):
        check_accept_length(1.0, 1)
    with pytest.raises(ConfigError, match=r"expected 1 < τ ≤ 2 \(k = 1 draft tokens.*got 2.5"):
        check_accept_length(2.5, 1)
    with pytest.raises(ConfigError, match=r"1 < τ ≤ k \+ 1"):
        check_accept_length(0.5, None)
    with pytest.raises(ConfigError, match="--draft-cost"):
        spec_band(SWEEP, k=1, tau=1.5, delta=1.0)


def test_verdicts_above_below_consistent() -> None:
    # a bound of ×1.065 (FP8 GEMM at 6.1% of decode)
    j = judge(None, 1.065, Measured(1.10, 1.08, 1.12))
    assert j[0] == "above" and "impossible by Amdahl" in j[1]
    # its share 2× faster: 1/(1 − 0.061/2) = ×1.031; a lever short of that is "below"
    assert at_2x(1.065) == pytest.approx(1 / (1 - (1 - 1 / 1.065) / 2))
    j = judge(None, 1.065, Measured(1.02, 1.015, 1.03))
    assert j[0] == "below" and "bought 31% of its ceiling" in j[1] and "×1.031 at 2×" in j[1]
    j = judge(None, 1.065, Measured(1.05, 1.049, 1.051))  # a deterministic instrument's interval
    assert j[0] == "consistent" and "bought 77% of its ceiling" in j[1]
    assert judge(None, 1.065, Measured(1.03, 1.02, 1.04))[0] == "consistent"  # reaches ×1.031
    assert judge(None, 1.065, Measured(1.06, 1.05, 1.07))[0] == "consistent"
    # a band ×1.11–×1.60
    assert judge(1.11, 1.60, Measured(1.38, 1.30, 1.45))[0] == "consistent"
    j = judge(1.11, 1.60, Measured(1.0, 0.97, 1.03))
    assert j[0] == "below" and "9.9% below the band's low ×1.110" in j[1]
    assert judge(1.11, 1.60, Measured(1.8, 1.7, 1.9))[0] == "above"


def test_combined_prediction_adds_shares_and_multiplies_bands() -> None:
    fp8 = _Part(None, 1 / (1 - 0.04), False, None)
    nccl = _Part(None, 1 / (1 - 0.02), False, None)
    low, high = _combine([("fp8-gemm", fp8), ("comm", nccl)])
    assert low is None and high == pytest.approx(1 / (1 - 0.06))  # not 1/(0.96 × 0.98)
    spec = _Part(1.1, 1.6, False, None)
    low, high = _combine([("fp8-gemm", fp8), ("spec-decode", spec)])
    assert low == pytest.approx(1.1) and high == pytest.approx(1.6 / 0.96)


def test_speculative_flags_of_each_engine() -> None:
    sg = spec_flags(
        {
            "--speculative-algorithm": ("EAGLE",),
            "--speculative-num-steps": ("1",),
            "--speculative-eagle-topk": ("1",),
            "--speculative-num-draft-tokens": ("2",),
        }
    )
    assert sg is not None and (sg.method, sg.draft_tokens) == ("eagle", 1)
    width_only = spec_flags(
        {"--speculative-algorithm": ("NEXTN",), "--speculative-num-draft-tokens": ("4",)}
    )
    assert width_only is not None and width_only.draft_tokens == 3
    vl = spec_flags({"--speculative-config": ('{"method":"ngram","num_speculative_tokens":3}',)})
    assert vl is not None and (vl.method, vl.draft_tokens) == ("ngram", 3)
    assert spec_flags({"--tp-size": ("8",)}) is None
