"""No orphans: a runner killed with SIGKILL mid-config leaves its server (and its installed
kernel-config files) behind; the next ``run --resume`` stops that server, restores the files,
says so in one line each, and completes. A recorded pid that now belongs to another process
is left alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from inferlab.campaign.parts.orphans import process_identity, reap
from inferlab.store import Store
from support.campaign import write_campaign
from support.pkgcopy import isolated_inferlab, sim_configs


def orph(python: object, *, files: bool = True) -> dict[str, Any]:
    """baseline and A (ITL 40 → 30 ms; with ``files``, A installs the tuned files of
    ``tuned/``), served by ``python``, 6 requests at C=1,2."""
    a = {"name": "A", "extends": "baseline", "set": {"--itl-ms": "30"}}
    if files:
        a = {"name": "A", "extends": "baseline", "files": {"fp8_gemm": "tuned"}, "set": a["set"]}
    return dict(
        name="orph",
        engine={
            "python": python,
            "args": ["--ttft-ms", "5", "--itl-ms", "40"],
            "ready_timeout_s": 60,
        },
        config=[{"name": "baseline"}, a],
        load={
            "workload": {"input_tokens": 8, "output_tokens": 24},
            "concurrency": [1, 2],
            "requests": 6,
        },
    )


FILE = "N=4096,K=4096,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,block_shape=[128, 128].json"


def _wait_for(*paths: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        assert time.monotonic() < deadline, f"never appeared: {paths}"
        time.sleep(0.1)


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while process_identity(pid) is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_kill_9_mid_config_then_resume(tmp_path: Path) -> None:
    python = isolated_inferlab(tmp_path / "engine")
    (tmp_path / "tuned").mkdir()
    (tmp_path / "tuned" / FILE).write_text('{"1": {"BLOCK_SIZE_M": 64}}\n')
    path = write_campaign(tmp_path / "c.toml", **orph(python))
    out = tmp_path / "out"
    env = {**os.environ, "COLUMNS": "200", "INFERLAB_DB": str(tmp_path / "db")}

    # 1. `inferlab up` killed while its server starts: the server outlives it (up leaves its
    #    servers running by design) and its record says so
    up = subprocess.Popen(
        [sys.executable, "-m", "inferlab.cli.main", "up", str(path), "baseline"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    _wait_for(out / ".running" / "baseline.json")
    os.kill(up.pid, signal.SIGKILL)
    up.wait(timeout=10)
    orphan = int(json.loads((out / ".running" / "baseline.json").read_text())["pid"])
    assert process_identity(orphan) is not None, "the orphan should still run"

    # 2. `inferlab run` killed mid-config: its server gets SIGTERM from the kernel as the runner
    #    dies (it is recorded too), its installed files stay until the next runner
    runner = subprocess.Popen(
        [sys.executable, "-m", "inferlab.cli.main", "run", str(path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    record = out / ".running" / "A.json"
    _wait_for(record, out / ".files" / "A.json", timeout=180)
    pid = int(json.loads(record.read_text())["pid"])
    time.sleep(1.0)  # A is measuring
    os.kill(runner.pid, signal.SIGKILL)
    runner.wait(timeout=10)
    assert _gone(pid), "a killed runner's server goes down with it"
    assert (sim_configs(python) / FILE).is_file()  # its files are still installed
    assert record.is_file()  # and its record is left behind

    done = subprocess.run(
        [sys.executable, "-m", "inferlab.cli.main", "run", str(path), "--resume"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    err = done.stderr.replace("\n", " ")
    assert f"server of config A (pid {pid}" in err and "already gone" in err, err
    assert "pending files of a runner that died" in err
    assert not sim_configs(python).exists() and not list((out / ".running").glob("*.json"))
    with Store(tmp_path / "db") as store:
        runs = [r for r in store.runs(campaign="orph") if not r.interrupted]
    assert {(r.config, r.label) for r in runs} == {
        (c, lb) for c in ("baseline", "A") for lb in ("C=1", "C=2")
    }
    # the first run found the orphan of `up`: stopped, the usual way, before anything else
    assert process_identity(orphan) is None


def test_the_orphan_of_a_killed_up_is_stopped_by_the_next_run(tmp_path: Path) -> None:
    """The same as above, read in the first run's own words (a separate campaign)."""
    path = write_campaign(tmp_path / "c.toml", **orph(sys.executable, files=False))
    out = tmp_path / "out"
    env = {**os.environ, "COLUMNS": "200", "INFERLAB_DB": str(tmp_path / "db")}
    up = subprocess.Popen(
        [sys.executable, "-m", "inferlab.cli.main", "up", str(path), "A"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    _wait_for(out / ".running" / "A.json")
    os.kill(up.pid, signal.SIGKILL)
    up.wait(timeout=10)
    pid = int(json.loads((out / ".running" / "A.json").read_text())["pid"])
    assert process_identity(pid) is not None
    done = subprocess.run(
        [sys.executable, "-m", "inferlab.cli.main", "run", str(path), "--config", "baseline"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    err = done.stderr.replace("\n", " ")
    assert f"server of config A (pid {pid}" in err and "left by a runner that died" in err, err
    assert "stopped by SIGTERM" in err and "port free" in err
    assert process_identity(pid) is None


def test_a_reused_pid_is_left_alone(tmp_path: Path) -> None:
    other = subprocess.Popen(["sleep", "30"])
    try:
        d = tmp_path / ".running"
        d.mkdir()
        ticks, cmd = process_identity(other.pid) or (0, [])
        rec = {"config": "A", "pid": other.pid, "pgid": other.pid, "port": 1, "host": "local"}
        (d / "A.json").write_text(json.dumps({**rec, "start_ticks": ticks + 1, "cmdline": cmd}))
        (d / "B.json").write_text(
            json.dumps(
                {
                    **rec,
                    "config": "B",
                    "start_ticks": ticks,
                    "cmdline": ["python", "-m", "something-else"],
                }
            )
        )
        lines = reap(tmp_path)
        assert len(lines) == 2 and all("is now another process" in ln for ln in lines), lines
        assert other.poll() is None and not list(d.glob("*.json"))
    finally:
        other.kill()
        other.wait()
    (tmp_path / ".running" / "C.json").write_text(
        json.dumps({"config": "C", "pid": other.pid, "start_ticks": 1, "cmdline": []})
    )
    assert reap(tmp_path)[0].endswith("already gone")
