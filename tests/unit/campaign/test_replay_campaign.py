"""A campaign with ``[load] trace``: its replay points are measured for every config (model
clock, in-process engines), stored with their pattern, compared with verdicts, named where a
consumer reads C=N points only (saturation, levers), and shown in the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import InProcessSim
from inferlab.config.campaign import load_campaign
from inferlab.report.compare import build_comparison
from inferlab.report.data import build_report
from inferlab.report.markdown import render_markdown
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store import Store
from support.campaign import write_campaign

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "traces" / "mooncake_sample.jsonl"
REPLAY = "replay:mooncake@8.0x"


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("replay")
    (tmp / "traces").mkdir()
    (tmp / "traces" / "t.jsonl").write_text(FIXTURE.read_text())
    path = write_campaign(
        tmp / "replay.toml",
        name="replay",
        args=["--ttft-ms", "4", "--itl-ms", "1"],
        config=[{"name": "baseline"}, {"name": "fast", "set": {"--itl-ms": "0.5"}}],
        load={
            "workload": {"input_tokens": 8, "output_tokens": 8},
            "concurrency": [1, 2],
            "requests": 8,
            "trace": "traces/t.jsonl",  # relative: beside the campaign file
            "speed": [8.0],
            "trace_limit": 12,
            "tokenizer": WordTokenizer().save_hf(tmp / "tok"),
            "recheck_baseline": True,  # a second baseline launch: a spread for the A/B
        },
    )
    db = tmp / "replay.db"
    with Store(db) as store:
        res = run_campaign(path, store=store, launcher=InProcessSim(), clock=ModelClock())
    assert {o.config: o.status for o in res.outcomes} == {
        "baseline": "measured",
        "fast": "measured",
        "baseline (recheck)": "measured",
    }
    return path, db


def test_the_trace_is_found_beside_the_campaign_file(campaign: tuple[Path, Path]) -> None:
    path, _ = campaign
    assert load_campaign(path).load.trace == path.parent / "traces" / "t.jsonl"


def test_replay_points_are_stored_with_their_pattern_and_compared(
    campaign: tuple[Path, Path],
) -> None:
    _, db = campaign
    with Store(db) as store:
        runs = {(r.config, r.label): r for r in store.runs(campaign="replay")}
        c = build_comparison(store, campaign="replay", baseline="baseline")
    run = runs[("baseline", REPLAY)]
    assert run.concurrency is None and run.rate is None and run.n_requests == 12
    assert run.summary["pattern"]["kind"] == "replay" and run.summary["pattern"]["limit"] == 12
    assert run.trust == "trusted"  # on the model clock: sent at their scheduled times
    assert c.labels == ["C=1", "C=2", REPLAY]
    fast = c.cells[("fast", REPLAY)]
    assert fast.verdicts["tpot_ms"].claim == "better"  # ITL 0.5 vs 1 ms, the same schedule
    assert fast.verdicts["tpot_ms"].ratio.estimate == pytest.approx(0.5, rel=0.05)
    sat = c.saturation.get("baseline") if isinstance(c.saturation, dict) else None
    text = sat.sentence if sat is not None else ""
    assert f"({REPLAY}: not C=N, left out)" in text


def test_the_report_shows_the_replay_point(campaign: tuple[Path, Path]) -> None:
    _, db = campaign
    with Store(db) as store:
        md = render_markdown(build_report(store, "replay", baseline="baseline"))
    assert REPLAY in md
    assert "not C=N, left out" in md


def test_levers_name_the_replay_points_they_leave_out(campaign: tuple[Path, Path]) -> None:
    from inferlab.levers.decide import decide

    _, db = campaign
    with Store(db) as store:
        d = decide(store, "replay", check=False)
    assert f"baseline: {REPLAY} left out: the lever rules read closed-loop C=N points" in d.notes


def test_a_campaign_of_a_trace_alone_plans_and_a_bad_line_stops_it_before_any_launch(
    tmp_path: Path,
) -> None:
    from inferlab.campaign.parts.plan import make_plan
    from inferlab.errors import ConfigError

    trace = tmp_path / "t.jsonl"
    trace.write_text(FIXTURE.read_text())
    load = {"concurrency": None, "requests": None, "trace": "t.jsonl", "speed": [1.0, 4.0]}
    plan = make_plan(write_campaign(tmp_path / "c.toml", load=load))
    assert [pt.label for pt in plan.points] == ["replay:mooncake@1.0x", "replay:mooncake@4.0x"]
    lines = FIXTURE.read_text().splitlines()
    lines[6] = "{oops"
    trace.write_text("\n".join(lines))
    with pytest.raises(ConfigError, match=r"t\.jsonl:7: invalid JSON"):
        make_plan(tmp_path / "c.toml")
