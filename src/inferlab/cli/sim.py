"""``inferlab sim ...``: the reference engine, an OpenAI-compatible server with known timing."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from inferlab.errors import ConfigError

sim_app = typer.Typer(
    help="The reference engine: a SIMULATED OpenAI-compatible server with known timing.",
    no_args_is_help=True,
)

#: SimConfig field → the option that sets it, so errors name what the user typed.
_OPTION = {"truth_path": "--truth"}


def _config(**fields: Any) -> Any:
    from inferlab.sim.config import sim_config

    labels = {f: _OPTION.get(f, "--" + f.replace("_", "-")) for f in fields}
    return sim_config(labels=labels, **fields)


@sim_app.command("serve")
def serve_cmd(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port; 0 picks a free one.")] = 8000,
    model: Annotated[str, typer.Option("--model", help="Model id served.")] = "inferlab-sim",
    ttft_ms: Annotated[float, typer.Option("--ttft-ms", help="Time to first token (ms).")] = 50.0,
    itl_ms: Annotated[float, typer.Option("--itl-ms", help="Gap per output token (ms).")] = 10.0,
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
        typer.Option("--fault", help="Misbehave on purpose: stall, close, malformed or http500."),
    ] = None,
    fault_after: Annotated[
        int, typer.Option("--fault-after", help="Token chunks before the fault.")
    ] = 0,
    fault_every: Annotated[int, typer.Option("--fault-every", help="Fault every Nth request.")] = 1,
) -> None:
    """Serve the SIMULATED engine until SIGINT/SIGTERM."""
    config = _config(
        host=host,
        port=port,
        model=model,
        ttft_ms=ttft_ms,
        itl_ms=itl_ms,
        jitter_ms=jitter_ms,
        tokens_per_chunk=tokens_per_chunk,
        seed=seed,
        vocab_size=vocab_size,
        max_model_len=max_model_len,
        truth_path=truth,
        fault=fault,
        fault_after=fault_after,
        fault_every=fault_every,
    )
    from inferlab.sim.server import serve

    def ready(url: str) -> None:
        print(f"inferlab sim (SIMULATED engine) listening on {url}", flush=True)

    serve(config, on_ready=ready)


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
