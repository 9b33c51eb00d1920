"""vLLM 0.26 on the H200, from what that run left (tests/fixtures/vllm_gpu/, 2026-12-01): its
launch logs (default and tuned block-FP8 configs, n-gram, the memory lever that failed and its
remedy), its ``--help`` and a profiler trace recorded under load at C=1. The engine knowledge,
the log mining, the applied check and the profile attribution are tested against them (the
scripts that made them: tests/unit/scripts/, tests/unit/benchmarks/test_vllm_peer.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.campaign.context import Installed
from inferlab.campaign.parts.applied import Sources, check_levers, gather
from inferlab.campaign.parts.collect import LocalFiles, wait_complete
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import get_engine
from inferlab.engines.capture import VLLM_CAPTURE
from inferlab.engines.evidence import VLLM_NON_DEFAULT
from inferlab.engines.logs import match_signatures, primary_failure
from inferlab.logs import analyze_log
from inferlab.profile import analyze, read_trace
from inferlab.recon.flags import parse_help
from inferlab.tune.backends import BackendContext, triton_verdict
from support import FIXTURES

GPU = FIXTURES / "vllm_gpu"
ALL_BEFORE_TRITON = (
    "FlashInferFp8DeepGEMMDynamicBlockScaledKernel,DeepGemmFp8BlockScaledMMKernel,"
    "CutlassFp8BlockScaledMMKernel,MarlinFP8ScaledMMLinearKernel"
)
SHAPES = {(3072, 2048), (2048, 2048), (16384, 2048), (2048, 8192)}  # the 1b preset's projections
CONFIGS = "/tmp/site/vllm/model_executor/layers/quantization/utils/configs"


def _cfg(name: str, args: list[str], files: dict[str, str] | None = None) -> ResolvedConfig:
    c = ResolvedConfig(name, "vllm", "/tmp/h200v/m1b-fp8", args, {}, [name])
    c.files.update(files or {})
    return c


def _sources(log: Path) -> Sources:
    """As the campaign gathers them (``applied._read_lines``: progress bars' \\r kept in)."""
    return gather_log(log)


def gather_log(log: Path) -> Sources:
    return gather(get_engine("vllm"), _cfg("x", []), log_path=log, url=None)


def _installed(*shapes: tuple[int, int]) -> Installed:
    names = [
        f"N={n},K={k},device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128].json"
        for n, k in shapes
    ]
    entries = [{"file": f, "sha256": "x", "action": "new", "original": None} for f in names]
    return Installed(
        Path("/nonexistent"), {"dirs": [{"kind": "fp8_gemm", "dir": CONFIGS, "entries": entries}]}
    )


# ------------------------------------------------------------------ log mining


def test_the_baseline_log_names_the_four_untuned_shapes_and_the_kv_capacity() -> None:
    a = analyze_log(GPU / "baseline.log", "vllm")
    assert {(g.n, g.k) for g in a.untuned_gemms} == SHAPES
    assert {g.device for g in a.untuned_gemms} == {"NVIDIA_H200"}
    kv = {m.name: m.values for m in a.timeline}
    assert kv["kv-cache-tokens"]["tokens"] == 4_155_856
    assert kv["kv-cache"]["memory_gib"] == pytest.approx(126.83)


def test_the_tuned_log_reads_a_file_for_every_shape() -> None:
    a = analyze_log(GPU / "A-tuned.log", "vllm")
    assert a.untuned_gemms == []
    assert {(t.shape["n"], t.shape["k"]) for t in a.tuned} == SHAPES
    assert all(t.path.startswith(CONFIGS) for t in a.tuned)


def test_the_memory_lever_raises_kv_capacity_by_what_its_log_says() -> None:
    tokens = {
        name: next(m.values["tokens"] for m in analyze_log(GPU / f"{name}.log", "vllm").timeline
                   if m.name == "kv-cache-tokens")
        for name in ("baseline", "mem-0.95")
    }  # fmt: skip
    assert tokens == {"baseline": 4_155_856, "mem-0.95": 4_293_280}  # +3.3% at 0.95 vs 0.90


def test_gpu_memory_utilization_above_free_memory_is_classified_with_its_remedy() -> None:
    text = (GPU / "mem-0.999.log").read_text()
    fatal = primary_failure(match_signatures(text, get_engine("vllm").log_signatures))
    assert fatal is not None and fatal.kind == "free_memory_below_utilization"
    assert "(139.29/139.8 GiB)" in fatal.text and "0.999" in fatal.text
    assert "--gpu-memory-utilization" in fatal.flags and "free/total" in fatal.remedy
    for ok in ("baseline", "mem-0.95", "ngram", "A-tuned"):  # the logs that served: no fatal line
        lines = (GPU / f"{ok}.log").read_text()
        assert primary_failure(match_signatures(lines, get_engine("vllm").log_signatures)) is None


# ------------------------------------------------------------------ applied check


def test_tuned_files_are_applied_per_shape_from_vllms_own_lines() -> None:
    base = _cfg("baseline", [])
    a = _cfg("A", [], {"fp8_gemm": "tuned/"})
    item = check_levers(base, a, _sources(GPU / "A-tuned.log"), _installed(*SHAPES))[0]
    assert item.item == "files fp8_gemm" and item.status == "applied"
    assert "Using configuration from" in item.evidence
    # the same files claimed against a launch that ran the defaults: not applied, with its line
    item = check_levers(base, a, _sources(GPU / "baseline.log"), _installed(*SHAPES))[0]
    assert item.status == "not-applied"
    assert "Using default W8A8 Block FP8 kernel config" in item.evidence


def test_flags_from_the_026_non_default_args_with_an_enum_repr() -> None:
    line = next(x for x in (GPU / "mem-0.95.log").read_text().splitlines() if "non-default" in x)
    assert "<DynamicShapesType.BACKED: 'backed'>" in line
    args = VLLM_NON_DEFAULT.find(line)
    assert args is not None and args["gpu_memory_utilization"] == 0.95
    assert args["compilation_config"]["dynamic_shapes_config"]["type"] == "backed"
    base = _cfg("baseline", [])
    mem = _cfg("mem-0.95", ["--gpu-memory-utilization", "0.95"])
    item = check_levers(base, mem, _sources(GPU / "mem-0.95.log"), None)[0]
    assert item.item == "--gpu-memory-utilization" and item.status == "applied"


# ------------------------------------------------------------------ --help, backends


def test_the_api_servers_help_lists_the_levers_of_the_campaign() -> None:
    flags = {f.name for f in parse_help((GPU / "api-server-help.txt").read_text())}
    assert len(flags) >= 270
    for f in ("--linear-backend", "--profiler-config", "--gpu-memory-utilization",
              "--speculative-config", "--attention-backend", "--compilation-config"):  # fmt: skip
        assert f in flags


@pytest.mark.parametrize(
    ("argv", "env", "backend"),
    [
        ((), {}, "DeepGEMM"),
        (("--linear-backend", "triton"), {}, "Triton"),
        (("--linear-backend=Triton",), {}, "Triton"),
        ((), {"VLLM_DISABLED_KERNELS": ALL_BEFORE_TRITON}, "Triton"),
        ((), {"VLLM_DISABLED_KERNELS": "DeepGemmFp8BlockScaledMMKernel"}, "DeepGEMM"),
    ],
)
def test_which_block_fp8_kernel_vllm_026_runs(
    argv: tuple[str, ...], env: dict[str, str], backend: str
) -> None:
    v = triton_verdict("vllm", BackendContext(3072, 2048, (9, 0), argv, env))
    assert v.backend == backend and v.uses_triton is (backend == "Triton")
    if backend != "Triton":
        assert v.fix is not None and "--linear-backend triton" in v.fix


# ------------------------------------------------------------------ profiler capture


def test_the_026_capture_sets_max_iterations_at_launch_and_matches_its_file_names() -> None:
    launch = VLLM_CAPTURE.launch("/out", "0.26.0", 20)
    cfg = json.loads(launch.args[launch.args.index("--profiler-config") + 1])
    assert cfg["max_iterations"] == 21 and cfg["torch_profiler_dir"] == "/out"
    assert "max_iterations" not in json.dumps(VLLM_CAPTURE.launch("/out", "0.25.1", 20).args)
    assert VLLM_CAPTURE.launch("/out", "0.12.0", 20).env["VLLM_TORCH_PROFILER_DIR"] == "/out"
    import fnmatch

    pat = VLLM_CAPTURE.rank_pattern("ignored-by-026")
    assert fnmatch.fnmatch("rank0.1796163768748185217.pt.trace.json.gz", pat)  # 0.26's name
    assert fnmatch.fnmatch("cap-C1_dp0_pp0_tp0_dcp0_ep0_rank0.17.pt.trace.json.gz", pat)  # 0.32
    assert not any(fnmatch.fnmatch("profiler_out_0.txt", x) for x in [pat])


def test_a_capture_takes_only_files_that_were_not_there_before(tmp_path: Path) -> None:
    old = tmp_path / "rank0.1.pt.trace.json.gz"
    old.write_bytes((GPU / "baseline-C1-rank0.pt.trace.json.gz").read_bytes())
    new = tmp_path / "rank0.2.pt.trace.json.gz"
    new.write_bytes(old.read_bytes())
    pat = VLLM_CAPTURE.rank_pattern("x")
    got = wait_complete(
        LocalFiles(), str(tmp_path), pat, VLLM_CAPTURE.exclude, 1,
        deadline=lambda: float("inf"), timeout_s=5, max_bytes=2**30, poll_s=0.01,
        ignore=frozenset({str(old)}),
    )  # fmt: skip
    assert [f.name for f in got] == [new.name]


# ------------------------------------------------------------------ profile attribution


def test_decode_steps_come_from_vllms_own_annotations() -> None:
    p = analyze(read_trace(GPU / "baseline-C1-rank0.pt.trace.json.gz"), segment="decode")
    d = p.to_dict()
    assert d["step_source"].startswith("GPU annotations matching 'execute_context_0")
    assert len(d["steps"]) == 21 == d["graph_launches"]  # one CUDA graph replay per decode step
    cats = {c["name"]: c for c in d["categories"]}
    assert cats["fp8_gemm"]["share"] == pytest.approx(0.863, abs=0.002)  # of kernel time
    assert cats["fp8_gemm"]["per_step_us"] == pytest.approx(2490, rel=0.01)  # 64 GEMMs a step
    assert cats["fp8_gemm"]["count"] == 1344 == 21 * 16 * 4
    worst = max(d["occupancy"], key=lambda o: o["share"])
    assert worst["name"] == "_w8a8_triton_block_scaled_mm"
    assert worst["blocks"] == 16 and d["sm_count"] == 132  # 12% of the SMs


def test_the_tuned_fp8_gemm_is_faster_and_the_step_turns_host_bound() -> None:
    """A on the H200 (tuned tiles, 2026-12-02): the same 1,344 GEMMs take 0.76 ms a step instead
    of 2.49 (3.25×), but the GPU is busy 1.15 of 2.77 ms: the step is host-bound now, which is
    why TPOT moved only ×1.30 (benchmarks/RESULTS.md)."""
    base = analyze(read_trace(GPU / "baseline-C1-rank0.pt.trace.json.gz"), segment="decode")
    tuned = analyze(read_trace(GPU / "A-C1-rank0.pt.trace.json.gz"), segment="decode")
    b, a = base.to_dict(), tuned.to_dict()
    gemm_b = next(c for c in b["categories"] if c["name"] == "fp8_gemm")
    gemm_a = next(c for c in a["categories"] if c["name"] == "fp8_gemm")
    assert gemm_a["count"] == gemm_b["count"] == 1344
    assert gemm_a["per_step_us"] == pytest.approx(762, rel=0.01)
    assert gemm_b["per_step_us"] / gemm_a["per_step_us"] == pytest.approx(3.27, abs=0.05)
    assert a["busy_us"] / a["span_us"] < 0.45 < 0.6 < b["busy_us"] / b["span_us"]
    assert "host-bound even with CUDA graphs" in a["verdict"]
    assert "host-bound even" not in b["verdict"]


def test_prefill_segment_and_an_explicit_pattern_still_win() -> None:
    tr = read_trace(GPU / "baseline-C1-rank0.pt.trace.json.gz")
    assert analyze(tr, segment="prefill").to_dict()["step_source"] == "idle gaps"
    got = analyze(tr, segment="decode", steps_pattern=r"generation_1").to_dict()
    assert "'generation_1'" in got["step_source"]
