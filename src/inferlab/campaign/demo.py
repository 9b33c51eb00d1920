"""The embedded demos.

``run_vllm_demo``: the method end to end on a real engine — builds (once) the vLLM CPU
environment, writes the tiny model, runs ``examples/vllm-cpu.toml`` (baseline, n-gram
speculative decoding, the same with Intel OpenMP preloaded, ``--max-num-seqs 4``; C=1, 4, 8)
into its own database and writes the report.

``run_sim_demo``: a quick sweep of the reference engine (SIMULATED), no campaign.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import inferlab
from inferlab.campaign.runner import CampaignEvents, CampaignResult, run_campaign
from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.envs.vllm_cpu import ensure_vllm_cpu
from inferlab.load.bench import BenchEvents, BenchResult, run_bench
from inferlab.models import write_tiny_model
from inferlab.sim.process import sim_process
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store import Store

__all__ = ["DEMO_SIM_ARGS", "EXAMPLES", "VLLM_DEMO_OUT", "run_sim_demo", "run_vllm_demo"]

EXAMPLES = Path(inferlab.__file__).parent / "examples"
VLLM_DEMO_OUT = Path("inferlab-out") / "vllm-cpu"

#: The simulated engine of the quick demo: 40 ms TTFT, 8 ms per token, 2 tokens per SSE event
#: after the first (as speculative decoding produces), a little jitter.
DEMO_SIM_ARGS = (
    "--ttft-ms",
    "40",
    "--itl-ms",
    "8",
    "--jitter-ms",
    "0.5",
    "--tokens-per-chunk",
    "2",
)


def run_vllm_demo(
    events: CampaignEvents | None = None, *, db: Path | None = None
) -> tuple[CampaignResult, Path]:
    """Run the vLLM-CPU demo campaign into a fresh database of its own; returns the result and
    the database path (the report is written from it)."""
    events = events or CampaignEvents()
    VLLM_DEMO_OUT.mkdir(parents=True, exist_ok=True)
    events.message("vLLM CPU environment (built once under ~/.cache/inferlab: ~4 min, 3 GiB) ...")
    python = ensure_vllm_cpu(log=events.message)
    model = VLLM_DEMO_OUT / "tiny"
    if not (model / "config.json").exists():
        events.message(f"writing the tiny model to {model} ...")
        write_tiny_model(model)
    iomp = python.parent.parent / "lib" / "libiomp5.so"
    os.environ["INFERLAB_VLLM_PYTHON"] = str(python)
    os.environ["INFERLAB_TINY_MODEL"] = str(model.resolve())
    os.environ["INFERLAB_CPU_PRELOAD"] = str(iomp) if iomp.exists() else ""
    path = db or VLLM_DEMO_OUT / "demo.db"
    for suffix in ("", "-wal", "-shm"):  # the demo's own database: every run starts clean
        Path(str(path) + suffix).unlink(missing_ok=True)
    with Store(path) as store:
        result = run_campaign(EXAMPLES / "vllm-cpu.toml", store=store, events=events)
    return result, path


def run_sim_demo(
    events: BenchEvents | None = None,
    *,
    concurrency: tuple[int, ...] = (1, 8, 32),
    requests: int = 32,
    out: Path | None = None,
) -> BenchResult:
    """Start the reference engine, sweep it at ``concurrency``, stop it; return the result."""
    with tempfile.TemporaryDirectory(prefix="inferlab-demo-") as tmp:
        tok = WordTokenizer().save_hf(Path(tmp) / "tokenizer")
        with sim_process(*DEMO_SIM_ARGS) as sim:
            cfg = BenchConfig(
                url=sim.url,
                engine="sim",
                concurrency=list(concurrency),
                workload=WorkloadSpec(input_tokens=128, output_tokens=64),
                requests=requests,
                warmup=4,
                tokenizer=tok,
            )
            return run_bench(cfg, events, out)
