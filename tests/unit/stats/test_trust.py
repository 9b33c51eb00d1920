"""Untrusted points (client lag over its limit, TPOT 0) are stored as such and never carry a
claim in compare or the report (``stats.trust``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.campaign.parts.bench import bench_with_record
from inferlab.campaign.parts.clock import ModelClock
from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.report.compare import build_comparison
from inferlab.report.compare_export import cell_text, render_md
from inferlab.report.render import build_report, render_markdown
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.stats.trust import assess
from inferlab.store import Store
from support.simproc import start_sim_thread


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """On the engine's model clock, the default 1 ms lag limit: base (ITL 6 ms, no lag);
    fast (ITL 3 ms) with 3 ms of client lag injected at every point; burst (every token
    written at once: TPOT 0)."""
    tmp = tmp_path_factory.mktemp("trust")
    tok = WordTokenizer().save_hf(tmp / "tok")
    path = tmp / "t.db"
    lagged = ModelClock(lag_ms={"C=1": 3.0, "C=2": 3.0})
    runs = [
        (("--itl-ms", "6"), "base", ModelClock()),
        (("--itl-ms", "3"), "fast", lagged),
        (("--itl-ms", "0"), "burst", ModelClock()),  # every token written at once
    ]
    for args, name, clock in runs:
        with start_sim_thread("--ttft-ms", "5", *args) as sim:
            cfg = BenchConfig(
                url=sim.url,
                engine="sim",
                concurrency=[1, 2],
                requests=16,  # 8 waves at C=2: fewer are too short to claim
                tokenizer=tok,
                workload=WorkloadSpec(input_tokens=8, output_tokens=16),
            )
            bench_with_record(cfg, db=path, campaign="t", config=name, clock=clock)
    return path


def test_untrusted_runs_are_stored_with_reason_and_fix(db: Path) -> None:
    with Store(db) as store:
        runs = {(r.config, r.label): r for r in store.runs(campaign="t")}
    assert runs[("base", "C=1")].trust == "trusted"
    fast = runs[("fast", "C=1")]
    assert fast.trust == "untrusted" and fast.trust_reasons[0]["reason"] == "client-lag"
    assert "p99 3.00 ms > 1 ms" in fast.trust_reasons[0]["message"]
    assert "client_cpus" in fast.trust_reasons[0]["fix"]
    burst = runs[("burst", "C=2")]
    assert burst.summary["tpot_ms"]["p50"] < 0.1  # TPOT_ZERO_MS: a burst, however it was read
    assert [x["reason"] for x in burst.trust_reasons] == ["tpot-zero"]


def test_compare_and_report_never_claim_from_untrusted_points(db: Path) -> None:
    with Store(db) as store:
        c = build_comparison(store, campaign="t", baseline="base")
        report = render_markdown(build_report(store, "t", baseline="base"))
    for lb in ("C=1", "C=2"):
        fast = c.cells[("fast", lb)]
        assert fast.blocked == "untrusted: client lag"
        assert all(v.claim == "~" for v in fast.verdicts.values())
        assert "fix:" in fast.verdicts["tpot_ms"].reason
        text = cell_text(c, "fast", lb, "tpot_ms")
        assert text.endswith("untrusted: client lag") and "better" not in text
        burst = cell_text(c, "burst", lb, "tpot_ms")
        assert "untrusted: TPOT 0" in burst and "×0.000" not in burst
    md = "\n".join(render_md(c))
    assert "untrusted: client lag" in md and "better" not in md.split("### Why each verdict")[0]
    assert "untrusted: TPOT 0" in report and "untrusted: client-lag" in report


def test_assess_rules() -> None:
    ok = assess(lag_p99_ms=0.4, tpot_median_ms=5.0)
    assert ok.state == "trusted" and ok.label == "trusted"
    bad = assess(lag_p99_ms=14.0, tpot_median_ms=0.0, interrupted=True)
    assert bad.label == "untrusted: client lag, TPOT 0, interrupted"
    assert assess(lag_p99_ms=1.5, tpot_median_ms=5.0, lag_limit_ms=2.0).state == "trusted"
    # a point whose every request failed (the H200's cb-eager-oom at C=32, its server dead of
    # CUDA OOM) says so, not "client lag" from the burst of errors
    dead = assess(lag_p99_ms=1.01, tpot_median_ms=None, failed=(64, 64))
    assert dead.label == "untrusted: all requests failed"
    assert dead.issues[0].message == "all 64 requests failed: there is no speed to measure"
    assert assess(lag_p99_ms=0.4, tpot_median_ms=5.0, failed=(63, 64)).state == "trusted"


def test_late_sends_are_judged_against_the_lag_limit() -> None:
    ok = assess(lag_p99_ms=0.2, tpot_median_ms=5.0, late_p99_ms=0.9)
    late = assess(lag_p99_ms=0.2, tpot_median_ms=5.0, late_p99_ms=1.5)
    looser = assess(lag_p99_ms=0.2, tpot_median_ms=5.0, late_p99_ms=1.5, lag_limit_ms=2.0)
    assert ok.state == "trusted" and looser.state == "trusted"
    assert late.label == "untrusted: late sends"
    assert "p99 1.50 ms > 1 ms" in late.issues[0].message and "--speed" in late.issues[0].fix
    assert assess(lag_p99_ms=None, tpot_median_ms=None, late_p99_ms=None).state == "trusted"
