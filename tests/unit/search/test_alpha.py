"""The level and the minimum effect of a search's A/Bs (issue 42, items 1, 3 and 11):
``[search] min_effect`` is the trials' A/B's minimum effect whatever ``[load]`` says; α is a
setting (``[load] alpha``, 0 < α < 1, default 0.05), spent over the trial budget
(Bonferroni: each trial's A/B at α / budget_trials); the sequential rule decides and stores
at the level it is given."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.campaign.parts.bench import bench_config
from inferlab.config.campaign import load_campaign
from inferlab.errors import ConfigError
from inferlab.load.adaptive import (
    BaselineRef,
    PointFacts,
    SequentialRule,
    choose_rule,
)
from inferlab.search.driver import search_plan
from inferlab.search.trials import Trials, trial_alpha
from inferlab.stats.stopping import BatchMeans, MedianCI, Precision
from inferlab.store import Store
from support.campaign import write_campaign
from support.campaigns import optimize_campaign
from support.cli import Cli


def _rule(path: Path, tmp: Path) -> SequentialRule:
    """The stopping rule a trial's A/B runs under, from the trials' derived plan."""
    plan, section = search_plan(path)
    with Store(tmp / "db") as store:
        trials = Trials(plan, section, store, lambda p: {}, list(plan.campaign.config))
        derived = trials.derived("baseline", ["baseline"])
    cfg = bench_config(derived.campaign, "http://127.0.0.1:1", "m", "sim")
    ref = BaselineRef("t01-ref", MedianCI(4.0, 3.9, 4.1, 1, 0.01),
                      BatchMeans(400.0, 390.0, 410.0, 8, 0.0, 0.01))  # fmt: skip
    rule = choose_rule(cfg, PointFacts(2, ref))
    assert isinstance(rule, SequentialRule)
    return rule


def test_search_min_effect_is_the_trials_ab_minimum_effect_and_alpha_is_spent_over_the_budget(
    tmp_path: Path,
) -> None:
    camp = optimize_campaign(tmp_path, load={"min_effect": 0.02, "alpha": 0.1})
    camp["search"].update(min_effect=0.1, budget_trials=4)
    rule = _rule(write_campaign(tmp_path / "c.toml", **camp), tmp_path)
    # today: [load]'s 0.02 and a fixed 0.05
    assert rule.min_effect == pytest.approx(0.1)
    assert rule.alpha == pytest.approx(0.1 / 4)
    plan, section = search_plan(tmp_path / "c.toml")
    assert trial_alpha(plan.campaign.load.alpha, section) == pytest.approx(0.025)


def test_alpha_is_validated_and_named(tmp_path: Path) -> None:
    for bad in (0, 1, 1.5):
        camp = optimize_campaign(tmp_path, load={"alpha": bad})
        path = write_campaign(tmp_path / "bad.toml", **camp)
        with pytest.raises(ConfigError, match=r"load\.alpha"):
            load_campaign(path)
    assert load_campaign(write_campaign(tmp_path / "ok.toml", **optimize_campaign(tmp_path)))\
        .load.alpha == 0.05  # fmt: skip


def _look(rule: SequentialRule, ratio: float) -> dict[str, object]:
    """The rule's test at its last look of a candidate ``ratio`` × the reference's TPOT."""
    tpot = MedianCI(4.0 * ratio, 0.0, 0.0, 1, 0.01)
    thr = BatchMeans(400.0 / ratio, 0.0, 0.0, 8, 0.0, 0.01)
    return rule._test(Precision(80, tpot, thr), 80, last=True)


def test_the_sequential_ab_decides_and_stores_at_its_alpha() -> None:
    ref = BaselineRef("base", MedianCI(4.0, 3.9, 4.1, 1, 0.01),
                      BatchMeans(400.0, 390.0, 410.0, 8, 0.0, 0.01))  # fmt: skip
    # z = log(0.97) / (0.01·√2) ≈ −2.15: past the two-sided 5% boundary (1.96), not 1% (2.58)
    loose = _look(SequentialRule(ref, 80, 0.05, alpha=0.05), 0.97)
    strict = _look(SequentialRule(ref, 80, 0.05, alpha=0.01), 0.97)
    m5, m1 = loose["metrics"]["tpot_ms"], strict["metrics"]["tpot_ms"]  # type: ignore[index]
    assert m5["status"] == "better" and m1["status"] == "open"
    assert loose["alpha"] == 0.05 and strict["alpha"] == 0.01
    assert strict["min_effect"] == 0.02
    assert m1["boundary"] > m5["boundary"]


def test_the_dry_run_says_each_trials_level_and_the_confirmation(tmp_path: Path, cli: Cli) -> None:
    camp = optimize_campaign(tmp_path, load={"alpha": 0.1})
    camp["search"].update(budget_trials=4)
    r = cli("optimize", str(write_campaign(tmp_path / "c.toml", **camp)), "--dry-run")
    assert r.exit_code == 0, r.stderr
    assert "each trial's A/B at α = 0.025 ([load] alpha 0.1 / 4 trials, Bonferroni)" in r.stdout
    assert "the winner confirmed on 4 fresh launches" in r.stdout
    assert "one launch a side" not in r.stdout
    camp["search"].update(confirm_launches=2)
    r = cli("optimize", str(write_campaign(tmp_path / "c2.toml", **camp)), "--dry-run")
    assert r.exit_code == 0, r.stderr
    assert "on 2 fresh launches (baseline, winner)" in r.stdout
    assert "one launch a side: decided only on a launch spread measured before" in r.stdout
