"""``inferlab run`` with ``[load] launches = 2``: the configs launched as A B B A (real ``sim
serve`` processes, real store), the runner killed with SIGKILL inside round 2, then
``--resume``: round 1 is not measured again, nothing finished is lost, the orphaned server is
stopped, and the run ends with every (config, point, launch) measured once and each config's
launches said."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inferlab.store import Store
from inferlab.store.launches import launch_of
from support.campaign import write_campaign
from support.cli import Cli
from support.simproc import group_pids

pytestmark = pytest.mark.timeout(300)


def _launch2_runs(db: Path) -> int:
    """Finished runs of a second launch in the store so far (read while the runner writes)."""
    if not db.exists():
        return 0
    con = sqlite3.connect(db, timeout=5)
    try:
        rows = con.execute(
            "SELECT e.snapshot_json FROM runs r JOIN environments e ON e.id = r.environment_id "
            "WHERE r.interrupted = 0"
        ).fetchall()
    except sqlite3.Error:
        return 0
    finally:
        con.close()
    return sum(1 for (env,) in rows if launch_of(json.loads(env)) == 2)


def test_kill_in_round_2_then_resume_finishes_without_redoing_round_1(
    cli: Cli, tmp_path: Path
) -> None:
    path = write_campaign(
        tmp_path / "c.toml",
        name="rounds",
        args=["--ttft-ms", "5", "--itl-ms", "20"],
        config=[{"name": "baseline"}, {"name": "fast", "extends": "baseline", "set": {"--itl-ms": "15"}}],
        verify={"probes": [{"prompt": "hi", "expect": r"\w"}]},
        load={
            "workload": {"input_tokens": 8, "output_tokens": 16}, "concurrency": [2],
            "requests": 6, "launches": 2, "max_launches": 2, "max_client_lag_ms": 1e6,
        },
    )  # fmt: skip
    db = tmp_path / "db"
    env = {**os.environ, "COLUMNS": "200", "INFERLAB_DB": str(db)}
    log = tmp_path / "run.stderr"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "inferlab.cli.main", "run", str(path)],
            stdout=subprocess.DEVNULL, stderr=err, text=True, env=env,
        )  # fmt: skip
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None and _launch2_runs(db) < 1:
            time.sleep(0.05)
        alive = proc.poll() is None
        proc.kill()  # SIGKILL: nothing of the runner's own cleanup runs
        proc.wait(timeout=30)
    assert alive, log.read_text()[-2000:]
    running = [json.loads(f.read_text()) for f in (tmp_path / "out" / ".running").glob("*.json")]
    with Store(db) as store:
        runs = [r for r in store.runs() if not r.interrupted]
        before = {r.id: (r.config, r.label, launch_of(r.environment)) for r in runs}
    assert sum(1 for *_, k in before.values() if k == 1) == 2  # round 1: both configs
    assert [c for c, _, k in before.values() if k == 2] == ["fast"]  # cut in round 2: B A | A ‸
    done = cli("run", str(path), "--resume", env={"INFERLAB_DB": str(db)})
    assert done.exit_code == 0, done.stderr[-2000:]
    assert "baseline: skipped" in done.stdout  # round 1 was not run again
    assert "fast: 2 launches — " in done.stdout and "baseline: 2 launches — " in done.stdout
    assert not any(group_pids(int(r["pgid"])) for r in running)  # the orphan was stopped
    with Store(db) as store:
        after = [r for r in store.runs() if not r.interrupted]
        stored = store.analyses("launches", campaign="rounds")
    cells = [(r.config, r.label, launch_of(r.environment)) for r in after]
    assert sorted(cells) == sorted(
        (c, lb, k) for c in ("baseline", "fast") for lb in ("C=2",) for k in (1, 2)
    )  # every cell of every launch once
    assert before.items() <= {r.id: c for r, c in zip(after, cells, strict=True)}.items()
    assert [c["launches"] for c in stored[-1].data.to_json()["configs"]] == [2, 2]
