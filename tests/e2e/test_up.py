"""``inferlab up`` / ``down`` on a campaign of reference-engine configs (real processes)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from inferlab.campaign.drivers.up import down, up
from inferlab.errors import ConfigError, LaunchError, VerifyError
from inferlab.store import Store
from support.campaign import CampaignToml, write_campaign
from support.campaigns import EAGLE, SEED
from support.cli import Cli


def camp(tmp: Path, port: int | None = None) -> Path:
    return write_campaign(
        tmp / "camp.toml",
        name="simtest",
        args=["--ttft-ms", "5", "--itl-ms", "2"],
        engine={"port": port},
        config=[
            {"name": "baseline"},
            {
                "name": "chunky",
                "extends": "baseline",
                "set": {"--tokens-per-chunk": "4", "--itl-ms": "1"},
            },
            {"name": "reseeded", "extends": "baseline", "args": ["--seed", "9"]},
            {"name": "broken", "set": {"--ttft-ms": "-5"}},
        ],
        verify={
            "probes": [{"prompt": "hello", "expect": r"^ \w+"}],
            "equivalent_to": "baseline",
            "equivalence_prompts": 3,
        },
        load=None,
    )


def test_up_verify_equivalence_down(tmp_path: Path) -> None:
    path = camp(tmp_path)
    with Store(tmp_path / "db") as store:
        base = up(path, "baseline", store=store)
        assert base.verify is not None and base.verify.passed
        chunky = up(path, "chunky", store=store)  # timing differs, tokens must not
        assert chunky.verify is not None and chunky.verify.passed
        eq = next(c for c in chunky.verify.checks if c.kind == "equivalence")
        assert eq.detail["match_rate"] == 1.0
        with pytest.raises(VerifyError, match="reseeded diverged from the reference"):
            up(path, "reseeded", store=store)
        with pytest.raises(ConfigError, match="already runs"):
            up(path, "baseline", store=store)
        kinds = store.db.execute("SELECT kind, passed FROM verifications").fetchall()
    assert ("equivalence", 0) in kinds and ("greedy-outputs", 1) in kinds
    log = base.log_path.read_text()
    assert "--ttft-ms 5" in log and "SIMULATED" in log
    stopped = dict(down(path))
    assert set(stopped) == {"baseline", "chunky"}  # the diverged one was stopped at once
    assert all(r.signal == "SIGTERM" and r.port_free for r in stopped.values())
    with pytest.raises(ConfigError, match="no running server"):
        down(path, "baseline")


def test_failed_launch_is_classified(tmp_path: Path) -> None:
    with pytest.raises(LaunchError) as ei:
        up(camp(tmp_path), "broken")
    assert ei.value.kind == "invalid_option"  # the sim's refusal of --ttft-ms -5
    assert any("--ttft-ms" in line for line in ei.value.tail)
    assert ei.value.remedy and "the line names it" in ei.value.remedy


def test_address_in_use_is_classified(tmp_path: Path) -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    try:
        with pytest.raises(LaunchError) as ei:
            up(camp(tmp_path, holder.getsockname()[1]), "baseline", no_verify=True)
    finally:
        holder.close()
    assert ei.value.kind == "address_in_use", (ei.value.kind, ei.value.tail)
    assert ei.value.remedy


def test_cli_up_down(cli: Cli, tmp_path: Path) -> None:
    path = camp(tmp_path)
    env = {"INFERLAB_DB": str(tmp_path / "db")}
    r = cli("up", str(path), "baseline", env=env)
    assert r.exit_code == 0, r.stderr
    assert "ok probe" in r.stdout and "log:" in r.stdout
    state = json.loads((tmp_path / "out" / ".servers" / "baseline.json").read_text())
    assert state["url"].startswith("http://127.0.0.1:")
    bad = cli("up", str(path), "broken", env=env)
    assert bad.exit_code == 3 and "launch failed (invalid_option)" in bad.stderr
    d = cli("down", str(path), env=env)
    assert d.exit_code == 0 and "baseline: stopped by SIGTERM" in d.stdout


def test_cli_up_mines_the_launch_log(cli: Cli, tmp_path: Path, campaign_toml: CampaignToml) -> None:
    """A launch that dies prints, after the classification and the log tail, what the log
    miner finds in it: the OOM in CUDA-graph capture with the memory fraction to try."""
    mtp = {"name": "mtp", "args": EAGLE}
    path = campaign_toml(
        "seed.toml", name="uptest", args=[*SEED, "--time-scale", "0.02"], config=[mtp], load=None
    )
    env = {"COLUMNS": "300", "INFERLAB_DB": str(tmp_path / "db")}
    r = cli("up", str(path), "mtp", env=env)
    assert r.exit_code == 3, r.stderr
    assert "launch failed (oom_cuda_graph_capture)" in r.stderr
    assert "oom-graph-capture: OOM during CUDA-graph capture at --mem-fraction-static 0.70" in (
        r.stderr
    )
    assert "lower it (e.g. 0.60) or cap --cuda-graph-max-bs" in r.stderr
