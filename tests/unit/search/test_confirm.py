"""``optimize`` defends its winner (issue 42): before a recommendation the baseline and the
winner are launched again, fresh and interleaved (baseline, winner, winner, baseline), and the
verdict over those launches (``stats.launch_ab``) decides; the printed interval is that
confirmation's, a winner that does not confirm is not recommended, and a confirmation cut
short resumes with ``--resume`` without launching again what it measured. On the reference
engine in this process, read on its model clock; real HTTP on loopback, real SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.campaign.context import CampaignEvents
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import InProcessSim, LaunchSpec
from inferlab.cli.optimize import print_search
from inferlab.errors import ConfigError
from inferlab.report.sections.search import search_section
from inferlab.search.confirm import (
    CONFIRM_KIND,
    ORDER,
    confirm_names,
    confirm_winner,
    in_words,
    order,
)
from inferlab.search.driver import OptimizeResult, _Runs, optimize, search_plan
from inferlab.search.loop import SearchResult, TrialRecord, TrialResult
from inferlab.search.trials import Trials
from inferlab.server.lifecycle import ServerProcess
from inferlab.store import Store
from inferlab.store.outcomes import ConfirmBody
from support.campaign import write_campaign
from support.campaigns import optimize_campaign


class CutAt(InProcessSim):
    """The reference engine in process, but the launch of ``name`` is cut short by Ctrl-C
    the first time (as a user's would be)."""

    def __init__(self, name: str) -> None:
        self.name, self.cut = name, False

    def start(self, spec: LaunchSpec) -> ServerProcess:
        if spec.name == self.name and not self.cut:
            self.cut = True
            raise KeyboardInterrupt
        return super().start(spec)


def test_the_winner_is_confirmed_on_fresh_interleaved_launches_and_a_cut_confirmation_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_campaign(tmp_path / "opt.toml", **optimize_campaign(tmp_path, budget_trials=4))
    db = tmp_path / "db"
    names = confirm_names("t02-im2-jm0.2")
    with Store(db) as store, pytest.raises(KeyboardInterrupt):
        optimize(path, store=store, launcher=CutAt(names[2]), clock=ModelClock())
    with Store(db) as store:
        started = store.analyses.of(ConfirmBody, CONFIRM_KIND, "opt")
        assert [a.data.status for a in started] == ["started"]
        first = {n: len(store.runs(campaign="opt", config=n)) for n in names}
        assert first == {names[0]: 1, names[1]: 1, names[2]: 0, names[3]: 0}
        res = optimize(path, store=store, resume=True, launcher=InProcessSim(), clock=ModelClock())
        runs = {n: store.runs(campaign="opt", config=n) for n in names}
        section = search_section(store, "opt")
    # the search had stopped: the resumed one proposes nothing, keeps its stop, and only the
    # two launches the cut left are made (baseline, winner, winner, baseline in run order)
    assert len(res.search.trials) == 3 and res.search.stopped == "exhausted"
    assert [len(r) for r in runs.values()] == [1, 1, 1, 1]
    ids = [r[0].id for r in runs.values()]
    assert ids == sorted(ids)
    c = res.confirmation
    assert c is not None and c.confirmed and c.claim == "better"
    assert c.winner == res.best == "t02-im2-jm0.2" and c.launches == (2, 2)
    assert c.configs == tuple(names) and c.metric == "tpot_ms"
    assert c.ratio is not None and c.low is not None and c.high is not None
    assert c.low < c.ratio < c.high < 1.0
    trial = next(t for t in res.search.trials if t.name == res.best).result.ab["tpot_ms"]
    assert (c.low, c.high) != (trial["low"], trial["high"])  # its own interval, not the trial's
    out = res.to_json()
    assert out["recommended"] == res.best
    assert out["confirmation"]["confirmed"] and out["confirmation"]["launches"] == [2, 2]
    print_search(res, simulated=True)
    printed = capsys.readouterr().out
    assert f"recommended: {res.best}" in printed
    assert f"confirmed: tpot_ms ×{c.ratio:.3f} [{c.low:.3f}, {c.high:.3f}] (95%)" in printed
    assert (
        section is not None and f"Recommended: {res.best}. confirmed: tpot_ms" in section.markdown
    )


def test_a_winner_that_does_not_confirm_is_not_recommended(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A "winner" that changes nothing (the baseline's own values): the fresh launches read
    it within ±min_effect of the baseline, so it is not recommended."""
    camp = optimize_campaign(tmp_path, budget_trials=4)
    camp["config"] = [{"name": "baseline"}, {"name": "t01-same", "set": {"--itl-ms": "4"}}]
    path = write_campaign(tmp_path / "opt.toml", **camp)
    plan, section = search_plan(path)
    with Store(tmp_path / "db") as store:
        runs = _Runs(store, CampaignEvents(), InProcessSim(), ModelClock(), None)
        trials = Trials(plan, section, store, runs.trials(section), list(plan.campaign.config))
        c = confirm_winner(trials, "t01-same", "tpot_ms", {"stopped": "patience"})
        stored = store.analyses.of(ConfirmBody, CONFIRM_KIND, "opt")
    assert not c.confirmed and c.claim == "~" and c.launches == (2, 2)
    assert c.sentence().startswith("not confirmed: tpot_ms ×")
    assert [a.data.status for a in stored] == ["started", "decided"]
    assert stored[-1].data.confirmed is False
    won = TrialRecord(
        index=1,
        name="t01-same",
        params={"--itl-ms": "4"},
        result=TrialResult(status="ok", value=4.0, verdict="better"),
        against="baseline",
        chosen_by="its A/B, which a do-nothing trial passes α of the time",
    )
    search = SearchResult([won], ["baseline", "t01-same"], "patience")
    res = OptimizeResult("opt", "baseline", "tpot_ms", "C=2", [], search, confirmation=c)
    assert res.recommended is None and res.to_json()["recommended"] is None
    print_search(res, simulated=True)
    printed = capsys.readouterr().out
    assert "not recommended (the search's winner): t01-same" in printed
    assert "not confirmed: tpot_ms" in printed and "[[config]]" not in printed


def test_the_confirmations_launch_count_is_an_even_search_field(tmp_path: Path) -> None:
    """``[search] confirm_launches`` (default 4): the same interleaving, repeated or cut to
    one pair; an odd or too small count is refused before anything launches."""
    assert order() == ORDER == ("b1", "w1", "w2", "b2")
    assert order(2) == ("b1", "w1") and order(6) == (*ORDER, "b3", "w3")
    assert in_words(2) == "baseline, winner" and in_words() == "baseline, winner, winner, baseline"
    assert confirm_names("t03-x", 2) == ["confirm-t03-b1", "confirm-t03-w1"]
    camp = optimize_campaign(tmp_path)
    assert search_plan(write_campaign(tmp_path / "a.toml", **camp))[1].confirm_launches == 4
    for bad, why in ((3, "multiple of 2"), (0, "greater than or equal to 2")):
        path = write_campaign(
            tmp_path / f"{bad}.toml",
            **{**camp, "search": {**camp["search"], "confirm_launches": bad}},
        )
        with pytest.raises(ConfigError, match=rf"search\.confirm_launches: .*{why}"):
            search_plan(path)
