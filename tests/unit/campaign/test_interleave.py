"""``[load] interleave``: the baseline measured again just before each candidate, and every
verdict taken against its nearest pass. The reference engine on a thread of this process,
launched by a launcher whose host drifts on purpose — launch n serves its TTFT and ITL
multiplied by ``1 + DRIFT × (n − 1)``, a stated function of the order of work — every point read on the engine's model clock (``campaign.parts.clock``); real HTTP on
loopback, real SQLite. Without interleave a no-op candidate measured three launches after the
baseline reads worse; with it, against the baseline's pass just before it, the same."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import InProcessSim
from inferlab.levers.evidence import gather
from inferlab.report.compare import build_comparison
from inferlab.report.compare_export import render_md, to_json
from inferlab.report.data import build_report
from inferlab.report.html_page import render_html
from inferlab.report.markdown import render_markdown
from inferlab.server import ServerProcess
from inferlab.server.lifecycle import LaunchSpec
from inferlab.stats.launch_ab import undecided
from inferlab.store import Store
from inferlab.store.interleave import INTERLEAVE_TAG, baseline_passes
from support.campaign import write_campaign

#: the host's slowdown per launch: smaller than the 2% minimum effect, three launches larger
DRIFT = 0.012

#: candidates that change nothing the timing model reads (an environment variable)
CONFIGS = [
    {"name": "baseline"},
    *({"name": n, "extends": "baseline", "env": {"INFERLAB_TEST_NOOP": n}} for n in "ab"),
    {"name": "noop", "extends": "baseline", "env": {"INFERLAB_TEST_NOOP": "noop"}},
]


class DriftingSim(InProcessSim):
    """``InProcessSim`` on a host that slows by ``DRIFT`` per launch (its TTFT and ITL)."""

    def __init__(self) -> None:
        self.launches = 0

    def start(self, spec: LaunchSpec) -> ServerProcess:
        self.launches += 1
        scale = 1 + DRIFT * (self.launches - 1)
        argv = list(spec.argv)
        for flag in ("--ttft-ms", "--itl-ms"):
            i = argv.index(flag) + 1
            argv[i] = f"{float(argv[i]) * scale:.4f}"
        return super().start(dataclasses.replace(spec, argv=argv))


def _run(
    tmp: Path, interleave: bool, configs: list[dict[str, Any]] = CONFIGS, **load: Any
) -> tuple[Path, DriftingSim, list[str]]:
    path = write_campaign(
        tmp / "c.toml",
        name="drift",
        args=["--ttft-ms", "2", "--itl-ms", "2", "--jitter-ms", "0.05"],
        config=configs,
        load={"concurrency": [2], "requests": 24, "interleave": interleave, **load},
    )
    db, launcher = tmp / "db", DriftingSim()
    with Store(db) as store:
        res = run_campaign(path, store=store, launcher=launcher, clock=ModelClock())
    return db, launcher, [f"{o.config}:{o.status}" for o in res.outcomes]


def test_without_interleave_the_drift_makes_a_noop_candidate_read_worse(tmp_path: Path) -> None:
    db, launcher, outcomes = _run(tmp_path, interleave=False)
    assert launcher.launches == 4
    assert outcomes == ["baseline:measured", "a:measured", "b:measured", "noop:measured"]
    with Store(db) as store:
        c = build_comparison(store, campaign="drift")
        assert baseline_passes(store, "drift", "baseline") == {}
    v = c.cells[("noop", "C=2")].verdicts["tpot_ms"]
    # ×1.036: the host, not the lever; one launch each and no spread measured: no claim
    # (the one-launch A/B of before this design read it "worse")
    assert v.claim == "~" and undecided(v), v.reason
    assert 1.025 < v.ratio.estimate < 1.05
    assert c.cells[("noop", "C=2")].against is None
    assert "baseline_measurement" not in str(to_json(c))


def test_with_interleave_each_verdict_is_taken_against_the_nearest_baseline_pass(
    tmp_path: Path,
) -> None:
    db, launcher, outcomes = _run(tmp_path, interleave=True)
    # baseline, a, baseline, b, baseline, noop: six launches
    assert launcher.launches == 6
    assert outcomes == [
        "baseline:measured", "a:measured", "baseline (before b):measured", "b:measured",
        "baseline (before noop):measured", "noop:measured",
    ]  # fmt: skip
    with Store(db) as store:
        passes = baseline_passes(store, "drift", "baseline")["C=2"]
        runs = store.runs(campaign="drift", config="baseline", purpose=None)
        c = build_comparison(store, campaign="drift")
        ev = gather(store, "drift")
        report = build_report(store, "drift")
    # every pass stored as the baseline's own runs, tagged with the candidate it preceded
    assert [p.before for p in passes] == [None, "b", "noop"]
    assert [r.purpose for r in runs] == ["measure", "interleave", "interleave"]
    assert runs[1].environment[INTERLEAVE_TAG] == "b"
    # the drift is there: the baseline's last pass is two launches slower than its first
    tpot = [float(r.summary["tpot_ms"]["p50"]) for r in runs]
    assert tpot[2] / tpot[0] > 1.02
    # the first pass alone is the baseline's row; noop judged against the pass just before it
    assert c.cells[("baseline", "C=2")].trials == 1
    noop = c.cells[("noop", "C=2")]
    assert noop.interleaved and noop.against is not None and "pass before noop" in noop.against
    for m, v in noop.verdicts.items():
        assert v.claim == "~", (m, v.reason)
        if m in ("tpot_ms", "output_tok_s"):  # over every launch: the three passes' drift
            assert "3 + 1 launches" in v.reason, v.reason  # is their spread
    a = c.cells[("a", "C=2")]  # the first candidate follows the baseline's first pass
    assert a.against is not None and "first pass" in a.against and not a.interleaved
    assert all(v.claim == "~" for v in a.verdicts.values())
    cells = {(x["config"], x["label"]): x for x in to_json(c)["cells"]}
    assert cells[("noop", "C=2")]["baseline_measurement"] == noop.against
    assert any("before noop" in line for line in render_md(c))  # the passes table
    # the passes table: which pass each candidate was judged against, and how far it moved
    rows = {(r["point"], r["baseline pass"]): r for r in to_json(c)["baseline_passes"]}
    assert rows[("C=2", "first pass")]["verdicts taken against it"] == "a"
    assert rows[("C=2", "before noop")]["verdicts taken against it"] == "noop"
    assert rows[("C=2", "before noop")]["drift"] == "yes"  # ×0.977: two launches of drift
    for page in (render_markdown(report), render_html(report)):
        assert "Baseline passes (interleave) — SIMULATED" in page and "before noop" in page
    # levers' measured ratios read the same nearest pass
    near = ev.configs["noop"].near[2]
    assert "pass before noop" in near[1]
    assert abs(near[0].tpot_ms / ev.configs["noop"].sweep[2].tpot_ms - 1) < 0.02


def test_after_a_candidate_that_measured_nothing_the_same_pass_serves_the_next(
    tmp_path: Path,
) -> None:
    broken = {"name": "broken", "extends": "baseline", "set": {"--jitter-ms": "-1"}}
    configs = [CONFIGS[0], CONFIGS[1], broken, CONFIGS[3]]  # baseline, a, broken, noop
    db, _, outcomes = _run(tmp_path, True, configs)
    assert outcomes == [
        "baseline:measured", "a:measured", "baseline (before broken):measured",
        "broken:launch-failed", "noop:measured",
    ]  # fmt: skip
    with Store(db) as store:
        c = build_comparison(store, campaign="drift")
    noop = c.cells[("noop", "C=2")]
    assert noop.interleaved and noop.against is not None and "before broken" in noop.against
