"""A launch spread measured once is kept and reused (``campaign.parts.spreads``, ``store.spreads``):
a campaign that launched its configs twice stores the spread under its engine, model and host;
a later campaign of one launch each on the same engine, model and host is decided with it (and
says where it came from) where it would read "undecided"; another model's campaign is not.
The reference engine on threads of this process, read on its model clock; real SQLite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import InProcessSim
from inferlab.report.compare import build_comparison
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.stats.launch_ab import undecided
from inferlab.store import Store
from inferlab.store.outcomes import SpreadBody
from inferlab.store.spreads import KIND
from support.campaign import write_campaign


def _campaign(tmp: Path, name: str, tok: Path, **load: Any) -> Path:
    return write_campaign(
        tmp / f"{name}.toml",
        name=name,
        args=["--ttft-ms", "6", "--itl-ms", "4", "--jitter-ms", "0.3"],
        config=[
            {"name": "baseline"},
            {"name": "fast", "extends": "baseline", "set": {"--itl-ms": "3"}},
        ],
        verify={"probes": [{"prompt": "hi", "expect": r"\w", "max_tokens": 4}], "length_tokens": 4},
        load={
            "workload": {"input_tokens": 8, "output_tokens": 12},
            "concurrency": [1],
            "requests": 16,
            "tokenizer": tok,
            **load,
        },
    )


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """'first': both configs launched twice (B F F B); 'second': one launch each."""
    tmp = tmp_path_factory.mktemp("spread")
    tok = WordTokenizer().save_hf(tmp / "tok")
    path = tmp / "s.db"
    with Store(path) as store:
        for name, load in (("first", {"launches": 2}), ("second", {})):
            res = run_campaign(
                _campaign(tmp, name, tok, **load), store=store, launcher=InProcessSim(),
                clock=ModelClock(),
            )  # fmt: skip
            assert all(o.status == "measured" for o in res.outcomes), res.outcomes
    return path


def test_a_campaign_launched_twice_keeps_its_spread(db: Path) -> None:
    with Store(db) as store:
        kept = store.analyses.of(SpreadBody, KIND, "first")
        none = store.analyses(KIND, campaign="second")
    tpot = [a.data for a in kept if a.data.metric == "tpot_ms"]
    assert tpot and tpot[0].label == "C=1" and tpot[0].df == 2  # 2 configs × (2 − 1)
    assert tpot[0].engine.startswith("sim") and "?" not in tpot[0].host[:1]
    assert none == []  # one launch each: nothing to keep


def test_a_later_one_launch_campaign_is_decided_with_the_stored_spread(db: Path) -> None:
    with Store(db) as store:
        c = build_comparison(store, campaign="second", baseline="baseline")
    v = c.cells[("fast", "C=1")].verdicts["tpot_ms"]
    assert not undecided(v), v.reason
    assert v.claim == "better" and v.ratio.estimate == pytest.approx(0.75, rel=0.05)
    assert "stored: campaign first" in v.reason


def test_another_models_spread_is_not_reused(db: Path) -> None:
    with Store(db) as store:
        with store.transaction():
            store.db.execute(
                "UPDATE analyses SET data_json = json_set(data_json, '$.model', 'other') "
                "WHERE kind = ?",
                (KIND,),
            )
        c = build_comparison(store, campaign="second", baseline="baseline")
    assert undecided(c.cells[("fast", "C=1")].verdicts["tpot_ms"])
