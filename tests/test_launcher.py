"""The launcher seam (``campaign.launch``) and the model clock (``campaign.clock``): a campaign
whose servers run on threads of this process (the reference engine, ``sim.inprocess``), read on
the engine's model clock with an injected client lag; real HTTP on loopback, real SQLite."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from inferlab.campaign.clock import ModelClock
from inferlab.campaign.launch import InProcessSim
from inferlab.campaign.runner import run_campaign
from inferlab.errors import ConfigError
from inferlab.report.compare import build_comparison
from inferlab.sim.inprocess import OPTIONS, serve_config, serve_options
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store import Store

CAMPAIGN = """
[campaign]
name = "seam"
output = "{out}"

[engine]
kind = "sim"
args = ["--ttft-ms", "8", "--itl-ms", "6", "--jitter-ms", "0.4"]
ready_timeout_s = 30
stop_grace_s = 5

[[config]]
name = "baseline"

[[config]]
name = "same"
extends = "baseline"
env = {{ INFERLAB_TEST_NOOP = "1" }}

[[config]]
name = "fast"
extends = "baseline"
set = {{ "--itl-ms" = "4" }}

[[config]]
name = "broken"
extends = "baseline"
set = {{ "--jitter-ms" = "-1" }}

[verify]
probes = [{{ prompt = "hi", expect = '\\w', max_tokens = 4 }}]
length_tokens = 4

[load]
workload = {{ input_tokens = 8, output_tokens = 12 }}
concurrency = [1, 2]
requests = 16
tokenizer = "{tok}"
"""


def test_the_parser_takes_every_option_of_sim_serve() -> None:
    """``serve_options`` reads the same options as the CLI's ``sim serve`` (cli/sim.py)."""
    import typer.main

    from inferlab.cli.sim import serve_cmd, sim_app

    names = {
        opt
        for p in typer.main.get_command(sim_app).commands["serve"].params  # type: ignore[attr-defined]
        for opt in p.opts
    }
    assert names == set(OPTIONS)
    assert set(inspect.signature(serve_cmd).parameters) == {f for f, _ in OPTIONS.values()}
    got = serve_options(["--ttft-ms=8", "--tuned-fp8", "--port", "0", "--truth", "t.jsonl"])
    assert got == {"ttft_ms": "8", "tuned_fp8": True, "port": "0", "truth_path": "t.jsonl"}
    with pytest.raises(ConfigError, match="no such option '--nope'"):
        serve_options(["--nope", "1"])
    with pytest.raises(ConfigError, match="--itl-ms needs a value"):
        serve_options(["--itl-ms"])
    argv = ["py", "-m", "inferlab.cli.main", "sim", "serve", "--preset", "dsv4-flash-8gpu"]
    config, command = serve_config(argv, {"NCCL_PROTO": "LL"})
    assert config.batching and config.levers.nccl_proto == "LL"
    assert command == "sim serve --preset dsv4-flash-8gpu"


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The campaign run in process on the model clock, 3 ms of client lag injected at C=2."""
    tmp = tmp_path_factory.mktemp("seam")
    tok = WordTokenizer().save_hf(tmp / "tok")
    path = tmp / "seam.toml"
    path.write_text(CAMPAIGN.format(out=tmp / "out", tok=tok))
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
    }, [(o.config, o.message, o.log_tail) for o in res.outcomes]
    assert "--jitter-ms" in next(o.message for o in res.outcomes if o.config == "broken")
    return path, db


def test_in_process_servers_leave_a_log_a_stop_check_and_no_orphan_record(
    campaign: tuple[Path, Path],
) -> None:
    path, db = campaign
    with Store(db) as store:
        launch = store.latest_verification("seam", "fast", "launch")
        stop = store.latest_verification("seam", "fast", "stop")
        levers = store.latest_verification("seam", "fast", "lever")
    assert launch is not None and stop is not None and levers is not None
    log = Path(launch["log_path"]).read_text()
    assert "(in process)" in log.splitlines()[0]
    assert "[SIMULATED] started as: inferlab sim serve --host 127.0.0.1 --port" in log
    assert "inferlab sim (SIMULATED engine) listening on http://127.0.0.1:" in log
    assert stop["signal"] == "SIGTERM" and stop["port_free"]
    assert [i["status"] for i in levers["items"]] == ["applied"]  # /get_server_info: itl_ms 4
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


def test_back_to_back_takes_out_the_turnaround_and_keeps_each_duration() -> None:
    from inferlab.records import RequestRecord
    from inferlab.sim.clock import back_to_back, on_model_clock

    def rec(i: int, send: int, first: int, last: int) -> RequestRecord:
        return RequestRecord(i, f"r{i}", send_ns=send, end_ns=last, event_ns=[first, last])

    # two users; the client took 3, 5 and 9 ns to send each next request
    recs = [rec(0, 0, 10, 20), rec(1, 1, 12, 30), rec(2, 23, 30, 40), rec(3, 35, 40, 55)]
    back_to_back(recs, 2)
    assert [(r.send_ns, r.event_ns, r.end_ns) for r in recs] == [
        (0, [10, 20], 20),
        (0, [11, 29], 29),
        (20, [27, 37], 37),
        (29, [34, 49], 49),
    ]
    truth = [{"request_id": "r0", "recv_ns": 2, "chunks": [[0, 9, 0], [8, 9, 1], [18, 19, 3]]}]
    done = on_model_clock(recs, truth)
    assert (done.retimed, done.kept) == (1, 3)
    assert (recs[0].send_ns, recs[0].event_ns, recs[0].end_ns) == (2, [8, 18], 18)
