"""The reference engine's traces (``sim.tracegen``): shares that agree with the preset's own
timing model (the seed's profile at C=1 and C=16; config A bounded by Amdahl)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.profile import analyze, read_trace
from inferlab.profile.bounds import amdahl
from inferlab.sim.kernels import MIXES, check_mix
from inferlab.sim.model import step_ms
from inferlab.sim.presets import PRESETS, Levers, resolve
from inferlab.sim.tracegen import StepRecord, TraceContext, kernel_times, write_trace

DSV4 = PRESETS["dsv4-flash-8gpu"]
A = Levers(tuned_fp8=True, nccl_proto="LL")


def _trace(tmp: Path, levers: Levers, batch: int, steps: int = 6, rank: int = 0) -> Path:
    model = resolve(DSV4, levers)
    ctx = TraceContext(DSV4, MIXES[DSV4.name], model, levers, ranks=8, seed=1, profile_id="1.0")
    span = step_ms(model, batch) * 1000.0
    recs = [StepRecord(1e9 + i * span, batch, 0, 0, False) for i in range(steps)]
    path = tmp / f"{'A' if levers.tuned_fp8 else 'base'}-{batch}-TP-{rank}.trace.json.gz"
    write_trace(path, ctx, recs, rank)
    return path


def _shares(p: object) -> dict[str, float]:
    return {r.name: r.share for r in p.categories}  # type: ignore[attr-defined]


def test_the_seed_profile_at_c1(tmp_path: Path) -> None:
    """The batch-1 profile: one sparse-attention kernel of 64 blocks (1 × 64 heads) ~63%."""
    p = analyze(read_trace(_trace(tmp_path, Levers(), 1)))
    assert p.meta["inferlab"]["simulated"] is True and p.sm_count == 170
    m = p.mean_step()
    assert m is not None and m["span_us"] == pytest.approx(
        step_ms(resolve(DSV4, Levers()), 1) * 1e3
    )
    assert m["batch"] == 1
    top = p.kernel_rows[0]
    assert top.category == "attention" and "nsa_sparse_decode" in top.name
    s = _shares(p)
    span = {r.name: r.time_us / p.span_us for r in p.categories}  # of the step, as levers read
    assert span["attention"] == pytest.approx(0.63, abs=0.01)
    occ = p.occupancy[0]
    assert occ.name == top.name and occ.blocks == 64 and occ.sm_fraction == pytest.approx(64 / 170)
    assert 0.05 <= s["fp8_gemm"] <= 0.07 and 0.015 <= s["communication"] <= 0.025
    assert "GPU-bound" in p.verdict and p.graph_launches == 6


def test_the_seed_profile_at_c16(tmp_path: Path) -> None:
    """Under C=16 load: the MoE slot GEMV ~39% and the attention ~38%, whose grid grew with the
    batch (16 × 64 blocks: no longer under-occupied); FP8 GEMM and NCCL below 1% each."""
    p = analyze(read_trace(_trace(tmp_path, Levers(), 16)))
    m = p.mean_step()
    assert m is not None and m["span_us"] == pytest.approx(
        step_ms(resolve(DSV4, Levers()), 16) * 1e3
    )
    assert m["batch"] == 16
    span = {r.name: r.time_us / p.span_us for r in p.categories}
    assert span["moe"] == pytest.approx(0.39, abs=0.01)
    assert span["attention"] == pytest.approx(0.38, abs=0.01)
    assert p.kernel_rows[0].category == "moe" and "slot_gemv" in p.kernel_rows[0].name
    assert span["fp8_gemm"] < 0.01 and span["communication"] < 0.01
    attn = next(k for k in p.kernel_rows if k.category == "attention")
    assert attn.name not in {o.name for o in p.occupancy}  # 1024 blocks on 170 SMs
    assert "GPU-bound" in p.verdict


@pytest.mark.parametrize("batch", [1, 8, 16])
def test_config_a_gains_no_more_than_its_kernels_allow(tmp_path: Path, batch: int) -> None:
    """Amdahl from the baseline's own trace bounds A's TPOT gain at every load."""
    base = analyze(read_trace(_trace(tmp_path, Levers(), batch)))
    rows = {r.name: r for r in base.categories}
    f = (rows["fp8_gemm"].time_us + rows["communication"].time_us) / base.span_us
    gain = step_ms(resolve(DSV4, Levers()), batch) / step_ms(resolve(DSV4, A), batch)
    assert 1.0 < gain <= amdahl(f, float("inf"))
    a = analyze(read_trace(_trace(tmp_path, A, batch)))
    per = base.n_steps
    saved = sum(rows[c].time_us for c in ("fp8_gemm", "communication")) - sum(
        r.time_us for r in a.categories if r.name in ("fp8_gemm", "communication")
    )
    assert saved / per == pytest.approx((DSV4.tuned_fp8_saving_ms + DSV4.nccl_ll_saving_ms) * 1e3)
    assert any("RING_LL" in k.name for k in a.kernel_rows)
    assert any("RING_SIMPLE" in k.name for k in base.kernel_rows)


def test_kernel_times_sum_to_the_model_and_ranks_share_the_span(tmp_path: Path) -> None:
    for preset in PRESETS.values():
        for lv in (Levers(), A, Levers(speculative_algorithm="EAGLE", speculative_num_steps=1)):
            upd = {"mem_fraction_static": 0.6, "cuda_graph_max_bs": 16}
            model = resolve(preset, lv.model_copy(update=upd))
            ctx = TraceContext(preset, MIXES[preset.name], model, lv, 2, 0, "x")
            for b, pre in ((1, 0), (16, 0), (4, 256), (32, 0)):  # 32: past the graphs, eager
                ks, idle = kernel_times(ctx, b, pre, eager=b > model.cuda_graph_max_bs)
                assert sum(t for _, t in ks) + idle == pytest.approx(step_ms(model, b, pre))
        savings = {"tuned_fp8": preset.tuned_fp8_saving_ms, "nccl_ll": preset.nccl_ll_saving_ms}
        check_mix(MIXES[preset.name], savings, preset.fixed_ms)
    for batch in (1, 16):  # the all-reduce waits out each rank's skew: one span on every rank
        ranks = [analyze(read_trace(_trace(tmp_path, A, batch, 3, rank=r))) for r in range(8)]
        assert {round(p.span_us, 3) for p in ranks} == {round(ranks[0].span_us, 3)}
        comm = [next(c.time_us for c in p.categories if c.name == "communication") for p in ranks]
        assert min(comm) < comm[0] < max(comm) and min(comm) > 0
