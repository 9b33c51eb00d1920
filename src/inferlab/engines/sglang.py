"""SGLang's server (``python -m sglang.launch_server --model-path MODEL``).

Fixed output length: the OpenAI API takes ``ignore_eos`` + ``min_tokens``; the native
``/generate`` API takes ``sampling_params: {max_new_tokens, min_new_tokens, ignore_eos}``.
``/metrics`` needs ``--enable-metrics``. The server is ready only after its warm-up request
("The server is fired up and ready to roll!"), not when uvicorn starts.
"""

from inferlab.engines import common
from inferlab.engines.base import (
    PYTHON,
    DetectHint,
    EngineSpec,
    Launcher,
    NativeApi,
    VersionedPath,
    register,
)
from inferlab.engines.capture import SGLANG_CAPTURE
from inferlab.engines.evidence import SGLANG_SERVER_ARGS, EffectEvidence
from inferlab.engines.facts import Fp8Tuning, LogFacts, OomAdvice, ReconFacts
from inferlab.engines.flags import FlagSyntax
from inferlab.engines.logs import LogSignature, fatal_sig, generic_fatal, sig
from inferlab.engines.prometheus import MetricDef

_SRC = "sglang/srt/metrics/collector.py"
_FIX = "tests/fixtures/engine_logs/prometheus/"
_DOCS = _FIX + "sglang-docs-production_metrics_llama31-8b-full-dump.log"

METRICS = (
    MetricDef(
        "running",
        "gauge",
        ("sglang:num_running_reqs",),
        "requests",
        "requests in the running batch",
        _DOCS,
    ),
    MetricDef(
        "waiting",
        "gauge",
        ("sglang:num_queue_reqs",),
        "requests",
        "requests in the waiting queue (per dp_rank/tp_rank with DP attention)",
        _DOCS + ", " + _FIX + "aibrix-1614_sglang-dp-attention-deepseek-r1.log",
    ),
    MetricDef(
        "kv_cache_usage",
        "gauge",
        ("sglang:token_usage",),
        "fraction 0-1",
        "KV-cache token slots in use",
        _DOCS,
    ),
    MetricDef(
        "used_tokens",
        "gauge",
        ("sglang:num_used_tokens",),
        "tokens",
        "KV-cache token slots in use",
        _DOCS,
    ),
    MetricDef(
        "max_total_tokens",
        "gauge",
        ("sglang:max_total_num_tokens",),
        "tokens",
        "KV-cache capacity (early versions label it name=<model path>)",
        _FIX + "sglang-pr1853_early-sglang-metrics-name-label.log",
    ),
    MetricDef(
        "gen_throughput",
        "gauge",
        ("sglang:gen_throughput",),
        "tokens/s",
        "decode throughput of the last logging interval (per dp_rank with DP attention)",
        _DOCS + ", " + _FIX + "aibrix-1614_sglang-dp-attention-deepseek-r1.log",
    ),
    MetricDef(
        "cache_hit_rate",
        "gauge",
        ("sglang:cache_hit_rate",),
        "fraction 0-1",
        "prefix (radix) cache hit rate of the last prefill batch (cached / (cached + new))",
        _DOCS + "; scheduler_metrics_mixin.log_prefill_stats",
    ),
    MetricDef(
        "spec_accept_length",
        "gauge",
        ("sglang:spec_accept_length",),
        "tokens per verify step",
        "mean accepted length of speculative decoding (includes the verifier's own token)",
        _SRC,
    ),
    MetricDef(
        "spec_accept_rate",
        "gauge",
        ("sglang:spec_accept_rate",),
        "fraction 0-1",
        "speculative acceptance rate (newer versions)",
        _SRC + " (recent versions)",
    ),
    MetricDef(
        "prompt_tokens",
        "counter",
        ("sglang:prompt_tokens",),
        "tokens",
        "prefill tokens processed",
        _DOCS,
    ),
    MetricDef(
        "generation_tokens",
        "counter",
        ("sglang:generation_tokens",),
        "tokens",
        "output tokens generated",
        _DOCS,
    ),
    MetricDef(
        "cached_tokens",
        "counter",
        ("sglang:cached_tokens",),
        "tokens",
        "prompt tokens served from the prefix cache",
        _SRC,
    ),
    MetricDef(
        "requests",
        "counter",
        ("sglang:num_requests",),
        "requests",
        "finished requests",
        _SRC,
    ),
    MetricDef(
        "ttft",
        "histogram",
        ("sglang:time_to_first_token_seconds",),
        "seconds",
        "server-side time to first token",
        _DOCS,
    ),
    MetricDef(
        "itl",
        "histogram",
        ("sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"),
        "seconds",
        "gap between output tokens (older versions: time_per_output_token_seconds)",
        _SRC + "; older name: " + _DOCS,
    ),
    MetricDef(
        "e2e",
        "histogram",
        ("sglang:e2e_request_latency_seconds",),
        "seconds",
        "server-side request latency",
        _DOCS,
    ),
)

#: where the Triton W8A8 block-FP8 GEMM reads its tuned configs (``get_w8a8_block_fp8_configs``:
#: ``dirname(realpath(fp8_kernel.py))/configs``), by release; read in each release's wheel
FP8_GEMM_DIRS = (
    VersionedPath(
        "0",
        "0.5.15.post1",
        "srt/layers/quantization/configs",
        "sglang 0.5.9–0.5.15.post1 wheels: sglang/srt/layers/quantization/fp8_kernel.py",
    ),
    VersionedPath(
        "0.5.16",
        "0.5.20",
        "kernels/ops/quantization/configs",
        "sglang 0.5.16, 0.5.17, 0.5.19, 0.5.20 wheels: kernels/ops/quantization/fp8_kernel.py",
    ),
    VersionedPath(
        "0.5.21",
        "",
        "kernels/ops/gemm/configs",
        "sglang 0.5.21 wheel: sglang/kernels/ops/gemm/fp8_kernel.py",
    ),
)
#: where the fused-MoE Triton kernel reads its configs (then ``triton_X_Y_Z/`` below it; the
#: ``SGLANG_MOE_CONFIG_DIR`` environment variable replaces the directory above ``configs``)
MOE_DIRS = (
    VersionedPath(
        "0",
        "0.5.10",
        "srt/layers/moe/fused_moe_triton/configs",
        "sglang 0.5.9, 0.5.10 wheels; sglang-0.5.8post1_moe-config-fallback-triton_h100.log",
    ),
    VersionedPath(
        "0.5.11",
        "",
        "srt/layers/moe/moe_runner/triton_utils/configs",
        "sglang 0.5.11–0.5.21 wheels: moe_runner/triton_utils/fused_moe_triton_config.py",
    ),
)

#: the Triton block-FP8 GEMM's lines, per (N, K) at first use (warm-up or CUDA-graph capture);
#: the same text in every release above (``fp8_kernel.py``; the found one on rank 0 only)
FP8_CONFIG_FOUND = "Using configuration from {path} for W8A8 Block FP8 kernel."
FP8_CONFIG_MISSING = (
    "Using default W8A8 Block FP8 kernel config. Performance might be sub-optimal! "
    "Config file not found at {path}"
)

_GRAPH_FLAGS = (
    "--mem-fraction-static",
    "--cuda-graph-max-bs",
    "--enable-torch-compile",
    "--disable-cuda-graph",
)
_GRAPH_REMEDY = (
    "CUDA-graph capture failed; SGLang's own list: 1. lower --mem-fraction-static "
    "(e.g. 0.70 → 0.60); 2. lower --cuda-graph-max-bs (e.g. 16); 3. drop "
    "--enable-torch-compile; 4. --disable-cuda-graph (large decode slowdown)"
)
_CAPTURE_SRC = (
    "oom_graph_capture/sglang-issue5285_deepep-h20-capture-oom-traceback.log, "
    "oom_graph_capture/sglang-issue11218_dsv32-docker-compose-capture-failed-remedies.log"
)


def _capture_failed(kind: str, more: str = "") -> LogSignature:
    """A fatal "Capture cuda graph failed" line (``more``: what else the line must say)."""
    return fatal_sig(
        kind,
        r"Capture cuda graph failed(?!: \{)" + more,
        remedy=_GRAPH_REMEDY,
        flags=_GRAPH_FLAGS,
        source=_CAPTURE_SRC,
    )


SIGNATURES = (
    sig(
        "ready",
        r"The server is fired up and ready to roll",
        "info",
        ready=True,
        source="sglang/srt/entrypoints/http_server.py message (no fixture log)",
    ),
    # "Capture cuda graph failed: {e}" is also source text in tracebacks: not a match
    _capture_failed("oom_cuda_graph_capture", r".*(?:out of memory|OutOfMemory)"),
    _capture_failed("cuda_graph_capture_failed"),
    fatal_sig(
        "not_enough_memory",
        r"Not enough memory\. Please try to increase --mem-fraction-static",
        remedy="no room left for the KV cache after the weights: raise --mem-fraction-static, "
        "add GPUs (--tp-size), or use a smaller/quantized model",
        flags=("--mem-fraction-static", "--tp-size"),
        source="sglang/srt/model_executor/model_runner.py message (no fixture log)",
    ),
    common.cublas_alloc_failed(  # 0.5.17 at 0.998 on an H100: before any CUDA-graph capture
        "the static pool (--mem-fraction-static: weights + KV cache) took the whole GPU, and "
        "cuBLAS, activations and CUDA graphs need the rest (the 'Memory pool end. avail mem' "
        "line says what was left): lower --mem-fraction-static (e.g. 0.998 → 0.89)",
        ("--mem-fraction-static",),
    ),
    common.cuda_oom(
        "lower --mem-fraction-static (activations need the rest), --cuda-graph-max-bs, "
        "--max-running-requests or --chunked-prefill-size; or add GPUs (--tp-size)",
        ("--mem-fraction-static", "--cuda-graph-max-bs", "--max-running-requests"),
    ),
    fatal_sig(
        "max_model_len_too_large",
        r"Error\W+(?:Warning: )?User-specified context_length \(\d+\) is greater than the "
        r"derived context_length",
        remedy="--context-length exceeds the model's context: lower it; only with RoPE "
        "scaling configured set SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1",
        flags=("--context-length",),
        source="sglang/srt/configs/model_config.py message (no fixture log)",
    ),
    sig(
        "context_length_override",
        r"context_length \(\d+\) is greater than the derived context_length",
        "warning",
        remedy="the context length is above what the model was trained for: outputs past it "
        "may be wrong unless RoPE scaling is configured",
        flags=("--context-length",),
        source="sglang/srt/configs/model_config.py message (no fixture log)",
    ),
    *common.serving_failures(
        "another process holds the port: stop it or choose another [engine] port; for the "
        "NCCL/torch.distributed port (EADDRINUSE) set --nccl-port or --dist-init-addr",
        ("--port", "--nccl-port", "--dist-init-addr"),
        "--model-path does not resolve: check the path (it must contain config.json), the "
        "repo id spelling, HF_TOKEN for gated repos, HF_HUB_OFFLINE",
    ),
    generic_fatal(
        "scheduler_exception",
        r"Scheduler hit an exception",
        remedy="see the exception that follows it",
        source="nccl_errors/sglang-0.5.8post1_nccl-bootstrap-mismatch-remote-exited.log",
    ),
    generic_fatal(
        "child_failed",
        r"Received sigquit from a child process|Subprocess \S+ \(pid=\d+\) crashed",
        remedy="a scheduler/detokenizer process died: see its error above",
        source="nccl_errors/sglang-0.5.8post1_nccl-bootstrap-mismatch-remote-exited.log",
    ),
    *common.kernel_config_warnings(triton_fallback=True),
)

SYNTAX = FlagSyntax(
    aliases={
        "--tp": "--tp-size",
        "--tensor-parallel-size": "--tp-size",
        "--dp": "--dp-size",
        "--data-parallel-size": "--dp-size",
        "--pp": "--pp-size",
        "--pipeline-parallel-size": "--pp-size",
        "--ep": "--ep-size",
        "--expert-parallel-size": "--ep-size",
        "--model": "--model-path",
    },
)

#: EAGLE/MTP: the accept length appears in /metrics and in the Decode batch lines
SPEC_EFFECT = EffectEvidence(
    "--speculative-algorithm",
    "speculative decoding ran",
    metrics=("spec_accept_length",),
    log=r"Decode batch\..*accept len: [\d.]+",
    gauge=True,  # set at each "Decode batch" log line: 0 until the first one
)

EVIDENCE = common.gpu_engine_evidence(
    SGLANG_SERVER_ARGS,
    (SPEC_EFFECT,),
    server_info="/get_server_info",
    # 0.5.16+ (server_args.py): deprecated aliases, stored as the decode phase's fields
    fields=(
        ("--cuda-graph-max-bs", "cuda_graph_max_bs_decode"),
        ("--cuda-graph-bs", "cuda_graph_bs_decode"),
    ),
)

SPEC = register(
    EngineSpec(
        name="sglang",
        description="SGLang server (OpenAI API)",
        version_path="/get_server_info",
        metrics_enable_flag="--enable-metrics",
        # its echo logprobs carry text_offset -1 (openai/utils.py): no prompt boundary to cut at
        teacher_forcing="stepwise",
        native_api=NativeApi(
            path="/generate",
            params_key="sampling_params",
            max_tokens_field="max_new_tokens",
            min_tokens_field="min_new_tokens",
            ignore_eos_field="ignore_eos",
        ),
        launchers=(
            Launcher("module", (PYTHON, "-m", "sglang.launch_server"), model_flag="--model-path"),
        ),
        flag_syntax=SYNTAX,
        metrics=METRICS,
        log_signatures=SIGNATURES,
        config_dirs=common.config_dirs(
            "sglang", FP8_GEMM_DIRS, MOE_DIRS, block_sep=", ", moe_triton_subdirs=True
        ),
        evidence=EVIDENCE,
        detect=(
            *common.detect_hints("sglang", "sglang:"),
            DetectHint("path", "/get_server_info", key="tp_size", weight=2),
        ),
        capture=SGLANG_CAPTURE,
        parallel_flags=("--tp-size", "--pp-size", "--dp-size"),
        # with DP attention the DP ranks split the TP group's GPUs (sglang server_args.py)
        parallel_within={"--dp-size": "--enable-dp-attention"},
        default_gpus=1,
        recon=ReconFacts(
            "sglang",
            help_argvs=(("-m", "sglang.launch_server", "--help"),),
            distributions=("sglang", "sglang-kernel", "sgl-kernel"),  # renamed in 0.5.10
        ),
        fp8_tuning=Fp8Tuning(", ", (64, 128, 128, 32, 4, 3)),
        logs=LogFacts(
            "SGLang",
            "inferlab.logs.formats.sglang",
            "SGLang 'Prefill/Decode batch' lines and startup steps",
            named_in_lines=True,
            # srt/managers/tokenizer_manager.py (0.5.17): then "Subprocess scheduler_0 (pid=…)
            # crashed with exit code -15" as the scheduler obeys (H100 logs, 2026-12-07)
            stop_requested=r"SIGTERM received\. signum=",
        ),
        oom=OomAdvice(
            "mem_fraction_static",
            "--mem-fraction-static",
            0.10,
            "or cap --cuda-graph-max-bs",
            "lower --mem-fraction-static or cap --cuda-graph-max-bs",
        ),
    )
)
