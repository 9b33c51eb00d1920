"""Capacity at SLO on the reference engine's model clock, where the true capacity is known:
with the ``generic`` preset a decode step of B sequences takes (8 + 0.25·B)·scale ms, so the
median TPOT at closed-loop concurrency C is that step (SIMULATED). Over request rate, the
probes walk a ladder of rates one step apart (SIMULATED)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from inferlab.campaign.parts.bench import Recording
from inferlab.campaign.parts.capacity import (
    CAPACITY_KIND,
    CONCURRENCY,
    Ladder,
    check_capacity,
    find_capacity,
)
from inferlab.campaign.parts.clock import ModelClock
from inferlab.config.bench import SLO, BenchConfig, WorkloadSpec
from inferlab.errors import ConfigError
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.stats.capacity_error import probe_seed
from inferlab.stats.spread import LaunchSpread
from inferlab.store import Store
from inferlab.store.outcomes import CapacityBody
from inferlab.store.spreads import save_spreads, spread_key
from support.simproc import SimFactory

SCALE = 0.1
#: TPOT p50: (8 + 0.25·C)·0.1 ≤ 0.907 ⇔ C ≤ 4.28: a small C, where neighbours differ by ~2%
#: (the measured median sits up to 1% below the step, as some steps run fewer sequences; C=4
#: reads 0.898 ms, C=5 0.916 ms), so a loaded client's late sends cannot move it
LIMIT_MS = 0.907
TRUE_CAPACITY = math.floor((LIMIT_MS / SCALE - 8.0) / 0.25)


def _cfg(url: str, tmp_path: Path, start: int, slo: str) -> BenchConfig:
    return BenchConfig(
        url=url, engine="sim", concurrency=[start], requests="auto", min_requests=20,
        max_requests=60, workload=WorkloadSpec(input_tokens=8, output_tokens=16),
        tokenizer=WordTokenizer().save_hf(tmp_path / "tok"), slo=SLO.parse(slo),
    )  # fmt: skip


def test_capacity_interval_contains_the_true_capacity(
    sim_server: SimFactory, tmp_path: Path
) -> None:
    assert TRUE_CAPACITY == 4
    sim = sim_server("--preset", "generic", "--time-scale", str(SCALE))
    cfg = _cfg(sim.url, tmp_path, 1, f"tpot_p50_ms={LIMIT_MS}")
    db = tmp_path / "t.db"
    res, run_ids = find_capacity(cfg, 64, record=Recording(db, "cap", "g", ModelClock()))
    # bracketing 1, 2, 4, 8, then bisection 6, 5
    assert [p.point for p in res.probes] == [1, 2, 4, 8, 6, 5], res.probes
    b = res.bracket
    assert b.low <= TRUE_CAPACITY <= (b.high or 0) and (b.holds_at, b.fails_at) == (4, 5)
    assert res.stopped == "bracketed" and res.simulated and "SIMULATED" in res.sentence
    e = res.estimate
    assert e is not None and e.low <= e.estimate <= e.high
    assert math.floor(e.low) <= TRUE_CAPACITY <= math.floor(e.high)
    assert len(run_ids) == 6
    with Store(db) as store:
        (row,) = store.analyses.of(CapacityBody, CAPACITY_KIND, "cap")
    got = row.data
    assert row.config == "g" and row.name == f"tpot_p50_ms={LIMIT_MS:g}"
    assert got.holds_at == 4 and len(got.probes) == 6
    # each probe its own recorded bootstrap seed; the confidence is the whole bisection's,
    # and without a stored launch spread the capacity says it is of one launch
    seeds = [p.seed for p in got.probes]
    assert seeds == [probe_seed(cfg.seed, "concurrency", 1.0, p.point) for p in res.probes]
    assert len(set(seeds)) == 6
    conf = got.confidence
    assert conf is not None and conf.level == 0.95 and conf.probes == 12
    assert conf.method == "bonferroni" and conf.probe_level == pytest.approx(1 - 0.1 / 12)
    assert got.launch is None and "one launch" in str(got.definition)
    assert "95% for the whole bisection" in res.sentence and "one launch" in res.sentence


def test_a_stored_launch_spread_for_the_engine_model_and_host_is_carried(
    sim_server: SimFactory, tmp_path: Path
) -> None:
    sim = sim_server("--preset", "generic", "--time-scale", str(SCALE))
    cfg = _cfg(sim.url, tmp_path, 1, "tpot_p50_ms=0.5")  # fails at C=1: one probe a search
    db = tmp_path / "t.db"
    first, ids = find_capacity(cfg, 8, record=Recording(db, "a", "g", ModelClock()))
    assert first.launch is None and first.stopped == "holds nowhere"
    with Store(db) as store:
        (run,) = store.runs(run_ids=ids)
        spread = LaunchSpread(0.06, 4, 5)
        save_spreads(store, "earlier", spread_key(run), {("C=8", "tpot_ms"): spread})
    res, _ = find_capacity(cfg, 8, record=Recording(db, "b", "g", ModelClock()))
    assert res.launch is not None and res.launch.spread.tau == 0.06
    assert "across launches: launch-to-launch ±6.0%" in res.sentence
    assert "stored: campaign earlier" in res.sentence and "tpot_ms at C=8" in res.sentence
    with Store(db) as store:
        (row,) = store.analyses.of(CapacityBody, CAPACITY_KIND, "b")
    assert row.data.launch is not None and row.data.launch.tau == 0.06
    # the lookup can be turned off
    c = Recording(db, "c", "g", ModelClock())
    off, _ = find_capacity(cfg, 8, record=c, stored_spread=False)
    assert off.launch is None


def test_capacity_needs_a_percentile_limit_and_closed_loop(tmp_path: Path) -> None:
    cfg = _cfg("http://127.0.0.1:9", tmp_path, 1, "ttft_ms=500")
    with pytest.raises(ConfigError, match="needs a percentile limit.*tpot_p99_ms"):
        check_capacity(cfg, 8)
    cfg = BenchConfig(url="http://x:1", rate=[2.0], requests=4, slo=SLO.parse("tpot_p99_ms=9"))
    with pytest.raises(ConfigError, match="give no --rate"):
        check_capacity(cfg, 8)


def _rate_cfg(url: str, tmp_path: Path, start: float, slo: str) -> BenchConfig:
    return BenchConfig(
        url=url, engine="sim", rate=[start], requests=20,
        workload=WorkloadSpec(input_tokens=8, output_tokens=6),
        tokenizer=WordTokenizer().save_hf(tmp_path / "tok"), slo=SLO.parse(slo),
    )  # fmt: skip


def test_capacity_over_request_rate_walks_a_ladder_of_rates(
    sim_server: SimFactory, tmp_path: Path
) -> None:
    """Over request rate (open loop), on a ladder one step apart. The engine's 1 ms between
    tokens makes TPOT ≥ 1 ms at any rate: a 0.5 ms limit fails everywhere, 50 ms holds
    everywhere, so the probes and the stop are known whatever the machine's load."""
    sim = sim_server("--ttft-ms", "2", "--itl-ms", "1")
    ladder = Ladder("rate", 10.0)
    db = tmp_path / "r.db"
    fails = _rate_cfg(sim.url, tmp_path, 20.0, "tpot_p99_ms=0.5")
    res, _ = find_capacity(
        fails, 80.0, ladder=ladder, record=Recording(db, "r", "no", ModelClock())
    )
    # 20 req/s fails, then the one step below it: nowhere on the ladder does it hold
    assert [p.point for p in res.probes] == [20.0, 10.0] and res.stopped == "holds nowhere"
    assert res.sentence.startswith("SIMULATED capacity at SLO tpot_p99_ms=0.5: rate 0")
    assert "holds at no probed point, fails at 10 req/s" in res.sentence
    holds = _rate_cfg(sim.url, tmp_path, 10.0, "tpot_p50_ms=50")
    res, ids = find_capacity(
        holds, 80.0, ladder=ladder, record=Recording(db, "r", "yes", ModelClock())
    )
    assert [p.point for p in res.probes] == [10.0, 20.0, 40.0, 80.0] and res.stopped == "top holds"
    assert "rate ≥ 80 req/s (nothing failed with confidence up to 80 req/s)" in res.sentence
    assert len(ids) == 4
    with Store(db) as store:
        stored = {a.config: a.data.to_json() for a in store.analyses(CAPACITY_KIND, "r")}
        runs = store.runs(campaign="r", config="yes")
    assert stored["yes"]["unit"] == "rate" and stored["yes"]["low"] == 80.0
    assert stored["yes"]["high"] is None and stored["no"]["fails_at"] == 10.0
    assert [p["point"] for p in stored["yes"]["probes"]] == [10.0, 20.0, 40.0, 80.0]
    assert sorted(r.rate for r in runs) == [10.0, 20.0, 40.0, 80.0]  # open-loop points


def test_the_rate_ladder_and_its_refusals(tmp_path: Path) -> None:
    ladder = Ladder("rate", 0.25)
    assert Ladder.rates(8.0) == ladder and Ladder.rates(8.0, 1.0).step == 1.0  # default UP_TO/32
    assert [ladder.at(i) for i in (1, 2, 7)] == [0.25, 0.5, 1.75]
    assert ladder.index(1.0) == 4 and ladder.index(0.01) == 1 and ladder.top(2.6) == 10
    assert ladder.load(3) == {"concurrency": [], "rate": [0.75]}
    assert CONCURRENCY.load(3) == {"concurrency": [3], "rate": []}
    ok = _rate_cfg("http://127.0.0.1:9", tmp_path, 1.0, "tpot_p99_ms=9")
    check_capacity(ok, 8.0, ladder)
    closed = _cfg("http://127.0.0.1:9", tmp_path, 1, "tpot_p99_ms=9")
    with pytest.raises(ConfigError, match="--capacity-rate: searches open-loop request rate"):
        check_capacity(closed, 8.0, ladder)
    with pytest.raises(ConfigError, match=r"below one --rate-step \(0.25 req/s\)"):
        check_capacity(ok, 0.1, ladder)
    with pytest.raises(ConfigError, match="--rate-step: must be > 0"):
        check_capacity(ok, 8.0, Ladder("rate", 0.0))
