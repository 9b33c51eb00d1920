"""A one-launch-per-side A/B counts the launch-to-launch spread (``stats.spread``). The
reference engine on a thread of this process, launched by a launcher whose every launch
serves its TTFT and ITL × a stated factor (``OFFSETS``: a launch's own speed, as where a CPU
server's threads land moves it), every point read on the engine's model clock; real HTTP on
loopback, real SQLite. The baseline is launched five times (first pass, three interleaved
passes, the recheck): without the spread its no-op candidates read better or worse, with it
they read "~", and a real change larger than the spread still reads better."""

from __future__ import annotations

import dataclasses
import math
import statistics
from pathlib import Path

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import InProcessSim
from inferlab.report.compare import build_comparison
from inferlab.report.compare_export import render_md, to_json
from inferlab.report.data import build_report
from inferlab.report.html_page import render_html
from inferlab.report.markdown import render_markdown
from inferlab.server import ServerProcess
from inferlab.server.lifecycle import LaunchSpec
from inferlab.stats.groups import group_verdict
from inferlab.stats.launches import launches_of
from inferlab.store import Store
from inferlab.store.groups import group_runs
from inferlab.store.interleave import baseline_passes, nearest_pass
from inferlab.store.launches import campaign_launches
from support.campaign import write_campaign

#: each launch's speed factor, in launch order: baseline, a, baseline, b, baseline, noop,
#: baseline, fast, baseline (recheck). The baseline's five: sd of their logs ≈ 4%.
OFFSETS = [1.00, 1.05, 0.95, 0.97, 1.04, 1.06, 0.97, 1.02, 1.05]
NOOPS = ("a", "b", "noop")
CONFIGS = [
    {"name": "baseline"},
    *({"name": n, "extends": "baseline", "env": {"INFERLAB_TEST_NOOP": n}} for n in NOOPS),
    {"name": "fast", "extends": "baseline", "set": {"--itl-ms": "1.4"}},  # TPOT ×0.7
]


class NoisySim(InProcessSim):
    """``InProcessSim`` whose launch n serves TTFT and ITL × ``OFFSETS[n − 1]``."""

    def __init__(self) -> None:
        self.launches = 0

    def start(self, spec: LaunchSpec) -> ServerProcess:
        scale = OFFSETS[self.launches]
        self.launches += 1
        argv = list(spec.argv)
        for flag in ("--ttft-ms", "--itl-ms"):
            i = len(argv) - 1 - argv[::-1].index(flag) + 1  # the last given wins
            argv[i] = f"{float(argv[i]) * scale:.4f}"
        return super().start(dataclasses.replace(spec, argv=argv))


def test_one_launch_ab_counts_the_launch_to_launch_spread(tmp_path: Path) -> None:
    path = write_campaign(
        tmp_path / "c.toml",
        name="noise",
        args=["--ttft-ms", "2", "--itl-ms", "2", "--jitter-ms", "0.05"],
        config=CONFIGS,
        load={
            "concurrency": [2], "requests": "auto", "sequential": True, "min_requests": 16,
            "max_requests": 48, "looks": 3, "interleave": True, "recheck_baseline": True,
        },
    )  # fmt: skip
    launcher = NoisySim()
    with Store(tmp_path / "db") as store:
        run_campaign(path, store=store, launcher=launcher, clock=ModelClock())
        assert launcher.launches == len(OFFSETS)
        spread = launches_of(campaign_launches(store, "noise"), ["tpot_ms", "output_tok_s"]).all()
        c = build_comparison(store, campaign="noise")
        # the launcher's offset changes the --itl-ms fast serves, which the applied check
        # reads as not fast's 1.4: forced, as that check is not this test's subject
        forced = build_comparison(store, campaign="noise", force=True)
        passes = baseline_passes(store, "noise", "baseline")["C=2"]
        bare = {}  # each no-op against its nearest pass without the spread: the old A/B
        for n in NOOPS:
            runs = store.runs(campaign="noise", config=n)
            near = nearest_pass(passes, runs)
            assert near is not None
            bg = group_runs(store, near.runs, lambda r: 0)[0]
            cg = group_runs(store, runs, lambda r: 0)[0]
            bare[n] = group_verdict("tpot_ms", bg, cg)
        noop_run = store.runs(campaign="noise", config="noop")[0]
        report = build_report(store, "noise")
    # the spread: five launches of the baseline, τ of the stated offsets' order
    tpot = spread[("C=2", "tpot_ms")]
    assert tpot.launches == 5 and tpot.df == 4
    stated = statistics.stdev(math.log(OFFSETS[i]) for i in (0, 2, 4, 6, 8))
    assert 0.5 * stated < tpot.tau < 1.5 * stated
    # without it, the launches' own speed reads as a lever on at least one no-op
    assert any(v.claim != "~" for v in bare.values()), {n: v.reason for n, v in bare.items()}
    # with it, none: every no-op reads "~" on both primary metrics, the spread named
    for n in NOOPS:
        for m in ("tpot_ms", "output_tok_s"):
            v = c.cells[(n, "C=2")].verdicts[m]
            assert v.claim == "~", (n, m, v.reason)
        assert "launch-to-launch" in c.cells[(n, "C=2")].verdicts["tpot_ms"].reason
    # the in-run sequential A/B counted the spread measured before it (noop: three launches)
    look = noop_run.stop["sequential"]["metrics"]["tpot_ms"]  # type: ignore[index]
    assert look["launch_df"] == 2 and look["launch_tau"] > 0
    # a real change larger than the spread is still claimed
    fast = forced.cells[("fast", "C=2")].verdicts["tpot_ms"]
    assert fast.claim == "better", fast.reason
    assert 0.6 < fast.ratio.estimate < 0.8
    # the baseline's own passes: no drift beyond the spread (A/A at α)
    assert all(p.verdicts["tpot_ms"].claim == "~" for p in c.rechecks)
    # the spread is shown where the verdicts are: compare's Markdown and JSON, the report
    assert any("C=2 median TPOT: launch-to-launch ±" in x for x in render_md(c))
    js = [x for x in to_json(c)["launch_spread"] if x["metric"] == "tpot_ms"]
    assert js == [{"label": "C=2", "metric": "tpot_ms", "tau": tpot.tau, "df": 4, "launches": 5}]
    for page in (render_markdown(report), render_html(report)):
        assert "Launch-to-launch spread — SIMULATED" in page
