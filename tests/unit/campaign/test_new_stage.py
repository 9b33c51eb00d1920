"""A new per-config stage is one module and one line in the stage table, for ``run`` and
``up`` alike (docs/design.md, "The campaign pipeline"; the ``--ray`` driver's half is
tests/e2e/test_cluster.py::test_a_new_stage_runs_on_the_cluster_too). The stage is the
worked example's (tests/support/warmup.py); the engine is the reference engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.campaign.drivers.up import down, up
from inferlab.campaign.parts.launch import InProcessSim
from inferlab.campaign.stages import table
from inferlab.store import Store
from support.campaign import CampaignToml
from support.warmup import WarmupRecord, with_warmup

CONFIGS = [{"name": "baseline"}, {"name": "fast", "set": {"--itl-ms": "0.5"}}]


@pytest.fixture
def warmup_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(table, "STAGES", with_warmup)


@pytest.mark.usefixtures("warmup_table")
def test_run_enters_the_new_stage_for_every_config(
    campaign_toml: CampaignToml, tmp_path: Path
) -> None:
    path = campaign_toml(config=CONFIGS)
    told: list[str] = []
    with Store(tmp_path / "db.sqlite") as store:
        from inferlab.campaign.context import CampaignEvents

        class Told(CampaignEvents):
            def message(self, text: str) -> None:
                told.append(text)

        res = run_campaign(path, store=store, events=Told(), launcher=InProcessSim())
        assert [o.status for o in res.outcomes] == ["measured", "measured"]
        for name in ("baseline", "fast"):
            assert store.latest_verification("test", name, "warmup") == WarmupRecord(requests=3)
    assert "fast: warmed up (3 requests)" in told
    # entered after the launch, before the stop: the order of the table
    assert told.index("fast: warmed up (3 requests)") > told.index("fast: launching ...")
    assert told.index("fast: warmed up (3 requests)") < told.index("fast: stopping ...")


@pytest.mark.usefixtures("warmup_table")
def test_up_enters_the_new_stage_too(campaign_toml: CampaignToml, tmp_path: Path) -> None:
    path = campaign_toml(config=CONFIGS)
    with Store(tmp_path / "db.sqlite") as store:
        try:
            r = up(path, "fast", store=store)
            assert "fast: warmed up (3 requests)" in r.notes and r.pid
            assert store.latest_verification("test", "fast", "warmup") == WarmupRecord(requests=3)
        finally:
            down(path)
