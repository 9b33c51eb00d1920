"""``benchmarks/reproducibility.py``: the campaign files it writes load as campaigns (the sim's
launch flags, the three configs, the [load] overrides; the vLLM mode's from the demo's engine),
and a sim row counts what it says it counts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from inferlab.campaign.parts.plan import make_plan
from support import ROOT


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "repro", ROOT / "benchmarks" / "reproducibility.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["repro"] = mod  # its dataclass resolves its module
    spec.loader.exec_module(mod)
    return mod


def test_the_sim_campaign_loads_with_its_launch_flags_and_overrides(tmp_path: Path) -> None:
    mod = _module()
    path = mod.sim_campaign(tmp_path / "c.toml", "r0", 0.04, 12, {"launches": "2"})
    plan = make_plan(path)
    assert [c.name for c in plan.configs] == ["baseline", "fast", "noop"]
    assert plan.campaign.load.launches == 2 and plan.campaign.load.requests == 40
    args = plan.campaign.engine.args
    for flag, value in (("--launch-sd", "0.04"), ("--launch-seed", "12"), ("--seed", "12")):
        assert args[args.index(flag) + 1] == value
    assert args[args.index("--launch-state") + 1] == str(tmp_path / "r0.launches")


def test_the_vllm_campaign_is_the_demos_engine_at_c1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INFERLAB_VLLM_PYTHON", sys.executable)
    monkeypatch.setenv("INFERLAB_TINY_MODEL", str(tmp_path))
    monkeypatch.setenv("INFERLAB_SMOLLM2_MODEL", str(tmp_path))  # the demo's model now
    mod = _module()
    plan = make_plan(mod.vllm_campaign(tmp_path / "v.toml", "v0", {}))
    assert [c.name for c in plan.configs] == ["baseline", "ngram"]
    load = plan.campaign.load
    assert load.concurrency == [1] and not load.interleave and not load.recheck_baseline


def test_a_sim_row_counts_holds_claims_and_undecided() -> None:
    mod = _module()
    nan = float("nan")
    runs = [
        {"fast": mod.Cell("better", 0.9, 0.85, 0.95, False),
         "noop": mod.Cell("~", 1.0, 0.95, 1.05, False), "launches": 6, "s": 1.0},
        {"fast": mod.Cell("better", 0.8, 0.78, 0.82, False),
         "noop": mod.Cell("worse", 1.1, 1.05, 1.15, False), "launches": 8, "s": 3.0},
        {"fast": mod.Cell("~", 0.9, nan, nan, True),
         "noop": mod.Cell("~", 1.0, nan, nan, True), "launches": 3, "s": 2.0},
    ]  # fmt: skip
    row = mod.summarize_sim(0.04, runs)
    assert row["fast_holds"] == 1 / 3 and row["fast_better"] == 2 / 3
    assert row["fast_undecided"] == 1 / 3 and row["noop_claimed"] == 1 / 3
    assert row["launches"] == 17 / 3
    assert "| 4% | 3 | 33% | 67% |" in mod.sim_table([row])
