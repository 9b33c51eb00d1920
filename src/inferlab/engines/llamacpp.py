"""llama.cpp's ``llama-server -m MODEL``.

Fixed output length: ``ignore_eos`` is honoured, ``min_tokens`` does not exist; the native
``/completion`` API takes ``n_predict`` + ``ignore_eos``. ``/tokenize`` takes ``content``.
``/metrics`` needs ``--metrics``. ``/health`` answers 503 while the model loads.

Readiness: "main: HTTP server is listening, hostname: …" (builds around b6000) is printed
*before* the model loads, so it is not a ready line; "server is listening on http://… -
starting the main loop" and (newer) "llama_server: listening on http://…" come after it.
"""

from inferlab.engines import common
from inferlab.engines.base import DetectHint, EngineSpec, Launcher, NativeApi, register
from inferlab.engines.facts import LogFacts
from inferlab.engines.flags import FlagSyntax
from inferlab.engines.logs import fatal_sig, generic_fatal, sig
from inferlab.engines.prometheus import MetricDef

_SRC = "tools/server/server.cpp metrics handler (no fixture dump)"

METRICS = (
    MetricDef(
        "prompt_tokens",
        "counter",
        ("llamacpp:prompt_tokens_total",),
        "tokens",
        "prompt tokens processed",
        _SRC,
    ),
    MetricDef(
        "generation_tokens",
        "counter",
        ("llamacpp:tokens_predicted_total",),
        "tokens",
        "output tokens generated",
        _SRC,
    ),
    MetricDef(
        "prompt_throughput",
        "gauge",
        ("llamacpp:prompt_tokens_seconds",),
        "tokens/s",
        "average prompt throughput",
        _SRC,
    ),
    MetricDef(
        "gen_throughput",
        "gauge",
        ("llamacpp:predicted_tokens_seconds",),
        "tokens/s",
        "average generation throughput",
        _SRC,
    ),
    MetricDef(
        "running",
        "gauge",
        ("llamacpp:requests_processing",),
        "requests",
        "requests being processed",
        _SRC,
    ),
    MetricDef(
        "waiting",
        "gauge",
        ("llamacpp:requests_deferred",),
        "requests",
        "requests deferred (no free slot)",
        _SRC,
    ),
    MetricDef(
        "kv_cache_usage",
        "gauge",
        ("llamacpp:kv_cache_usage_ratio",),
        "fraction 0-1",
        "KV-cache usage (removed in later builds)",
        _SRC,
    ),
)

SIGNATURES = (
    sig(
        "ready",
        r"server is listening on https?://|llama_server: listening on https?://",
        "info",
        ready=True,
        source="startup/llamacpp-issue10547_journald-server-listening-slot-processing.log, "
        "startup/llamacpp-issue25121_timestamped-server-ready-and-slot-selection.log",
    ),
    sig(
        "listening_loading",
        r"HTTP server is listening, hostname:",
        "info",
        remedy="the HTTP port is open but the model is still loading (/health answers 503)",
        source="startup/llamacpp-issue15831_b6374-vulkan-server-startup-header.log",
    ),
    fatal_sig(
        "address_in_use",
        r"couldn't bind HTTP server socket",
        remedy="another process holds the port: stop it or choose another [engine] port",
        flags=("--port",),
        source="tools/server/server.cpp message (no fixture log)",
    ),
    fatal_sig(
        "model_not_found",
        r"failed to open GGUF file|gguf_init_from_file: failed to open",
        remedy="the -m path does not exist or is not readable: check it (a .gguf file)",
        flags=("--model",),
        source="ggml/src/gguf.cpp message (no fixture log)",
    ),
    fatal_sig(
        "out_of_memory",
        r"(?:unable|failed) to allocate \S+ buffer",
        remedy="the model or KV cache does not fit: lower -ngl (offload fewer layers), "
        "-c (context), -np (slots), or quantize the KV cache (-ctk/-ctv q8_0)",
        flags=("--n-gpu-layers", "--ctx-size", "--parallel"),
        source="src/llama-model.cpp / ggml-backend messages (no fixture log)",
    ),
    generic_fatal(
        "model_load_failed",
        r"failed to load model|error loading model|unable to load model",
        remedy="see the error logged above it",
        source="tools/server/server.cpp messages (no fixture log)",
    ),
    sig(
        "ctx_exceeds_training",
        r"slot context \(\d+\) exceeds the training context of the model",
        "warning",
        remedy="-c is above the model's training context and was capped: lower -c, or "
        "configure RoPE scaling",
        flags=("--ctx-size",),
        source="tools/server/server.cpp message (no fixture log)",
    ),
)

SYNTAX = FlagSyntax(
    aliases={
        "-m": "--model",
        "-c": "--ctx-size",
        "-ngl": "--n-gpu-layers",
        "--gpu-layers": "--n-gpu-layers",
        "-np": "--parallel",
        "-t": "--threads",
        "-tb": "--threads-batch",
        "-b": "--batch-size",
        "-ub": "--ubatch-size",
        "-fa": "--flash-attn",
        "-ctk": "--cache-type-k",
        "-ctv": "--cache-type-v",
        "-ts": "--tensor-split",
        "-sm": "--split-mode",
        "-mg": "--main-gpu",
        "-n": "--n-predict",
        "--predict": "--n-predict",
        "-a": "--alias",
        "-cb": "--cont-batching",
        "-md": "--model-draft",
        "-ngld": "--n-gpu-layers-draft",
        "--gpu-layers-draft": "--n-gpu-layers-draft",
        "-hf": "--hf-repo",
        "-s": "--seed",
    },
    repeatable=frozenset({"--lora", "--override-kv", "--control-vector"}),
)

SPEC = register(
    EngineSpec(
        name="llamacpp",
        description="llama.cpp llama-server",
        min_tokens_field=None,
        version_path=None,
        tokenize_field="content",
        # /v1/completions ignores echo (no prompt logprobs); its mixed prompt [text, ids...]
        # forces the generated ids without re-tokenizing them (docs/verify.md)
        teacher_forcing="stepwise-ids",
        metrics_enable_flag="--metrics",
        native_api=NativeApi(
            path="/completion",
            params_key=None,
            max_tokens_field="n_predict",
            min_tokens_field=None,
            ignore_eos_field="ignore_eos",
        ),
        launchers=(Launcher("server", ("llama-server",), model_flag="-m"),),
        flag_syntax=SYNTAX,
        metrics=METRICS,
        log_signatures=SIGNATURES,
        detect=(
            *common.detect_hints("llamacpp", "llamacpp:"),
            DetectHint("path", "/props", key="default_generation_settings", weight=2),
        ),
        logs=LogFacts("llama.cpp", "inferlab.logs.formats.llamacpp", "llama.cpp server/slot lines"),
    )
)
