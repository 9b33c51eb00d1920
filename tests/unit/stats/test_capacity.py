"""Capacity at SLO's pure rules: bracketing and bisection, the bracket, the isotonic crossing."""

from __future__ import annotations

import numpy as np

from inferlab.stats.capacity import MarginSample, bracket, crossing, isotonic_capacity, next_probe
from inferlab.stats.slo import SloState


def _search(
    true_capacity: int, start: int, up_to: int, undecided: frozenset[int] = frozenset()
) -> dict[int, SloState]:
    states: dict[int, SloState] = {}
    while (c := next_probe(states, start, up_to)) is not None:
        states[c] = "undecided" if c in undecided else "holds" if c <= true_capacity else "fails"
    return states


def test_bisection_finds_every_capacity_exactly_in_few_probes() -> None:
    for cap in range(0, 70):
        states = _search(cap, 1, 64)
        b = bracket(states)
        if cap >= 64:
            assert b.fails_at is None and b.low == 64
        else:
            assert (b.low, b.high) == (cap, cap), (cap, states)
        assert len(states) <= 2 * 7 + 1


def test_undecided_points_leave_a_wider_bracket_and_their_neighbours_probed() -> None:
    states = _search(10, 4, 64, undecided=frozenset({10, 11}))
    b = bracket(states)
    assert (b.holds_at, b.fails_at) == (9, 12) and (b.low, b.high) == (9, 11)


def test_a_holding_point_above_a_failing_one_is_not_the_capacity() -> None:
    b = bracket({4: "holds", 8: "fails", 16: "holds"})
    assert (b.holds_at, b.fails_at) == (4, 8)


def test_crossing_interpolates_and_is_censored_at_the_ends() -> None:
    assert crossing([1, 2, 4], [0.5, 0.9, 1.3]) == 2.5
    assert crossing([1, 2], [0.5, 0.9]) == 2.0
    assert crossing([4, 8], [2.0, 3.0]) == 2.0


def test_isotonic_fit_denoises_a_non_monotone_probe() -> None:
    rng = np.random.default_rng(0)

    def s(c: int, m: float) -> MarginSample:
        return MarginSample(c, m, m + rng.normal(0, 0.01, 500), 100)

    # 8 reads low by noise: the fit pools it with 6 and the crossing stays between 10 and 12
    e = isotonic_capacity([s(4, 0.6), s(6, 0.9), s(8, 0.85), s(10, 0.98), s(12, 1.1)])
    assert e is not None and 10 < e.estimate < 12 and e.low < e.estimate < e.high
    assert isotonic_capacity([s(4, 0.6)]) is None
