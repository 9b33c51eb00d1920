"""Speculative decoding's arithmetic (``levers.specdec``), pinned against hand-computed cases:
the band, interpolation of the baseline TPOT, the accept-length range, each engine's flags."""

from __future__ import annotations

import pytest

from inferlab.errors import ConfigError
from inferlab.levers import check_accept_length, spec_band, tpot_at
from inferlab.levers.load_rules import spec_sentence
from inferlab.levers.specdec import first_without_help, spec_flags
from inferlab.stats.compare import find_saturation

# the seed campaign's config A on the reference engine (ms per decode step at C=1, 8, 16)
SWEEP = [(1, 88.0), (8, 327.3), (16, 683.7)]


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
