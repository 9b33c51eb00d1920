"""``inferlab run``: a whole campaign on reference-engine configs (real processes, real store)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.campaign.parts.clock import ModelClock
from inferlab.errors import ConfigError
from inferlab.report.compare import build_comparison
from inferlab.stats.launch_ab import undecided
from inferlab.store import Store
from support.campaign import write_campaign
from support.campaigns import simrun
from support.cli import Cli
from support.simproc import ctrl_c_default, group_pids


def write(tmp: Path, itl: str = "4", fast: str = "3", requests: int = 8) -> Path:
    return write_campaign(tmp / "c.toml", **simrun(itl, fast, requests))


def test_campaign_failures_resume_and_changed_config(tmp_path: Path) -> None:
    path = write(tmp_path)
    with Store(tmp_path / "db") as store:
        res = run_campaign(path, store=store, clock=ModelClock())
        status = {o.config: o.status for o in res.outcomes}
        assert status == {
            "baseline": "measured",
            "fast": "measured",
            "broken": "launch-failed",
            "reseeded": "verify-failed",
        }
        runs = store.runs(campaign="simrun")
        assert len(runs) == 8
        split = runs[0].environment["cpu_split"]  # the stored environment records the split
        assert split["source"] in ("auto", "one CPU") and "server_env" in split
        launch = store.db.execute(
            "SELECT detail_json FROM verifications v JOIN configs g ON g.id = v.config_id "
            "WHERE g.name = 'broken' AND v.kind = 'launch'"
        ).fetchone()[0]
        # the sim refuses --ttft-ms -1: classified as its refusal, not a bare exit
        assert '"kind": "invalid_option"' in launch.replace('":"', '": "')
        assert "--ttft-ms" in launch
        c = build_comparison(store, campaign="simrun", baseline="baseline")
        v = c.cells[("fast", "C=1")].verdicts["tpot_ms"]  # ITL 3 vs 4 ms, one launch each
        assert v.ratio.estimate == pytest.approx(0.75, rel=0.05) and undecided(v), v.reason
        with pytest.raises(ConfigError, match="use --resume"):
            run_campaign(path, store=store)
        again = run_campaign(path, store=store, resume=True, clock=ModelClock())
        assert {o.config: o.status for o in again.outcomes}["baseline"] == "skipped"
        assert len(store.runs(campaign="simrun")) == 8  # nothing measured twice
        # a changed config is a new config: measured again, old results kept apart
        changed = run_campaign(
            write(tmp_path, fast="2"), store=store, resume=True, clock=ModelClock()
        )
        assert {o.config: o.status for o in changed.outcomes}["fast"] == "measured"
        c = build_comparison(store, campaign="simrun", baseline="baseline")
        assert sum(1 for k in c.configs if k.startswith("fast@")) == 2


def _server_groups(out: Path) -> set[int]:
    """Process groups of the campaign's running servers, from its orphan records (each test's
    own output directory: no other test's servers in it)."""
    return {int(json.loads(f.read_text())["pgid"]) for f in (out / ".running").glob("*.json")}


def test_ctrl_c_stops_the_server_and_resume_finishes(cli: Cli, tmp_path: Path) -> None:
    path = write(tmp_path, itl="30", requests=6)
    env = {**os.environ, "COLUMNS": "200", "INFERLAB_DB": str(tmp_path / "db")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "inferlab.cli.main", "run", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_default,
        env=env,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (tmp_path / "db").exists():
        time.sleep(0.2)
    time.sleep(6)  # launched, verified, measuring
    groups = _server_groups(tmp_path / "out")
    assert groups, "no server running after 6 s"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "--resume continues" in err
    # the campaign's server (its whole process group) was stopped, not left behind
    assert not any(group_pids(g) for g in groups), groups
    assert not _server_groups(tmp_path / "out")
    done = cli("run", str(path), "--resume", env={"INFERLAB_DB": str(tmp_path / "db")})
    assert done.exit_code == 0, done.stderr[-2000:]
    assert "reseeded: verify-failed — " in done.stdout  # the summary says why
    with Store(tmp_path / "db") as store:
        runs = [r for r in store.runs(campaign="simrun") if not r.interrupted]
    assert {(r.config, r.label, r.trial) for r in runs} >= {
        (c, lb, t) for c in ("baseline", "fast") for lb in ("C=1", "C=4") for t in (0, 1)
    }
