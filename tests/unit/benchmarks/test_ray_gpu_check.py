"""The 2×H200 checks of issue 20 (``benchmarks/ray_gpu_check.py``) on a store written by the
real stop/launch recorders and a sampler CSV in nvidia-smi's own ``--format=csv,noheader``
spelling (two H200s, real UUID and MiB formats)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from support import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import ray_gpu_check as rgc
from inferlab.campaign.parts.aftermath import record_stop
from inferlab.server import StopReport
from inferlab.server.gpumem import GpuDrain
from inferlab.store import Store

UUID = ["GPU-5c1d2e3f-0a1b-2c3d-4e5f-60718293a4b5", "GPU-9e8d7c6b-5a49-3827-1605-f4e3d2c1b0a9"]


def _store(path: Path, drain_gpu: dict[str, int]) -> None:
    """Two configs, cb on GPU 0 and cb-bf16 on GPU 1 (Ray's ids), launched, then 2 s later
    stopped, as ConfigRun records them; each stop's drain figures are of ``drain_gpu[name]``."""
    rep = StopReport("SIGTERM", 0, 2.1, True, "drained")
    with Store(path) as store:
        gids = {}
        for i, name in enumerate(("cb", "cb-bf16")):
            with store.transaction():
                cid = store.campaign_id("h200x2-ray")
                gid = store.config_id(cid, name, engine="transformers", model="m", argv=[], env={})
                detail = {"ready_s": 2.0, "server_pid": 4100 + i, "cuda_visible_devices": str(i)}
                store.add_verification(gid, "launch", True, {**detail, "ray_gpu_ids": [str(i)]})
            gids[name] = gid
        time.sleep(2.0)
        for name, gid in gids.items():
            g = drain_gpu[name]
            drain = GpuDrain([0], [6_000], [120_000], [300], True, 1.5, 256, gpu_indices=[g])
            record_stop(store, gid, rep, drain)


def _csv(path: Path, lives: list[rgc.Life], shared_pid: bool = False) -> Path:
    """What the script's sampler writes: each server's process on its own GPU (the one Ray gave
    it) from its start to its drain 1.5 s before the stop record; memory 0 MiB before, 120,000
    MiB during, 300 MiB after, in nvidia-smi's spelling."""
    t0 = min(x.launched - x.ready_s for x in lives) - 5
    t1 = max(x.stopped for x in lives) + 5
    rows = ["t,kind,a,b,c"]
    t = t0
    while t < t1:
        for x in lives:
            gpu = int(str(x.cuda_visible))
            live = x.launched - x.ready_s <= t <= x.stopped - 1.5
            mib = 120_000 if live else (0 if t < x.launched else 300)
            if live:
                pid = 77001 if shared_pid else 77001 + gpu
                rows.append(f"{t:.3f},app,{pid}, {UUID[gpu]}, {mib - 500} MiB")
            rows.append(f"{t:.3f},gpu,{gpu}, {UUID[gpu]}, {mib} MiB")
        t += 0.5
    rows.append(f"{t1:.3f},gpu,No devices were found")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_two_servers_each_on_its_gpu_and_drains_read_there(tmp_path: Path) -> None:
    _store(tmp_path / "s.db", {"cb": 0, "cb-bf16": 1})
    got = rgc.load_lives(tmp_path / "s.db", "h200x2-ray")
    smi = rgc.read_smi(_csv(tmp_path / "smi.csv", got))
    assert smi.skipped == 1 and smi.uuid_index() == {UUID[0]: 0, UUID[1]: 1}
    assert smi.apps[0][1:] == (77001, UUID[0], 119_500)
    assert [(x.name, x.gpu, x.server_pid) for x in got] == [("cb", 0, 4100), ("cb-bf16", 1, 4101)]
    side = rgc.side_by_side(got, smi)
    assert side.passed, side.lines
    assert any("at most 1 process(es) on one device" in line for line in side.lines)
    drain = rgc.drain_device(got, smi)
    assert drain.passed, drain.lines
    assert "sampler GPU 1: 300 MiB" in drain.lines[1] and "GPU 0: 300 MiB" in drain.lines[1]
    assert rgc.wall_ratio(120.0, 230.0).passed and not rgc.wall_ratio(240.0, 230.0).passed


def test_a_drain_read_on_the_wrong_gpu_fails(tmp_path: Path) -> None:
    _store(tmp_path / "s.db", {"cb": 0, "cb-bf16": 0})  # cb-bf16 ran on 1, read 0
    got = rgc.load_lives(tmp_path / "s.db", "h200x2-ray")
    smi = rgc.read_smi(_csv(tmp_path / "smi.csv", got))
    drain = rgc.drain_device(got, smi)
    assert drain.passed is False and drain.lines[1].endswith("✗")
    assert "cb-bf16: stop record reads GPU [0]" in drain.lines[1]
    assert rgc.side_by_side(got, smi).passed  # placement itself was right


def test_two_servers_on_one_gpu_fail(tmp_path: Path) -> None:
    _store(tmp_path / "s.db", {"cb": 0, "cb-bf16": 1})
    got = rgc.load_lives(tmp_path / "s.db", "h200x2-ray")
    got[1].gpu = 0
    assert rgc.side_by_side(got, None).passed is False


def test_one_process_on_two_devices_fails(tmp_path: Path) -> None:
    _store(tmp_path / "s.db", {"cb": 0, "cb-bf16": 1})
    got = rgc.load_lives(tmp_path / "s.db", "h200x2-ray")
    side = rgc.side_by_side(got, rgc.read_smi(_csv(tmp_path / "smi.csv", got, shared_pid=True)))
    assert side.passed is False and "pids on two devices: [77001]" in side.lines


def test_without_sampler_only_the_store_is_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _store(tmp_path / "s.db", {"cb": 0, "cb-bf16": 1})
    rc = rgc.main(["--db", str(tmp_path / "s.db"), "--ray-campaign", "h200x2-ray"])
    out = capsys.readouterr().out
    assert rc == 0 and "**side by side**: PASS" in out and "no sampler rows" in out
    assert "**wall time**: not checked" in out
