"""Adaptive load points against the reference engine: precision, cap, duration, sequential A/B,
ramp-up and drain marking, and the bad inputs named.

The stopping rules decide live, on the wall clock (the model clock re-times a point only once
it has ended), so what depends on timing has a margin taken from the measured spread: 3 runs
at load 0.8-1.6 on 2 CPUs (2026-12-01) stopped on precision after 68-104 requests (cap 300),
half-widths TPOT 1.2-1.5% and tok/s 1.6-2.1% (the test asks ±15%: beside a demo loop ±5% was never reached), median TPOT 2.98-3.00 ms
(bounds 2.5-5); the A/B ITL 4 vs 2 ms settled at look 1 after 52-53 requests (bound 100),
TPOT ×0.50 (bound 0.7), |z| 49-68 against a boundary of 2.8-3.6."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.load.adaptive import baseline_ref
from inferlab.load.bench import run_bench
from inferlab.sim.tokenizer import WordTokenizer
from support.campaign import CampaignToml
from support.campaigns import SEQUENTIAL
from support.simproc import start_sim


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return WordTokenizer().save_hf(tmp_path_factory.mktemp("tok"))


def cfg(url: str, tokdir: Path, **kw: object) -> BenchConfig:
    base: dict[str, object] = dict(
        url=url,
        engine="sim",
        concurrency=[4],
        requests="auto",
        min_requests=30,
        max_requests=300,
        workload=WorkloadSpec(input_tokens=8, output_tokens=10),
        tokenizer=tokdir,
    )
    base.update(kw)
    return BenchConfig(**base)  # type: ignore[arg-type]


def test_auto_stops_on_precision_and_marks_ramp_up_and_drain(tokdir: Path) -> None:
    with start_sim("--ttft-ms", "5", "--itl-ms", "3", "--jitter-ms", "0.3") as sim:
        # ±15%, not the default 5%: beside a CPU-heavy job (a demo loop, 2026-12-02) the
        # throughput's batch means never reached ±5% in 300 requests (TPOT did, at 1.3%)
        # and a cap of 600: a fresh clone's make test (2026-12-07) reached ±15% only at its
        # check at 299, one short of a 300 cap (the stop's subject here, not the count)
        res = run_bench(cfg(sim.url, tokdir, precision=0.15, max_requests=600))
    p = res.points[0]
    stop = p.stop
    assert stop is not None and stop.reason == "precision", stop
    assert stop.checks and stop.checks[0] >= 30 and stop.requests >= 30
    assert stop.requests < 600  # it did not need the cap
    hw = stop.half_width
    assert hw["tpot_ms"] is not None and hw["tpot_ms"] <= 0.15
    assert hw["output_tok_s"] is not None and hw["output_tok_s"] <= 0.15
    ramp = [r for r in p.records if r.dropped == "ramp-up"]
    drain = [r for r in p.records if r.dropped == "drain"]
    assert len(ramp) == 4 == stop.ramp_up and len(drain) == stop.drain >= 1
    assert p.summary.requests == stop.requests == sum(1 for r in p.records if r.counted)
    assert stop.window_ns is not None
    w0, w1 = stop.window_ns
    assert w0 == max(r.end_ns for r in ramp) and all(r.end_ns > w1 for r in drain)
    # in flight at the stop: one a user; a user may send once more before it sees the stop (a
    # busy machine widens that gap: 5 were seen) and that one is drain too, never counted; a
    # request lasts > 100 ms here, far longer than the stop takes to reach the workers
    assert len(drain) <= 2 * 4
    assert p.summary.duration_s == pytest.approx((w1 - w0) / 1e9)
    assert 2.5 < p.summary.tpot_ms.p50 < 5.0
    assert p.trust.state in ("trusted", "untrusted")  # lag depends on the machine; it is judged


def test_auto_cap_and_duration(tokdir: Path) -> None:
    with start_sim("--ttft-ms", "2", "--itl-ms", "1", "--jitter-ms", "0.5") as sim:
        capped = run_bench(cfg(sim.url, tokdir, precision=0.0005, min_requests=20, max_requests=40))
        timed = run_bench(
            cfg(sim.url, tokdir, precision=0.0005, max_requests=0, max_duration_s=1.0)
        )
    c = capped.points[0].stop
    assert c is not None and c.reason == "cap" and c.requests >= 40
    t = timed.points[0].stop
    assert t is not None and t.reason == "duration"


def test_sequential_ab_settles_a_real_difference_at_an_early_look(tokdir: Path) -> None:
    with start_sim("--ttft-ms", "5", "--itl-ms", "4", "--jitter-ms", "0.3") as sim:
        base = run_bench(cfg(sim.url, tokdir)).points[0]
    assert base.stop is not None
    ref = baseline_ref("baseline", base.records, base.stop.window_ns, 4)
    assert ref is not None
    with start_sim("--ttft-ms", "5", "--itl-ms", "2", "--jitter-ms", "0.3") as sim:
        fast = run_bench(
            cfg(sim.url, tokdir, max_requests=200, looks=4), baselines={"C=4": ref}
        ).points[0]
    stop = fast.stop
    assert stop is not None
    if stop.reason != "sequential-better":
        # a machine too loaded to measure (one run beside 6 jobs, load 10-12, read TPOT
        # ×[0.99, 1.36] for a ×0.5 change and ran to the cap): then the points are untrusted
        # and nothing is claimed; the rule itself is tested on injected streams
        # (tests/unit/load/test_stopping_rules.py)
        assert stop.reason == "cap" and "untrusted" in (base.trust.state, fast.trust.state), stop
        return
    assert stop.looks == 4 and stop.requests < 200
    if base.trust.state == fast.trust.state == "trusted":
        assert stop.look == 1 and stop.requests < 100
    assert stop.sequential is not None and stop.sequential["baseline"] == "baseline"
    tpot = stop.sequential["metrics"]["tpot_ms"]
    assert tpot["status"] == "better" and tpot["ratio"] < 0.7 and abs(tpot["z"]) >= tpot["boundary"]


def test_campaign_sequential_ab_says_which_look_settled_it(
    campaign_toml: CampaignToml, tmp_path: Path
) -> None:
    from inferlab.campaign.drivers.runner import run_campaign
    from inferlab.campaign.parts.plan import make_plan, render_plan
    from inferlab.report.compare import build_comparison
    from inferlab.report.compare_export import cell_text
    from inferlab.store import Store

    # the baseline launched again at the end: a launch spread for the launch-level A/B
    load = {**SEQUENTIAL["load"], "recheck_baseline": True}
    path = campaign_toml("seq.toml", **{**SEQUENTIAL, "load": load})
    plan_text = "\n".join(render_plan(make_plan(path)))
    assert "requests: auto — stop at ±5%" in plan_text and "sequential A/B vs baseline" in plan_text
    with Store(tmp_path / "db") as store:
        res = run_campaign(path, store=store)
        assert [o.status for o in res.outcomes] == ["measured", "measured", "measured"]
        base, fast = store.runs(campaign="seq")
        assert base.stop is not None and base.stop["reason"] in ("precision", "cap")
        assert fast.stop is not None and fast.stop["reason"] == "sequential-better"
        # settled before the cap: at look 1 on a quiet machine, at look 2 once on a fresh
        # clone's make test (2026-12-07); the subject is that the verdict names its look
        look = fast.stop["look"]
        assert fast.stop["looks"] == 4 and 1 <= look < 4, fast.stop
        counted = sum(1 for r in store.requests(fast.id) if r.counted)
        assert counted < 80 * look, counted
        c = build_comparison(store, campaign="seq", baseline="baseline")
    text = cell_text(c, "fast", "C=2", "tpot_ms")
    assert text.endswith(f"better (look {look}/4)"), text
    assert f"settled at look {look}/4" in c.cells[("fast", "C=2")].verdicts["tpot_ms"].reason
