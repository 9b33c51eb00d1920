"""Statistics behind ``inferlab compare``: hand-computed cases, seeded simulations, refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from inferlab.records import RequestRecord
from inferlab.stats import compare, intervals, verdict
from inferlab.stats.compare import (
    Difference,
    Statistic,
    ThroughputSample,
    batch_rates,
    check_comparable,
    compare_samples,
    compare_throughput,
    decide,
    find_saturation,
    mann_whitney_u,
    min_attainable_p,
    min_samples,
    permutation_test,
    quality_warnings,
    sample_ratio,
    t_quantile,
    throughput_ratio_batches,
    throughput_ratio_trials,
)
from inferlab.stats.summary import Interval
from inferlab.stats.verdict import Rule


def _lognormal(seed: int, median: float, n: int, sigma: float = 0.3) -> list[float]:
    return list(np.random.default_rng(seed).lognormal(math.log(median), sigma, n))


def _flat(trials: list[list[float]]) -> list[float]:
    return [x for t in trials for x in t]


def test_public_api_is_pinned() -> None:
    assert compare.__all__ == [
        "COMPARABLE_FIELDS",
        "HIGHER_IS_BETTER",
        "Claim",
        "Difference",
        "MannWhitney",
        "QualityWarning",
        "Saturation",
        "Statistic",
        "ThroughputSample",
        "Verdict",
        "batch_rates",
        "check_comparable",
        "compare_samples",
        "compare_throughput",
        "decide",
        "find_saturation",
        "mann_whitney_u",
        "min_attainable_p",
        "min_samples",
        "permutation_test",
        "quality_warnings",
        "sample_ratio",
        "t_quantile",
        "throughput_ratio_batches",
        "throughput_ratio_trials",
        "welch_t_test",
    ]


# ---------------------------------------------------------------------------------------
# tests on raw samples


def test_mann_whitney_hand_computed_without_ties() -> None:
    # a = 1,2,3 all below b = 4,5,6: ranks of a 1+2+3 = 6, U = 6 − 3·4/2 = 0.
    # mean n1n2/2 = 4.5, var n1n2(N+1)/12 = 9·7/12 = 5.25; z = (4.5 − 0.5)/√5.25 = 1.7457
    # p = erfc(1.7457/√2) = 0.08086 (scipy.stats.mannwhitneyu asymptotic: 0.0808556)
    r = mann_whitney_u([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    assert r.u == 0.0
    assert abs(r.z) == pytest.approx(4.0 / math.sqrt(5.25))
    assert r.p_value == pytest.approx(math.erfc(4.0 / math.sqrt(5.25) / math.sqrt(2)))
    assert r.p_value == pytest.approx(0.0808556, abs=1e-6)
    assert mann_whitney_u([4.0, 5.0, 6.0], [1.0, 2.0, 3.0]).u == 9.0


def test_mann_whitney_hand_computed_with_ties() -> None:
    # pooled 1,2,2,2,3,4: the three 2s share ranks 2,3,4 → 3 each. R_a = 1+3+3 = 7, U = 7 − 6 = 1.
    # tie correction: Σ(t³−t) = 24, var = 9/12 · (7 − 24/(6·5)) = 0.75 · 6.2 = 4.65
    # z = (|1 − 4.5| − 0.5)/√4.65 = 1.3912, p = 0.16416
    r = mann_whitney_u([1.0, 2.0, 2.0], [2.0, 3.0, 4.0])
    assert r.u == 1.0
    assert abs(r.z) == pytest.approx(3.0 / math.sqrt(4.65))
    assert r.p_value == pytest.approx(0.16416, abs=1e-5)
    assert mann_whitney_u([5.0, 5.0], [5.0, 5.0, 5.0]).p_value == 1.0


def test_mann_whitney_refuses_nan_and_empty() -> None:
    with pytest.raises(ValueError, match="NaN"):
        mann_whitney_u([1.0, math.nan], [2.0])
    with pytest.raises(ValueError, match="empty"):
        mann_whitney_u([], [2.0])


def test_permutation_test_exact_three_vs_three() -> None:
    # C(6,3) = 20 splits; only {1,2,3}|{4,5,6} and its mirror are as extreme → p = 2/20
    assert permutation_test([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]) == pytest.approx(0.1)
    assert min_attainable_p(3, 3) == pytest.approx(0.1)
    assert min_attainable_p(4, 4) == pytest.approx(2 / 70)
    assert permutation_test([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) == 1.0


def test_permutation_test_monte_carlo_is_seeded() -> None:
    a = [float(x) for x in range(10)]
    b = [float(x) + 5 for x in range(10)]  # C(20,10) = 184 756 splits: Monte Carlo
    p = permutation_test(a, b, seed=1)
    assert p == permutation_test(a, b, seed=1)
    assert 0.0 < p < 0.01


def test_t_quantile_matches_tables() -> None:
    for df, t in [(1, 12.706), (4, 2.776), (9, 2.262), (19, 2.093), (1e9, 1.960)]:
        assert t_quantile(0.975, df) == pytest.approx(t, abs=1e-3)
    assert t_quantile(0.025, 9) == pytest.approx(-2.262, abs=1e-3)


# ---------------------------------------------------------------------------------------
# ratios


def test_ratio_interval_contains_true_ten_percent_shift() -> None:
    base = _lognormal(1, 100.0, 400)
    cand = _lognormal(2, 110.0, 400)  # true ratio of medians: 1.10
    r = sample_ratio([base], [cand], seed=5)
    assert r.low < 1.10 < r.high
    assert r.low > 1.0
    assert r.estimate == pytest.approx(np.median(cand) / np.median(base))
    assert r == sample_ratio([base], [cand], seed=5)


def test_ratio_of_means_and_percentiles() -> None:
    base = _lognormal(3, 50.0, 300)
    cand = [2.0 * x for x in base]
    stats: list[Statistic] = ["mean", "median", "p90", "p99"]
    for stat in stats:
        r = sample_ratio([base], [cand], statistic=stat)
        assert r.estimate == pytest.approx(2.0)


def test_two_level_bootstrap_widens_when_trials_disagree() -> None:
    # three trials per side whose medians differ by ±8%: trial-to-trial variance dominates
    base = [_lognormal(10 + i, m, 200, 0.1) for i, m in enumerate((92.0, 100.0, 108.0))]
    cand = [_lognormal(20 + i, m, 200, 0.1) for i, m in enumerate((94.0, 102.0, 110.0))]
    two = sample_ratio(base, cand)
    flat = sample_ratio([_flat(base)], [_flat(cand)])  # the trials pooled as one
    assert two.high - two.low > 1.5 * (flat.high - flat.low)
    assert two.low < 1.0 < two.high
    # trials that agree: the two levels add little
    same_b = [_lognormal(30 + i, 100.0, 200, 0.1) for i in range(3)]
    same_c = [_lognormal(40 + i, 100.0, 200, 0.1) for i in range(3)]
    w2 = sample_ratio(same_b, same_c)
    w1 = sample_ratio([_flat(same_b)], [_flat(same_c)])
    assert (w2.high - w2.low) < 1.6 * (w1.high - w1.low)


def test_two_level_bootstrap_with_unequal_trial_sizes() -> None:
    base = [_lognormal(50, 100.0, 120), _lognormal(51, 100.0, 80), _lognormal(52, 100.0, 97)]
    cand = [_lognormal(53, 120.0, 100), _lognormal(54, 120.0, 111)]
    r = sample_ratio(base, cand, statistic="p90")
    assert r.low < 1.2 < r.high
    padded = np.array([[3.0, 1.0, 2.0, np.nan], [4.0, 1.0, 2.0, 3.0]])
    got = intervals._reduce_padded("p90", padded)
    assert got == pytest.approx([np.percentile([1, 2, 3], 90), np.percentile([1, 2, 3, 4], 90)])


def test_throughput_ratio_over_trials() -> None:
    r = throughput_ratio_trials([10.0, 10.2, 10.4], [15.5, 15.7, 15.9])
    assert r.estimate == pytest.approx(15.7 / 10.2)
    assert r.low < r.estimate < r.high
    with pytest.raises(ValueError, match="≥ 2"):
        throughput_ratio_trials([10.0], [12.0, 13.0])


def test_throughput_ratio_by_batch_means_hand_computed() -> None:
    a = [9.0, 11.0] * 5  # mean 10, sd 1.0541: relative se² = (1.0541/10)²/10 = 0.0011111
    b = [18.0, 22.0] * 5  # relative se² identical
    r = throughput_ratio_batches(10.0, a, 20.0, b)
    se = math.sqrt(2 * (1 / 0.9) / 100 / 10)  # var(ddof=1) = 10/9
    half = t_quantile(0.975, 18.0) * se  # equal variances and sizes: Welch df = 18
    assert r.estimate == 2.0
    assert r.low == pytest.approx(2.0 * math.exp(-half))
    assert r.high == pytest.approx(2.0 * math.exp(half))


def test_batch_rates_matches_throughput_slices() -> None:
    # two requests over a 1 s window from t=0: 10 tokens in the first 0.1 s, 30 in the last
    r1 = RequestRecord(0, "a", send_ns=0, end_ns=50_000_000, event_ns=[50_000_000])
    r1.event_tokens = [10]
    r2 = RequestRecord(1, "b", send_ns=0, end_ns=1_000_000_000, event_ns=[999_000_000])
    r2.event_tokens = [30]
    rates = batch_rates([r1, r2], 0, 1.0, batches=10)
    assert rates[0] == pytest.approx(100.0) and rates[-1] == pytest.approx(300.0)
    assert sum(rates[1:-1]) == 0.0
    assert batch_rates([r1], 0, 0.0) == []


# ---------------------------------------------------------------------------------------
# verdicts


def test_identical_distributions_are_within_noise() -> None:
    base = _lognormal(60, 100.0, 500)
    cand = _lognormal(61, 100.0, 500)
    v = compare_samples("tpot_ms", [base], [cand])
    assert v.claim == "~" and v.reason.startswith("within noise")
    same = compare_samples("ttft_ms", [base], [base])
    assert same.claim == "~" and same.p_value == pytest.approx(1.0)
    assert same.ratio.estimate == 1.0


def test_small_real_shift_is_significant_but_below_min_effect() -> None:
    rng = np.random.default_rng(70)
    base = list(100.0 * (1 + 0.02 * rng.standard_normal(2000)))
    cand = list(100.5 * (1 + 0.02 * rng.standard_normal(2000)))
    v = compare_samples("tpot_ms", [base], [cand], rule=Rule(resamples=1000))
    assert v.p_value is not None and v.p_value < 1e-6
    assert v.ratio.low > 1.0  # the interval excludes 1
    assert v.claim == "~" and "minimum effect" in v.reason
    assert compare_samples("tpot_ms", [base], [cand], rule=Rule(min_effect=0.001)).claim == "worse"


def test_twenty_percent_shift_direction_knows_the_metric() -> None:
    base = _lognormal(80, 100.0, 300)
    slower = _lognormal(81, 120.0, 300)
    assert compare_samples("tpot_ms", [base], [slower]).claim == "worse"
    assert compare_samples("ttft_ms", [slower], [base]).claim == "better"
    assert compare_samples("user_tok_s", [base], [slower]).claim == "better"
    up = compare_throughput(
        ThroughputSample(trials=(10.0, 10.1, 9.9, 10.05, 9.95)),
        ThroughputSample(trials=(12.0, 12.1, 11.9, 12.05, 11.95)),
    )
    assert up.claim == "better" and up.ratio.estimate == pytest.approx(1.2)
    assert up.p_value == pytest.approx(min_attainable_p(5, 5))
    down = compare_throughput(
        ThroughputSample(trials=(12.0, 12.1, 11.9, 12.05, 11.95)),
        ThroughputSample(trials=(10.0, 10.1, 9.9, 10.05, 9.95)),
    )
    assert down.claim == "worse"


def test_three_trials_use_welch_t_since_no_permutation_can_reach_alpha() -> None:
    # 3 vs 3 trials: the smallest permutation p is 0.1, so the trial values go to Welch's t
    v = compare_throughput(
        ThroughputSample(trials=(10.1, 10.2, 10.3)),
        ThroughputSample(trials=(15.6, 15.7, 15.8)),
    )
    assert v.claim == "better" and v.p_value is not None and v.p_value < 1e-4
    assert "Welch t-test" in v.reason
    noisy = compare_throughput(
        ThroughputSample(trials=(10.0, 12.0, 14.0)),
        ThroughputSample(trials=(11.0, 13.5, 15.0)),
    )
    assert noisy.claim == "~"


def test_welch_t_test_hand_checked() -> None:
    from inferlab.stats.compare import welch_t_test

    # a = 1,2,3 (var 1), b = 4,5,6 (var 1): t = 3/sqrt(2/3) = 3.674, df = 4 → p = 0.02131
    assert welch_t_test([1, 2, 3], [4, 5, 6]) == pytest.approx(0.02131, abs=2e-4)
    with pytest.raises(ValueError):
        welch_t_test([1], [2, 3])


def test_single_trial_throughput_uses_batch_rates() -> None:
    rng = np.random.default_rng(90)
    a = tuple(float(x) for x in 100 + 3 * rng.standard_normal(10))
    b = tuple(float(x) for x in 120 + 3 * rng.standard_normal(10))
    v = compare_throughput(
        ThroughputSample(trials=(float(np.mean(a)),), batch_rates=a),
        ThroughputSample(trials=(float(np.mean(b)),), batch_rates=b),
    )
    assert v.claim == "better" and v.ratio.low < 1.2 < v.ratio.high
    noise = compare_throughput(
        ThroughputSample(trials=(100.0,), batch_rates=a),
        ThroughputSample(trials=(100.5,), batch_rates=tuple(reversed(a))),
    )
    assert noise.claim == "~"


@pytest.mark.parametrize(
    ("base", "cand", "reason"),
    [
        ([[1.0, math.nan, 3.0]], [[1.0, 2.0]], "NaN"),
        ([[]], [[1.0, 2.0]], "empty"),
        ([], [[1.0, 2.0]], "no trials"),
        ([[5.0]], [[1.0, 2.0]], "at least 2"),
        ([[0.0, 0.0, 0.0]], [[1.0, 2.0, 3.0]], "baseline median is 0"),
    ],
)
def test_bad_samples_give_no_verdict_with_a_reason(
    base: list[list[float]], cand: list[list[float]], reason: str
) -> None:
    v = compare_samples("tpot_ms", base, cand)
    assert v.claim == "~" and reason in v.reason and v.reason.startswith("no verdict")


@pytest.mark.parametrize(
    ("base", "cand", "reason"),
    [
        (ThroughputSample(trials=(0.0, 0.0)), ThroughputSample(trials=(1.0, 2.0)), "is 0"),
        (ThroughputSample(trials=(1.0, math.nan)), ThroughputSample(trials=(1.0, 2.0)), "NaN"),
        (ThroughputSample(trials=(1.0,)), ThroughputSample(trials=(1.0, 2.0)), "1 trial(s)"),
        (ThroughputSample(trials=(1.0,)), ThroughputSample(trials=(2.0,)), "no batch rates"),
        (ThroughputSample(trials=()), ThroughputSample(trials=()), "0 trial(s)"),
        (
            ThroughputSample(trials=(0.0,), batch_rates=(0.0, 0.0)),
            ThroughputSample(trials=(2.0,), batch_rates=(2.0, 2.0)),
            "is 0",
        ),
    ],
)
def test_bad_throughput_gives_no_verdict_with_a_reason(
    base: ThroughputSample, cand: ThroughputSample, reason: str
) -> None:
    v = compare_throughput(base, cand)
    assert v.claim == "~" and reason in v.reason


def test_an_exception_inside_the_statistics_is_no_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> float:
        raise FloatingPointError("overflow")

    monkeypatch.setattr(verdict, "permutation_test", boom)
    v = compare_throughput(
        ThroughputSample(trials=(10.0, 10.1, 9.9, 10.05, 9.95)),
        ThroughputSample(trials=(12.0, 12.1, 11.9, 12.05, 11.95)),
    )
    assert v.claim == "~" and "FloatingPointError" in v.reason
    assert v.ratio.estimate == pytest.approx(1.2)  # what was computed is kept


def test_decide_needs_all_three_conditions() -> None:
    clear = Interval(0.8, 0.75, 0.85, 0.95)
    assert decide(clear, 0.001, higher_is_better=False).claim == "better"
    assert decide(clear, 0.001, higher_is_better=True).claim == "worse"
    assert "p = 0.2" in decide(clear, 0.2, higher_is_better=True).reason
    assert decide(Interval(0.9, 0.8, 1.01, 0.95), 0.001, higher_is_better=True).claim == "~"
    assert decide(Interval(1.01, 1.005, 1.015, 0.95), 0.001, higher_is_better=True).claim == "~"
    assert decide(clear, None, higher_is_better=True).reason == "no verdict: no p-value"
    nan = Interval(math.nan, math.nan, math.nan, 0.95)
    assert decide(nan, 0.001, higher_is_better=True).claim == "~"
    assert decide(clear, math.nan, higher_is_better=True).claim == "~"
    with pytest.raises(ValueError):
        decide(clear, 0.01, higher_is_better=True, alpha=0.0)


def test_unknown_metric_or_statistic_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="unknown metric"):
        compare_samples("tpot", [[1.0, 2.0]], [[1.0, 2.0]])
    with pytest.raises(ValueError, match="unknown statistic"):
        compare_samples("tpot_ms", [[1.0, 2.0]], [[1.0, 2.0]], statistic="p50")  # type: ignore[arg-type]


def test_verdict_to_json() -> None:
    v = compare_samples("tpot_ms", [[math.nan]], [[1.0]])
    j = v.to_json()
    assert j["claim"] == "~" and j["p_value"] is None and j["ratio"]["estimate"] is None


# ---------------------------------------------------------------------------------------
# comparability, saturation, quality


def test_check_comparable_names_the_differing_fields() -> None:
    a = {
        "model": "dsv4",
        "gpu_name": "B200",
        "gpu_count": 8,
        "engine_version": "0.5.1",
        "workload_hash": "abc",
        "metrics_version": 1,
    }
    assert check_comparable(a, dict(a)) == []
    b = dict(a, gpu_count=4, engine_version=None)
    diffs = check_comparable(a, b)
    assert diffs == [
        Difference("gpu_count", 8, 4),
        Difference("engine_version", "0.5.1", None),
    ]
    assert str(diffs[0]) == "gpu_count: 8 vs 4"
    both_missing = {k: v for k, v in a.items() if k != "workload_hash"}
    assert check_comparable(both_missing, dict(both_missing, workload_hash=None)) == []


def test_saturation_on_the_deepseek_story() -> None:
    s = find_saturation([(16, 23.2, 690.0), (1, 10.2, 94.0), (8, 24.0, 333.0)])
    assert s.saturated_at == 8 and s.next_concurrency == 16
    assert s.throughput_gain == pytest.approx(23.2 / 24.0 - 1)
    assert s.sentence == "saturated by C=8: C=16 gives -3.3% tok/s at +107.2% TPOT"


def test_saturation_needs_flat_throughput_and_rising_tpot() -> None:
    growing = [(1, 10.0, 90.0), (8, 60.0, 120.0), (16, 100.0, 150.0), (32, 160.0, 190.0)]
    assert find_saturation(growing).sentence == "not saturated up to C=32"
    # +2.6% tok/s at +96% TPOT
    s = find_saturation([(1, 10.0, 90.0), (8, 50.0, 150.0), (16, 51.3, 294.0)])
    assert s.sentence == "saturated by C=8: C=16 gives +2.6% tok/s at +96.0% TPOT"
    # a dip then a big gain later is not saturation
    dip = [(1, 10.0, 90.0), (2, 10.2, 95.0), (4, 30.0, 100.0)]
    assert find_saturation(dip).saturated_at is None
    # flat throughput with flat TPOT (e.g. a client limit) is not called saturation here
    assert find_saturation([(1, 10.0, 90.0), (2, 10.1, 90.0)]).saturated_at is None
    assert find_saturation([]).sentence == "no usable load points"
    assert find_saturation([(4, math.nan, 1.0)]).saturated_at is None


def test_min_samples_per_statistic() -> None:
    assert min_samples("median") == 10
    assert min_samples("p90") == 10
    assert min_samples("p95") == 20
    assert min_samples("p99") == 100


def test_quality_warnings_are_typed_and_carry_a_fix() -> None:
    assert quality_warnings() == []
    assert quality_warnings(samples=150, statistic="p99", trial_tok_s=[10.0, 10.1, 9.9]) == []
    w = quality_warnings(
        samples=40,
        statistic="p99",
        trial_tok_s=[10.0, 12.0, 9.0],
        trials_per_side=3,
        lag_p99_ms=3.2,
        length_mismatches=2,
        errors={"timeout": 1, "http": 2},
        requests=40,
    )
    kinds = [x.kind for x in w]
    assert kinds == [
        "too-few-samples",
        "too-few-trials",
        "unstable-trials",
        "client-lag",
        "length-mismatch",
        "errors",
    ]
    assert all(x.fix for x in w)
    assert "≥ 100" in w[0].message and "--requests 100" in w[0].fix
    assert "--trials 4" in w[1].fix
    assert "3 of 40 request(s) failed (http 2, timeout 1)" in w[5].message
    assert quality_warnings(samples=9)[0].kind == "too-few-samples"
    assert quality_warnings(lag_p99_ms=0.8) == []
    assert quality_warnings(errors=1)[0].to_json()["kind"] == "errors"
