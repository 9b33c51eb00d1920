"""``inferlab sim ...``: the reference engine, an OpenAI-compatible server with known timing."""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from inferlab.errors import ConfigError

if TYPE_CHECKING:
    from inferlab.sim.config import SimConfig

sim_app = typer.Typer(
    help="The reference engine: a SIMULATED OpenAI-compatible server with known timing.",
    no_args_is_help=True,
)

#: SimConfig field → the option that sets it, so errors name what the user typed.
_OPTION = {"truth_path": "--truth", "levers.nccl_proto": "NCCL_PROTO"}
_LEVERS = (
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "mem_fraction_static",
    "cuda_graph_max_bs",
    "max_running_requests",
    "tuned_fp8",
)


def _config(**fields: Any) -> Any:
    from inferlab.sim.config import sim_config

    labels = {f: _OPTION.get(f, "--" + f.replace("_", "-")) for f in fields}
    labels.update({"levers." + f: "--" + f.replace("_", "-") for f in _LEVERS})
    labels["levers.nccl_proto"] = "NCCL_PROTO"
    return sim_config(labels=labels, **fields)


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _startup_lines(config: SimConfig) -> None:
    """What the batching model logs before serving: its banner, then SGLang's warning for each
    block-FP8 GEMM shape without a tuned config (none with --tuned-fp8)."""
    from inferlab.sim.presets import get_preset, untuned_fp8_lines

    _log(
        f"[SIMULATED] inferlab sim: continuous-batching model, preset "
        f"{config.preset or 'generic'}, time scale {config.time_scale:g}; every line marked "
        "[SIMULATED] imitates SGLang's log"
    )
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    for line in untuned_fp8_lines(get_preset(config.preset or "generic"), config.levers):
        _log(f"[SIMULATED] [{stamp} TP0] {line}")


@sim_app.command("serve")
def serve_cmd(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port; 0 picks a free one.")] = 8000,
    model: Annotated[str, typer.Option("--model", help="Model id served.")] = "inferlab-sim",
    ttft_ms: Annotated[
        float | None, typer.Option("--ttft-ms", help="Time to first token (ms); default 50.")
    ] = None,
    itl_ms: Annotated[
        float | None, typer.Option("--itl-ms", help="Gap per output token (ms); default 10.")
    ] = None,
    jitter_ms: Annotated[
        float,
        typer.Option("--jitter-ms", help="Std of normal noise on TTFT and each token gap (ms)."),
    ] = 0.0,
    tokens_per_chunk: Annotated[
        int, typer.Option("--tokens-per-chunk", help="Tokens per SSE event after the first (K).")
    ] = 1,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the output text and the jitter.")
    ] = 0,
    vocab_size: Annotated[
        int, typer.Option("--vocab-size", help="Word tokenizer vocabulary.")
    ] = 4096,
    max_model_len: Annotated[int, typer.Option("--max-model-len", help="Context length.")] = 32768,
    truth: Annotated[
        Path | None,
        typer.Option("--truth", help="Append each finished request's ground truth here (JSONL)."),
    ] = None,
    fault: Annotated[
        str | None,
        typer.Option("--fault", help="Misbehave on purpose (docs/reliability.md lists kinds)."),
    ] = None,
    fault_after: Annotated[
        int, typer.Option("--fault-after", help="Token chunks before the fault.")
    ] = 0,
    fault_every: Annotated[int, typer.Option("--fault-every", help="Fault every Nth request.")] = 1,
    fault_at_s: Annotated[
        float | None,
        typer.Option("--fault-at-s", help="Faults from T s after the first request (exit: at T)."),
    ] = None,
    fault_for_s: Annotated[
        float | None, typer.Option("--fault-for-s", help="Faults only for D s from --fault-at-s.")
    ] = None,
    drip_ms: Annotated[
        float, typer.Option("--drip-ms", help="Gap between bytes of the drip fault (ms).")
    ] = 1.0,
    api_key: Annotated[
        str | None, typer.Option("--api-key", help="Require this Bearer key on /v1/ (as vLLM).")
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option("--preset", help="Continuous-batching model preset (dsv4-flash-8gpu, ...)."),
    ] = None,
    model_mode: Annotated[
        str,
        typer.Option("--model-mode", help="fixed (--ttft-ms/--itl-ms) or batching."),
    ] = "fixed",
    time_scale: Annotated[
        float, typer.Option("--time-scale", help="Multiply every batching-model time by X.")
    ] = 1.0,
    decode_log_interval: Annotated[
        int, typer.Option("--decode-log-interval", help="Decode steps per Decode batch line.")
    ] = 40,
    speculative_algorithm: Annotated[
        str | None, typer.Option("--speculative-algorithm", help="SGLang: EAGLE (MTP).")
    ] = None,
    speculative_num_steps: Annotated[
        int | None, typer.Option("--speculative-num-steps", help="SGLang: draft steps.")
    ] = None,
    speculative_eagle_topk: Annotated[
        int | None, typer.Option("--speculative-eagle-topk", help="SGLang: draft top-k (1).")
    ] = None,
    speculative_num_draft_tokens: Annotated[
        int | None,
        typer.Option("--speculative-num-draft-tokens", help="SGLang: verify width (steps+1)."),
    ] = None,
    mem_fraction_static: Annotated[
        float | None, typer.Option("--mem-fraction-static", help="SGLang: static memory pool.")
    ] = None,
    cuda_graph_max_bs: Annotated[
        int | None, typer.Option("--cuda-graph-max-bs", help="SGLang: largest CUDA graph.")
    ] = None,
    max_running_requests: Annotated[
        int | None, typer.Option("--max-running-requests", help="SGLang: batch cap.")
    ] = None,
    tuned_fp8: Annotated[
        bool, typer.Option("--tuned-fp8", help="Sim only: tuned FP8 block-GEMM configs.")
    ] = False,
    tp_size: Annotated[
        int, typer.Option("--tp-size", help="SGLang: TP ranks (one trace each per capture).")
    ] = 1,
    startup_s: Annotated[
        float,
        typer.Option(
            "--startup-s", help="Seconds before listening (stands in for weight loading)."
        ),
    ] = 0.0,
) -> None:
    """Serve the SIMULATED engine until SIGINT/SIGTERM.

    With --preset or --model-mode batching, a continuous-batching model paces the answers and
    SGLang's levers apply (NCCL_PROTO is read from the environment).
    """
    batching = preset is not None or model_mode == "batching"
    if batching and (ttft_ms is not None or itl_ms is not None):
        raise ConfigError("--ttft-ms/--itl-ms: fixed-timing options; not with --preset/batching")
    levers = {
        "speculative_algorithm": speculative_algorithm,
        "speculative_num_steps": speculative_num_steps,
        "speculative_eagle_topk": speculative_eagle_topk,
        "speculative_num_draft_tokens": speculative_num_draft_tokens,
        "mem_fraction_static": mem_fraction_static,
        "cuda_graph_max_bs": cuda_graph_max_bs,
        "max_running_requests": max_running_requests,
        "tuned_fp8": tuned_fp8,
        "nccl_proto": os.environ.get("NCCL_PROTO") if batching else None,
    }
    config = _config(
        host=host,
        port=port,
        model=model,
        ttft_ms=50.0 if ttft_ms is None else ttft_ms,
        itl_ms=10.0 if itl_ms is None else itl_ms,
        jitter_ms=jitter_ms,
        tokens_per_chunk=tokens_per_chunk,
        seed=seed,
        vocab_size=vocab_size,
        max_model_len=max_model_len,
        truth_path=truth,
        fault=fault,
        fault_after=fault_after,
        fault_every=fault_every,
        fault_at_s=fault_at_s,
        fault_for_s=fault_for_s,
        drip_ms=drip_ms,
        api_key=api_key,
        model_mode=model_mode,
        preset=preset,
        time_scale=time_scale,
        decode_log_interval=decode_log_interval,
        startup_s=startup_s,
        levers={k: v for k, v in levers.items() if v is not None},
        tp_size=tp_size,
    )
    _serve(config, batching)


def _serve(config: Any, batching: bool) -> None:
    """Serve ``config`` (a ``SimConfig``), logging to stderr, after its startup delay."""
    from inferlab.sim.presets import StartupFailure
    from inferlab.sim.server import serve

    # as real servers do (SGLang's server_args=..., vLLM's non-default args): the whole argv,
    # secrets included: what inferlab stores from this log must not carry them
    _log("[SIMULATED] started as: inferlab " + shlex.join(sys.argv[1:]))

    def ready(url: str) -> None:
        if batching:
            _log("[SIMULATED] The server is fired up and ready to roll! (inferlab sim)")
        print(f"inferlab sim (SIMULATED engine) listening on {url}", flush=True)

    if batching:
        _startup_lines(config)
    if config.startup_s:
        _log(f"[SIMULATED] inferlab sim: loading weights (a {config.startup_s:g} s startup delay)")
        time.sleep(config.startup_s)  # stands in for loading weights; SIGTERM ends it
    try:
        crashed = serve(config, on_ready=ready, log=_log if batching else None)
    except StartupFailure as exc:
        for line in exc.lines:
            _log(f"[SIMULATED] {line}")
        raise typer.Exit(code=1) from None
    if crashed:
        _log("[SIMULATED] inferlab sim: fault 'exit': the server exited on purpose")
        raise typer.Exit(code=1)


@sim_app.command("tokenizer")
def tokenizer_cmd(
    out_dir: Annotated[
        Path, typer.Argument(help="Directory to write (tokenizer.json and config).")
    ],
    vocab_size: Annotated[int, typer.Option("--vocab-size", help="Vocabulary size (≥ 2).")] = 4096,
) -> None:
    """Write the SIMULATED engine's word tokenizer as a Hugging Face tokenizer directory."""
    from inferlab.sim.tokenizer import WordTokenizer

    if vocab_size < 2:
        raise ConfigError(f"--vocab-size: must be at least 2, got {vocab_size}")
    path = WordTokenizer(vocab_size).save_hf(out_dir)
    print(f"wrote the SIMULATED engine's tokenizer (vocab {vocab_size}) to {path}")
