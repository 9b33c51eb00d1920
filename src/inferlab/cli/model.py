"""``inferlab model ...``: models inferlab makes itself for real engines (no downloads)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

model_app = typer.Typer(
    help="Models inferlab makes itself, so real engines run without downloading weights.",
    no_args_is_help=True,
)


@model_app.callback()
def _model() -> None:
    """Models inferlab makes itself, so real engines run without downloading weights."""


@model_app.command("tiny")
def tiny_cmd(
    out: Annotated[Path, typer.Argument(help="Directory to write the model into.")],
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random weights.")] = 0,
) -> None:
    """Write a deterministic random-weight Llama model + tokenizer (Hugging Face format) to OUT.

    It never emits end-of-sequence or other special tokens, so every request returns exactly
    max_tokens tokens of printable text.
    """
    from rich.console import Console

    from inferlab.models import write_tiny_model

    info = write_tiny_model(out, seed=seed)
    Console().print(
        f"wrote tiny Llama model to [bold]{info.path}[/bold]: "
        f"{info.num_parameters:,} parameters, vocab {info.vocab_size}, seed {info.seed}",
        highlight=False,
    )
