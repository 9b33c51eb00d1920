"""``inferlab sim ...``: the reference engine, an OpenAI-compatible server with known timing."""

from __future__ import annotations

import inspect
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from inferlab.errors import ConfigError

sim_app = typer.Typer(
    help="The reference engine: a SIMULATED OpenAI-compatible server with known timing.\n\n"
    "Its answers are paced to a known schedule and it records when each token chunk was due "
    "and when it was written (GET /truth), so it is the instrument that checks inferlab's "
    "own client; every line it logs or serves says SIMULATED.",
    no_args_is_help=True,
)

_F = TypeVar("_F", bound=Callable[..., Any])
#: SimConfig field → the option that sets it, so errors name what the user typed.
_OPTION = {"truth_path": "--truth", "levers.nccl_proto": "NCCL_PROTO"}


def _command(name: str) -> Callable[[_F], _F]:
    """Register a function as ``inferlab sim NAME``; its help is the docstring with each
    paragraph on one line (typer's rich help would keep the docstring's line breaks)."""

    def register(fn: _F) -> _F:
        doc = inspect.cleandoc(fn.__doc__ or "")
        text = "\n\n".join(" ".join(p.split()) for p in doc.split("\n\n"))
        sim_app.command(name, help=text)(fn)
        return fn

    return register


def _labels(fields: Any) -> dict[str, str]:
    from inferlab.sim.launch import LEVER_FIELDS

    labels = {f: "--" + f.replace("_", "-") for f in fields}
    labels.update({"levers." + f: "--" + f.replace("_", "-") for f in LEVER_FIELDS})
    labels.update(_OPTION)
    return labels


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _ready(url: str) -> None:
    print(f"inferlab sim (SIMULATED engine) listening on {url}", flush=True)


def _o(name: str, help: str) -> Any:
    return typer.Option(name, help=help)


_OptF = float | None
_OptI = int | None
_OptS = str | None
_Host = Annotated[str, _o("--host", "Address to listen on.")]
_Port = Annotated[int, _o("--port", "Port; 0 picks a free one.")]
_Model = Annotated[str, _o("--model", "Model id served.")]
_Ttft = Annotated[_OptF, _o("--ttft-ms", "Time to first token (ms); default 50.")]
_Itl = Annotated[_OptF, _o("--itl-ms", "Gap per output token (ms); default 10.")]
_Jitter = Annotated[
    float, _o("--jitter-ms", "Std of normal noise on TTFT and each token gap (ms).")
]
_Chunk = Annotated[int, _o("--tokens-per-chunk", "Tokens per SSE event after the first (K).")]
_Seed = Annotated[int, _o("--seed", "Seed of the output text and the jitter.")]
_Vocab = Annotated[int, _o("--vocab-size", "Word tokenizer vocabulary.")]
_MaxLen = Annotated[int, _o("--max-model-len", "Context length.")]
_Truth = Annotated[
    Path | None, _o("--truth", "Append each finished request's ground truth here (JSONL).")
]
_Fault = Annotated[_OptS, _o("--fault", "Misbehave on purpose (docs/reliability.md lists kinds).")]
_FaultAfter = Annotated[int, _o("--fault-after", "Token chunks before the fault.")]
_FaultEvery = Annotated[int, _o("--fault-every", "Fault every Nth request.")]
_FaultAt = Annotated[
    _OptF, _o("--fault-at-s", "Faults from T s after the first request (exit: at T).")
]
_FaultFor = Annotated[_OptF, _o("--fault-for-s", "Faults only for D s from --fault-at-s.")]
_Drip = Annotated[float, _o("--drip-ms", "Gap between bytes of the drip fault (ms).")]
_ApiKey = Annotated[_OptS, _o("--api-key", "Require this Bearer key on /v1/ (as vLLM).")]
_Preset = Annotated[
    _OptS, _o("--preset", "Continuous-batching model preset (dsv4-flash-8gpu, ...).")
]
_Mode = Annotated[str, _o("--model-mode", "fixed (--ttft-ms/--itl-ms) or batching.")]
_Scale = Annotated[float, _o("--time-scale", "Multiply every batching-model time by X.")]
_LogEvery = Annotated[int, _o("--decode-log-interval", "Decode steps per Decode batch line.")]
_SpecAlgo = Annotated[_OptS, _o("--speculative-algorithm", "SGLang: EAGLE (MTP).")]
_SpecSteps = Annotated[_OptI, _o("--speculative-num-steps", "SGLang: draft steps.")]
_SpecTopk = Annotated[_OptI, _o("--speculative-eagle-topk", "SGLang: draft top-k (1).")]
_SpecDraft = Annotated[
    _OptI, _o("--speculative-num-draft-tokens", "SGLang: verify width (steps+1).")
]
_MemFrac = Annotated[_OptF, _o("--mem-fraction-static", "SGLang: static memory pool.")]
_GraphBs = Annotated[_OptI, _o("--cuda-graph-max-bs", "SGLang: largest CUDA graph.")]
_MaxRun = Annotated[_OptI, _o("--max-running-requests", "SGLang: batch cap.")]
_TunedFp8 = Annotated[bool, _o("--tuned-fp8", "Sim only: tuned FP8 block-GEMM configs.")]
_Tp = Annotated[int, _o("--tp-size", "SGLang: TP ranks (one trace each per capture).")]
_Prefix = Annotated[
    bool, _o("--prefix-cache", "Batching: reuse 16-token prompt blocks (a prefix cache).")
]
_Shift = Annotated[
    float, _o("--logprob-shift", "Temper the served distribution by this mean KL (nats).")
]
_LaunchSd = Annotated[
    float,
    _o("--launch-sd", "Per-launch speed factor exp(N(0, S²)) on every time; S 0.04 ≈ 4%."),
]
_LaunchSeed = Annotated[_OptI, _o("--launch-seed", "Seed of the launch factor (default: random).")]
_LaunchState = Annotated[
    Path | None,
    _o("--launch-state", "Launch counter file: each launch draws the factor of (seed, count)."),
]
_Startup = Annotated[
    float, _o("--startup-s", "Seconds before listening (stands in for weight loading).")
]
_ExitDelay = Annotated[
    float, _o("--exit-delay-s", "Seconds from SIGINT/SIGTERM to exit, also while starting.")
]


@_command("serve")
def serve_cmd(
    host: _Host = "127.0.0.1",
    port: _Port = 8000,
    model: _Model = "inferlab-sim",
    ttft_ms: _Ttft = None,
    itl_ms: _Itl = None,
    jitter_ms: _Jitter = 0.0,
    tokens_per_chunk: _Chunk = 1,
    seed: _Seed = 0,
    vocab_size: _Vocab = 4096,
    max_model_len: _MaxLen = 32768,
    truth_path: _Truth = None,
    fault: _Fault = None,
    fault_after: _FaultAfter = 0,
    fault_every: _FaultEvery = 1,
    fault_at_s: _FaultAt = None,
    fault_for_s: _FaultFor = None,
    drip_ms: _Drip = 1.0,
    api_key: _ApiKey = None,
    preset: _Preset = None,
    model_mode: _Mode = "fixed",
    time_scale: _Scale = 1.0,
    decode_log_interval: _LogEvery = 40,
    speculative_algorithm: _SpecAlgo = None,
    speculative_num_steps: _SpecSteps = None,
    speculative_eagle_topk: _SpecTopk = None,
    speculative_num_draft_tokens: _SpecDraft = None,
    mem_fraction_static: _MemFrac = None,
    cuda_graph_max_bs: _GraphBs = None,
    max_running_requests: _MaxRun = None,
    tuned_fp8: _TunedFp8 = False,
    tp_size: _Tp = 1,
    startup_s: _Startup = 0.0,
    exit_delay_s: _ExitDelay = 0.0,
    prefix_cache: _Prefix = False,
    logprob_shift: _Shift = 0.0,
    launch_sd: _LaunchSd = 0.0,
    launch_seed: _LaunchSeed = None,
    launch_state: _LaunchState = None,
) -> None:
    """Serve the SIMULATED engine until SIGINT/SIGTERM.

    By default every answer keeps a fixed schedule (--ttft-ms, then --itl-ms per token). With
    --preset or --model-mode batching, a continuous-batching model paces the answers and
    SGLang's levers apply (NCCL_PROTO is read from the environment). With --launch-sd, one
    speed factor drawn at start-up (and logged) multiplies every time of this launch.
    """
    options = dict(locals())  # every option above, by its SimConfig field name
    from inferlab.sim.launch import config_from_options, run_engine

    config = config_from_options(options, os.environ, _labels(options))
    code = run_engine(config, os.environ, shlex.join(sys.argv[1:]), _log, _ready)
    if code:
        raise typer.Exit(code=code)


@_command("tokenizer")
def tokenizer_cmd(
    out_dir: Annotated[
        Path, typer.Argument(help="Directory to write (tokenizer.json and config).")
    ],
    vocab_size: Annotated[int, typer.Option("--vocab-size", help="Vocabulary size (≥ 2).")] = 4096,
) -> None:
    """Write the SIMULATED engine's word tokenizer as a Hugging Face tokenizer directory.

    The directory (tokenizer.json and its config) lets a client count tokens exactly as the
    SIMULATED engine does: one word of its vocabulary is one token.
    """
    from inferlab.sim.tokenizer import WordTokenizer

    if vocab_size < 2:
        raise ConfigError(f"--vocab-size: must be at least 2, got {vocab_size}")
    path = WordTokenizer(vocab_size).save_hf(out_dir)
    print(f"wrote the SIMULATED engine's tokenizer (vocab {vocab_size}) to {path}")
