"""The SLO at one point: goodput with its Wilson interval, holds / fails / undecided."""

from __future__ import annotations

import numpy as np
import pytest

from inferlab.config.bench import SLO
from inferlab.records import ErrorKind, RequestRecord
from inferlab.stats.slo import LIMITS, assess_slo, resample, wilson

MS = 1_000_000


def _rec(i: int, ttft_ms: float, tpot_ms: float, tokens: int = 5, **kw: object) -> RequestRecord:
    """A request sent at 0 with its first token at ``ttft_ms`` and the rest ``tpot_ms`` apart."""
    events = [int((ttft_ms + k * tpot_ms) * MS) for k in range(tokens)]
    return RequestRecord(
        index=i, request_id=f"r{i}", send_ns=1, event_ns=[e + 1 for e in events],
        event_tokens=[1] * tokens, end_ns=events[-1] + 1, **kw,
    )  # type: ignore[arg-type]  # fmt: skip


def test_every_slo_key_has_a_limit_kind() -> None:
    assert set(SLO.model_fields) == set(LIMITS)


def test_goodput_counts_requests_whose_own_values_meet_every_limit() -> None:
    recs = [_rec(i, 10.0, 2.0 if i % 4 else 6.0) for i in range(40)]  # 10 slow decoders
    recs.append(_rec(40, 10.0, 1.0, error_kind=ErrorKind.HTTP))  # failed: never good
    got = assess_slo(recs, {"tpot_p99_ms": 5.0, "ttft_ms": 20.0})
    assert (got.good, got.requests) == (30, 41)
    g = got.goodput
    assert g.estimate == pytest.approx(30 / 41)
    assert 0.57 < g.low < g.estimate < g.high < 0.87  # Wilson, not a point
    assert got.state == "fails"  # a quarter of the requests are over the p99 limit
    (check,) = got.checks
    assert check.key == "tpot_p99_ms" and check.value_ms == pytest.approx(6.0)


def test_holds_fails_and_undecided_follow_the_percentiles_interval() -> None:
    rng = np.random.default_rng(1)
    recs = [_rec(i, float(x), 2.0) for i, x in enumerate(rng.normal(100, 10, 400))]
    p99 = float(np.percentile([r.ttft_ns / MS for r in recs if r.ttft_ns], 99))
    assert assess_slo(recs, {"ttft_p99_ms": 200.0}).state == "holds"
    assert assess_slo(recs, {"ttft_p99_ms": 50.0}).state == "fails"
    assert assess_slo(recs, {"tpot_p50_ms": 10.0, "ttft_p99_ms": 50.0}).state == "fails"
    # a limit at the p99 itself: its interval straddles it
    near = assess_slo(recs, {"ttft_p99_ms": p99})
    assert near.state == "undecided", near.checks
    c = near.checks[0]
    assert c.low_ms < c.limit_ms < c.high_ms


def test_per_request_limits_alone_have_no_state() -> None:
    got = assess_slo([_rec(i, 10.0, 2.0) for i in range(10)], {"ttft_ms": 5.0})
    assert got.state is None and got.good == 0 and got.goodput.high < 0.35


def test_itl_limit_reads_each_requests_own_gaps() -> None:
    recs = [_rec(i, 10.0, 2.0) for i in range(20)] + [_rec(20, 10.0, 9.0)]
    got = assess_slo(recs, {"itl_p99_ms": 5.0})
    assert got.good == 20  # the one request with 9 ms gaps is not good


def test_margin_shares_resamples_and_scale_by_the_limit() -> None:
    recs = [_rec(i, 10.0 + i % 5, 2.0) for i in range(100)]
    m, reps = resample(recs, {"ttft_p99_ms": 28.0, "tpot_p50_ms": 4.0}, resamples=200).margin()
    assert m == pytest.approx(14.0 / 28.0, rel=0.01) and reps.shape == (200,)
    assert np.all(reps <= 0.51) and np.all(reps >= 0.49)
    with pytest.raises(ValueError, match="no distribution limit"):
        resample(recs, {"ttft_ms": 1.0}).margin()


def test_resample_leaves_out_warmup_and_dropped_and_assess_reads_its_draws() -> None:
    recs = [_rec(0, 90.0, 2.0, warmup=True), _rec(1, 90.0, 2.0, dropped="cancelled")]
    recs += [_rec(i, 10.0 + i % 5, 2.0) for i in range(2, 60)]
    limits = {"ttft_p99_ms": 14.0}
    drawn = resample(recs, limits, resamples=300, seed=3)
    assert len(drawn.measured) == 58
    assert drawn.assess(0.9) == assess_slo(recs, limits, level=0.9, resamples=300, seed=3)
    with pytest.raises(ValueError, match="unknown SLO key"):
        resample(recs, {"ttft_p98_ms": 1.0})


def test_wilson_of_nothing_is_nan_and_of_all_is_below_one() -> None:
    assert np.isnan(wilson(0, 0).estimate)
    w = wilson(50, 50)
    assert w.estimate == 1.0 and 0.9 < w.low < 1.0 and w.high == pytest.approx(1.0)
