"""Typed read-back of stored JSON (issue 27): each model takes what its writers store, key
for key, and gives the stored JSON back unchanged."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from inferlab.store import Store
from inferlab.store.models import LaunchRecord, LeverCheckItem

#: a launch record as each writer stores it
LAUNCHES: dict[str, dict[str, Any]] = {
    "ready (campaign.steps)": {"ready_s": 12.5, "log_path": "/l/a.log", "argv": ["vllm", "serve"],
                               "gpu_used_mib": [812, 0], "profiling": "torch profiler on"},
    "failed (campaign.steps)": {"kind": "oom", "message": "CUDA out of memory", "remedy": "lower",
                                "tail": ["x", "y"], "log_path": ""},
    "died while profiled (campaign.profiled)": {"pass": "profiled", "point": "C=8",
                                                "kind": "exited", "message": "m", "remedy": "r",
                                                "tail": [], "log_path": "/l/b.log"},
    "ready (cluster.task)": {"ready_s": 3, "log_path": "/l/c.log", "argv": ["sglang"],
                             "node_id": "abcdef0123", "hostname": "h1", "ip": "10.0.0.1",
                             "actor_pid": 42, "cuda_visible_devices": "0,1",
                             "ray_gpu_ids": ["0", "1"], "gpu_used_mib": None, "server_pid": 43,
                             "server_cuda_visible_devices": None},
    "failed (cluster.task)": {"kind": "exited", "message": "m", "remedy": None, "tail": [],
                              "log_path": "", "node_id": "abcdef0123", "hostname": "h1",
                              "ip": "10.0.0.1", "actor_pid": 42, "cuda_visible_devices": None,
                              "ray_gpu_ids": []},
}  # fmt: skip


@pytest.mark.parametrize("detail", LAUNCHES.values(), ids=list(LAUNCHES))
def test_a_launch_record_reads_back_as_written(detail: dict[str, Any]) -> None:
    rec = LaunchRecord.model_validate(detail)
    assert rec.model_dump(by_alias=True, exclude_unset=True) == detail


def test_a_key_no_writer_stores_fails_the_read() -> None:
    with pytest.raises(ValidationError):
        LaunchRecord.model_validate({"log_path": "x", "surprise": 1})


def test_launches_leave_the_stored_json_unchanged(tmp_path: Path) -> None:
    with Store(tmp_path / "x.db") as store:
        with store.transaction():
            gid = store.config_id(store.campaign_id("c"), "base", engine="vllm", model="m")
            for d in LAUNCHES.values():
                store.add_verification(gid, "launch", "ready_s" in d, d)
        got = store.launches("c", config="base")
        stored = [r[0] for r in store.db.execute("SELECT detail_json FROM verifications")]
    assert [g.passed for g in got] == [True, False, False, True, False]
    assert got[3].record.node_id == "abcdef0123" and got[0].record.gpu_used_mib == [812, 0]
    assert stored == [
        json.dumps(d, sort_keys=True, separators=(",", ":")) for d in LAUNCHES.values()
    ]


def test_a_lever_check_reads_back_as_its_writer_stored_it(tmp_path: Path) -> None:
    from inferlab.campaign.context import LeverItem
    from inferlab.campaign.parts.applied import record_levers

    items = [
        LeverItem("--tp", "flag", "applied", "line 3: tp=2", "launch log"),
        LeverItem("env NCCL_PROTO", "env", "unknown", "no log line names it", None),
    ]
    with Store(tmp_path / "x.db") as store:
        with store.transaction():
            gid = store.config_id(store.campaign_id("c"), "cand", engine="vllm", model="m")
        record_levers(store, gid, items)
        (got,) = store.lever_checks("c")
        stored = json.loads(store.db.execute("SELECT detail_json FROM verifications").fetchone()[0])
    assert got.config == "cand" and got.passed
    assert [i.status for i in got.check.items] == ["applied", "unknown"]
    assert got.check.model_dump() == stored == {"items": [i.to_json() for i in items]}
    with pytest.raises(ValidationError):
        LeverCheckItem.model_validate({**items[0].to_json(), "surprise": 1})


def test_a_prediction_reads_back_as_levers_stored_it(tmp_path: Path) -> None:
    from inferlab.levers.model import Lever, PointBound

    lv = Lever(
        "fp8-gemm", "FP8 GEMM", "base", "amdahl",
        [PointBound("C=1", 1, 1.25, share=0.2), PointBound("C=16", 16, math.inf, None, 1.0)],
        "≤ ×1.25", evidence=["profile p"], name="",
    )  # fmt: skip
    data = {**lv.to_dict(), "made_at": "2026-01-01T00:00:00+0000", "version": 1}
    with Store(tmp_path / "x.db") as store:
        with store.transaction():
            store.add_prediction(data, campaign="c")
        (got,) = store.predictions("c")
        (raw,) = store.db.execute("SELECT name, data_json FROM analyses").fetchall()
    assert raw == ("fp8-gemm:base", json.dumps(data, sort_keys=True, separators=(",", ":")))
    assert got.key == "fp8-gemm:base" and got.points[1].high is None  # an unbounded ceiling
    assert got.model_dump(exclude_unset=True) == data


def test_every_capture_block_of_the_demo_store_reads_back_as_written(tmp_path: Path) -> None:
    demo = Path(__file__).parents[2] / "fixtures" / "golden" / "stores" / "demo-sim.db"
    shutil.copy(demo, tmp_path / "demo.db")  # the store opens read-write: a copy
    with Store(tmp_path / "demo.db") as store:
        campaigns = store.campaign_names()
        profiles = [p for c in campaigns for p in store.profiles(c)]
    assert profiles and all(p.capture is not None for p in profiles)
    for p in profiles:
        assert p.capture is not None
        assert p.capture.model_dump(exclude_unset=True) == p.data["capture"]
