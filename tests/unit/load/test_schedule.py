"""Arrival schedules (``load.schedule``)."""

from __future__ import annotations

import itertools

import pytest

from inferlab.load.schedule import arrival_offsets


def test_arrival_schedules() -> None:
    a = arrival_offsets(10.0, count=4000, seed=1)
    assert a[0] == 0.0 and a == sorted(a) and len(a) == 4000
    assert 4000 / a[-1] == pytest.approx(10.0, rel=0.05)  # mean rate
    assert a == arrival_offsets(10.0, count=4000, seed=1)  # deterministic
    g = arrival_offsets(10.0, arrival="gamma", burstiness=0.25, count=4000, seed=1)
    gaps_p = [y - x for x, y in itertools.pairwise(a)]
    gaps_g = [y - x for x, y in itertools.pairwise(g)]

    def cv(xs: list[float]) -> float:
        m = sum(xs) / len(xs)
        return float((sum((x - m) ** 2 for x in xs) / len(xs)) ** 0.5 / m)

    assert cv(gaps_p) == pytest.approx(1.0, abs=0.1)  # exponential: CV 1
    assert cv(gaps_g) == pytest.approx(2.0, abs=0.3)  # gamma shape 0.25: CV 1/sqrt(0.25) = 2
    d = arrival_offsets(5.0, duration_s=3.0, seed=2)
    assert d[-1] < 3.0 and 8 < len(d) < 30
