"""Group-sequential boundaries against published tables, and the decision at a look."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from inferlab.stats.sequential import (
    crossing_probabilities,
    decide_look,
    ld_obrien_fleming,
    obrien_fleming_boundaries,
    spending_boundaries,
)

EQUAL4 = [0.25, 0.5, 0.75, 1.0]


def test_classic_obrien_fleming_matches_jennison_turnbull_table_2_3() -> None:
    """Jennison & Turnbull (2000), Group Sequential Methods with Applications to Clinical
    Trials, Table 2.3: C_B(K, α = 0.05) = 1.977, 2.004, 2.024, 2.040 for K = 2..5 equal looks.
    For K = 4 the boundaries C_B·√(K/k) are 4.05, 2.86, 2.34, 2.02 as gsDesign's own unit test
    checks them (inst/unitTests/runit.output.R, "test.Deming.OFbound": gsDesign(k=4,
    test.type=2, sfu="OF"))."""
    for k, table in [(2, 1.977), (3, 2.004), (4, 2.024), (5, 2.040)]:
        info = [i / k for i in range(1, k + 1)]
        assert obrien_fleming_boundaries(info)[-1] == pytest.approx(table, abs=6e-4)
    four = obrien_fleming_boundaries(EQUAL4)
    assert [round(b, 2) for b in four] == [4.05, 2.86, 2.34, 2.02]


def test_lan_demets_spending_in_gsdesigns_sfldof_convention() -> None:
    """gsDesign's sfLDOF spends a one-sided α = 0.025 per side as 2 − 2Φ(z_{1−α/2}/√t);
    for 4 equal looks of a symmetric design its bounds are 4.333, 2.963, 2.359, 2.014
    (gsDesign(k=4, test.type=2, sfu=sfLDOF))."""
    got = spending_boundaries(EQUAL4, ld_obrien_fleming(0.05, one_sided_alpha=0.025))
    assert [round(b, 3) for b in got] == [4.333, 2.963, 2.359, 2.014]


def test_lan_demets_two_sided_spending_is_the_one_inferlab_uses() -> None:
    """α(t) = 2 − 2Φ(z_{0.975}/√t) (Lan & DeMets 1983, two-sided α = 0.05): the first
    boundary is exactly z_{0.975}/√t₁ = 3.920, and the looks spend exactly α(t_k) − α(t_{k−1})."""
    spend = ld_obrien_fleming(0.05)
    got = spending_boundaries(EQUAL4, spend)
    assert got[0] == pytest.approx(stats.norm.ppf(0.975) / 0.5, abs=1e-6)
    assert [round(b, 2) for b in got] == [3.92, 2.77, 2.30, 2.04]
    probs = crossing_probabilities(got, EQUAL4)
    want = np.diff([0.0] + [spend(t) for t in EQUAL4])
    assert probs == pytest.approx(list(want), abs=2e-6)
    assert sum(probs) == pytest.approx(0.05, abs=1e-6)


def test_repeated_naive_tests_inflate_alpha() -> None:
    """Testing at 1.96 four times rejects a true null 12.6% of the time (gsDesign's
    "test.Deming.gsProb": 0.063 one-sided)."""
    assert sum(crossing_probabilities([1.96] * 4, EQUAL4)) == pytest.approx(0.126, abs=1e-3)


def test_boundaries_hold_alpha_by_simulation() -> None:
    rng = np.random.default_rng(7)
    b = spending_boundaries([0.2, 0.4, 0.6, 0.8, 1.0], ld_obrien_fleming(0.05))
    inc = rng.standard_normal((200_000, 5)) * math.sqrt(0.2)
    s = np.cumsum(inc, axis=1)
    z = s / np.sqrt([0.2, 0.4, 0.6, 0.8, 1.0])
    rejected = float(np.mean(np.any(np.abs(z) >= b, axis=1)))
    assert rejected == pytest.approx(0.05, abs=0.0025)


def test_bad_information_fractions_are_refused() -> None:
    with pytest.raises(ValueError, match="increase within"):
        spending_boundaries([0.5, 0.4, 1.0], ld_obrien_fleming(0.05))


def test_decide_look() -> None:
    b = 2.77
    up = decide_look(math.log(1.30), 0.05, b, higher_is_better=True, min_effect=0.02)
    assert up.status == "better" and up.low > 1.0 and up.z == pytest.approx(5.247, abs=1e-3)
    slow = decide_look(math.log(1.30), 0.05, b, higher_is_better=False, min_effect=0.02)
    assert slow.status == "worse"
    same = decide_look(math.log(1.001), 0.002, b, higher_is_better=True, min_effect=0.02)
    assert same.status == "equivalent" and same.low >= 0.98 and same.high <= 1.02
    small = decide_look(math.log(1.01), 0.001, b, higher_is_better=True, min_effect=0.02)
    assert small.status == "equivalent"  # significant but smaller than the minimum effect
    unsure = decide_look(math.log(1.03), 0.02, b, higher_is_better=True, min_effect=0.02)
    assert unsure.status == "open"
