"""Log signatures shared by engines built on PyTorch / NCCL / Hugging Face / uvicorn.

Each is a factory taking the engine's own remedy, so an engine module states what to change in
its own flags. ``source`` names the real log (under ``tests/fixtures/engine_logs/``) or the
library message the pattern was checked against.
"""

from __future__ import annotations

from inferlab.engines.base import (
    MOE_NAMES,
    ConfigDir,
    DetectHint,
    VersionedPath,
    fp8_gemm_names,
)
from inferlab.engines.evidence import NCCL_ENV, ArgsDump, EffectEvidence, EnvEvidence, Evidence
from inferlab.engines.logs import LogSignature, fatal_sig, sig

__all__ = [
    "address_in_use",
    "config_dirs",
    "cublas_alloc_failed",
    "cuda_oom",
    "detect_hints",
    "fp8_gemm_default_config",
    "gpu_engine_evidence",
    "hf_model_not_found",
    "kernel_config_warnings",
    "moe_config_fallback",
    "moe_default_config",
    "nccl_error",
    "nccl_warning",
    "nccl_watchdog_timeout",
    "serving_failures",
]


def cublas_alloc_failed(remedy: str, flags: tuple[str, ...] = ()) -> LogSignature:
    """cuBLAS could not allocate its handle's workspace: the GPU memory was already taken
    (by the engine's own static pool when that pool was sized to the whole GPU)."""
    return fatal_sig(
        "cublas_alloc_failed",
        r"CUBLAS_STATUS_ALLOC_FAILED",
        remedy=remedy,
        flags=flags,
        source="sglang_h100/graph-oom-0.998-0.5.17-h100.log",
    )


def cuda_oom(remedy: str, flags: tuple[str, ...] = ()) -> LogSignature:
    return fatal_sig(
        "cuda_oom",
        r"torch\.(?:cuda\.)?OutOfMemoryError|CUDA out of memory|CUDA error: out of memory",
        remedy=remedy,
        flags=flags,
        source="oom_graph_capture/vllm-0.17.1_llama31-8b-rtx3090_sampler-warmup-oom_curated.log",
    )


NCCL_DEBUG_HINT = (
    "rerun with NCCL_DEBUG=INFO; check that every rank runs the same versions and args, "
    "that the nodes reach each other (NCCL_SOCKET_IFNAME, firewall), and IB/P2P settings"
)


def nccl_watchdog_timeout(remedy: str = "") -> LogSignature:
    return fatal_sig(
        "nccl_watchdog_timeout",
        r"Watchdog caught collective operation timeout",
        remedy=remedy
        or "a collective never completed: a rank died, hung or is unreachable; " + NCCL_DEBUG_HINT,
        source="nccl_errors/sglang-issue3368_dsr1-2x8-a800_watchdog-allreduce-timeout-after-load.log",
    )


def nccl_error(remedy: str = "") -> LogSignature:
    # "NCCL error: {error_str}" also appears as source text in tracebacks: not a match
    return fatal_sig(
        "nccl_error",
        r"\bNCCL error(?: in)?: (?!\{)",
        remedy=remedy or NCCL_DEBUG_HINT,
        source="nccl_errors/sglang-0.5.8post1_nccl-bootstrap-mismatch-remote-exited.log, "
        "nccl_errors/vllm-issue16707_ray-init-device-nccl-unhandled-system-error.log",
    )


def nccl_warning() -> LogSignature:
    return sig(
        "nccl_warning",
        r"\bNCCL WARN\b",
        "warning",
        remedy="NCCL reported a problem (often the cause of a later NCCL error); "
        + NCCL_DEBUG_HINT,
        source="nccl_errors/sglang-0.5.8post1_nccl-bootstrap-mismatch-remote-exited.log",
    )


def address_in_use(remedy: str, flags: tuple[str, ...] = ("--port",)) -> LogSignature:
    # Python: "[Errno 98] Address already in use"; uvicorn: "[Errno 98] error while attempting
    # to bind on address ('0.0.0.0', 8000): address already in use"; torch TCPStore: EADDRINUSE
    return fatal_sig(
        "address_in_use",
        r"address already in use|\bEADDRINUSE\b",
        remedy=remedy,
        flags=flags,
        ignorecase=True,
        source="message of Python OSError errno 98 / uvicorn / torch TCPStore (no fixture log)",
    )


def hf_model_not_found(remedy: str, extra: str = "") -> LogSignature:
    patterns = [
        r"does not appear to have a file named",  # transformers OSError
        r"Repo id must (?:be in the form|use alphanumeric)",  # huggingface_hub HFValidationError
        r"is not a local folder and is not a valid model identifier",  # transformers
        r"FileNotFoundError: \[Errno 2\] No such file or directory",
    ]
    if extra:
        patterns.append(extra)
    return fatal_sig(
        "model_not_found",
        "|".join(patterns),
        remedy=remedy,
        source="messages of transformers / huggingface_hub / Python (no fixture log)",
    )


def fp8_gemm_default_config() -> LogSignature:
    return sig(
        "fp8_gemm_default_config",
        r"Using default W8A8 Block FP8 kernel config",
        "warning",
        remedy="no tuned block-FP8 GEMM config for this N,K and GPU: the default tiles can be "
        "far from the best; tune that shape (inferlab tune fp8-gemm) and install the JSON in "
        "the engine's configs directory",
        source="sglang_fp8_default/sglang-pr5675_h20-w8a8-default-single-line.log, "
        "sglang_fp8_default/vllm-benchmarks-deepgemm-readme_h100_w8a8-default-and-using-"
        "configuration.log",
    )


def moe_default_config() -> LogSignature:
    return sig(
        "moe_default_config",
        r"Using (?:default )?MoE (?:kernel )?config\b.*sub-optimal",
        "warning",
        remedy="no tuned fused-MoE config for this expert shape and GPU: tune it with the "
        "engine's benchmark_moe / tuning script and install the JSON",
        source="sglang_fp8_default/sglang-0.5.8post1_moe-config-fallback-triton_h100.log",
    )


def moe_config_fallback() -> LogSignature:
    return sig(
        "moe_config_fallback",
        # <= 0.5.10: .../fused_moe_triton/configs/...; 0.5.11+: .../moe_runner/triton_utils/...
        r"Config file not found at \S+.*Fallback to triton version \S+ and use MoE kernel",
        "warning",
        remedy="the fused-MoE config was tuned for another Triton version; retune for this one",
        source="sglang_fp8_default/sglang-0.5.8post1_moe-config-fallback-triton_h100.log",
    )


def kernel_config_warnings(*, triton_fallback: bool = False) -> tuple[LogSignature, ...]:
    """The warnings of an engine whose block-FP8 GEMM and fused-MoE kernels read tuned config
    files (``triton_fallback``: it also falls back to a config tuned for another Triton)."""
    fallback = (moe_config_fallback(),) if triton_fallback else ()
    return (fp8_gemm_default_config(), moe_default_config(), *fallback)


def serving_failures(
    address_remedy: str,
    address_flags: tuple[str, ...],
    model_remedy: str,
    model_extra: str = "",
) -> tuple[LogSignature, ...]:
    """The failures every PyTorch serving engine shares (NCCL, a taken port, a model that does
    not resolve), with the engine's own remedies."""
    return (
        nccl_watchdog_timeout(),
        nccl_error(),
        nccl_warning(),
        address_in_use(address_remedy, address_flags),
        hf_model_not_found(model_remedy, extra=model_extra),
    )


def _newest(where: str | tuple[VersionedPath, ...]) -> tuple[str, tuple[VersionedPath, ...]]:
    return (where, ()) if isinstance(where, str) else (where[-1].path, where)


def config_dirs(
    package: str,
    fp8_gemm: str | tuple[VersionedPath, ...],
    moe: str | tuple[VersionedPath, ...],
    *,
    block_sep: str,
    moe_triton_subdirs: bool = False,
) -> tuple[ConfigDir, ...]:
    """An engine's tuned kernel-config directories, relative to its package directory: one
    path, or a table by release (oldest first) where the directory moved."""
    fp8_path, fp8_rows = _newest(fp8_gemm)
    moe_path, moe_rows = _newest(moe)
    return (
        ConfigDir(
            "fp8_gemm",
            package,
            fp8_path,
            fp8_gemm_names(block_sep),
            tuner_engine=package,
            by_version=fp8_rows,
        ),
        ConfigDir(
            "moe",
            package,
            moe_path,
            MOE_NAMES,
            triton_subdirs=moe_triton_subdirs,
            by_version=moe_rows,
        ),
    )


def gpu_engine_evidence(
    dump: ArgsDump,
    effects: tuple[EffectEvidence, ...],
    *,
    server_info: str | None = None,
    env: tuple[EnvEvidence, ...] = (),
    fields: tuple[tuple[str, str], ...] = (),
) -> Evidence:
    """Lever evidence of an engine that dumps its args, logs its kernel-config files and runs
    NCCL (SGLang, vLLM)."""
    return Evidence(
        args_dumps=(dump,),
        server_info_path=server_info,
        effects=effects,
        env=(NCCL_ENV, *env),
        files_in_log=("fp8_gemm", "moe"),
        fields=fields,
    )


def detect_hints(name: str, metrics_prefix: str) -> tuple[DetectHint, ...]:
    """How an engine that names itself in ``/v1/models`` owned_by and prefixes its metrics is
    recognised."""
    return (
        DetectHint("owned_by", name, weight=3),
        DetectHint("metrics", metrics_prefix, weight=2),
    )
