"""Ctrl-C (SIGINT) to ``inferlab run`` while its server starts or while a point is measured,
the server slow to exit (``sim serve --exit-delay-s``, as vLLM was on the H200, where a run so
interrupted had not exited 30 s later): the run exits within seconds (bounded: < 10 s, where
``stop_grace_s = 30`` made it > 30 s), the server's process group is gone, no orphan record is
left, and ``--resume`` measures what is missing. Real processes, a real store.

The vLLM form of the first case (a real vLLM CPU launch) is tests/e2e/test_vllm_interrupt.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from inferlab.store import Store
from support.campaign import write_campaign
from support.simproc import ctrl_c_run, group_pids, running_records

#: the bound of "SIGINT sent → process exit" (s); the stop it replaces waited 30 s
BOUND_S = 10.0


def _campaign(tmp: Path, python: Path, startup_s: float, requests: int) -> Path:
    """The reference engine served by ``python`` (this checkout's inferlab, whatever the one
    installed), slow to start and slow to exit."""
    args = ["--ttft-ms", "5", "--itl-ms", "20", "--startup-s", str(startup_s)]
    return write_campaign(
        tmp / "c.toml",
        name="ctrlc",
        args=[*args, "--exit-delay-s", "120"],
        engine={"stop_grace_s": 30, "ready_timeout_s": 120, "python": python},
        load={"concurrency": [1], "requests": requests, "max_client_lag_ms": 1e6},
    )


def _loading(out: Path) -> bool:
    """The server runs and logged its startup delay (the runner waits for it to be ready)."""
    recs = running_records(out)
    return bool(recs) and "loading weights" in Path(str(recs[0]["log"])).read_text()


def _served(out: Path) -> int:
    """How many generation requests the running server has answered (0: none running)."""
    recs = running_records(out)
    if not recs:
        return 0
    try:
        url = f"http://127.0.0.1:{recs[0]['port']}/truth/summary"
        with urllib.request.urlopen(url, timeout=2) as r:
            return int(json.load(r).get("requests", 0))
    except OSError:
        return 0


def _measuring(out: Path) -> bool:
    """The server answered a generation request (the point is being measured)."""
    return _served(out) > 0


@pytest.mark.parametrize(
    ("when", "startup_s", "requests", "ready"),
    [("launching", 6.0, 4, _loading), ("measuring", 0.0, 400, _measuring)],
)
def test_ctrl_c_stops_a_slow_server_within_seconds_and_resume_measures(
    tmp_path: Path,
    engine_python: Path,
    when: str,
    startup_s: float,
    requests: int,
    ready: Callable[[Path], bool],
) -> None:
    path, out = _campaign(tmp_path, engine_python, startup_s, requests), tmp_path / "out"
    env = {**os.environ, "COLUMNS": "200", "INFERLAB_DB": str(tmp_path / "db")}
    argv = [sys.executable, "-m", "inferlab.cli.main", "run", str(path)]
    code, err, took, groups = ctrl_c_run(path, env, out, ready, when)
    assert code == 130, err[:300] + err[-2000:]
    print(f"{when}: exited {took:.2f} s after SIGINT")
    assert took < BOUND_S, f"{when}: exited {took:.1f} s after SIGINT"
    assert "--resume continues" in err
    assert not any(group_pids(g) for g in groups), groups  # the server's whole group ended
    assert not running_records(out)  # no orphan record left for the next run to clean up
    if when == "measuring":  # the point cut short is kept, marked interrupted
        with Store(tmp_path / "db") as store:
            assert [r.interrupted for r in store.runs(campaign="ctrlc")] == [True]
    # fewer requests and a short grace (neither is part of a config's identity): --resume
    # measures the same config, and its stop SIGKILLs the slow server after 1 s
    text = path.read_text().replace(f"requests = {requests}", "requests = 4")
    path.write_text(text.replace("stop_grace_s = 30", "stop_grace_s = 1"))
    done = subprocess.run([*argv, "--resume"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    with Store(tmp_path / "db") as store:
        runs = [r for r in store.runs(campaign="ctrlc") if not r.interrupted]
        assert [(r.config, r.label) for r in runs] == [("baseline", "C=1")]
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _profiling(out: Path) -> bool:
    """The profiled pass is under way: the server answered more requests than the two
    measured points sent (4 each)."""
    return _served(out) > 10


def test_ctrl_c_in_a_profiled_pass_ends_the_run_not_only_the_pass(
    tmp_path: Path, engine_python: Path
) -> None:
    """A Ctrl-C during ``[profile]``'s pass once ended that pass only: the next profiled point
    ran and the campaign went on to its next config."""
    args = ["--ttft-ms", "5", "--itl-ms", "20", "--exit-delay-s", "120"]
    path = write_campaign(
        tmp_path / "c.toml",
        name="ctrlcprof",
        args=args,
        engine={"stop_grace_s": 30, "ready_timeout_s": 120, "python": engine_python},
        config=[{"name": "baseline"}, {"name": "B", "extends": "baseline"}],
        load={"concurrency": [1, 2], "requests": 4, "max_client_lag_ms": 1e6},
        profile={"at": ["C=1", "C=2"], "steps": 100000, "requests": 400},
    )
    out = tmp_path / "out"
    env = {**os.environ, "COLUMNS": "200", "INFERLAB_DB": str(tmp_path / "db")}
    code, err, took, groups = ctrl_c_run(path, env, out, _profiling, "profiling")
    assert code == 130, err[-2000:]
    assert took < BOUND_S, f"exited {took:.1f} s after SIGINT"
    assert "profiled pass at C=2" not in err  # the next profiled point did not start
    assert "config 2/2" not in err and "B: launching" not in err  # nor the next config
    assert not any(group_pids(g) for g in groups), groups
    assert not running_records(out)
