"""``[load] launches`` and ``max_launches`` (``campaign.parts.rounds``): every config launched in rounds
of alternating order (A B B A), then again only while a candidate's launch-level verdict is
unsettled, to its budget. The reference engine on a thread of this process, launched by a
launcher that serves each candidate's n-th launch at a stated speed factor (its ITL times
``FACTORS[n]``: a launch-to-launch spread chosen by the test); every point read on the
engine's model clock (``campaign.parts.clock``); real HTTP on loopback, real SQLite."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from inferlab.campaign.drivers.demo import EXAMPLES
from inferlab.campaign.drivers.runner import CampaignResult, run_campaign
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import InProcessSim
from inferlab.campaign.parts.plan import make_plan, render_plan
from inferlab.campaign.parts.rounds import budget
from inferlab.config.campaign import load_campaign
from inferlab.errors import ConfigError
from inferlab.server import ServerProcess
from inferlab.server.lifecycle import LaunchSpec
from inferlab.store import Store
from inferlab.store.launches import launch_groups, launch_of
from inferlab.store.outcomes import LaunchRoundsBody
from support.campaign import write_campaign
from support.campaigns import SEQUENTIAL

#: a candidate whose launches vary far more than any verdict can settle in four launches: after
#: two, the projection (``LaunchAB.needed``) says about 8 launches a side would settle it
WOBBLY = (1.0, 1.3, 0.8, 1.25, 1.0, 1.2)
#: ~20% faster but wandering: unsettled after 2, 3 and 4 launches, though each time the
#: projection says the budget of 4 could settle it, so the rounds go on to the budget
WANDERING = (0.75, 0.85, 0.65, 1.0, 0.8, 0.8)
#: twice as fast at every launch: claimed "better" on two launches each (a do-nothing candidate
#: is not: with no prior spread, 2 + 2 launches give a t with 1 df, wider than ±min_effect)
STEADY = (0.5,) * 6


def _cand(name: str) -> dict[str, Any]:
    return {"name": name, "extends": "baseline", "env": {"INFERLAB_TEST_CAND": name}}


class Speeds(InProcessSim):
    """``InProcessSim`` whose candidate NAME serves its n-th launch (0-based, counted over every
    run of the campaign: a resumed run goes on counting) with its ITL times
    ``factors[NAME][n]``; ``order`` lists every launch's config, ``kill_at`` raises a
    KeyboardInterrupt at that launch (1-based), as a kill between two launches would stop it."""

    def __init__(self, factors: dict[str, Sequence[float]], kill_at: int | None = None) -> None:
        self.factors = factors
        self.counts: dict[str, int] = {}
        self.order: list[str] = []
        self.kill_at = kill_at

    def start(self, spec: LaunchSpec) -> ServerProcess:
        name = (spec.env or {}).get("INFERLAB_TEST_CAND", "baseline")
        if self.kill_at is not None and len(self.order) + 1 == self.kill_at:
            self.kill_at = None
            raise KeyboardInterrupt
        self.order.append(name)
        argv = list(spec.argv)
        if name in self.factors:
            n = self.counts.get(name, 0)
            self.counts[name] = n + 1
            i = len(argv) - 1 - argv[::-1].index("--itl-ms") + 1  # the last given wins
            argv[i] = f"{float(argv[i]) * self.factors[name][n]:.4f}"
        return super().start(dataclasses.replace(spec, argv=argv))


def _write(tmp: Path, configs: list[dict[str, Any]], **load: Any) -> Path:
    return write_campaign(
        tmp / "c.toml",
        name="rounds",
        args=["--ttft-ms", "2", "--itl-ms", "2", "--jitter-ms", "0.05"],
        config=configs,
        load={"concurrency": [2], "requests": 24, **load},
    )


def _run(path: Path, db: Path, launcher: Speeds, resume: bool = False) -> CampaignResult:
    with Store(db) as store:
        return run_campaign(path, store=store, launcher=launcher, clock=ModelClock(), resume=resume)


def _names(res: CampaignResult) -> list[str]:
    return [f"{o.config}:{o.status}" for o in res.outcomes]


def test_launches_and_budget_are_checked_with_the_field_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"c\.toml.*max_launches.*≥ launches = 3"):
        load_campaign(_write(tmp_path, [{"name": "baseline"}], launches=3, max_launches=2))
    with pytest.raises(ConfigError, match=r"c\.toml.*launches"):
        load_campaign(_write(tmp_path, [{"name": "baseline"}], launches=0))
    with pytest.raises(ConfigError, match=r"c\.toml.*max_launches"):
        load_campaign(_write(tmp_path, [{"name": "baseline"}], max_launches=0))
    ld = load_campaign(_write(tmp_path, [{"name": "baseline"}])).load
    assert (ld.launches, ld.max_launches) == (1, 1)  # as the test campaigns pin it
    ld = load_campaign(
        _write(tmp_path, [{"name": "baseline"}], launches=None, max_launches=None)
    ).load
    assert (ld.launches, ld.max_launches, budget(ld)) == (2, None, 4)  # the default design


def test_the_plan_states_the_rounds_and_the_budget() -> None:
    text = "\n".join(render_plan(make_plan(EXAMPLES / "sim-launches.toml")))
    assert (
        "launches: each config 2× in rounds of alternating order (A B B A), then again while a "
        "candidate's verdict is unsettled, 4 at most" in text
    )
    assert "vs baseline: ~ --itl-ms: 4 → 3.6" in text


def test_two_launches_run_a_b_b_a_and_stop_once_settled(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"name": "baseline"}, _cand("x")], launches=2, max_launches=4)
    launcher = Speeds({"x": STEADY})
    res = _run(path, tmp_path / "db", launcher)
    assert launcher.order == ["baseline", "x", "x", "baseline"]  # A B B A; settled: no more
    assert _names(res) == [
        "baseline:measured", "x:measured", "x (launch 2):measured", "baseline (launch 2):measured",
    ]  # fmt: skip
    assert [(t.config, t.launches, t.stopped) for t in res.launches] == [
        ("baseline", 2, "the baseline: launched beside the candidates"),
        ("x", 2, "settled"),
    ]
    with Store(tmp_path / "db") as store:
        runs = store.runs(campaign="rounds")
        assert sorted((r.config, launch_of(r.environment)) for r in runs) == [
            ("baseline", 1), ("baseline", 2), ("x", 1), ("x", 2),
        ]  # fmt: skip
        # the store tells each config's two launches apart (same point, same trial)
        for cfg in ("baseline", "x"):
            groups = launch_groups(store, [r for r in runs if r.config == cfg])
            assert [len(g) for g in groups["C=2"]] == [2]
        (rounds,) = store.analyses.of(LaunchRoundsBody, "launches", "rounds")
    assert rounds.data.budget == 4 and rounds.data.launches == 2
    assert [c.launches for c in rounds.data.configs] == [2, 2]


def test_an_unsettled_candidate_is_launched_again_to_its_budget(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"name": "baseline"}, _cand("x")], launches=2, max_launches=4)
    launcher = Speeds({"x": WANDERING})
    res = _run(path, tmp_path / "db", launcher)
    # rounds 3 and 4 go on alternating: A B B A A B B A
    assert launcher.order == ["baseline", "x", "x", "baseline"] * 2
    x = next(t for t in res.launches if t.config == "x")
    assert x.launches == 4
    assert x.stopped.startswith("budget spent ([load] max_launches = 4), unsettled at C=2")
    assert "launches a side would settle it" in x.stopped  # what more launches would buy


def test_a_verdict_the_budget_cannot_settle_gets_no_more_launches(tmp_path: Path) -> None:
    """Futility: after two launches a side, the wobbly candidate's projection (today's estimate
    and launch spread held) needs more launches than the budget of 4, so no round 3 is run,
    and the tally says how many it would take."""
    path = _write(tmp_path, [{"name": "baseline"}, _cand("x")], launches=2, max_launches=4)
    launcher = Speeds({"x": WOBBLY})
    res = _run(path, tmp_path / "db", launcher)
    assert launcher.order == ["baseline", "x", "x", "baseline"]  # no round 3
    x = next(t for t in res.launches if t.config == "x")
    assert x.launches == 2
    assert x.stopped.startswith("beyond the budget ([load] max_launches = 4), unsettled at C=2")
    needed = [int(w) for w in re.findall(r"about (\d+) launches a side", x.stopped)]
    assert needed and min(needed) > 4
    # the same launches with a budget as large as the projection: round 3 runs
    top = min(needed)
    path = _write(tmp_path, [{"name": "baseline"}, _cand("x")], launches=2, max_launches=top)
    launcher = Speeds({"x": WOBBLY * 3})
    _run(path, tmp_path / "db2", launcher)
    assert launcher.order[4:6] == ["baseline", "x"]


def test_only_the_unsettled_candidates_get_the_extra_rounds(tmp_path: Path) -> None:
    configs = [{"name": "baseline"}, _cand("steady"), _cand("wobbly")]
    path = _write(tmp_path, configs, launches=2, max_launches=3)
    launcher = Speeds({"steady": STEADY, "wobbly": WANDERING})
    res = _run(path, tmp_path / "db", launcher)
    assert launcher.order == [
        "baseline", "steady", "wobbly", "wobbly", "steady", "baseline", "baseline", "wobbly",
    ]  # fmt: skip
    assert {t.config: (t.launches, t.stopped.split(" (")[0]) for t in res.launches} == {
        "baseline": (3, "the baseline: launched beside the candidates"),
        "steady": (2, "settled"),
        "wobbly": (3, "budget spent"),
    }


def test_with_interleave_the_passes_before_each_candidate_are_the_baselines_launches(
    tmp_path: Path,
) -> None:
    configs = [{"name": "baseline"}, _cand("x"), _cand("y")]
    path = _write(tmp_path, configs, launches=2, interleave=True)
    launcher = Speeds({"x": STEADY, "y": STEADY})
    res = _run(path, tmp_path / "db", launcher)
    # round 1 as interleave runs it; round 2 in reverse, each candidate after a baseline pass
    assert _names(res) == [
        "baseline:measured", "x:measured", "baseline (before y):measured", "y:measured",
        "baseline (before y) (launch 2):measured", "y (launch 2):measured",
        "baseline (before x) (launch 2):measured", "x (launch 2):measured",
    ]  # fmt: skip
    assert {t.config: t.launches for t in res.launches} == {"baseline": 4, "x": 2, "y": 2}


def test_resume_after_a_kill_in_round_3_redoes_nothing_and_decides_the_same(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path, [{"name": "baseline"}, _cand("x")], launches=2, max_launches=4)
    whole = Speeds({"x": WANDERING})
    _run(path, tmp_path / "whole", whole)
    launcher = Speeds({"x": WANDERING}, kill_at=6)  # the kill: as round 3's x is launched
    try:
        cut = _run(path, tmp_path / "db", launcher).interrupted
    except KeyboardInterrupt:
        cut = True
    assert cut
    with Store(tmp_path / "db") as store:
        before = {r.id: (r.config, launch_of(r.environment)) for r in store.runs(campaign="rounds")}
    assert sorted(before.values()) == [
        ("baseline", 1), ("baseline", 2), ("baseline", 3), ("x", 1), ("x", 2),
    ]  # fmt: skip
    res = _run(path, tmp_path / "db", launcher, resume=True)
    assert launcher.order == whole.order  # rounds 3 and 4 decided as the run without a kill
    assert [o.config for o in res.outcomes if o.status == "skipped"] == [
        "baseline",
        "x",
        "x (launch 2)",
        "baseline (launch 2)",
        "baseline (launch 3)",
    ]
    with Store(tmp_path / "db") as store:
        after = {r.id: (r.config, launch_of(r.environment)) for r in store.runs(campaign="rounds")}
    assert before.items() <= after.items()  # nothing lost, nothing measured again
    assert sorted(after.values()) == sorted((c, k) for c in ("baseline", "x") for k in (1, 2, 3, 4))


def test_sequential_ab_runs_in_every_launch(tmp_path: Path) -> None:
    path = write_campaign(
        tmp_path / "c.toml",
        **{**SEQUENTIAL, "load": {**SEQUENTIAL["load"], "max_requests": 80, "launches": 2}},
    )
    launcher = Speeds({})
    with Store(tmp_path / "db") as store:
        res = run_campaign(path, store=store, launcher=launcher, clock=ModelClock())
        runs = store.runs(campaign="seq")
    assert _names(res) == [
        "baseline:measured", "fast:measured", "fast (launch 2):measured",
        "baseline (launch 2):measured",
    ]  # fmt: skip
    by = {(r.config, launch_of(r.environment)): r for r in runs}
    assert sorted(by) == [("baseline", 1), ("baseline", 2), ("fast", 1), ("fast", 2)]
    # each launch of the candidate is its own sequential A/B, stopped before the cap; the
    # reference (the baseline) is measured to the cap in each of its launches
    for k in (1, 2):
        assert by[("fast", k)].stop is not None
        assert by[("fast", k)].n_requests < by[("baseline", k)].n_requests


def test_untrusted_points_are_launches_spent_with_no_verdict_to_settle(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"name": "baseline"}, _cand("x")], launches=2, max_launches=4)
    launcher = Speeds({"x": WOBBLY})
    with Store(tmp_path / "db") as store:  # a starved client at C=2: no point is trusted
        res = run_campaign(path, store=store, launcher=launcher, clock=ModelClock({"C=2": 50.0}))
    assert launcher.order == ["baseline", "x", "x", "baseline"]  # no extra round: none helps
    assert [t.line() for t in res.launches] == [
        "baseline: 2 launches — the baseline: launched beside the candidates",
        "x: 2 launches — no verdict to settle: no trusted point beside the baseline's",
    ]


def test_a_later_launch_checks_the_probes_not_the_equivalence_again(tmp_path: Path) -> None:
    """Greedy equivalence (and the agreement gate, the eval) are facts of a config, decided
    and stored at its first launch; launch 2 checks that the server answers (the probes), and
    stores no second verification."""
    verify = {"probes": [{"prompt": "hi", "expect": r"\w"}], "equivalent_to": "baseline"}
    path = write_campaign(
        tmp_path / "c.toml", name="rounds", args=["--ttft-ms", "2", "--itl-ms", "2"],
        config=[{"name": "baseline"}, _cand("x")], verify=verify,
        load={"concurrency": [2], "requests": 24, "launches": 2, "max_launches": 2},
    )  # fmt: skip
    launcher = Speeds({"x": STEADY})
    res = _run(path, tmp_path / "db", launcher)
    assert launcher.order == ["baseline", "x", "x", "baseline"]
    assert all(o.status == "measured" for o in res.outcomes), _names(res)
    with Store(tmp_path / "db") as store:
        kinds = [(v.config, v.kind) for v in store.verifications("rounds")]
    per_launch = ("launch", "lever", "stop")  # the launch's own records, and its lever evidence
    checks = [(c, k) for c, k in kinds if k not in per_launch]
    assert sorted(set(checks)) == sorted(checks), kinds  # each check once: the first launch's
    assert [c for c, k in kinds if k == "launch"] == ["baseline", "x", "x", "baseline"]
    assert ("x", "equivalence") in checks, kinds


def test_a_config_that_fails_counts_its_one_launch(tmp_path: Path) -> None:
    # the demo said "bf16: 0 launches — failed" for a config that launched and failed its gate
    broken = {**_cand("broken"), "args": ["--no-such-flag"]}
    path = _write(tmp_path, [{"name": "baseline"}, broken], launches=2, max_launches=2)
    with Store(tmp_path / "db") as store:
        res = run_campaign(path, store=store, launcher=Speeds({}), clock=ModelClock())
    assert "broken: 1 launch — failed: not launched again" in [t.line() for t in res.launches]
