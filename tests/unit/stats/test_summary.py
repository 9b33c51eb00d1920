"""Descriptive statistics (``stats.summary``) against hand-computed cases."""

from __future__ import annotations

import math

import pytest

from inferlab.stats.summary import Interval, bootstrap_ci, describe, json_fields, percentile
from inferlab.verify.scoregap import ScoreGap


def test_describe_hand_computed() -> None:
    d = describe([1.0, 2.0, 3.0, 4.0, 10.0])
    assert d.count == 5
    assert d.mean == pytest.approx(4.0)
    # sample std: deviations -3,-2,-1,0,6 → squares 9+4+1+0+36 = 50; /4 = 12.5
    assert d.std == pytest.approx(math.sqrt(12.5))
    assert d.min == 1.0 and d.max == 10.0
    assert d.p50 == 3.0
    # linear interpolation: p90 at rank 0.9*4 = 3.6 → 4 + 0.6*(10-4) = 7.6
    assert d.p90 == pytest.approx(7.6)
    assert d.p99 == pytest.approx(4 + 0.96 * 6)


def test_describe_empty_and_single() -> None:
    assert describe([]).count == 0 and math.isnan(describe([]).mean)
    one = describe([7.0])
    assert one.std == 0.0 and one.p99 == 7.0
    assert math.isnan(percentile([], 50))
    assert describe([]).to_json()["mean"] is None


def test_a_figures_record_as_json_keeps_its_field_order_with_nan_as_none() -> None:
    gap = ScoreGap(
        docs=3,
        changed=1,
        reference=Interval(0.5, 0.1, 0.9, 0.95),
        config=Interval(math.nan, math.nan, math.nan, 0.95),
        diff=Interval(-0.1, -0.4, 0.2, 0.95),
    )
    got = gap.to_json()  # a Figures dataclass: its JSON is json_fields
    assert list(got) == ["docs", "changed", "reference", "config", "diff"]
    assert got["docs"] == 3 and got["changed"] == 1
    assert got["reference"] == {"estimate": 0.5, "low": 0.1, "high": 0.9, "level": 0.95}
    assert got["config"] == {"estimate": None, "low": None, "high": None, "level": 0.95}
    assert json_fields(Interval(math.nan, 1.0, 2.0, 0.9)) == {
        "estimate": None,
        "low": 1.0,
        "high": 2.0,
        "level": 0.9,
    }
    with pytest.raises(TypeError, match="not a dataclass"):
        json_fields(object())


def test_bootstrap_ci_contains_estimate_and_is_deterministic() -> None:
    xs = [float(x % 17) for x in range(200)]
    a = bootstrap_ci(xs, "mean", seed=3)
    b = bootstrap_ci(xs, "mean", seed=3)
    assert a == b
    assert a.low < a.estimate < a.high
    assert a.estimate == pytest.approx(sum(xs) / len(xs))
    # standard error of the mean ≈ 4.9/sqrt(200) ≈ 0.35: the 95% interval is about ±0.7
    assert 0.3 < (a.high - a.low) / 2 < 1.2
    med = bootstrap_ci(xs, "median")
    assert med.estimate == 8.0
    assert math.isnan(bootstrap_ci([1.0], "mean").low)
