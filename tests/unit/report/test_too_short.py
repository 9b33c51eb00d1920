"""A closed-loop point of fewer than 8 waves of C in its steady window carries no claim in
``compare`` (``stats.trust.too_short``): a campaign on the reference engine (servers on threads
of this process, read on the model clock), real HTTP on loopback, real SQLite."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import InProcessSim
from inferlab.report.compare import build_comparison
from inferlab.stats.trust import MIN_WAVES, too_short
from inferlab.store import Store
from support.campaign import write_campaign

REQUESTS = 20  # C=2: 10 waves; C=4: 5 waves


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("short")
    path = write_campaign(
        tmp / "short.toml",
        name="short",
        config=[{"name": "baseline"}, {"name": "fast", "args": ["--itl-ms", "0.5"]}],
        load={"concurrency": [2, 4], "requests": REQUESTS},
    )
    out = tmp / "s.db"
    with Store(out) as store:
        res = run_campaign(path, store=store, launcher=InProcessSim(), clock=ModelClock())
    assert [o.status for o in res.outcomes] == ["measured", "measured"], res.outcomes
    return out


def test_a_point_of_few_waves_claims_nothing_and_says_how_many_it_needs(db: Path) -> None:
    with Store(db) as store:
        c = build_comparison(store, campaign="short", baseline="baseline")
    short, long = c.cells[("fast", "C=4")], c.cells[("fast", "C=2")]
    assert short.untrusted == "untrusted: too short"
    for v in short.verdicts.values():
        assert v.claim == "~" and math.isnan(v.ratio.estimate), v
        assert f"5.0 waves at C=4 ({REQUESTS} counted requests in its steady window), need ≥ 8" in (
            v.reason
        )
        assert "measure ≥ 32 requests at C=4" in v.reason
    # 10 waves at C=2: judged (the sim's halved token gap read; whether it is claimed is the
    # launch design's to say: one launch each)
    assert long.untrusted is None
    v = long.verdicts["tpot_ms"]
    assert v.ratio.estimate == pytest.approx(0.5, rel=0.05) and "too short" not in v.reason, v


def test_the_rule_counts_the_shortest_run_and_leaves_c1_alone() -> None:
    assert MIN_WAVES == 8
    assert too_short([1000, 20], 4) is not None  # one short trial is enough
    assert too_short([32, 40], 4) is None
    assert too_short([5], 1) is None and too_short([5], None) is None
    issue = too_short([256], 128)
    assert issue is not None and issue.message.startswith("2.0 waves at C=128")
    assert "need ≥ 8" in issue.message and "1024 requests at C=128" in issue.fix
