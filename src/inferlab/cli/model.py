"""``inferlab model ...``: models inferlab makes itself for real engines (no downloads)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .render import command

model_app = typer.Typer(
    help="Models inferlab makes itself, so real engines run without downloading weights.",
    no_args_is_help=True,
)


@model_app.callback()
def _model() -> None:
    """Models inferlab makes itself, so real engines run without downloading weights."""


@command(model_app, "tiny")
def tiny_cmd(
    out: Annotated[Path, typer.Argument(help="Directory to write the model into.")],
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random weights.")] = 0,
) -> None:
    """Write a deterministic tiny random-weight Llama model and tokenizer to OUT.

    Hugging Face format. It never emits end-of-sequence or other special tokens, so every
    request returns exactly max_tokens tokens of printable text.
    """
    from rich.console import Console

    from inferlab.models import write_tiny_model

    info = write_tiny_model(out, seed=seed)
    Console().print(
        f"wrote tiny Llama model to [bold]{info.path}[/bold]: "
        f"{info.num_parameters:,} parameters, vocab {info.vocab_size}, seed {info.seed}",
        highlight=False,
    )


@command(model_app, "random")
def random_cmd(
    out: Annotated[Path, typer.Argument(help="Directory to write the model into.")],
    preset: Annotated[
        str, typer.Option("--preset", help="Size: test, 0.5b, 1b (Llama-3.2-1B shape) or 3b.")
    ] = "1b",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random weights.")] = 0,
    dtype: Annotated[
        str, typer.Option("--dtype", help="Weight dtype written: bfloat16 or float32.")
    ] = "bfloat16",
    quant: Annotated[
        str,
        typer.Option(
            "--quant", help="none, or fp8-block: projections in 128x128 block FP8 (vLLM, SGLang)."
        ),
    ] = "none",
    workers: Annotated[
        int | None, typer.Option("--workers", help="Threads drawing tensors (default: CPUs).")
    ] = None,
) -> None:
    """Write a random-weight Llama model of a real size and its tokenizer to OUT.

    Hugging Face format, deterministic from the seed (whatever the thread count); like
    `model tiny` it never emits
    end-of-sequence or other special tokens, so every request returns exactly max_tokens tokens.
    """
    from rich.console import Console

    from inferlab.models import write_random_model

    info = write_random_model(out, preset, seed=seed, dtype=dtype, quant=quant, workers=workers)
    kind = info.dtype if info.quant == "none" else f"{info.quant} (rest {info.dtype})"
    Console().print(
        f"wrote random Llama model ({info.preset}) to [bold]{info.path}[/bold]: "
        f"{info.num_parameters:,} parameters, {kind}, {info.size_bytes / 1e9:.2f} GB, "
        f"seed {info.seed}, in {info.seconds:.1f} s",
        highlight=False,
    )
