"""Typed read-back of stored JSON (issue 27): each model takes what its writers store, key
for key, and gives the stored JSON back unchanged."""

from __future__ import annotations

import json
import lzma
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from inferlab.errors import StoreError
from inferlab.store import Store
from inferlab.store.bodies import ANALYSES, VERIFICATIONS
from inferlab.store.checks import LaunchRecord, LeverCheckItem

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
        got = store.verifications.launches("c", config="base")
        stored = [r[0] for r in store.db.execute("SELECT detail_json FROM verifications")]
    assert [g.passed for g in got] == [True, False, False, True, False]
    assert got[3].detail.node_id == "abcdef0123" and got[0].detail.gpu_used_mib == [812, 0]
    assert stored == [
        json.dumps(d, sort_keys=True, separators=(",", ":")) for d in LAUNCHES.values()
    ]


def test_a_logprob_reference_keeps_every_token_exactly(tmp_path: Path) -> None:
    """Its keys are tokens, not field names: at top-1024 SmolLM2's vocabulary has "Password",
    "token" and "key", which the secret scrubber would take for a secret's field and redact
    (make demo, 2026-12-07: the stored reference then failed its own model on read)."""
    positions = [[{"Password": -9.5, " token": -3.25, "key": -0.5, "sk-abc": -1.0}]]
    ref = {"prompts": ["p"], "continuations": ["c"], "positions": positions, "top_k": 1024,
           "tokens": 1, "seed": 0}  # fmt: skip
    with Store(tmp_path / "x.db") as store:
        with store.transaction():
            gid = store.config_id(store.campaign_id("c"), "base", engine="vllm", model="m")
            store.add_verification(gid, "logprob-reference", True, ref)
        got = store.latest_verification("c", "base", "logprob-reference")
    assert got is not None and got.to_json() == ref


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
        (got,) = store.verifications.lever_checks("c")
        stored = json.loads(store.db.execute("SELECT detail_json FROM verifications").fetchone()[0])
    assert got.config == "cand" and got.passed
    assert [i.status for i in got.detail.items] == ["applied", "unknown"]
    assert got.detail.model_dump() == stored == {"items": [i.to_json() for i in items]}
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
            store.analyses.add_prediction(data, campaign="c")
        (got,) = store.analyses.predictions("c")
        (raw,) = store.db.execute("SELECT name, data_json FROM analyses").fetchall()
    assert raw == ("fp8-gemm:base", json.dumps(data, sort_keys=True, separators=(",", ":")))
    assert got.key == "fp8-gemm:base" and got.points[1].high is None  # an unbounded ceiling
    assert got.model_dump(exclude_unset=True) == data


def _committed_stores(tmp_path: Path) -> list[Path]:
    """Copies of every committed store (they open read-write): the golden demo store and the
    H200 runs' stores, the xz-compressed one unpacked."""
    root = Path(__file__).parents[3]
    out = []
    for src in [root / "tests/fixtures/golden/stores/demo-sim.db.xz",
                *sorted((root / "benchmarks/results").rglob("*.db")),
                *sorted((root / "benchmarks/results").rglob("*.db.xz"))]:  # fmt: skip
        dst = tmp_path / src.name.removesuffix(".xz")
        if src.suffix == ".xz":
            dst.write_bytes(lzma.decompress(src.read_bytes()))
        else:
            shutil.copy(src, dst)
        out.append(dst)
    return out


def test_every_body_of_the_committed_stores_reads_back_as_written(tmp_path: Path) -> None:
    kinds: set[tuple[str, str]] = set()
    for path in _committed_stores(tmp_path):
        with Store(path) as store:
            for table, col, registry in (("analyses", "data_json", ANALYSES),
                                         ("verifications", "detail_json", VERIFICATIONS)):  # fmt: skip
                for row_id, kind, text in store.db.execute(f"SELECT id, kind, {col} FROM {table}"):
                    body = registry.read(kind, json.loads(text), f"{path.name} {row_id}")
                    assert body.to_json() == json.loads(text), (path.name, table, row_id)
                    kinds.add((table, kind))
            for c in store.configs.names():  # the typed readers take them too
                assert all(p.data.capture is not None for p in store.analyses.profiles(c))
                store.verifications(c)
    assert ("analyses", "profile") in kinds and ("verifications", "agreement") in kinds
    assert len(kinds) == 16  # of the 25 registered: the committed stores hold 16 (launch_spread:
    # SGLang on the H100, 2026-12-07, part 2)


def test_a_body_its_model_does_not_take_is_refused_on_write_naming_the_key(
    tmp_path: Path,
) -> None:
    with Store(tmp_path / "x.db") as store:
        gid = store.config_id(store.campaign_id("c"), "base", engine="vllm", model="m")
        with pytest.raises(StoreError, match=r"'stop' does not match StopRecord at signal"):
            store.add_verification(gid, "stop", True, {"seconds": 1.0})
        with pytest.raises(StoreError, match=r"no model for kind 'surprise'"):
            store.add_analysis("surprise", "x", {}, campaign="c")
        assert store.db.execute("SELECT count(*) FROM verifications").fetchone() == (0,)


def test_an_old_store_whose_body_no_model_takes_says_which_row(tmp_path: Path) -> None:
    with Store(tmp_path / "x.db") as store:
        gid = store.config_id(store.campaign_id("c"), "base", engine="vllm", model="m")
        store.db.execute(
            "INSERT INTO verifications(config_id, kind, passed, detail_json, created_at) "
            "VALUES (?, 'launch', 1, '{\"ready_s\": \"soon\"}', 'now')",
            (gid,),
        )
        with pytest.raises(StoreError, match=r"x.db: verification 1: stored verifications "
                                             r"'launch' does not match LaunchRecord at ready_s"):  # fmt: skip
            store.verifications("c")


def _kinds_written(method: str, at: int) -> set[str]:
    """The kind literals src/ passes to ``store.METHOD`` (argument ``at``)."""
    import ast

    src = Path(__file__).parents[3] / "src" / "inferlab"
    out = set()
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == method
                and len(node.args) > at
                and isinstance(node.args[at], ast.Constant)
                and isinstance(node.args[at].value, str)
            ):
                out.add(node.args[at].value)
    return out


def test_every_kind_a_writer_stores_has_a_model() -> None:
    from inferlab.campaign.parts.capacity import CAPACITY_KIND
    from inferlab.campaign.parts.evalstep import SAMPLES_KIND
    from inferlab.config.search import SEARCH_KIND, TRIAL_KIND
    from inferlab.search.confirm import CONFIRM_KIND
    from inferlab.store.checks import CHECK_KINDS
    from inferlab.store.spreads import KIND as SPREAD_KIND

    analyses = _kinds_written("add_analysis", 0) | {CAPACITY_KIND, SEARCH_KIND, TRIAL_KIND,
                                                    CONFIRM_KIND, SPREAD_KIND}  # fmt: skip
    verifications = _kinds_written("add_verification", 1) | {SAMPLES_KIND, *CHECK_KINDS}
    assert {"recon", "profile", "files", "tune", "launches"} <= analyses
    assert {"launch", "stop", "runtime", "lever", "greedy-outputs"} <= verifications
    assert analyses - set(ANALYSES.models) == set()
    assert verifications - set(VERIFICATIONS.models) == set()
