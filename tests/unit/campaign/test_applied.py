"""Lever-applied evidence, checked against real engine output: vLLM CPU's ``non-default args``
and its ``/metrics`` after n-gram speculative decoding, SGLang's ``server_args=ServerArgs(...)``,
NCCL's ``set by environment`` lines, and both engines' kernel-config lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferlab.campaign.context import Installed, LeverItem
from inferlab.campaign.parts.applied import Sources, check_levers, item_lines
from inferlab.config.resolve import ResolvedConfig
from support import FIXTURES

FIX = FIXTURES
VLLM = FIX / "vllm_cpu"
LEV = FIX / "levers"
FP8 = FIX / "engine_logs" / "sglang_fp8_default"
NGRAM = '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":4,"prompt_lookup_min":2}'


def cfg(
    engine: str, name: str, args: list[str], env: dict[str, str] | None = None
) -> ResolvedConfig:
    return ResolvedConfig(name, engine, "m", args, dict(env or {}), [name])


def sources(log: Path, metrics: Path | None = None, info: dict[str, Any] | None = None) -> Sources:
    text = metrics.read_text() if metrics else None
    return Sources(log, log.read_text(errors="replace").splitlines(), info, text)


def one(items: list[LeverItem], item: str) -> LeverItem:
    return next(i for i in items if i.item == item)


# ------------------------------------------------------------------------- vLLM CPU


def test_vllm_speculative_config_applied_from_dump_and_counters() -> None:
    base = cfg("vllm", "baseline", ["--dtype", "float32"])
    ngram = cfg("vllm", "ngram", ["--dtype", "float32", "--speculative-config", NGRAM])
    items = check_levers(
        base,
        ngram,
        sources(VLLM / "spec_decode_ngram.log", VLLM / "metrics_spec_decode_ngram.prom"),
        None,
    )
    it = one(items, "--speculative-config")
    assert it.status == "applied", it
    assert "speculative_config=" in it.evidence and "spec_drafts = 855" in it.evidence


def test_vllm_speculative_config_that_differs_is_not_applied() -> None:
    base = cfg("vllm", "baseline", [])
    five = '{"method":"ngram","num_speculative_tokens":5}'
    it = check_levers(
        base,
        cfg("vllm", "x", ["--speculative-config", five]),
        sources(VLLM / "spec_decode_ngram.log"),
        None,
    )[0]
    assert it.status == "not-applied" and "'num_speculative_tokens': 3" in it.evidence
    # the counters say drafting never happened: the lever did nothing
    it = check_levers(
        base,
        cfg("vllm", "y", ["--speculative-config", NGRAM]),
        sources(VLLM / "startup_ok.log", VLLM / "metrics.prom"),
        None,
    )[0]
    assert it.status in ("unknown", "not-applied")


def test_vllm_counters_at_zero_before_any_request_are_no_reading(tmp_path: Path) -> None:
    """With verification off, no request has run when the levers are checked: the drafts
    counter at 0 says nothing, and the args dump decides (found by the reproducibility
    benchmark: every ngram launch read "not-applied", its verdicts unclaimed)."""
    prom = (VLLM / "metrics_spec_decode_ngram.prom").read_text()
    fresh = prom.replace("} 855.0", "} 0.0").replace("} 3632.0", "} 0.0")
    assert fresh != prom
    (tmp_path / "fresh.prom").write_text(fresh)
    (tmp_path / "idle.prom").write_text(prom.replace("} 855.0", "} 0.0"))
    # a launch that served nothing has logged no SpecDecoding line either
    log = (VLLM / "spec_decode_ngram.log").read_text(errors="replace").splitlines()
    (tmp_path / "quiet.log").write_text("\n".join(ln for ln in log if "SpecDecoding" not in ln))
    base = cfg("vllm", "baseline", ["--dtype", "float32"])
    ngram = cfg("vllm", "ngram", ["--dtype", "float32", "--speculative-config", NGRAM])
    src = sources(tmp_path / "quiet.log", tmp_path / "fresh.prom")
    it = one(check_levers(base, ngram, src, None), "--speculative-config")
    assert it.status == "applied", it  # from the args dump
    # tokens generated and still no draft: the lever did nothing
    src = sources(tmp_path / "quiet.log", tmp_path / "idle.prom")
    it = one(check_levers(base, ngram, src, None), "--speculative-config")
    assert it.status == "not-applied" and "spec_drafts = 0" in it.evidence


def test_vllm_flags_from_non_default_args() -> None:
    base = cfg("vllm", "baseline", ["--max-model-len", "2048"])
    items = check_levers(
        base,
        cfg("vllm", "b", ["--max-model-len", "100000", "--max-num-seqs", "4"]),
        sources(VLLM / "startup_fail_max_model_len.log"),
        None,
    )
    assert one(items, "--max-model-len").status == "applied"
    seqs = one(items, "--max-num-seqs")  # absent from the non-default args: cannot tell
    assert seqs.status == "unknown" and "non-default args" in seqs.evidence


def test_vllm_profiled_launch_keeps_its_lever_evidence() -> None:
    """A profiled launch's args dump holds a ``ProfilerConfig(...)`` repr (real log of a
    ``demo --optimize`` trial): its flags are still read as applied, not "no evidence"."""
    base = cfg("vllm", "baseline", ["--max-model-len", "2048"])
    trial = cfg(
        "vllm",
        "t02",
        ["--max-model-len", "2048", "--max-num-seqs", "4", "--max-num-batched-tokens", "2048",
         "--no-enable-chunked-prefill"],
    )  # fmt: skip
    items = check_levers(base, trial, sources(VLLM / "profiled_launch.log"), None)
    for flag in ("--max-num-seqs", "--max-num-batched-tokens", "--no-enable-chunked-prefill"):
        assert one(items, flag).status == "applied", one(items, flag)
    wrong = cfg("vllm", "t", ["--max-model-len", "2048", "--max-num-seqs", "8"])
    it = one(check_levers(base, wrong, sources(VLLM / "profiled_launch.log"), None),
             "--max-num-seqs")  # fmt: skip
    assert it.status == "not-applied" and "max_num_seqs=4" in it.evidence


def test_vllm_cpu_preload_warning_means_not_applied() -> None:
    base = cfg("vllm", "baseline", [])
    iomp = cfg("vllm", "iomp", [], {"LD_PRELOAD": "/venv/lib/libiomp5.so"})
    it = check_levers(base, iomp, sources(VLLM / "spec_decode_ngram.log"), None)[0]
    assert it.item == "env LD_PRELOAD" and it.status == "not-applied"
    assert "libiomp is not found in LD_PRELOAD" in it.evidence
    other = cfg("vllm", "x", [], {"MY_VAR": "1"})
    it = check_levers(base, other, sources(VLLM / "spec_decode_ngram.log"), None)[0]
    assert it.status == "unknown" and it.source is None


# ------------------------------------------------------------------------- SGLang


def test_sglang_flags_from_server_args() -> None:
    log = LEV / "sglang-glm5-fp8-rocm-tp8_server-args.log"
    base = cfg("sglang", "baseline", ["--tp", "4"])
    b = cfg(
        "sglang",
        "B",
        [
            "--tp",
            "8",
            "--mem-fraction-static",
            "0.70",
            "--enable-metrics",
            "--kv-cache-dtype",
            "fp8_e4m3",
            "--no-such-flag",
            "1",
        ],
    )
    items = {i.item: i for i in check_levers(base, b, sources(log), None)}
    assert items["--tp-size"].status == "applied" and "tp_size=8" in items["--tp-size"].evidence
    assert items["--mem-fraction-static"].status == "not-applied"
    assert "mem_fraction_static=0.908" in items["--mem-fraction-static"].evidence
    assert items["--enable-metrics"].status == "not-applied"
    assert items["--kv-cache-dtype"].status == "applied"
    assert items["--no-such-flag"].status == "unknown"
    assert "line 5" in items["--tp-size"].evidence


def test_sglang_server_info_is_a_source_too() -> None:
    log = LEV / "sglang-glm5-fp8-rocm-tp8_server-args.log"
    info = {"tp_size": 8, "speculative_num_draft_tokens": 2, "version": "0.5.9"}
    b = cfg("sglang", "B", ["--speculative-num-draft-tokens", "2"])
    it = check_levers(cfg("sglang", "a", []), b, sources(log, info=info), None)[0]
    assert it.status == "applied" and it.source == "server_info"


H100 = FIX / "engine_logs" / "sglang_h100"  # SGLang 0.5.17, 2026-12-07


def test_sglang_0_5_17_graph_flag_is_read_under_its_decode_field() -> None:
    # --cuda-graph-max-bs is a deprecated alias there (dest cuda_graph_max_bs_decode): read as
    # "unknown: no field cuda_graph_max_bs" on the H100 before the engine named the alias
    log = H100 / "graph-oom-fix-0.89-0.5.17-h100-excerpt.log"
    fix = cfg("sglang", "fix", ["--mem-fraction-static", "0.89", "--cuda-graph-max-bs", "1024"])
    items = check_levers(cfg("sglang", "baseline", []), fix, sources(log), None)
    it = one(items, "--cuda-graph-max-bs")
    assert it.status == "applied", it
    assert "cuda_graph_max_bs_decode=1024" in it.evidence
    assert one(items, "--mem-fraction-static").status == "applied"
    wrong = cfg("sglang", "fix", ["--cuda-graph-max-bs", "512"])
    it = one(
        check_levers(cfg("sglang", "baseline", []), wrong, sources(log), None),
        "--cuda-graph-max-bs",
    )
    assert it.status == "not-applied" and "(asked: 512)" in it.evidence


def test_sglang_accept_length_of_0_before_any_decode_log_is_no_reading() -> None:
    # a later launch checks its lever after the probes only; SGLang sets the accept-length gauge
    # at its first "Decode batch" line, which came 2 s after the check (14:02:02): the gauge read
    # 0 and the check said "not-applied" while server_args said NGRAM
    log = H100 / "ngram-launch2-0.5.17-h100-excerpt.log"
    prom = log.with_name("ngram-launch2-metrics.prom")
    info = {"speculative_algorithm": "NGRAM", "speculative_num_draft_tokens": 4}
    ngram = cfg("sglang", "ngram", ["--speculative-algorithm", "NGRAM"])
    src = Sources(log, log.read_text().splitlines(), info, prom.read_text())
    it = check_levers(cfg("sglang", "baseline", []), ngram, src, None)[0]
    assert it.status == "applied", it
    assert "speculative_algorithm='NGRAM'" in it.evidence
    # where nothing else says so, 0 stays unknown, and a reading above 0 is proof
    bare = Sources(log, [], None, prom.read_text())
    it = check_levers(cfg("sglang", "baseline", []), ngram, bare, None)[0]
    assert it.status == "unknown" and "not set until a batch is logged" in it.evidence
    ran = Sources(log, [], None, prom.read_text().replace("} 0.0", "} 1.32"))
    assert check_levers(cfg("sglang", "baseline", []), ngram, ran, None)[0].status == "applied"


# ------------------------------------------------------------------------- NCCL


@pytest.mark.parametrize(
    ("env", "status"),
    [
        ({"NCCL_PROTO": "Simple", "NCCL_DEBUG": "INFO"}, "applied"),
        ({"NCCL_PROTO": "simple", "NCCL_DEBUG": "INFO"}, "applied"),  # NCCL ignores case
        ({"NCCL_PROTO": "LL", "NCCL_DEBUG": "INFO"}, "not-applied"),
        ({"NCCL_PROTO": "LL"}, "unknown"),  # NCCL says nothing without NCCL_DEBUG=INFO
        ({"NCCL_IB_HCA": "mlx5_0", "NCCL_DEBUG": "INFO"}, "not-applied"),
    ],
)
def test_nccl_variables(env: dict[str, str], status: str) -> None:
    log = LEV / "nccl-info_proto-set-by-environment.log"
    base = cfg("sglang", "baseline", [], {"NCCL_DEBUG": env.get("NCCL_DEBUG", "")})
    items = check_levers(base, cfg("sglang", "A", [], env), sources(log), None)
    it = next(i for i in items if i.item != "env NCCL_DEBUG")
    assert it.status == status, it
    if status == "unknown":
        assert "NCCL_DEBUG=INFO" in it.evidence


# ------------------------------------------------------------------------- files


def installed(directory: str, *files: str, kind: str = "fp8_gemm") -> Installed:
    entries = [{"file": f, "sha256": "x", "action": "new", "original": None} for f in files]
    return Installed(
        Path("/nonexistent"), {"dirs": [{"kind": kind, "dir": directory, "entries": entries}]}
    )


SG_DIR = "/sgl-workspace/sglang/python/sglang/srt/layers/quantization/configs"
B200 = "N=7168,K=16384,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128, 128].json"


def files_cfg(engine: str = "sglang", kind: str = "fp8_gemm") -> ResolvedConfig:
    c = cfg(engine, "A", [])
    c.files[kind] = "/tuned"
    return c


def test_tuned_files_used_where_installed() -> None:
    log = FP8 / "sglang-pr5390_b200-dp8-using-configuration-from.log"
    it = check_levers(cfg("sglang", "b", []), files_cfg(), sources(log), installed(SG_DIR, B200))[0]
    assert it.item == "files fp8_gemm" and it.status == "applied"
    assert "Using configuration from" in it.evidence and it.source == "launch log"


def test_tuned_file_read_elsewhere_is_not_applied() -> None:
    log = FP8 / "sglang-pr5390_b200-dp8-using-configuration-from.log"
    inst = installed("/other/site-packages/sglang/srt/layers/quantization/configs", B200)
    it = check_levers(cfg("sglang", "b", []), files_cfg(), sources(log), inst)[0]
    assert it.status == "not-applied" and "not where inferlab installed it" in it.evidence


def test_default_config_for_a_covered_shape_is_not_applied() -> None:
    log = FP8 / "sglang-pr5675_h20-w8a8-default-single-line.log"
    h20 = "N=2112,K=7168,device_name=NVIDIA_H20,dtype=fp8_w8a8,block_shape=[128, 128].json"
    it = check_levers(cfg("sglang", "b", []), files_cfg(), sources(log), installed(SG_DIR, h20))[0]
    assert (
        it.status == "not-applied" and "Using default W8A8 Block FP8 kernel config" in it.evidence
    )
    # files for another GPU: the shape ran on the default config all the same
    b200 = h20.replace("NVIDIA_H20", "NVIDIA_B200")
    it = check_levers(cfg("sglang", "b", []), files_cfg(), sources(log), installed(SG_DIR, b200))[0]
    assert it.status == "not-applied" and "the files cover others" in it.evidence


def test_moe_files_and_a_log_without_kernel_lines() -> None:
    log = FP8 / "vllm-pr24700_benchmark-moe-using-configuration-for-moe-layer-h100.log"
    d = "/home/mgoin/code/vllm/vllm/model_executor/layers/fused_moe/configs"
    inst = installed(d, "E=8,N=7168,device_name=NVIDIA_H100_80GB_HBM3.json", kind="moe")
    it = check_levers(cfg("vllm", "b", []), files_cfg("vllm", "moe"), sources(log), inst)[0]
    assert it.status == "applied" and "for MoE layer" in it.evidence
    it = check_levers(
        cfg("vllm", "b", []),
        files_cfg("vllm"),
        sources(VLLM / "startup_ok.log"),
        installed(d, B200),
    )[0]
    assert it.status == "unknown"
    it = check_levers(
        cfg("vllm", "b", []), files_cfg("vllm"), sources(VLLM / "startup_ok.log"), None
    )[0]
    assert it.status == "not-applied" and "not installed" in it.evidence


def test_item_lines_and_the_baseline_has_none() -> None:
    b = cfg("sglang", "baseline", [])
    assert check_levers(b, b, sources(VLLM / "startup_ok.log"), None) == []
    lines = item_lines(
        [
            LeverItem("--x", "flag", "applied", "x=1 in dump", "launch log"),
            {
                "item": "env Y",
                "kind": "env",
                "status": "not-applied",
                "evidence": "no",
                "source": None,
            },
        ]
    )
    assert lines == ["✓ --x: applied — x=1 in dump [launch log]", "✗ env Y: not-applied — no"]


def test_transformers_continuous_batching_from_its_request_lines() -> None:
    tf = FIX / "transformers"
    base = cfg("transformers", "baseline", [])
    cb = cfg("transformers", "cb", ["--continuous-batching"])
    on = check_levers(
        base, cb, sources(tf / "transformers-5.17.0_tiny-cpu_cb-small-cache.log"), None
    )[0]
    assert on.status == "applied" and "CB: True" in on.evidence, on
    off = check_levers(
        base, cb, sources(tf / "transformers-5.17.0_tiny-cpu_serve-verify-422.log"), None
    )[0]
    assert off.status == "not-applied" and "CB: False" in off.evidence, off


# ------------------------------------------------------------------------- another checkpoint


def test_another_checkpoint_is_checked_in_the_args_dump() -> None:
    """``[[config]] model``: vLLM's ``non-default args`` names the model it loaded."""
    base = ResolvedConfig("baseline", "vllm", "/tmp/other", [], {}, ["baseline"])
    twin = ResolvedConfig("fp8", "vllm", "/tmp/vx/tiny", [], {}, ["baseline", "fp8"])
    it = one(check_levers(base, twin, sources(VLLM / "spec_decode_ngram.log"), None), "model")
    assert it.kind == "model" and it.status == "applied", it
    assert "model='/tmp/vx/tiny'" in it.evidence
    wrong = ResolvedConfig("fp8", "vllm", "/tmp/m-fp8", [], {}, ["baseline", "fp8"])
    it = one(check_levers(base, wrong, sources(VLLM / "spec_decode_ngram.log"), None), "model")
    assert it.status == "not-applied" and "asked: /tmp/m-fp8" in it.evidence
    # the same checkpoint is no item; SGLang's dump names it model_path
    assert check_levers(base, base, sources(VLLM / "spec_decode_ngram.log"), None) == []
    sg_base = ResolvedConfig("baseline", "sglang", "zai-org/GLM-5", [], {}, ["baseline"])
    sg = ResolvedConfig("fp8", "sglang", "zai-org/GLM-5-FP8", [], {}, ["baseline", "fp8"])
    log = LEV / "sglang-glm5-fp8-rocm-tp8_server-args.log"
    it = one(check_levers(sg_base, sg, sources(log), None), "model")
    assert it.status == "applied" and "model_path=" in it.evidence
