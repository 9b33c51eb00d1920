"""The host's floor under kernel levers (``profile.host``, ``levers.host``), on the H200's real
vLLM 0.26 traces (tests/fixtures/vllm_gpu/) and its stored campaign
(benchmarks/results/h200-vllm.db.xz): the baseline's profile alone bounds the FP8 GEMM lever by
the host, and A's measured gain falls inside that band (GPU-only Amdahl said ≤ ×5.09)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

from inferlab.config.search import SearchDim
from inferlab.levers import LeverOptions, decide
from inferlab.levers.amdahl import category_share
from inferlab.levers.evidence import StoredProfile, SweepPoint, at_measured_step
from inferlab.levers.host import kernel_bound
from inferlab.profile import analyze, read_trace
from inferlab.profile.stored import store_profile
from inferlab.search.prune import bound_dims
from inferlab.store import Store
from support import FIXTURES, ROOT

GPU = FIXTURES / "vllm_gpu"
#: the 2026-12-02 run's baseline at C=1, stored in benchmarks/results/h200-vllm.db.xz
BASE = GPU / "baseline-20261202-C1-rank0.pt.trace.json.gz"


def _data(trace: Path) -> dict[str, object]:
    return analyze(read_trace(trace), segment="decode").to_dict()


def test_the_engine_threads_loop_is_read_from_the_traces_cpu_side() -> None:
    base, a = _data(BASE)["host"], _data(GPU / "A-C1-rank0.pt.trace.json.gz")["host"]
    assert isinstance(base, dict) and isinstance(a, dict)
    # baseline: the host's loop 3.02 ms of a 3.08 ms step, never blocked (async scheduling)
    assert base["loop_us"] == pytest.approx(3018, abs=5)
    assert base["range_us"] == pytest.approx(1642, abs=5)
    assert base["wait_us"] < 10 and base["steps"] == 20
    assert base["ahead"] >= 0.9  # the host launched each step while the GPU ran the last
    # A: the same host code, host-bound: the GPU is idle when the next step begins
    assert a["loop_us"] == pytest.approx(3718, abs=5) and a["ahead"] == 0.0


def test_a_profile_stored_without_host_time_keeps_the_gpu_only_bound() -> None:
    d = {**_data(BASE), "host": None}  # a profile stored before host time was read
    s = category_share(d, "fp8_gemm") or 0.0
    assert kernel_bound(d, s, math.inf) == (None, pytest.approx(5.09, abs=0.01))
    steps = _data(BASE)
    assert analyze(read_trace(BASE), segment="all").host is None  # no steps: no loop
    assert steps["host"] is not None


def test_the_fp8_ceiling_is_the_hosts_floor_not_the_gpu_only_amdahl() -> None:
    d = _data(BASE)
    s = category_share(d, "fp8_gemm") or 0.0
    assert 1 / (1 - s) == pytest.approx(5.09, abs=0.01)  # what the GPU-only bound said
    low, high = kernel_bound(d, s, math.inf)
    assert high == pytest.approx(1.875, abs=0.01)  # 3.08 ms / its step range 1.64 ms
    assert low == pytest.approx(1.021, abs=0.01)  # 3.08 ms / its loop 3.02 ms
    assert low <= 1.298 <= high  # A measured ×1.298 [1.241, 1.442] at C=1


def test_the_slowed_profile_of_the_day_before_gives_the_same_band() -> None:
    d = _data(GPU / "baseline-C1-rank0.pt.trace.json.gz")  # 2026-12-01: 4.54 ms profiled steps
    sweep = {1: SweepPoint(1, 3.07, 300.0, ((3.07,),), {}, None)}
    p = at_measured_step(StoredProfile(1, "t", "baseline", 1, 0, d, "2026-12-01"), sweep)
    low, high = kernel_bound(p.data, category_share(p.data, "fp8_gemm") or 0.0, math.inf)
    assert low == pytest.approx(1.0, abs=0.01) and high == pytest.approx(1.84, abs=0.02)


def _unpack(dest: Path) -> Path:
    spec = importlib.util.spec_from_file_location("stores", ROOT / "scripts" / "stores.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out: Path = mod.unpack(ROOT / "benchmarks" / "results" / "h200-vllm.db.xz", dest)
    return out


def test_on_the_stored_h200_campaign_as_measured_falls_inside_the_band(tmp_path: Path) -> None:
    store = Store(_unpack(tmp_path / "h200-vllm.db"))
    store_profile(store, "vllm-h200", BASE, _data(BASE), config="baseline", point="C=1")
    got = decide(store, "vllm-h200", LeverOptions(), stored=[])  # from the profile, not stored
    fp8 = next(lv for lv in got.levers["baseline"] if lv.kind == "fp8-gemm")
    c1 = next(p for p in fp8.points if p.label == "C=1")
    assert c1.high == pytest.approx(1.875, abs=0.01) and c1.low is not None
    assert "the host's floor" in fp8.summary
    row = next(r for r in got.predictions if r.config == "A" and r.label == "C=1")
    assert row.measured.estimate == pytest.approx(1.298, abs=0.001)
    assert row.verdict == "consistent"
    assert row.low is None and row.measured.high <= row.high  # judged as a bound: within it
    assert c1.low <= row.measured.low  # and above the band's pessimistic end
    bound = bound_dims(
        [SearchDim(files="fp8_gemm", values=["tuned/"])], got.levers["baseline"], "C=1", 0.02
    )
    assert bound[0].high == pytest.approx(1.875, abs=0.01)  # the search's bound: the same model


def test_a_busy_gpu_under_a_host_that_fills_the_step_ranks_the_host_lever(tmp_path: Path) -> None:
    store = Store(_unpack(tmp_path / "h200-vllm.db"))
    with store.transaction():  # the baseline's C=1 profile only: GPU-bound, kernels busy 93%
        store.db.execute("DELETE FROM analyses WHERE kind = 'profile'")
    store_profile(store, "vllm-h200", BASE, _data(BASE), config="baseline", point="C=1")
    got = decide(store, "vllm-h200", LeverOptions(config="baseline"), check=False)
    graphs = next(lv for lv in got.levers["baseline"] if lv.kind == "cuda-graphs")
    assert graphs.ceiling == pytest.approx(1.075, abs=0.001)  # T / G: the host off the path
    assert "a faster kernel leaves it host-bound" in graphs.action
    assert "already runs ahead of the GPU (95%" in graphs.action
    assert any(
        e.startswith("host at C=1: the engine thread's loop 3.02 ms") for e in graphs.evidence
    )


#: SGLang 0.5.17's baseline at C=1 on an H100 (2026-12-07, benchmarks/results/h100-sglang/)
SGLANG = FIXTURES / "traces" / "sglang_h100_decode_c1.trace.json.gz"


def test_sglang_step_ranges_nested_in_run_batch_still_give_the_hosts_loop() -> None:
    """SGLang's ``step[DECODE bs=1]`` sits inside ``scheduler.run_batch``: the loop runs from
    one step range to the next (the stored prediction of that run said GPU-only ≤ ×3.677)."""
    d = _data(SGLANG)
    host = d["host"]
    assert isinstance(host, dict)
    assert host["steps"] == 19 and host["ahead"] == 0.0  # no step began while the GPU ran
    assert host["loop_us"] == pytest.approx(3676, abs=5)  # profiled: slower than its 2.83 ms
    assert host["range_us"] == pytest.approx(1125, abs=5)
    # the profiled 2.83 ms steps taken at the measured TPOT, 2.07 ms, as `inferlab levers` does
    sweep = {1: SweepPoint(1, 2.07, 349.6, ((2.07,),), {}, None)}
    p = at_measured_step(StoredProfile(1, "t", "baseline", 1, 0, d, "2026-12-07"), sweep)
    s = category_share(p.data, "fp8_gemm") or 0.0
    assert 1 / (1 - s) == pytest.approx(3.677, abs=0.01)  # what the stored prediction said
    low, high = kernel_bound(p.data, s, math.inf)
    assert high == pytest.approx(2.52, abs=0.02)  # the floor: its step range, 1.12 of 2.83 ms
    assert low is not None and low <= 1.065 <= high  # A measured ×1.065 [1.052, 1.097] at C=1
