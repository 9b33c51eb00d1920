"""Goodput A/B: a test of two proportions (Newcombe's hybrid score interval of the
difference), not the overlap of two Wilson intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from inferlab.stats.goodput import compare_goodput, newcombe, wilson_bounds
from inferlab.stats.slo import wilson


def test_newcombe_matches_the_published_examples() -> None:
    # Newcombe (1998), Table II, method 10: 56/70 − 48/80 and 9/10 − 3/10
    d = newcombe(48, 80, 56, 70)
    assert d.estimate == pytest.approx(0.2)
    assert (d.low, d.high) == (pytest.approx(0.0524, abs=1e-4), pytest.approx(0.3339, abs=1e-4))
    d = newcombe(3, 10, 9, 10)
    assert (d.low, d.high) == (pytest.approx(0.1705, abs=1e-4), pytest.approx(0.8090, abs=1e-4))


def test_the_closed_form_wilson_is_scipys() -> None:
    for good, n in ((0, 10), (3, 10), (80, 100), (100, 100)):
        lo, hi = wilson_bounds(good, n)
        ref = wilson(good, n)
        assert (lo, hi) == (pytest.approx(ref.low), pytest.approx(ref.high))


def test_a_difference_that_overlapping_wilson_intervals_miss_is_claimed() -> None:
    # 80/100 [71%–87%] against 92/100 [85%–96%]: the intervals overlap, the difference is not 0
    assert wilson(92, 100).low < wilson(80, 100).high
    ab = compare_goodput((80, 100), (92, 100), against="ref")
    assert ab.verdict == "better" and ab.difference.low > 0
    assert "goodput share [92/100] vs ref [80/100]: +12.0 points" in ab.reason
    assert compare_goodput((92, 100), (80, 100)).verdict == "worse"
    assert compare_goodput((90, 100), (91, 100)).verdict == "undecided"
    assert compare_goodput((4950, 5000), (4955, 5000), min_effect=0.02).verdict == "equivalent"
    assert compare_goodput((0, 0), (5, 10)).verdict == "undecided"


def test_its_false_claims_stay_near_alpha_and_it_finds_more_than_the_overlap_rule() -> None:
    """Seeded simulation: equal shares (0.85, 200 requests each) are claimed about α of the
    time; a 7-point gain is found far more often than by non-overlap of two 95% intervals."""
    rng = np.random.default_rng(0)

    def claims(p_a: float, p_b: float, reps: int = 1500) -> tuple[float, float]:
        test = overlap = 0
        for _ in range(reps):
            a, b = int(rng.binomial(200, p_a)), int(rng.binomial(200, p_b))
            test += compare_goodput((a, 200), (b, 200)).verdict != "undecided"
            wa, wb = wilson_bounds(a, 200), wilson_bounds(b, 200)
            overlap += wb[0] > wa[1] or wb[1] < wa[0]
        return test / reps, overlap / reps

    null_test, null_overlap = claims(0.85, 0.85)
    assert null_test < 0.075 and null_overlap < null_test
    gain_test, gain_overlap = claims(0.85, 0.92)
    assert gain_test > gain_overlap + 0.15, (gain_test, gain_overlap)
    assert not math.isnan(gain_test)


def test_the_sequential_stop_spends_alpha_over_its_looks() -> None:
    from inferlab.stats.goodput import goodput_stop

    # claimed at one look at 95%, not at 99.5% (10 looks)
    assert compare_goodput((80, 100), (92, 100)).verdict == "better"
    assert goodput_stop((80, 100), (92, 100), looks=10) is None
    done = goodput_stop((800, 1000), (920, 1000), looks=10)
    assert done is not None and done.verdict == "better" and "99.5%" in done.reason
    rng = np.random.default_rng(1)
    false = 0
    for _ in range(400):  # equal shares, 5 looks of 100 more requests each
        a = b = n = 0
        for _ in range(5):
            a, b, n = a + int(rng.binomial(100, 0.85)), b + int(rng.binomial(100, 0.85)), n + 100
            stop = goodput_stop((a, n), (b, n), looks=5, min_effect=None)
            if stop is not None:
                false += stop.verdict in ("better", "worse")
                break
    assert false / 400 < 0.05
    with pytest.raises(ValueError, match="looks"):
        goodput_stop((1, 2), (1, 2), looks=0)
