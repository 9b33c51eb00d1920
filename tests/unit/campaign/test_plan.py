"""The plan of a campaign and ``run --dry-run`` (``campaign.plan``), nothing launched."""

from __future__ import annotations

from pathlib import Path

from inferlab.campaign.runner import make_plan, render_plan
from support.campaign import write_campaign
from support.campaigns import simrun


def write(tmp: Path, itl: str = "4", fast: str = "3", requests: int = 8) -> Path:
    return write_campaign(tmp / "c.toml", **simrun(itl, fast, requests))


def test_plan_and_dry_run(tmp_path: Path) -> None:
    plan = make_plan(write(tmp_path))
    assert plan.cells == 4 * 2 * 2
    text = "\n".join(render_plan(plan))
    assert "vs baseline: ~ --itl-ms: 4 → 3" in text and "+ --seed 4" in text
