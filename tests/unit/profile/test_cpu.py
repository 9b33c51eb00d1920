"""CPU mode of ``inferlab profile``: a real vLLM (CPU build) trace, checked against sums of its
own events computed here without inferlab, and the MoE trace stripped of its GPU events."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from inferlab.errors import ConfigError
from inferlab.profile import analyze, diff_profiles, read_trace
from support import FIXTURES
from support.cputrace import cpu_facts

FIX = FIXTURES / "traces"
VLLM_CPU = FIX / "vllm_cpu_decode_c1.pt.trace.json.gz"
MOE = FIX / "moe_decode_trace.json.gz"


def test_vllm_cpu_trace_is_analyzed_in_cpu_mode() -> None:
    p = analyze(read_trace(VLLM_CPU), segment="decode").to_dict()
    facts = cpu_facts(VLLM_CPU)  # from the JSON events, without inferlab
    assert p["mode"] == "cpu" and p["share_of"] == "step time" and p["device"] == "CPU"
    # 21 execute_context_0(0)_generation_1(1) ranges: 20 closed iterations (start → next start)
    assert facts["steps"] == 20 and len(p["steps"]) == 20
    assert p["span_us"] == pytest.approx(facts["span_us"], rel=1e-9)
    # categories sum to the step time; ops in no category stay small
    total = sum(r["time_us"] for r in p["categories"])
    assert total == pytest.approx(p["span_us"], rel=0.05)
    other = sum(r["time_us"] for r in p["categories"] if r["name"] == "other")
    assert other < 0.25 * p["span_us"]
    # the GEMM: oneDNN matmuls, leaf ops, summed from the events
    gemm = next(r for r in p["categories"] if r["name"] == "dense_gemm")
    assert gemm["time_us"] == pytest.approx(facts["onednn_mm_us"], rel=1e-6)
    # the largest category: the worker waiting between steps, summed from the events
    largest = p["categories"][0]
    assert largest["name"] == "waiting (between steps)"
    assert largest["time_us"] == pytest.approx(facts["waiting_us"], rel=0.01)
    framework = next(r for r in p["categories"] if r["name"] == "framework (in step, no op)")
    assert framework["time_us"] == pytest.approx(facts["framework_us"], rel=0.01)
    sampling = next(r for r in p["kernel_rows"] if r["name"] == "_C::fused_gumbel_argmax")
    assert sampling["category"] == "sampling" and sampling["count"] == 20
    assert "framework-bound" in p["verdict"] and p["occupancy"] == []
    assert p["mean_step"]["batch"] == 1  # execute_context_0(0)_generation_1(1)


def test_moe_trace_without_its_gpu_events_is_a_cpu_trace(tmp_path: Path) -> None:
    with gzip.open(MOE, "rt") as f:
        d = json.load(f)
    gpu = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "cuda_runtime"}
    d["traceEvents"] = [e for e in d["traceEvents"] if e.get("cat") not in gpu]
    path = tmp_path / "moe-cpu.json"
    path.write_text(json.dumps(d))
    p = analyze(read_trace(path), segment="decode")
    assert p.mode == "cpu" and p.n_steps == 15  # 16 decode_step_<i> ranges, the last open
    assert p.step_source.startswith("annotations matching 'decode|prefill|extend'")
    cats = {r.name: r for r in p.categories}
    assert sum(r.time_us for r in p.categories) == pytest.approx(p.span_us, rel=1e-6)
    assert cats["dense_gemm"].time_us > 0 and "other" not in cats  # every op named
    assert "partly framework-bound" in p.verdict  # eager launches: the host dispatches 575 ops
    with pytest.raises(
        ConfigError, match=r"--steps '\^nothing\$': no annotation .* decode_step_1,"
    ):
        analyze(read_trace(path), segment="decode", steps_pattern="^nothing$")


def test_cpu_and_gpu_profiles_are_not_diffed() -> None:
    cpu = analyze(read_trace(VLLM_CPU))
    gpu = analyze(read_trace(FIX / "cudagraph_decode_trace.json.gz"))
    with pytest.raises(ConfigError, match="not comparable"):
        diff_profiles(gpu, cpu)
