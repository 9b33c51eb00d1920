"""The evidence a lever is judged on (``levers.evidence``): a profile the profiler slowed is
taken at the measured TPOT (the H200's vLLM trace, tests/fixtures/vllm_gpu/); a SIMULATED one
never moves."""

from __future__ import annotations

import pytest

from inferlab.levers.amdahl import category_share
from inferlab.levers.evidence import StoredProfile, SweepPoint, at_measured_step
from inferlab.profile import analyze, read_trace
from support import FIXTURES

GPU = FIXTURES / "vllm_gpu"


def _stored(data: dict[str, object]) -> StoredProfile:
    return StoredProfile(1, "t", "baseline", 1, 0, data, "2026-12-01")


def _sweep(tpot_ms: float) -> dict[int, SweepPoint]:
    return {1: SweepPoint(1, tpot_ms, 300.0, ((tpot_ms,),), {}, None)}


def test_a_profile_the_profiler_slowed_is_taken_at_the_measured_tpot() -> None:
    d = analyze(read_trace(GPU / "baseline-C1-rank0.pt.trace.json.gz"), segment="decode").to_dict()
    p = at_measured_step(_stored(d), _sweep(3.07))  # the H200's measured TPOT at C=1
    assert p.data["profiled_span_us"] == d["span_us"]
    assert p.data["span_us"] == pytest.approx(21 * 3070)
    assert category_share(p.data, "fp8_gemm") == pytest.approx(0.81, abs=0.01)
    assert category_share(d, "fp8_gemm") == pytest.approx(0.55, abs=0.01)  # of the profiled step
    assert at_measured_step(_stored(d), _sweep(4.3)).data is d  # within 10%: as profiled
    sim = {**d, "capture": {"simulated": True}}
    assert at_measured_step(_stored(sim), _sweep(3.07)).data is sim  # SIMULATED: never moved
