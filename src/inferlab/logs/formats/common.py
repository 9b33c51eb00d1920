"""Engine-neutral log lines: kernel configs (FP8 GEMM, fused MoE), CUDA OOM, NCCL, launch
flags, and the startup steps any engine prints (safetensors loading, uvicorn's start).

``formats(named)``: a kernel-config, OOM or NCCL line counts for the first engine of ``named``
(those whose ``LogFacts.named_in_lines``) that the line names (in a path, a module name)."""

from __future__ import annotations

import re
from dataclasses import replace

from inferlab.logs.formats.base import Field, LineFormat, Wrap, step

__all__ = ["OOM_WHERE", "formats", "launch_flag"]

# -- kernel configs: a shape on the default config (untuned) or on a tuned file --------------

_SHAPE = (
    Field("n", int, ""),
    Field("k", int, ""),
    Field("device", str, ""),
    Field("dtype", str, ""),
    Field("block_n", int, "", optional=True),
    Field("block_k", int, "", optional=True),
)
_GEMM = re.compile(
    r"N=(?P<n>\d+),K=(?P<k>\d+),device_name=(?P<device>[^,\s]+),dtype=(?P<dtype>[^,\s\]]+?)"
    r"(?:,block_shape=\[(?P<block_n>\d+), ?(?P<block_k>\d+)\])?\.json"
)
_MOE = re.compile(
    r"E=(?P<e>\d+),N=(?P<n>\d+),device_name=(?P<device>[^,\s'\]]+?)"
    r"(?:,dtype=(?P<dtype>[^,\s'\]]+?))?(?:,block_shape=\[(?P<block_n>\d+), ?(?P<block_k>\d+)\])?"
    r"(?:,per_channel_quant=\w+)?(?:_down)?\.json"
)


def _dotted(v: str) -> str:
    """``3_4_0`` → ``3.4.0``."""
    return v.replace("_", ".")


_MOE_SHAPE = (
    Field("e", int, "experts"),
    Field("n", int, ""),
    Field("device", str, ""),
    Field("dtype", str, "", optional=True),
    *_SHAPE[4:],
)

#: a fused-MoE file tuned for another Triton version, and the version installed
_FALLBACK = (
    Field("triton_version", str, "", pattern=re.compile(r"Fallback to triton version ([\d.]+)")),
    Field("installed_triton", _dotted, "", pattern=re.compile(r"triton_(\d+_\d+_\d+)")),
)


def _kernel(
    named: tuple[str, ...],
    name: str,
    kind: str,
    prefix: str,
    need: tuple[str, ...] = (),
    reason: str = "",
) -> LineFormat:
    moe = kind.startswith("moe")
    rx = _MOE if moe else _GEMM
    fields: tuple[Field, ...] = _MOE_SHAPE if moe else _SHAPE
    if reason == "fallback":
        fields = (*fields, *_FALLBACK)
    return LineFormat(
        name,
        None,
        kind,
        (prefix,),
        fields,
        rx,
        need=need,
        wrap=Wrap(rx),
        named=named,
        tags={"reason": reason},
    )


def _kernels(named: tuple[str, ...]) -> tuple[LineFormat, ...]:
    tuned = ("Using configuration from",)
    return (
        _kernel(named, "fp8-gemm-default", "fp8-gemm.default", "Using default W8A8 Block FP8"),
        _kernel(named, "fp8-gemm-tuned", "fp8-gemm.tuned", "W8A8 Block FP8", tuned),
        _kernel(named, "moe-tuned", "moe.tuned", "MoE", tuned),
        _kernel(
            named, "moe-fallback", "moe.untuned", "Fallback to triton version", ("MoE",), "fallback"
        ),
        _kernel(named, "moe-no-down", "moe.untuned", "down_moe=False", ("MoE",), "down"),
        _kernel(named, "moe-default", "moe.untuned", "Using default MoE", (), "default"),
    )


# -- CUDA out of memory ------------------------------------------------------------------------

#: where an OOM happened, from its text (first match), else the phase the log was in
OOM_WHERE: tuple[tuple[str, str], ...] = (
    ("Capture cuda graph failed", "graph-capture"),
    ("cuda graph", "graph-capture"),
    ("CUDA graph", "graph-capture"),
    ("capturing", "graph-capture"),
    ("warming up sampler", "sampler-warmup"),
    ("Not enough memory. Please try to increase --mem-fraction-static", "kv-cache"),
    ("No available memory for the cache blocks", "kv-cache"),
    ("loading weights", "weight-loading"),
)
_ASKED = re.compile(r"Tried to allocate ([\d.]+ ?[KMGT]i?B)")
_TOTAL = re.compile(r"total capacity of ([\d.]+(?: ?[KMGT]i?B)?)")
_FREE = re.compile(r"of which ([\d.]+ ?[KMGT]i?B) is free")
_OOM = LineFormat(
    "cuda-oom",
    None,
    "oom",
    ("out of memory", "OutOfMemory", "Not enough memory", "No available memory for the cache"),
    (
        Field("asked", str, "as printed", pattern=_ASKED),
        Field("total", str, "as printed", pattern=_TOTAL),
        Field("free", str, "as printed", pattern=_FREE),
        Field("gpu", int, "", pattern=re.compile(r"GPU (\d+) has a total")),
    ),
)

# -- NCCL --------------------------------------------------------------------------------------

_WATCHDOG = re.compile(
    r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+), "
    r"OpType=(?P<op>\w+).*?Timeout\(ms\)=(?P<timeout_ms>\d+)\) ran for (?P<ran_ms>\d+) milliseconds"
)
_NCCL = (
    LineFormat(
        "nccl-watchdog-timeout",
        None,
        "nccl.timeout",
        ("Watchdog caught collective operation timeout",),
        (
            Field("seq", int, "", pattern=_WATCHDOG),
            Field("op", str, "", pattern=_WATCHDOG),
            Field("timeout_ms", int, "ms", pattern=_WATCHDOG),
            Field("ran_ms", int, "ms", pattern=_WATCHDOG),
            Field("rank", int, "", pattern=re.compile(r"\[Rank (\d+)\]")),
        ),
        need=("NCCL",),
        wrap=Wrap(_WATCHDOG),
    ),
    LineFormat(
        "nccl-warn",
        None,
        "nccl.warn",
        ("NCCL WARN",),
        (Field("message", str, ""),),
        re.compile(r"NCCL WARN (?P<message>.+?)\s*$"),
    ),
    LineFormat(
        "nccl-error",
        None,
        "nccl.error",
        ("NCCL",),
        (Field("message", str, "", optional=True), Field("error", str, "", optional=True)),
        re.compile(r"NCCL error:?\s*(?P<message>.+?)\s*$|(?P<error>nccl\w+Error)"),
    ),
)

# -- launch flags, wherever the log shows them (command line, ServerArgs, engine config) ------


#: how an engine's args dump spells ``name`` before its value: SGLang's ``ServerArgs(name=...)``
#: repr (``='`` before a text), vLLM's ``non-default args: {'name': ...}`` dict
_REPR, _REPR_TEXT, _DICT = "=", "='", r"['\"]?[:=] ?"
_INT, _DEC, _WORD = r"\d+", r"[\d.]+", r"\w+"


def launch_flag(
    name: str, prefix: tuple[str, ...], value: str, dumped: str = _REPR, flag: str = ""
) -> LineFormat:
    """A launch flag's value, as the command line (``flag``, by default ``--name-with-dashes``
    and a space or ``=``) or the args dump (``name`` then ``dumped``) spells it."""
    flag = flag or "--" + name.replace("_", "-") + "[ =]"
    pattern = re.compile(f"(?:{flag}|{name}{dumped})(?P<value>{value})")
    fields = (Field("value", str, "as printed"),)
    return LineFormat(f"flag-{name}", None, "flag", prefix, fields, pattern, tags={"flag": name})


_FLAGS = (
    launch_flag("mem_fraction_static", ("fraction",), _DEC),
    launch_flag(
        "gpu_memory_utilization", ("memory_utilization", "memory-utilization"), _DEC, _DICT
    ),
    launch_flag("cuda_graph_max_bs", ("graph-max-bs", "graph_max_bs"), _INT),
    launch_flag("speculative_algorithm", ("speculative",), _WORD, _REPR_TEXT),
    launch_flag("speculative_num_steps", ("speculative",), _INT),
    launch_flag("speculative_num_draft_tokens", ("speculative",), _INT),
    launch_flag("speculative_eagle_topk", ("speculative",), _INT),
    # vLLM's SpeculativeConfig repr spells it num_spec_tokens
    launch_flag(
        "num_speculative_tokens", ("speculative", "spec_tokens"), _INT, _DICT, "num_spec_tokens="
    ),
    launch_flag("max_running_requests", ("running-requests", "running_requests"), _INT),
    launch_flag("max_num_seqs", ("max-num-seqs", "max_num_seqs"), _INT, _DICT),
)

# -- startup, any engine -----------------------------------------------------------------------

# left unformatted: a table, one launch step a row (name, needle, pattern, next phase, fields)
_STEPS = (
    step(None, "weights-loading", "Loading safetensors", r"Loading safetensors checkpoint shards",
         "weight-loading"),
    step(None, "ready", "startup complete", r"Application startup complete", "serving"),
)  # fmt: skip

#: a CUDA-graph capture is under way (SGLang's tqdm bar, vLLM's messages)
_CAPTURE_PHASE = LineFormat(
    "capture-phase",
    None,
    "capture.phase",
    ("Capturing batches", "Capturing CUDA graph", "capture_model"),
    always=True,
)


def formats(named: tuple[str, ...]) -> tuple[LineFormat, ...]:
    """The engine-neutral formats; a kernel-config, OOM or NCCL-error line counts for the first
    engine of ``named`` it names."""
    oom, (*nccl, nccl_error) = replace(_OOM, named=named), _NCCL
    nccl_error = replace(nccl_error, named=named)
    return (*_kernels(named), oom, *nccl, nccl_error, *_FLAGS, *_STEPS, _CAPTURE_PHASE)
