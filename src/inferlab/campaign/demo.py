"""The embedded demo: the reference engine (SIMULATED) measured by ``run_bench``."""

from __future__ import annotations

import tempfile
from pathlib import Path

from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.load.bench import BenchEvents, BenchResult, run_bench
from inferlab.sim.process import sim_process
from inferlab.sim.tokenizer import WordTokenizer

__all__ = ["DEMO_SIM_ARGS", "run_sim_demo"]

#: The simulated engine of the demo: 40 ms TTFT, 8 ms per token, 2 tokens per SSE event
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
