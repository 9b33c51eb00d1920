"""TTFT by turn (``stats.turns``): the interval of a turn's median over its users covers the
true median at least as often as it says, by seeded simulation, and is not given where no
interval of 95% exists (fewer than 6 users)."""

from __future__ import annotations

import math
import random

import pytest

from inferlab.records import RequestRecord
from inferlab.stats.turns import MIN_USERS, by_turn, median_interval, turn_interval_text

REPS = 2000


def _turn_records(ttft_ms: list[float], turn: int = 0) -> list[RequestRecord]:
    """One successful request per user at ``turn`` with the given TTFTs (ms)."""
    out = []
    for u, t in enumerate(ttft_ms):
        send = 10**12 + u * 10**9
        out.append(
            RequestRecord(
                u,
                f"s{u}t{turn}",
                send_ns=send,
                end_ns=send + int(t * 1e6) + 5_000_000,
                status=200,
                event_ns=[send + int(t * 1e6), send + int(t * 1e6) + 1_000_000],
                event_tokens=[1, 1],
                session=u,
                turn=turn,
            )
        )
    return out


def _coverage(users: int, seed: int) -> tuple[float, int]:
    """(share of REPS seeded turns whose stated interval held the true median, how many had
    one): TTFTs lognormal (median 40 ms, skewed like a loaded server's)."""
    rng = random.Random(seed)
    held = given = 0
    for _ in range(REPS):
        ttft = [40.0 * math.exp(rng.gauss(0.0, 0.6)) for _ in range(users)]
        (t,) = by_turn(_turn_records(ttft))
        if t.ttft_p50_coverage is None:
            continue
        given += 1
        held += t.ttft_p50_low_ms <= 40.0 <= t.ttft_p50_high_ms
    return (held / given if given else math.nan), given


@pytest.mark.parametrize("users", [2, 3, 4, 5])
def test_too_few_users_get_no_interval_and_say_so(users: int) -> None:
    """2–4 users: a percentile bootstrap said 95% and covered 50–87.5%; now no interval."""
    rng = random.Random(users)
    (t,) = by_turn(_turn_records([rng.uniform(20, 60) for _ in range(users)]))
    assert t.ttft_p50_coverage is None
    assert math.isnan(t.ttft_p50_low_ms) and math.isnan(t.ttft_p50_high_ms)
    assert f"too few users (n={users}) for a 95% interval" in turn_interval_text(t)
    assert t.to_json()["ttft_p50_low_ms"] is None


@pytest.mark.parametrize("users", [6, 7, 8, 12, 20])
def test_the_interval_covers_the_true_median_as_often_as_it_says(users: int) -> None:
    cov, given = _coverage(users, seed=users)
    assert given == REPS
    (stated,) = {median_interval([float(i) for i in range(users)])[2]}
    assert stated is not None and stated >= 0.95
    # 2000 seeded reps: the binomial sd of the share is ≤ 0.5 %; 3 sd below the exact coverage
    assert cov >= stated - 3 * math.sqrt(stated * (1 - stated) / REPS), (users, cov, stated)
    assert cov >= 0.95 - 0.01


def test_the_exact_coverage_is_the_binomial_one() -> None:
    assert MIN_USERS == 6
    assert median_interval([3.0, 1.0, 2.0, 6.0, 5.0, 4.0]) == (1.0, 6.0, 1 - 2 / 64)
    low, high, cov = median_interval([float(i) for i in range(10)])
    assert (low, high) == (1.0, 8.0) and cov == pytest.approx(1 - 2 * 11 / 1024)
    (t,) = by_turn(_turn_records([10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]))
    assert turn_interval_text(t) == "13.0 [10.0, 16.0] (98.4%)"
