"""The plan of a campaign and ``run --dry-run`` (``campaign.parts.plan``), nothing launched."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.campaign.parts.plan import make_plan, render_plan, select_configs
from inferlab.errors import ConfigError
from support.campaign import write_campaign
from support.campaigns import simrun


def write(tmp: Path, itl: str = "4", fast: str = "3", requests: int = 8) -> Path:
    return write_campaign(tmp / "c.toml", **simrun(itl, fast, requests))


def test_plan_and_dry_run(tmp_path: Path) -> None:
    plan = make_plan(write(tmp_path))
    assert plan.cells == 4 * 2 * 2
    text = "\n".join(render_plan(plan))
    assert "vs baseline: ~ --itl-ms: 4 → 3" in text and "+ --seed 4" in text


def test_plan_owns_baseline_reference_and_output_dir(tmp_path: Path) -> None:
    """The baseline is the file's first config, also when ``--config`` leaves it out; the
    reference is ``equivalent_to``, else the baseline; the output dir is ``[campaign] output``."""
    spec = simrun()
    spec["verify"] = {**spec["verify"], "equivalent_to": "fast"}
    spec["config"] = spec["config"][:2]
    plan = select_configs(make_plan(write_campaign(tmp_path / "c.toml", **spec)), ["fast"])
    assert [c.name for c in plan.configs] == ["fast"]
    assert plan.baseline.name == "baseline" and plan.reference == "fast"
    assert plan.campaign.output_dir == tmp_path / "out"
    del spec["verify"]["equivalent_to"]
    plan = make_plan(write_campaign(tmp_path / "d.toml", **spec))
    assert plan.reference == "baseline" == plan.baseline.name


def test_the_plan_names_each_lossy_gate_and_a_bad_field_is_named(tmp_path: Path) -> None:
    """``lossy`` is inherited along ``extends``; a config's own wins over ``[verify] lossy``."""
    spec = simrun()
    spec["config"] = [
        {"name": "baseline"},
        {"name": "bf16", "extends": "baseline", "lossless": False},
        {"name": "fp8", "extends": "bf16", "lossy": {"max_kl": 0.05, "min_top1": 0.9}},
    ]
    spec["verify"] = {**spec["verify"], "lossy": {"max_kl": 0.01}}
    text = "\n".join(render_plan(make_plan(write_campaign(tmp_path / "c.toml", **spec))))
    assert "lossy gate: KL ≤ 0.01 nats/token, top-1 ≥ 98.00%" in text
    assert "lossy gate: KL ≤ 0.05 nats/token, top-1 ≥ 90.00%" in text
    spec["verify"] = {**spec["verify"], "lossy": {"max_kll": 0.01}}
    with pytest.raises(ConfigError, match=r"c2\.toml:\d+: verify\.lossy\.max_kll"):
        make_plan(write_campaign(tmp_path / "c2.toml", **spec))
