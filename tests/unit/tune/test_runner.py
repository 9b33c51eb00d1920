"""The GPU half of ``inferlab tune fp8-gemm`` as far as it runs without a GPU (``tune.runner``):
the planning of the search (anchors/neighbours, work units, device split, merge), the result
records, and the clear error when torch is absent."""

from __future__ import annotations

import importlib.util
import json
import math

import pytest

from inferlab.errors import InferlabError, TuneError
from inferlab.tune.config import DEFAULT_SGLANG, KernelConfig
from inferlab.tune.roofline import Ceilings, gemm_bytes, gemm_flops, roof_pct
from inferlab.tune.runner import (
    CellResult,
    MPlan,
    TuneRun,
    WorkUnit,
    engine_device_name,
    family,
    leaders,
    merge_results,
    neighbour_candidates,
    plan_batch_sizes,
    select_retime,
    split_units,
    tune_shapes,
    unit_cost,
    work_units,
)
from inferlab.tune.space import DEFAULT_BATCH_SIZES, candidates

SHAPES = [(7168, 2048), (4096, 7168), (24576, 1536), (2112, 7168)]
H200 = Ceilings(copy_gbps=4270.0, fp8_tflops=1314.0)


def _cfg(bm: int, bn: int, g: int = 1, w: int = 4, s: int = 3, sk: int = 1) -> KernelConfig:
    return KernelConfig(bm, bn, 128, g, w, s, sk)


def _cell(n: int, k: int, m: int, us: float = 10.0) -> CellResult:
    best = _cfg(16, 64, 1, 4, 4, 4)
    eng = _cfg(16, 64, 1, 8, 5)
    return CellResult(
        n=n,
        k=k,
        m=m,
        default=DEFAULT_SGLANG,
        default_us=3 * us,
        best=best,
        best_us=us / 2,
        best_engine=eng,
        best_engine_us=us,
        samples_us=[us, us * 1.01, us * 0.99],
        tflops=gemm_flops(m, n, k) / (us * 1e6),
        gbps=gemm_bytes(m, n, k) / (us * 1e3),
        roof_pct=roof_pct(m, n, k, us, H200),
        rel_err=1.2e-3,
        candidates=120,
        screened=118,
        best_samples_us=[us / 2] * 3,
        best_roof_pct=roof_pct(m, n, k, us / 2, H200),
    )


# ------------------------------------------------------------------ torch absent


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed")
def test_tune_without_torch_raises_clear_error() -> None:
    with pytest.raises(TuneError, match="PyTorch") as ei:
        tune_shapes([(4096, 7168)], [1, 16])
    assert isinstance(ei.value, InferlabError)
    assert "import torch failed" in str(ei.value)


def test_gpu_modules_stay_lazy() -> None:
    """Importing the runner must not import torch or triton (CPU CI has neither)."""
    import subprocess
    import sys

    code = (
        "import sys, inferlab.tune.runner, inferlab.tune.timing, inferlab.tune.roofline;"
        "print(sorted(m for m in ('torch', 'triton') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------ anchors and neighbours


def test_plan_alternates_anchor_and_neighbour() -> None:
    plan = plan_batch_sizes(DEFAULT_BATCH_SIZES)
    assert [p.m for p in plan] == sorted(DEFAULT_BATCH_SIZES)
    by_m = {p.m: p.sources for p in plan}
    # neighbours only where the anchors on both sides are within 2x of each other
    assert {m: s for m, s in by_m.items() if s} == {
        24: (16, 32),
        48: (32, 64),
        96: (64, 128),
        2048: (1536, 3072),
    }
    anchors = [p.m for p in plan if not p.sources]
    assert anchors == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 1536, 3072, 4096]
    # with a looser ratio every odd position borrows
    loose = plan_batch_sizes(DEFAULT_BATCH_SIZES, max_ratio=4.0)
    assert [p.m for p in loose if p.sources] == [2, 8, 24, 48, 96, 256, 1024, 2048]
    assert {p.m: p.sources for p in loose}[256] == (128, 512)


def test_plan_dedups_sorts_and_keeps_last_anchor() -> None:
    plan = plan_batch_sizes([64, 1, 48, 48, 32, 2])
    assert plan == [MPlan(1), MPlan(2), MPlan(32), MPlan(48, (32, 64)), MPlan(64)]
    assert plan_batch_sizes([7]) == [MPlan(7)]
    assert plan_batch_sizes([1, 4, 16]) == [MPlan(1), MPlan(4), MPlan(16)]
    with pytest.raises(TuneError, match="≥ 1"):
        plan_batch_sizes([0, 4])


def test_neighbour_candidates_keep_families_of_leaders_with_every_group() -> None:
    m, n, k = 256, 4096, 7168
    cands = candidates(m, n, k, split_k=True)
    lead = _cfg(64, 128, 16, 4, 3)
    lead_split = _cfg(16, 64, 1, 4, 4, 4)
    near = neighbour_candidates(cands, [[lead], [lead_split]])
    assert near, "leaders' families must exist at the neighbour"
    assert {family(c) for c in near} <= {family(lead), family(lead_split)}
    # all GROUP_SIZE_M variants of the family that the space keeps at this M are inherited
    same = [c for c in cands if family(c) == family(lead)]
    assert [c for c in near if family(c) == family(lead)] == same
    assert len(near) < len(cands) / 10


def test_leaders_and_retime_selection() -> None:
    scr = [
        (_cfg(16, 64, w=8, s=5), 9.0),
        (_cfg(16, 64, s=4, sk=4), 5.0),
        (_cfg(32, 64), 12.0),
        (_cfg(16, 32, s=5, sk=8), 6.0),
        (_cfg(64, 128), math.inf),  # failed to run: never selected
        (_cfg(16, 128), 10.0),
    ]
    sel = select_retime(scr, DEFAULT_SGLANG, n_engine=2, n_split=1)
    assert sel == [_cfg(16, 64, w=8, s=5), _cfg(16, 128), _cfg(16, 64, s=4, sk=4), DEFAULT_SGLANG]
    lead = leaders(scr, n_engine=10, n_split=10)
    assert _cfg(64, 128) not in lead
    assert lead[:3] == [_cfg(16, 64, w=8, s=5), _cfg(16, 128), _cfg(32, 64)]
    # the default is not duplicated when it is already among the fastest
    sel2 = select_retime([(DEFAULT_SGLANG, 1.0)], DEFAULT_SGLANG)
    assert sel2 == [DEFAULT_SGLANG]


# ------------------------------------------------------------------ several devices


def _cells_of(units: list[WorkUnit]) -> list[tuple[int, int, int]]:
    return [(u.n, u.k, p.m) for u in units for p in u.plan]


@pytest.mark.parametrize("devices", [1, 2, 3, 4, 8, 16])
def test_work_split_covers_every_cell_exactly_once(devices: int) -> None:
    units = work_units(SHAPES, DEFAULT_BATCH_SIZES, devices)
    bins = split_units(units, devices)
    assert len(bins) == devices
    cells = [c for b in bins for c in _cells_of(b)]
    want = [(n, k, m) for n, k in SHAPES for m in DEFAULT_BATCH_SIZES]
    assert sorted(cells) == sorted(want)
    assert len(cells) == len(set(cells))
    if devices <= len(SHAPES) * 2:
        assert all(b for b in bins), "every device gets work"


def test_chunked_units_have_self_contained_anchors() -> None:
    units = work_units([(4096, 7168)], DEFAULT_BATCH_SIZES, 4)
    assert len(units) == 4
    for u in units:
        anchors = {p.m for p in u.plan if not p.sources}
        assert anchors, "each run screens at least one M fully"
        for p in u.plan:
            assert set(p.sources) <= anchors, f"{p} borrows from outside its unit"


def test_split_balances_cost() -> None:
    units = work_units(SHAPES, DEFAULT_BATCH_SIZES, 2)
    bins = split_units(units, 2)
    loads = sorted(sum(unit_cost(u) for u in b) for b in bins)
    total = sum(loads)
    assert loads[1] - loads[0] <= max(unit_cost(u) for u in units)
    assert math.isclose(total, sum(unit_cost(u) for u in units))
    with pytest.raises(TuneError):
        split_units(units, 0)


def test_merge_orders_by_shape_then_m_and_refuses_losses() -> None:
    shapes = [(4096, 7168), (2112, 7168)]
    ms = [1, 16, 64]
    dev0 = [_cell(2112, 7168, 64), _cell(4096, 7168, 1)]
    dev1 = [_cell(4096, 7168, 64), _cell(2112, 7168, 1), _cell(4096, 7168, 16)]
    dev2 = [_cell(2112, 7168, 16)]
    merged = merge_results([dev0, dev1, dev2], shapes, ms)
    assert [(r.n, r.m) for r in merged] == [
        (4096, 1),
        (4096, 16),
        (4096, 64),
        (2112, 1),
        (2112, 16),
        (2112, 64),
    ]
    with pytest.raises(TuneError, match=r"missing N=2112,K=7168,M=16"):
        merge_results([dev0, dev1], shapes, ms)
    with pytest.raises(TuneError, match=r"duplicated N=4096,K=7168,M=1"):
        merge_results([dev0, dev1, dev2, [_cell(4096, 7168, 1)]], shapes, ms)
    with pytest.raises(TuneError, match=r"unrequested N=4096,K=7168,M=8"):
        merge_results([dev0, dev1, dev2, [_cell(4096, 7168, 8)]], shapes, ms)


# ------------------------------------------------------------------ records


def test_records_round_trip_through_json() -> None:
    cells = [_cell(4096, 7168, 1), _cell(4096, 7168, 16, us=23.0)]
    run = TuneRun(
        device_name=engine_device_name("NVIDIA H200"),
        devices=1,
        ceilings=H200.to_json(),
        results=cells,
        wall_s=123.4,
        compile_s=20.5,
        binaries=160,
    )
    assert run.device_name == "NVIDIA_H200"
    data = json.loads(json.dumps(run.to_json()))
    assert data["results"][0]["best"]["key"] == "BM16_BN64_G1_w4_s4_k4"
    assert data["results"][0]["best_engine"]["BLOCK_SIZE_N"] == 64
    back = TuneRun.from_json(data)
    assert back == run
    assert back.results[1].speedup == pytest.approx(3.0)
    with pytest.raises(TuneError, match="version"):
        TuneRun.from_json({**data, "version": 99})
