"""Any engine: a ``command`` campaign runs a server from its own argv through the whole
lifecycle; ``verify`` without ``--engine`` detects the reference engine from what it says."""

from __future__ import annotations

import sys
from pathlib import Path

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.campaign.parts.plan import make_plan, render_plan
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store import Store
from inferlab.store.checks import LaunchRecord, LeverCheck, StopRecord
from support.campaign import write_campaign
from support.campaigns import command
from support.cli import Cli, CliResult
from support.simproc import start_sim


def test_command_campaign_runs_its_argv(tmp_path: Path) -> None:
    tok = tmp_path / "tok"
    WordTokenizer(4096).save_hf(tok)
    path = write_campaign(tmp_path / "c.toml", **command(sys.executable, tok))
    text = "\n".join(render_plan(make_plan(path)))
    assert "--port <free>" in text and "--model served-by-a-command" in text
    assert "vs baseline: ~ --itl-ms: 2 → 4" in text
    with Store(tmp_path / "db") as store:
        res = run_campaign(path, store=store)
        runs = store.runs(campaign="cmd")
        launch = store.verifications.latest_of(LaunchRecord, "cmd", "slower", "launch")
        stop = store.verifications.latest_of(StopRecord, "cmd", "slower", "stop")
        levers = store.verifications.latest_of(LeverCheck, "cmd", "slower", "lever")
    why = [(o.config, o.status, o.message, o.log_tail[-5:]) for o in res.outcomes]
    assert {o.config: o.status for o in res.outcomes} == {
        "baseline": "measured",
        "slower": "measured",
    }, why
    assert {r.config for r in runs} == {"baseline", "slower"} and all(
        r.n_requests == 4 for r in runs
    )
    assert launch is not None and "served-by-a-command" in " ".join(launch.argv or [])
    log = Path(str(launch.log_path)).read_text()
    assert "inferlab sim (SIMULATED engine) listening on" in log
    assert stop is not None and stop.port_free
    # a command engine declares no evidence: the item is reported, and says so
    assert levers is not None and levers.items[0].status == "unknown"
    assert not list((tmp_path / "out" / ".running").glob("*.json"))


# ------------------------------------------------------------------------- detection


def test_verify_checks_a_running_configs_levers(cli: Cli, tmp_path: Path) -> None:
    camp = tmp_path / "c.toml"
    camp.write_text(
        f'[campaign]\nname = "v"\noutput = "{tmp_path}/out"\n[engine]\nkind = "sim"\n'
        '[[config]]\nname = "base"\n[[config]]\nname = "fast"\nargs = ["--itl-ms", "3"]\n'
        '[[config]]\nname = "slow"\nargs = ["--itl-ms", "9"]\n'
    )
    with start_sim("--itl-ms", "3") as sim:

        def verify(config: str) -> CliResult:
            return cli(
                "verify", "--url", sim.url, "--model", "inferlab-sim", "--levers",
                f"{camp}:{config}", "--log", sim._stderr_path, "--no-default-probes",
                env={"COLUMNS": "250"},
            )  # fmt: skip

        ok, bad = verify("fast"), verify("slow")
    assert ok.exit_code == 0, ok.stdout + ok.stderr
    assert "engine sim (/v1/models owned_by 'inferlab-sim'" in ok.stdout
    assert "fast: lever ✓ --itl-ms: applied — itl_ms=3.0 in /get_server_info" in ok.stdout
    assert bad.exit_code == 1 and "slow: lever ✗ --itl-ms: not-applied" in bad.stdout
