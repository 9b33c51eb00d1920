"""The launcher seam (``campaign.parts.launch``) and the model clock (``campaign.parts.clock``): a campaign
whose servers run on threads of this process (the reference engine, ``sim.inprocess``), read on
the engine's model clock with an injected client lag; real HTTP on loopback, real SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import InProcessSim
from inferlab.report.compare import build_comparison
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store import Store
from inferlab.store.checks import LaunchRecord, LeverCheck, StopRecord
from support.campaign import write_campaign


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The campaign run in process on the model clock, 3 ms of client lag injected at C=2."""
    tmp = tmp_path_factory.mktemp("seam")
    tok = WordTokenizer().save_hf(tmp / "tok")
    path = write_campaign(
        tmp / "seam.toml",
        name="seam",
        args=["--ttft-ms", "8", "--itl-ms", "6", "--jitter-ms", "0.4"],
        config=[
            {"name": "baseline"},
            {"name": "same", "extends": "baseline", "env": {"INFERLAB_TEST_NOOP": "1"}},
            {"name": "fast", "extends": "baseline", "set": {"--itl-ms": "4"}},
            {"name": "broken", "extends": "baseline", "set": {"--jitter-ms": "-1"}},
        ],
        verify={"probes": [{"prompt": "hi", "expect": r"\w", "max_tokens": 4}], "length_tokens": 4},
        load={
            "workload": {"input_tokens": 8, "output_tokens": 12},
            "concurrency": [1, 2],
            "requests": 16,
            "tokenizer": tok,
            # the baseline launched again at the end: a launch-level A/B needs a launch
            # spread, and one launch each with none measured is "undecided"
            "recheck_baseline": True,
        },
    )
    db = tmp / "seam.db"
    with Store(db) as store:
        res = run_campaign(
            path, store=store, launcher=InProcessSim(), clock=ModelClock(lag_ms={"C=2": 3.0})
        )
    assert {o.config: o.status for o in res.outcomes} == {
        "baseline": "measured",
        "same": "measured",
        "fast": "measured",
        "broken": "launch-failed",
        "baseline (recheck)": "measured",
    }, [(o.config, o.message, o.log_tail) for o in res.outcomes]
    assert "--jitter-ms" in next(o.message for o in res.outcomes if o.config == "broken")
    return path, db


def test_in_process_servers_leave_a_log_a_stop_check_and_no_orphan_record(
    campaign: tuple[Path, Path],
) -> None:
    path, db = campaign
    with Store(db) as store:
        launch = store.verifications.latest_of(LaunchRecord, "seam", "fast", "launch")
        stop = store.verifications.latest_of(StopRecord, "seam", "fast", "stop")
        levers = store.verifications.latest_of(LeverCheck, "seam", "fast", "lever")
    assert launch is not None and stop is not None and levers is not None
    log = Path(str(launch.log_path)).read_text()
    assert "(in process)" in log.splitlines()[0]
    assert "[SIMULATED] started as: inferlab sim serve --host 127.0.0.1 --port" in log
    assert "inferlab sim (SIMULATED engine) listening on http://127.0.0.1:" in log
    assert stop.signal == "SIGTERM" and stop.port_free
    assert [i.status for i in levers.items] == ["applied"]  # /get_server_info: itl_ms 4
    assert not list((path.parent / "out" / ".running").glob("*.json"))


def test_the_model_clock_makes_verdicts_exact(campaign: tuple[Path, Path]) -> None:
    """On the model clock the same schedule reads the same (the engine's seeded jitter draws,
    so ×1.000 and p = 1) and ITL 4 vs 6 ms is TPOT ×4/6, whatever the machine was doing."""
    _, db = campaign
    with Store(db) as store:
        c = build_comparison(store, campaign="seam", baseline="baseline")
        runs = {(r.config, r.label): r for r in store.runs(campaign="seam")}
    same, fast = c.cells[("same", "C=1")], c.cells[("fast", "C=1")]
    for metric in ("ttft_ms", "tpot_ms"):
        v = same.verdicts[metric]
        assert v.claim == "~" and v.ratio.estimate == 1.0 and v.p_value == 1.0, (metric, v)
    assert fast.verdicts["tpot_ms"].claim == "better"
    assert fast.verdicts["tpot_ms"].ratio.estimate == pytest.approx(4 / 6, rel=0.02)
    assert fast.verdicts["ttft_ms"].ratio.estimate == 1.0  # the same TTFT draws: seed 0
    assert runs[("baseline", "C=1")].summary["ttft_ms"]["p50"] == pytest.approx(8.0, abs=0.4)


def test_injected_lag_makes_a_point_untrusted_and_it_never_yields_a_claim(
    campaign: tuple[Path, Path],
) -> None:
    _, db = campaign
    with Store(db) as store:
        c = build_comparison(store, campaign="seam", baseline="baseline")
        runs = {(r.config, r.label): r for r in store.runs(campaign="seam")}
    assert all(runs[(cfg, "C=1")].trust == "trusted" for cfg in ("baseline", "same", "fast"))
    lagged = runs[("fast", "C=2")]
    assert lagged.trust == "untrusted"
    assert [x["reason"] for x in lagged.trust_reasons] == ["client-lag"]
    assert "p99 3.00 ms > 1 ms" in lagged.trust_reasons[0]["message"]
    cell = c.cells[("fast", "C=2")]
    assert cell.blocked == "untrusted: client lag"
    assert all(v.claim == "~" for v in cell.verdicts.values())
