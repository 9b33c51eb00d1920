"""Log mining on real engine logs (tests/fixtures/engine_logs, tests/fixtures/vllm_cpu).

Values are the ones printed in the fixture lines (checked by hand). Lines marked "constructed"
are written from the engines' own message formats where no real log has that message."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferlab.errors import LogError
from inferlab.logs import (
    UntunedGemm,
    UntunedMoe,
    analyze_log,
    untuned_fp8_gemms,
    untuned_moe,
)
from support import FIXTURES
from support.fuzzing import (
    byte_mutation,
    fuzz,
    parses_or_names_file,
    write,
)

FIX = FIXTURES / "engine_logs"
CPU = FIXTURES / "vllm_cpu"
SGL = FIX / "sglang_decode"
FP8 = FIX / "sglang_fp8_default"
OOM = FIX / "oom_graph_capture"
VLLM = FIX / "vllm_metrics_log"
NCCL = FIX / "nccl_errors"
START = FIX / "startup"


def kinds(path: Path | str, engine: str = "auto") -> dict[str, list[dict[str, object]]]:
    out: dict[str, list[dict[str, object]]] = {}
    for f in analyze_log(path, engine=engine).findings:
        out.setdefault(f.kind, []).append(f.to_dict())
    return out


# -- SGLang batch lines -----------------------------------------------------------------------


def test_sglang_old_style_decode_lines() -> None:
    a = analyze_log(SGL / "sglang-issue4407_old-style-decode-batch-largest-len.log")
    assert a.engine == "sglang" and a.lines == 7
    assert [p.running for p in a.series] == [509, 454, 397, 346, 301, 235, 182]
    first = a.series[0]
    assert (first.kind, first.rank, first.time) == ("decode", "TP0", "2025-03-14 02:16:14")
    assert (first.gen_tps, first.kv_usage, first.queued) == (7897.87, 0.43, 0)
    assert a.series[-1].gen_tps == 5287.55


def test_sglang_new_style_prefill_and_decode_mixed_with_access_lines() -> None:
    a = analyze_log(SGL / "sglang-pr22166_new-style-prefill-decode-mixed.log")
    assert [(p.line, p.kind) for p in a.series] == [
        (1, "decode"),
        (3, "prefill"),
        (5, "prefill"),
        (7, "prefill"),
    ]
    d, p = a.series[0], a.series[1]
    assert (d.running, d.gen_tps, d.kv_usage, d.queued) == (32, 1635.11, 0.08, 0)
    assert (p.running, p.prompt_tps, p.gen_tps) == (31, 559.53, None)


def test_sglang_accept_len_with_tp_ep_prefix_and_npu_graph() -> None:
    a = analyze_log(SGL / "sgl-kernel-npu-pr608_decode-accept-len-accept-rate.log")
    decode = [p for p in a.series if p.kind == "decode"]
    assert [p.accept_len for p in decode] == [3.05, 2.63, 2.83]
    assert decode[0].rank == "TP0 EP0" and decode[0].gen_tps == 239.06
    assert [p.queued for p in decode] == [2, 3, 4]
    spec = kinds(SGL / "sgl-kernel-npu-pr608_decode-accept-len-accept-rate.log")["spec-accept"][0]
    assert spec["message"] == (
        "speculative accept length 2.84 of an unknown possible (the log shows no draft-token "
        "setting)"
    )
    assert spec["evidence"]["lines"] == [2, 4, 6]  # type: ignore[index]


def test_sglang_old_style_accept_len_and_prealloc_fields() -> None:
    a = analyze_log(SGL / "sglang-issue11948_eagle3-old-style-accept-len-accept-rate.log")
    assert [p.accept_len for p in a.series if p.kind == "decode"] == [2.17, 1.95, 1.80, 2.05, 1.80]
    assert a.series[0].kind == "prefill" and a.series[0].running == 0
    b = analyze_log(SGL / "sglang-0.5.9_pd-decode-batch-prealloc.log")
    assert [p.gen_tps for p in b.series] == [0.04, 78.20, 77.89, 77.90, 77.90]
    assert [p.running for p in b.series] == [1] * 5


def test_sglang_python_logging_prefix_and_mamba_usage() -> None:
    a = analyze_log(SGL / "fastrl-pr4_decode-batch-accept-len-pylogging.log")
    assert [p.line for p in a.series] == [1, 2, 6]  # the markdown lines in between are noise
    assert a.series[0].time == "2025-12-04 20:35:53" and a.series[0].gen_tps == 5452.63
    m = analyze_log(SGL / "sglang-issue29516_prefill-batch-full-token-mamba-usage.log")
    assert [p.kv_usage for p in m.series] == [0.12, 0.12, 0.12]
    assert [p.prompt_tps for p in m.series] == [9.58, 25.28, 22.77]


# -- vLLM stats and speculative metrics -------------------------------------------------------


def test_vllm_v1_stats_lines() -> None:
    a = analyze_log(VLLM / "sendnn-inference-pr1030_vllm-loggers-prefix-hit-rate.log")
    assert a.engine == "vllm"
    assert [p.gen_tps for p in a.series] == [3.3, 5.6, 1.0, 1.9, 1.7]
    assert {p.rank for p in a.series} == {"Engine 000"}
    assert a.series[0].kv_usage == pytest.approx(0.03) and a.series[0].prompt_tps == 1546.5
    one = analyze_log(VLLM / "vllm-issue19680_single-loggers-line.log").series[0]
    assert (one.running, one.queued, one.gen_tps) == (10, 4, 29.2)
    assert one.kv_usage == pytest.approx(0.579)


def test_vllm_v0_stats_hard_wrapped_and_spliced() -> None:
    a = analyze_log(VLLM / "tt-inference-server-246_vllm-v0-metrics-py-wrapped.log")
    # "Running: 32 r" + "eqs, Swapped ..." joined; line 5 holds a cut record and a whole one
    assert [p.line for p in a.series] == [1, 3, 5, 5, 7, 9]
    assert [p.gen_tps for p in a.series] == [616.1, 614.0, 597.0, 589.1, 579.6, 578.9]
    assert [p.kv_usage for p in a.series] == pytest.approx(
        [0.176, 0.202, None, 0.248, 0.273, 0.296]  # type: ignore[list-item]
    )
    assert {p.running for p in a.series} == {32} and a.lines == 10


def test_vllm_stats_line_cut_at_its_start_is_kept() -> None:
    log = (
        FIX
        / "bench_results/vllm-0.10.1.1_benchmark_serving-py_qwen2-7b-a100_with-engine-loggers.log"
    )
    a = analyze_log(log)
    assert [(p.line, p.gen_tps) for p in a.series] == [(30, None), (31, 238.7), (32, 240.2)]
    assert a.series[0].kv_usage == pytest.approx(0.035)


def test_vllm_spec_decode_formats() -> None:
    v0 = kinds(VLLM / "vllm-issue7301_v0-speculative-metrics.log")["spec-accept"][0]
    # V0: emitted / (drafted / k) = 34244 / (53716 / 4); possible k + 1
    assert v0["message"] == "speculative accept length 2.55 of a possible 5 (51%)"
    v06 = kinds(VLLM / "vllm-issue9539_v0.6.3-speculative-metrics-prefix-hit.log")["spec-accept"]
    assert v06[0]["evidence"]["accept_length_mean"] == round(10616 / (13311 / 3), 3)  # type: ignore[index]
    cpu = kinds(CPU / "spec_decode_ngram.log")["spec-accept"][0]
    assert cpu["message"] == "speculative accept length 3.33 of a possible 4 (83%)"
    ev = cpu["evidence"]
    assert ev["lines"] == [121, 129] and ev["accept_rate_mean"] == pytest.approx(0.806)  # type: ignore[index]
    assert ev["possible_from"] == "num_speculative_tokens 3 + 1 (line 12)"  # type: ignore[index]
    assert (
        "'num_speculative_tokens': 3"
        in (CPU / "spec_decode_ngram.log").read_text().splitlines()[11]
    )


# -- untuned / tuned kernel configs -----------------------------------------------------------


def test_untuned_fp8_gemm_single_line() -> None:
    log = FP8 / "sglang-pr5675_h20-w8a8-default-single-line.log"
    assert untuned_fp8_gemms(log) == [
        UntunedGemm(2112, 7168, "NVIDIA_H20", "fp8_w8a8", (128, 128), (1,))
    ]
    f = kinds(log)["untuned-fp8-gemm"][0]
    assert f["message"] == (
        "1 FP8 GEMM shape uses the default Triton config on NVIDIA_H20: N=2112,K=7168; looked "
        "in /xxx/sglang/python/sglang/srt/layers/quantization/configs (the directory of SGLang "
        "up to 0.5.15.post1)"
    )
    assert f["action"] == f"inferlab tune fp8-gemm --from-log {log}"


def test_untuned_fp8_gemm_vllm_with_a_tuned_shape_between() -> None:
    log = FP8 / "vllm-benchmarks-deepgemm-readme_h100_w8a8-default-and-using-configuration.log"
    dev = "NVIDIA_H100_80GB_HBM3"
    assert untuned_fp8_gemms(log) == [
        UntunedGemm(4096, 7168, dev, "fp8_w8a8", (128, 128), (8,)),
        UntunedGemm(18432, 7168, dev, "fp8_w8a8", (128, 128), (38,)),
    ]
    a = analyze_log(log)
    assert [(t.shape["n"], t.shape["k"], t.line) for t in a.tuned] == [(7168, 18432, 23)]


def test_using_configuration_proves_a_shape_tuned(tmp_path: Path) -> None:
    real = (FP8 / "sglang-pr5675_h20-w8a8-default-single-line.log").read_text()
    # constructed: SGLang's "Using configuration from" line (format of the pr5390 fixture)
    # for the same H20 shape, as a later launch with the tuned file would print it
    tuned = (
        "[2025-04-23 11:00:00 TP0] Using configuration from /xxx/sglang/python/sglang/srt/layers/"
        "quantization/configs/N=2112,K=7168,device_name=NVIDIA_H20,dtype=fp8_w8a8,"
        "block_shape=[128, 128].json for W8A8 Block FP8 kernel.\n"
    )
    p = tmp_path / "server.log"
    p.write_text(real + tuned)
    assert untuned_fp8_gemms(p) == []
    assert "untuned-fp8-gemm" not in kinds(p)
    only_tuned = analyze_log(FP8 / "sglang-pr5390_b200-dp8-using-configuration-from.log")
    assert [(t.shape["n"], t.shape["k"]) for t in only_tuned.tuned] == [(7168, 16384), (4608, 7168)]
    assert only_tuned.untuned_gemms == [] and only_tuned.engine == "sglang"


def test_five_untuned_shapes_message(tmp_path: Path) -> None:
    real = (FP8 / "sglang-pr5675_h20-w8a8-default-single-line.log").read_text()
    shapes = [(2112, 7168), (7168, 16384), (4608, 7168), (7168, 2304), (2112, 7168), (512, 7168)]
    # constructed: the real line with other (N, K) and device, and one repeated shape
    text = "".join(
        real.replace("N=2112,K=7168", f"N={n},K={k}").replace(
            "NVIDIA_H20", "NVIDIA_RTX_PRO_6000_Blackwell"
        )
        for n, k in shapes
    )
    p = tmp_path / "server.log"
    p.write_text(text)
    gs = untuned_fp8_gemms(p)
    assert [(g.n, g.k) for g in gs] == [
        (2112, 7168),
        (7168, 16384),
        (4608, 7168),
        (7168, 2304),
        (512, 7168),
    ]
    assert gs[0].lines == (1, 5)
    f = kinds(p)["untuned-fp8-gemm"][0]
    assert f["message"] == (
        "5 FP8 GEMM shapes use the default Triton config on NVIDIA_RTX_PRO_6000_Blackwell: "
        "N=2112,K=7168, N=7168,K=16384, N=4608,K=7168, N=7168,K=2304, N=512,K=7168; looked in "
        "/xxx/sglang/python/sglang/srt/layers/quantization/configs (the directory of SGLang up "
        "to 0.5.15.post1)"
    )


def test_moe_fallback_and_missing_down_config() -> None:
    log = FP8 / "sglang-0.5.8post1_moe-config-fallback-triton_h100.log"
    ms = untuned_moe(log)
    dev = "NVIDIA_H100_80GB_HBM3"
    assert ms == [
        UntunedMoe(
            257, 128, dev, "fp8_w8a8", (2, 4, 5, 8, 9, 10, 11, 16), (128, 128), "fallback", "3.4.0"
        ),
        UntunedMoe(257, 128, dev, "fp8_w8a8", (3, 6, 7, 12, 13, 14, 15, 17), (128, 128), "down"),
    ]
    f = {x["evidence"]["reason"]: x for x in kinds(log)["untuned-moe"]}  # type: ignore[index]
    assert f["down"]["message"] == (
        "1 fused-MoE shape has no tuned down-projection (_down) config on "
        f"{dev}: E=257,N=128,fp8_w8a8"
    )
    assert f["fallback"]["severity"] == "info"
    assert "another Triton version (3.4.0)" in str(f["fallback"]["message"])


def test_default_moe_config_lines_and_tuned_moe(tmp_path: Path) -> None:
    # constructed from the engines' formats: vLLM fused_moe.py (path list) and SGLang (path,
    # ", you can create them with ..."), the SGLang one behind a tqdm bar without newline
    p = tmp_path / "moe.log"
    p.write_text(
        "(Worker_TP3 pid=41702) WARNING 10-06 15:57:52 [fused_moe.py:798] Using default MoE "
        "config. Performance might be sub-optimal! Config file not found at ['/v/vllm/"
        "model_executor/layers/fused_moe/configs/E=128,N=192,device_name=NVIDIA_GeForce_RTX_3090"
        ".json']\n"
        "Capturing batches (bs=4 avail_mem=47.76 GB):   0%|          | 0/3 [00:00<?, ?it/s]"
        "[2026-02-04 11:30:00] Using default MoE kernel config. Performance might be "
        "sub-optimal! Config file not found at /s/sglang/srt/layers/moe/fused_moe_triton/"
        "configs/triton_3_5_1/E=60,N=1408,device_name=NVIDIA_H100_80GB_HBM3.json, you can "
        "create them with https://github.com/sgl-project/sglang/tree/main/benchmark/kernels\n"
    )
    assert [(m.e, m.n, m.device, m.dtype, m.reason, m.lines) for m in untuned_moe(p)] == [
        (128, 192, "NVIDIA_GeForce_RTX_3090", None, "default", (1,)),
        (60, 1408, "NVIDIA_H100_80GB_HBM3", None, "default", (2,)),
    ]
    tuned = analyze_log(
        FP8 / "vllm-pr24700_benchmark-moe-using-configuration-for-moe-layer-h100.log"
    )
    assert tuned.untuned_moe == [] and tuned.tuned[0].shape["e"] == 8
    assert tuned.tuned[0].shape["device"] == "NVIDIA_H100_80GB_HBM3" and tuned.tuned[0].line == 4


# -- OOM, graph capture, NCCL -----------------------------------------------------------------


def test_oom_during_graph_capture_sglang_traceback() -> None:
    f = kinds(OOM / "sglang-issue5285_deepep-h20-capture-oom-traceback.log")["oom-graph-capture"][0]
    assert f["message"] == (
        "OOM during CUDA-graph capture (asked 448.00 MiB, total 95.00 on GPU 7): lower "
        "--mem-fraction-static or cap --cuda-graph-max-bs"
    )
    ev = f["evidence"]
    assert ev["lines"] == [18] and ev["where_from"] == "message"  # type: ignore[index]


def test_capture_failure_without_cause_keeps_sglang_remedies_behind_docker_prefix() -> None:
    f = kinds(OOM / "sglang-issue11218_dsv32-docker-compose-capture-failed-remedies.log")
    (cap,) = f["graph-capture-failed"]
    assert "oom-graph-capture" not in f
    assert cap["message"] == "CUDA-graph capture failed (the cause is not in the log)"
    ev = cap["evidence"]
    assert ev["lines"] == [8] and ev["engine_remedies_line"] == 9  # type: ignore[index]
    assert ev["engine_remedies"][1] == "set --cuda-graph-max-bs to a smaller value (e.g., 16)"  # type: ignore[index]
    assert len(ev["engine_remedies"]) == 4  # type: ignore[index,arg-type]


def test_vllm_sampler_warmup_oom_with_amounts() -> None:
    a = analyze_log(OOM / "vllm-0.17.1_llama31-8b-rtx3090_sampler-warmup-oom_curated.log")
    (o,) = a.ooms
    assert (o.where, o.where_from, o.lines) == ("sampler-warmup", "message", (11, 12, 13, 14))
    assert (o.asked, o.free, o.total, o.gpu) == ("126.00 MiB", "139.75 MiB", "23.54 GiB", 0)
    (f,) = [x for x in a.findings if x.kind == "oom"]
    assert f.message == (
        "CUDA out of memory during the sampler warm-up (asked 126.00 MiB, 139.75 MiB free, "
        "total 23.54 GiB on GPU 0)"
    )
    assert "max-num-seqs" in (f.action or "")
    names = [(m.name, m.line) for m in a.timeline]
    assert names == [("model-loaded", 8), ("kv-cache", 9), ("kv-cache-tokens", 10)]
    assert a.timeline[0].values["weights_gib"] == 14.99


def test_oom_where_from_the_startup_phase(tmp_path: Path) -> None:
    # constructed: a generic torch OOM (no step named) after SGLang's "Load weight end" line
    real = NCCL / "sglang-issue3368_dsr1-2x8-a800_watchdog-allreduce-timeout-after-load.log"
    head = real.read_text().splitlines()[:6]
    p = tmp_path / "s.log"
    p.write_text(
        "\n".join(head)
        + "\n[2025-02-07 01:19:41 TP0] torch.OutOfMemoryError: CUDA out of memory. Tried to "
        "allocate 2.00 GiB. GPU 0 has a total capacity of 79.33 GiB of which 1.02 GiB is free.\n"
    )
    (o,) = analyze_log(p).ooms
    assert (o.where, o.where_from, o.lines, o.asked) == ("kv-cache", "phase", (7,), "2.00 GiB")


def test_nccl_watchdog_timeout_joined_across_a_hard_wrap() -> None:
    a = analyze_log(
        NCCL / "sglang-issue3368_dsr1-2x8-a800_watchdog-allreduce-timeout-after-load.log"
    )
    (f,) = [x for x in a.findings if x.kind == "nccl-timeout"]
    assert (
        f.message
        == "NCCL watchdog: ALLREDUCE (SeqNum 2) timed out after 600 s (timeout 600 s) on rank 6"
    )
    t = f.evidence["timeouts"][0]
    assert (t["line"], t["timeout_ms"], t["ran_ms"]) == (13, 600000, 600050)
    assert [m.name for m in a.timeline] == ["weights-loading", "weights-loaded"]
    assert a.timeline[1].values == {
        "model": "DeepseekV3ForCausalLM",
        "dtype": "torch.bfloat16",
        "avail_gb": 38.13,
    }
    assert a.timeline[1].count == 5  # one per TP rank shown


def test_nccl_errors_sglang_and_vllm() -> None:
    s = kinds(NCCL / "sglang-0.5.8post1_nccl-bootstrap-mismatch-remote-exited.log")["nccl-error"][0]
    assert s["message"] == "NCCL error: remote process exited or there was a network error"
    assert s["evidence"]["lines"] == [2, 5, 7, 45]  # type: ignore[index]
    a = analyze_log(NCCL / "vllm-issue16707_ray-init-device-nccl-unhandled-system-error.log")
    assert a.engine == "vllm"  # from the traceback path beside the NCCL line
    (v,) = a.findings
    assert v.message == "NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"
    assert v.evidence["lines"] == [5]


# -- engine advice, startup timelines, llama.cpp ----------------------------------------------


def test_vllm_cpu_advice_with_env() -> None:
    adv = kinds(CPU / "spec_decode_ngram.log")["perf-advice"]
    by = {x["evidence"]["advice"]: x for x in adv}  # type: ignore[index]
    assert by["tcmalloc-not-preloaded"]["evidence"]["env"] == {
        "LD_PRELOAD": "libtcmalloc_minimal.so.4"
    }  # type: ignore[index]
    assert by["iomp-not-preloaded"]["evidence"]["lines"] == [40]  # type: ignore[index]
    spec = by["spec-decode-without-iomp"]
    assert spec["severity"] == "warning" and spec["evidence"]["env"] == {
        "LD_PRELOAD": "libiomp5.so"
    }  # type: ignore[index]
    assert by["spec-decode-batched-tokens"]["message"].startswith(  # type: ignore[union-attr]
        "vLLM capped max_num_scheduled_tokens at 2048"
    )
    ok = kinds(CPU / "startup_ok.log")
    assert [x["evidence"]["lines"] for x in ok["perf-advice"]] == [[37], [38]]  # type: ignore[index]


def test_vllm_startup_timeline_wrapped_terminal() -> None:
    a = analyze_log(START / "vllm-0.10.1.1_qwen2-7b-a100_full-startup_terminal-wrapped.log")
    t = {m.name: m for m in a.timeline}
    assert (t["weights-loaded"].line, t["weights-loaded"].values) == (30, {"seconds": 3.03})
    assert t["model-loaded"].values["weights_gib"] == 14.2488
    assert t["kv-cache"].values == {"memory_gib": 5.01}
    assert t["kv-cache-tokens"].values == {"device": "GPU", "tokens": 93872, "concurrency": 5.73}
    assert t["graph-captured"].values == {"seconds": 3.0, "memory_gib": 0.5}
    assert t["engine-ready"].values == {"seconds": 89.58}
    assert t["ready"].line == 94 and t["weights-loaded"].time == "09-04 01:03:02"
    # 'gpu_memory_utilization': 0.25 sits on the wrapped continuation (line 4)
    assert a.flags["gpu_memory_utilization"] == {"value": "0.25", "line": 4}


def test_vllm_startup_with_ansi_and_ray_prefixes() -> None:
    a = analyze_log(START / "vllm-0.10.1.1_gpt-oss-120b-ray-tp4_full-startup_ansi.log")
    t = {m.name: m for m in a.timeline}
    assert t["graph-captured"].values == {"seconds": 101.0, "memory_gib": 1.88}
    assert t["graph-captured"].line == 288 and t["ready"].line == 329
    assert t["kv-cache-tokens"].values["tokens"] == 2640144 and t["kv-cache-tokens"].count == 4
    assert a.flags["gpu_memory_utilization"]["value"] == "0.8" and a.lines == 329


def test_llamacpp_startup_and_slot_context_overflow() -> None:
    j = analyze_log(START / "llamacpp-issue10547_journald-server-listening-slot-processing.log")
    assert j.engine == "llamacpp"
    assert [(m.name, m.line) for m in j.timeline] == [("ready", 11), ("slots-idle", 12)]
    assert j.timeline[0].values == {"url": "http://0.0.0.0:11430"}
    (f,) = j.findings
    assert f.kind == "context-overflow" and f.evidence["lines"] == [16]
    assert f.message.startswith(
        "a prompt of 39,846 tokens exceeds its llama.cpp slot's context of 4,096"
    )
    v = analyze_log(START / "llamacpp-issue15831_b6374-vulkan-server-startup-header.log")
    t = {m.name: m.values for m in v.timeline}
    assert t["listening"] == {"host": "192.168.5.3", "port": 1444}
    assert t["device"] == {"device": "Vulkan0", "name": "NVIDIA GeForce RTX 2060", "free_mib": 5380}
    assert t["model-metadata"] == {"keys": 19, "tensors": 291}
    n = analyze_log(START / "llamacpp-issue25121_timestamped-server-ready-and-slot-selection.log")
    assert n.engine == "llamacpp" and ("ready", 18) in [(m.name, m.line) for m in n.timeline]


# -- findings from time series ----------------------------------------------------------------


def _decode(running: int, tps: float, queue: int = 0, usage: float = 0.3) -> str:
    # constructed from the real old-style line of sglang-issue4407 with other numbers
    return (
        f"[2025-03-14 02:16:14 TP0] Decode batch. #running-req: {running}, #token: 1000, "
        f"token usage: {usage:.2f}, gen throughput (token/s): {tps:.2f}, largest-len: 0, "
        f"#queue-req: {queue}, \n"
    )


def test_decode_plateau_from_the_series(tmp_path: Path) -> None:
    p = tmp_path / "s.log"
    rows = [(1, 10.2)] * 4 + [(4, 19.0)] * 3 + [(8, 23.1)] * 4 + [(16, 23.4)] * 4 + [(32, 22.8)] * 3
    p.write_text("".join(_decode(r, t) for r, t in rows))
    (f,) = kinds(p)["decode-plateau"]
    assert f["message"] == (
        "decode throughput plateaus at ~23.1 tok/s from 8 running requests: more concurrency "
        "will not help"
    )
    assert f["evidence"]["lines"] == [8, 12, 16]  # type: ignore[index]
    rising = tmp_path / "r.log"
    rising.write_text(
        "".join(_decode(r, t) for r, t in [(1, 10.0), (4, 30.0), (8, 50.0), (16, 90.0)] * 2)
    )
    assert "decode-plateau" not in kinds(rising)


def test_kv_pressure_and_queueing(tmp_path: Path) -> None:
    full = tmp_path / "full.log"
    full.write_text("".join(_decode(64, 900.0, queue=q, usage=0.97) for q in (3, 5, 0, 9)))
    (f,) = kinds(full)["kv-pressure"]
    assert f["message"].startswith(  # type: ignore[union-attr]
        "requests waited in the queue while the KV cache was ≥90% full in 3 of 4 stats lines "
        "(max queue 9, max KV usage 0.97)"
    )
    assert f["evidence"]["lines"] == [1, 2, 4]  # type: ignore[index]
    assert "queueing" not in kinds(full)


# -- noisy input: gz, \r bars, partial lines, blocks, binary, unknown --------------------------


def test_gzip_is_read_transparently(tmp_path: Path) -> None:
    src = VLLM / "tt-inference-server-246_vllm-v0-metrics-py-wrapped.log"
    gz = tmp_path / "server.log.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    a, b = analyze_log(src), analyze_log(gz)
    assert b.compressed == "gzip" and b.series == a.series and b.lines == a.lines


def test_tqdm_carriage_returns_partial_last_line_and_crlf(tmp_path: Path) -> None:
    real = (
        (SGL / "sglang-issue4407_old-style-decode-batch-largest-len.log").read_text().splitlines()
    )
    bar = "Capturing batches (bs=1 avail_mem=14.43 GB):  50%|█████     | 1/2"
    text = (
        real[0]
        + "\r\n"  # CRLF
        + bar
        + "\r"
        + bar.replace("50%", "100%")
        + "\r"
        + real[1]
        + "\n"  # bars then a record
        + "\x1b[32m"
        + real[2]
        + "\x1b[0m\n"  # ANSI colours
        + "sglang-1  | "
        + real[3]
        + "\n"  # docker compose prefix
        + real[4][:60]  # partial last line, cut mid-record
    )
    p = tmp_path / "noisy.log"
    p.write_bytes(text.encode())
    a = analyze_log(p)
    assert a.lines == 5
    assert [(pt.line, pt.running) for pt in a.series] == [
        (1, 509),
        (2, 454),
        (3, 397),
        (4, 346),
        (5, 301),
    ]
    assert a.series[4].gen_tps is None  # the cut line kept what it had


def test_binary_and_foreign_compression_are_refused(tmp_path: Path) -> None:
    z = tmp_path / "server.log.zst"
    z.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)
    with pytest.raises(LogError, match=r"server\.log\.zst: a zstd-compressed file"):
        analyze_log(z)
    b = tmp_path / "core.bin"
    b.write_bytes(b"ELF\x02\x01" + b"\x00" * 100)
    with pytest.raises(LogError, match=r"core\.bin: a binary file \(NUL byte at offset 5\)"):
        analyze_log(b)
    with pytest.raises(LogError, match="no such file"):
        analyze_log(tmp_path / "nope.log")


def test_unknown_file_says_what_it_looked_for() -> None:
    a = analyze_log(FIX / "prometheus/vllm-issue8819_v0-histogram-buckets-opt125m.log")
    assert not a.recognized
    msg = a.unknown_reason()
    assert "no SGLang, vLLM or llama.cpp lines among 18 lines; looked for SGLang" in msg
    assert msg.endswith("it looks like a Prometheus /metrics dump")
    forced = analyze_log(CPU / "startup_ok.log", engine="llamacpp")
    assert not forced.recognized and "no llama.cpp lines among 163 lines" in forced.unknown_reason()


# -- launch failures: the log's end classified by the engine's own signatures -----------------


def test_vllm_startup_failures_are_findings_with_the_engines_remedy() -> None:
    """Real vLLM-CPU logs of launches that died: not "unknown file", but the cause and remedy."""
    a = analyze_log(CPU / "startup_fail_max_model_len.log")
    assert a.engine == "vllm" and a.recognized
    (f,) = [f for f in a.findings if f.kind == "launch-failure"]
    assert f.severity == "error" and f.evidence["lines"] == [57]
    assert f.evidence["signature"] == "max_model_len_too_large"
    assert "User-specified max_model_len (100000)" in f.message
    assert f.action is not None and "--max-model-len" in f.action
    c = analyze_log(CPU / "startup_fail_batched_tokens.log")  # an optimize trial's launch
    (h,) = [f for f in c.findings if f.kind == "launch-failure"]
    assert h.evidence["signature"] == "batched_tokens_below_model_len"
    assert (
        h.evidence["lines"] == [56] and "(1024) is smaller than max_model_len (2048)" in h.message
    )
    assert h.action is not None and "--no-enable-chunked-prefill" in h.action
    k = analyze_log(CPU / "startup_fail_fp8_kv_no_avx512.log")  # a CPU without AVX-512
    (fk,) = [f for f in k.findings if f.kind == "launch-failure"]
    assert fk.evidence["signature"] == "fp8_kv_cache_needs_avx512" and fk.evidence["lines"][0] == 83
    assert fk.action is not None and "--kv-cache-dtype" in fk.action
    b = analyze_log(CPU / "startup_fail_missing_model.log")
    (g,) = [f for f in b.findings if f.kind == "launch-failure"]
    assert g.evidence["signature"] == "model_not_found" and g.evidence["lines"] == [55]


def test_an_oom_is_reported_once_not_again_as_a_launch_failure() -> None:
    a = analyze_log(OOM / "sglang-issue5285_deepep-h20-capture-oom-traceback.log")
    assert [f.kind for f in a.findings if f.severity == "error"] == ["oom-graph-capture"]


def test_launch_failure_line_number_after_a_long_log(tmp_path: Path) -> None:
    """The tail is the last 64 KiB of a multi-block log: its line numbers stay exact."""
    real = (CPU / "startup_fail_max_model_len.log").read_text().splitlines()
    filler = "(APIServer pid=1) INFO 11-30 05:43:08 [loggers.py:1] waiting for nothing\n"
    p = tmp_path / "long.log"
    with p.open("w") as fh:
        fh.write("\n".join(real[:50]) + "\n")
        fh.write(filler * 200_000)  # ~14 MB: several 4 MiB blocks
        fh.write("\n".join(real[50:]) + "\n")
    a = analyze_log(p)
    (f,) = [f for f in a.findings if f.kind == "launch-failure"]
    assert f.evidence["lines"] == [57 + 200_000]
    assert a.lines == len(real) + 200_000


# -- the fast paths and the two scan paths give what the general ones give --------------------


def _state_of(path: Path) -> dict[str, object]:
    from inferlab.logs.analyze import _state

    st, an = _state(path, "auto")
    return {
        "series": st.series,
        "levels": {r: (lv.n, lv.samples, lv.first_line) for r, lv in st.levels.items()},
        "load": st.load,
        "spec": st.spec,
        "phase": st.phase,
        "hits": st.engine_hits,
        "ranks": st.primary_rank,
        "findings": analyze_log(path).to_json()["findings"],
    }


def test_fast_paths_equal_the_general_parser_on_every_fixture_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each real SGLang batch / vLLM stats fixture line, alone and in its file, gives the same
    state with the full-line formats (the fast paths) as with the ``key: value`` ones alone."""
    import dataclasses

    import inferlab.logs.formats as formats
    import inferlab.logs.parsers as parsers
    import inferlab.logs.sinks as sinks

    files = sorted([*SGL.glob("*.log"), *VLLM.glob("*.log")])
    singles = []
    for f in files:
        for i, line in enumerate(f.read_text().splitlines()):
            one = tmp_path / f"{f.stem}-{i}.log"
            one.write_text(line + "\n")
            singles.append(one)
    taken = {"sglang": 0, "vllm": 0}

    def counting(sink: Any) -> Any:
        def count(st: Any, ln: int, rec: formats.Record, la: Any) -> int | None:
            if rec[0].full and rec[0].engine in taken:
                taken[rec[0].engine] += 1
            return sink(st, ln, rec, la)  # type: ignore[no-any-return]

        return count

    for kind in ("batch.decode", "batch.prefill", "stats"):
        monkeypatch.setitem(sinks.SINKS, kind, counting(sinks.SINKS[kind]))
    fast = [_state_of(p) for p in [*files, *singles]]
    assert taken["sglang"] >= 60 and taken["vllm"] >= 10, taken  # the fast paths did run
    every = formats.tables()
    general_only = dataclasses.replace(every, formats=tuple(f for f in every.formats if not f.full))
    monkeypatch.setattr(parsers, "tables", lambda: general_only)
    general = [_state_of(p) for p in [*files, *singles]]
    for p, a, b in zip([*files, *singles], fast, general, strict=True):
        assert a == b, p.name


# -- a traceback during CUDA-graph capture ------------------------------------------------------


def test_traceback_after_capture_begin_is_a_capture_failure() -> None:
    a = analyze_log(OOM / "sglang-issue1751_phi35-capture-cuda-graph-begin-traceback-2024-10.log")
    (f,) = a.findings
    assert f.kind == "graph-capture-failed" and f.severity == "error"
    assert f.message == (
        "an exception during CUDA-graph capture; the log ends before its cause (traceback at "
        'line 3; last frame flashinfer_backend.py:452, call_begin_forward: "wrapper.begin_forward(")'
    )
    ev = f.evidence
    assert ev["lines"] == [2, 3, 14] and ev["exception"] is None
    assert (
        ev["last_frame"]["lineno"] == 452 and ev["last_frame"]["function"] == "call_begin_forward"
    )
    # the other capture fixtures keep exactly their findings
    assert [
        (g.kind, g.evidence["lines"])
        for g in analyze_log(OOM / "sglang-issue5285_deepep-h20-capture-oom-traceback.log").findings
    ] == [("oom-graph-capture", [18])]
    assert [
        (g.kind, g.message)
        for g in analyze_log(
            OOM / "sglang-issue11218_dsv32-docker-compose-capture-failed-remedies.log"
        ).findings
    ] == [("graph-capture-failed", "CUDA-graph capture failed (the cause is not in the log)")]
    assert [
        g.kind
        for g in analyze_log(
            OOM / "vllm-0.17.1_llama31-8b-rtx3090_sampler-warmup-oom_curated.log"
        ).findings
    ] == ["oom"]


def test_capture_traceback_needs_an_unfinished_capture(tmp_path: Path) -> None:
    """Constructed: a vLLM capture that finished, then a traceback, is no capture failure; one
    that did not finish, with the exception line in the log, quotes it."""
    head = (
        "(EngineCore_DP0 pid=7) INFO 11-30 05:44:47 [gpu_model_runner.py:2] Capturing CUDA "
        "graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 67/67\n"
    )
    done = "(EngineCore_DP0 pid=7) INFO 11-30 05:44:50 [gpu_model_runner.py:3] Graph capturing finished in 3 secs, took 0.50 GiB\n"
    tb = (
        "(EngineCore_DP0 pid=7) ERROR 11-30 05:44:51 [core.py:9] Traceback (most recent call last):\n"
        '(EngineCore_DP0 pid=7) ERROR 11-30 05:44:51 [core.py:9]   File "/x/vllm/v1/worker/gpu_model_runner.py", line 77, in capture_model\n'
        "(EngineCore_DP0 pid=7) ERROR 11-30 05:44:51 [core.py:9]     self._dummy_run(n)\n"
        "(EngineCore_DP0 pid=7) ERROR 11-30 05:44:51 [core.py:9] AssertionError: bad shape\n"
    )
    ok = tmp_path / "ok.log"
    ok.write_text(head + done + tb)
    assert "graph-capture-failed" not in kinds(ok)
    bad = tmp_path / "bad.log"
    bad.write_text(head + tb)
    (f,) = kinds(bad)["graph-capture-failed"]
    assert f["message"] == (
        "an exception during CUDA-graph capture: AssertionError: bad shape (traceback at line 2; "
        'last frame gpu_model_runner.py:77, capture_model: "self._dummy_run(n)")'
    )
    assert f["evidence"]["lines"] == [1, 2, 3, 5]  # type: ignore[index]


# --- fuzzing: server logs random, mutated, truncated (settings: tests/support/fuzzing.py)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


# ----------------------------------------------------------------------------- server logs

LOGS = sorted(FIXTURES.glob("engine_logs/**/*.log")) + sorted(FIXTURES.glob("vllm_cpu/*.log"))
LOG_LINES = [ln for p in LOGS for ln in p.read_bytes().splitlines(keepends=True)]


@fuzz(100)
@given(st.binary(max_size=4096))
def test_log_random_bytes(tmp: Path, blob: bytes) -> None:
    parses_or_names_file(analyze_log, write(tmp, "r.log", blob))


@fuzz(200)
@given(data=st.data())
def test_log_mutated_real_lines(tmp: Path, data: st.DataObject) -> None:
    lines = data.draw(st.lists(st.sampled_from(LOG_LINES), min_size=1, max_size=40))
    out = [data.draw(byte_mutation(ln)) if data.draw(st.booleans()) else ln for ln in lines]
    engine = data.draw(st.sampled_from(["auto", "sglang", "vllm", "llamacpp"]))
    parses_or_names_file(lambda p: analyze_log(p, engine), write(tmp, "m.log", b"".join(out)))


@fuzz(40)
@given(data=st.data())
def test_log_gzip_truncated(tmp: Path, data: st.DataObject) -> None:
    raw = gzip.compress(data.draw(st.sampled_from(LOGS)).read_bytes())
    cut = data.draw(st.integers(0, len(raw) - 1))
    parses_or_names_file(analyze_log, write(tmp, "t.log.gz", raw[:cut]))


def test_log_truncated_at_every_offset(tmp: Path) -> None:
    """A real SGLang OOM log cut at each of its byte offsets (every partial last line)."""
    real = (
        FIXTURES
        / "engine_logs/oom_graph_capture/sglang-issue5285_deepep-h20-capture-oom-traceback.log"
    )
    raw = real.read_bytes()
    for cut in range(len(raw) + 1):
        parses_or_names_file(analyze_log, write(tmp, "cut.log", raw[:cut]))
