"""CPU mode of ``inferlab profile``: a real vLLM (CPU build) trace, checked against sums of its
own events computed here without inferlab, and the MoE trace stripped of its GPU events."""

from __future__ import annotations

import gzip
import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inferlab.errors import ConfigError
from inferlab.profile import analyze, diff_profiles, read_trace

FIX = Path(__file__).parent / "fixtures" / "traces"
VLLM_CPU = FIX / "vllm_cpu_decode_c1.pt.trace.json.gz"
MOE = FIX / "moe_decode_trace.json.gz"


def _events(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def _top_level(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ops not inside another op of the same thread (ops sorted by start, longest first)."""
    out: list[dict[str, Any]] = []
    end = -1.0
    for e in ops:
        if e["ts"] >= end:
            out.append(e)
            end = e["ts"] + e["dur"]
    return out


def test_vllm_cpu_trace_is_analyzed_in_cpu_mode() -> None:
    p = analyze(read_trace(VLLM_CPU), segment="decode").to_dict()
    ev = _events(VLLM_CPU)
    ann = sorted((e for e in ev if e.get("cat") == "user_annotation"), key=lambda e: e["ts"])
    ops = sorted(
        (e for e in ev if e.get("cat") == "cpu_op" and e["tid"] == ann[0]["tid"]),
        key=lambda e: (e["ts"], -e["dur"]),
    )
    assert p["mode"] == "cpu" and p["share_of"] == "step time" and p["device"] == "CPU"
    # 21 execute_context_0(0)_generation_1(1) ranges: 20 closed iterations (start → next start)
    assert len(ann) == 21 and len(p["steps"]) == 20
    spans = [b["ts"] - a["ts"] for a, b in itertools.pairwise(ann)]
    assert p["span_us"] == pytest.approx(sum(spans), rel=1e-9)
    # categories sum to the step time; ops in no category stay small
    total = sum(r["time_us"] for r in p["categories"])
    assert total == pytest.approx(p["span_us"], rel=0.05)
    other = sum(r["time_us"] for r in p["categories"] if r["name"] == "other")
    assert other < 0.25 * p["span_us"]
    # the GEMM: oneDNN matmuls, leaf ops; their summed durations, counted here
    lo, hi = ann[0]["ts"], ann[-1]["ts"]
    mm = sum(e["dur"] for e in ops if e["name"] == "_C::onednn_mm" and lo <= e["ts"] < hi)
    gemm = next(r for r in p["categories"] if r["name"] == "dense_gemm")
    assert gemm["time_us"] == pytest.approx(mm, rel=1e-6)
    # the largest category: the worker waiting between steps = the iterations minus the step
    # ranges minus the top-level ops after them, computed from the events
    top = _top_level([e for e in ops if lo <= e["ts"] < hi])
    in_range = sum(
        min(e["ts"] + e["dur"], a["ts"] + a["dur"]) - e["ts"]
        for a in ann[:-1]
        for e in top
        if a["ts"] <= e["ts"] < a["ts"] + a["dur"]
    )
    ranges = sum(a["dur"] for a in ann[:-1])
    waiting = sum(spans) - ranges - (sum(e["dur"] for e in top) - in_range)
    largest = p["categories"][0]
    assert largest["name"] == "waiting (between steps)"
    assert largest["time_us"] == pytest.approx(waiting, rel=0.01)
    sampling = next(r for r in p["kernel_rows"] if r["name"] == "_C::fused_gumbel_argmax")
    assert sampling["category"] == "sampling" and sampling["count"] == 20
    assert "framework-bound" in p["verdict"] and p["occupancy"] == []


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


def test_cli_json_in_cpu_mode() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "inferlab.cli.main", "profile", str(VLLM_CPU), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["mode"] == "cpu" and d["mean_step"]["span_us"] > 0
    text = subprocess.run(
        [sys.executable, "-m", "inferlab.cli.main", "profile", str(VLLM_CPU), "--top", "3"],
        capture_output=True,
        text=True,
        check=False,
        env={"COLUMNS": "160", "PATH": "/usr/bin:/bin"},
    ).stdout
    assert "CPU mode: no GPU activity" in text and "CPU ops (self time)" in text
