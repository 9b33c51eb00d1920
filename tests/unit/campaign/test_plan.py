"""The plan of a campaign and ``run --dry-run`` (``campaign.plan``), nothing launched."""

from __future__ import annotations

from pathlib import Path

from inferlab.campaign.runner import make_plan, render_plan

CAMPAIGN = """
[campaign]
name = "simrun"
output = "{out}"

[engine]
kind = "sim"
args = ["--ttft-ms", "10", "--itl-ms", "{itl}"]
ready_timeout_s = 30
stop_grace_s = 5

[[config]]
name = "baseline"

[[config]]
name = "fast"
extends = "baseline"
set = {{ "--itl-ms" = "{fast}" }}

[[config]]
name = "broken"
set = {{ "--ttft-ms" = "-1" }}

[[config]]
name = "reseeded"
extends = "baseline"
args = ["--seed", "4"]

[verify]
probes = [{{ prompt = "hi", expect = '\\w' }}]
equivalent_to = "baseline"
equivalence_prompts = 2

[load]
workload = {{ input_tokens = 16, output_tokens = 16 }}
concurrency = [1, 4]
requests = {requests}
trials = 2
max_client_lag_ms = 1e6  # verdicts are under test here, not trust (tests/unit/stats/test_trust.py)
"""


def write(tmp: Path, itl: str = "4", fast: str = "3", requests: int = 8) -> Path:
    p = tmp / "c.toml"
    p.write_text(CAMPAIGN.format(out=tmp / "out", itl=itl, fast=fast, requests=requests))
    return p


def test_plan_and_dry_run(tmp_path: Path) -> None:
    plan = make_plan(write(tmp_path))
    assert plan.cells == 4 * 2 * 2
    text = "\n".join(render_plan(plan))
    assert "vs baseline: ~ --itl-ms: 4 → 3" in text and "+ --seed 4" in text
