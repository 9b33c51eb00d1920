"""The Ray driver's queue of config runs (no cluster: nothing is placed): it owns the runs and
tells each its place and the run whose greedy outputs it must match."""

from __future__ import annotations

from pathlib import Path

from inferlab.campaign.context import CampaignEvents
from inferlab.campaign.parts.plan import make_plan
from inferlab.cluster.campaign import _queue
from inferlab.cluster.placement import config_need
from inferlab.cluster.shared import Shared
from inferlab.store import Store
from support.campaign import write_campaign


def test_each_run_knows_its_reference_and_the_total(tmp_path: Path) -> None:
    path = write_campaign(
        tmp_path / "c.toml",
        config=[{"name": "a"}, {"name": "baseline"}, {"name": "b", "args": ["--seed", "4"]}],
        verify={"equivalent_to": "baseline"},
    )
    plan = make_plan(path)
    needs = {c.name: config_need(c, plan.campaign.cluster) for c in plan.configs}
    with Store(tmp_path / "db") as store:
        sh = Shared(None, plan.path, plan.campaign, store, CampaignEvents(), False, "resume")
        runs, skipped = _queue(sh, plan, needs, resume=False)
    assert skipped == {}
    assert list(runs) == ["a", "baseline", "b"]
    assert [(r.index, r.total) for r in runs.values()] == [(0, 3), (1, 3), (2, 3)]
    base = runs["baseline"]
    assert base.reference is None
    assert runs["a"].reference is base and runs["b"].reference is base
