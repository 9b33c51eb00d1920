"""vLLM's ``benchmarks/auto_tune/auto_tune.sh`` method, re-implemented on inferlab's parts: the
anchor ``inferlab optimize`` is compared with (issue 45).

The method, as the script does it (vllm-project/vllm, benchmarks/auto_tune/auto_tune.sh):
1. the memory fraction: from 0.98 down by 0.01 (not below 0.90), one launch each, until the
   grid's largest cell (last ``max_num_seqs``, last ``max_num_batched_tokens``) starts;
2. the grid ``max_num_seqs × max_num_batched_tokens``, one launch per cell: a benchmark at
   request rate ``inf`` (``--inf-requests`` prompts, 1000 in the script); if its p99 latency is
   within the limit, the cell's rate is ``inf``; else the rate starts at int(its request
   throughput) + 1 and is lowered by 1 req/s, a benchmark of ``--probe-requests`` prompts (100)
   each, until the limit holds (or the rate reaches 0: the cell fails);
3. the best cell is the one of highest request throughput (req/s) among those that held,
   printed with its rate; no interval, no repeat, no check of the launch-to-launch spread.
   (The script's last step, a profiled run of the best cell, is left out: ``--profile-best``
   counts it as one more launch.)
The limit is auto_tune's p99 E2E latency (``--max-latency-ms``) or, for the side by side with
``inferlab optimize``, the same SLO as its campaign (``--slo ttft_p99_ms=200,tpot_p99_ms=20``),
each read as a point estimate, as the script reads its p99 E2EL.

Each benchmark is ``inferlab bench --format json`` (open loop, Poisson arrivals; rate ``inf``:
every prompt at once, a closed loop of one request per user); each server is launched by
``inferlab.server`` (its own process group, stopped after its cell). The flags per engine are
one row of ``FLAGS``: vLLM's, or the reference engine's (``inferlab sim``: it has no step
token budget, so its grid's second axis is ``--cuda-graph-max-bs``; SIMULATED).

    python benchmarks/auto_tune_method.py --engine sim --engine-args "--preset generic" \\
        --seqs 16,64 --tokens 8,64 --slo ttft_p99_ms=200,tpot_p99_ms=20
    python benchmarks/auto_tune_method.py --engine vllm --model /tmp/m1b-fp8 \\
        --engine-args "--linear-backend triton --max-model-len 2048" --seqs 128,256 \\
        --tokens 2048,4096,8192 --slo ttft_p99_ms=200,tpot_p99_ms=20

It prints each cell and, last, one JSON line: launches used, wall time, the capacity found.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from inferlab.engines import get_engine
from inferlab.errors import LaunchError
from inferlab.server import LaunchSpec, free_port, launch, stop, wait_ready


@dataclass(frozen=True)
class Flags:
    """An engine's three flags the method turns."""

    seqs: str
    tokens: str
    memory: str


#: the method's flags per engine (vLLM's are the script's)
FLAGS = {
    "vllm": Flags("--max-num-seqs", "--max-num-batched-tokens", "--gpu-memory-utilization"),
    "sim": Flags("--max-running-requests", "--cuda-graph-max-bs", "--mem-fraction-static"),
}


@dataclass
class Cell:
    seqs: int
    tokens: int
    started: bool = False
    rate: str | None = None  # the rate that held ("inf" or req/s); None: none held
    throughput: float | None = None  # request throughput at that rate (req/s)
    latency: dict[str, float] = field(default_factory=dict)  # the limits' p99s there (ms)
    probes: int = 0


@dataclass
class Tally:
    launches: int = 0
    benchmarks: int = 0
    t0: float = field(default_factory=time.monotonic)


class Server:
    """One launch of the engine with ``args``, stopped on exit; ``None`` URL: it did not start."""

    def __init__(self, opts: argparse.Namespace, args: list[str], tally: Tally, name: str):
        self.opts, self.args, self.tally, self.name = opts, args, tally, name
        self.proc: Any = None
        self.url: str | None = None

    def __enter__(self) -> Server:
        spec = get_engine(self.opts.engine)
        port = free_port()
        argv = spec.launch_argv(
            self.opts.model, host="127.0.0.1", port=port, python=self.opts.python,
            args=[*shlex.split(self.opts.engine_args), *self.args],
            launcher="module" if self.opts.engine == "vllm" else None,
        )  # fmt: skip
        ls = LaunchSpec(
            name=self.name, argv=argv, env={}, port=port,
            log_path=self.opts.logs / f"{self.name}.log",
            health_url=f"http://127.0.0.1:{port}{spec.health_path}",
            ready_timeout_s=self.opts.ready_timeout_s, stop_grace_s=30.0, guard=True,
        )  # fmt: skip
        self.tally.launches += 1
        self.proc = launch(ls)
        try:
            wait_ready(self.proc)
            self.url = f"http://127.0.0.1:{port}"
        except LaunchError as exc:
            print(f"  {self.name}: did not start ({exc.kind})", flush=True)
        return self

    def __exit__(self, *exc: object) -> None:
        stop(self.proc)


def bench(opts: argparse.Namespace, url: str, rate: float | None, n: int, tally: Tally) -> Any:
    """One ``inferlab bench`` point (rate None: every prompt at once); its summary."""
    load = ["--rate", f"{rate:g}"] if rate is not None else ["--concurrency", str(n)]
    argv = [
        sys.executable, "-m", "inferlab", "bench", "--url", url, *load,
        "--requests", str(n), "--input-tokens", str(opts.input_tokens),
        "--output-tokens", str(opts.output_tokens), "--slo", opts.slo,
        "--format", "json", "--no-db",
    ]  # fmt: skip
    tally.benchmarks += 1
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"inferlab bench failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout)["points"][0]["summary"]


def held(summary: Any) -> tuple[bool, dict[str, float]]:
    """Whether every limit's p99 (a point estimate, as auto_tune reads P99 E2EL) is within it."""
    checks = summary["slo"]["checks"]
    values = {c["key"]: round(float(c["value_ms"]), 2) for c in checks}
    return all(c["value_ms"] <= c["limit_ms"] for c in checks), values


def memory_fraction(opts: argparse.Namespace, flags: Flags, tally: Tally) -> float | None:
    """Step 1: the highest fraction (0.98 down by 0.01, ≥ 0.90) the largest cell starts at."""
    top = [flags.seqs, str(opts.seqs[-1]), flags.tokens, str(opts.tokens[-1])]
    for i in range(9):
        frac = round(0.98 - 0.01 * i, 2)
        with Server(opts, [*top, flags.memory, f"{frac:g}"], tally, f"mem-{frac:g}") as s:
            if s.url is not None:
                return frac
    return None


def run_cell(opts: argparse.Namespace, flags: Flags, cell: Cell, frac: float, t: Tally) -> None:
    """Step 2 for one cell: its launch, rate inf, then the rate lowered until the limit holds."""
    args = [flags.seqs, str(cell.seqs), flags.tokens, str(cell.tokens), flags.memory, f"{frac:g}"]
    with Server(opts, args, t, f"cell-{cell.seqs}-{cell.tokens}") as s:
        if s.url is None:
            return
        cell.started = True
        summary = bench(opts, s.url, None, opts.inf_requests, t)
        cell.probes += 1
        ok, lat = held(summary)
        if ok:
            cell.rate, cell.throughput, cell.latency = "inf", summary["request_s"], lat
            return
        rate = int(summary["request_s"]) + 1
        while rate > 0:
            summary = bench(opts, s.url, float(rate), opts.probe_requests, t)
            cell.probes += 1
            ok, lat = held(summary)
            if ok:
                cell.rate, cell.throughput, cell.latency = str(rate), summary["request_s"], lat
                return
            rate -= 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--engine", choices=sorted(FLAGS), default="sim")
    p.add_argument("--model", default=None, help="the model directory (vllm)")
    p.add_argument("--python", default=sys.executable, help="the engine's Python")
    p.add_argument("--engine-args", default="", help="the engine's other flags (one string)")
    p.add_argument("--seqs", type=lambda s: [int(x) for x in s.split(",")], default=[128, 256])
    p.add_argument("--tokens", type=lambda s: [int(x) for x in s.split(",")],
                   default=[512, 1024, 2048, 4096])  # fmt: skip
    p.add_argument("--input-tokens", type=int, default=128)
    p.add_argument("--output-tokens", type=int, default=64)
    p.add_argument("--slo", default=None, help="limits, e.g. ttft_p99_ms=200,tpot_p99_ms=20")
    p.add_argument("--max-latency-ms", type=float, default=None, help="auto_tune's P99 E2EL")
    p.add_argument("--inf-requests", type=int, default=1000)
    p.add_argument("--probe-requests", type=int, default=100)
    p.add_argument("--ready-timeout-s", type=float, default=600.0)
    p.add_argument("--profile-best", action="store_true", help="count the profiled launch")
    p.add_argument("--logs", type=Path, default=None)
    opts = p.parse_args(argv)
    if (opts.slo is None) == (opts.max_latency_ms is None):
        p.error("give --slo or --max-latency-ms")
    opts.slo = opts.slo or f"e2e_p99_ms={opts.max_latency_ms:g}"
    opts.logs = opts.logs or Path(tempfile.mkdtemp(prefix="auto-tune-"))
    flags, tally = FLAGS[opts.engine], Tally()
    sim = " (SIMULATED: the reference engine)" if opts.engine == "sim" else ""
    print(f"auto_tune's method on {opts.engine}{sim}: grid {opts.seqs} × {opts.tokens}, "
          f"SLO {opts.slo}; logs in {opts.logs}", flush=True)  # fmt: skip
    frac = memory_fraction(opts, flags, tally)
    cells = [Cell(s, t) for s in opts.seqs for t in opts.tokens]
    if frac is not None:
        print(f"memory fraction {frac:g} ({tally.launches} launches)", flush=True)
        for c in cells:
            run_cell(opts, flags, c, frac, tally)
            print(f"  {flags.seqs} {c.seqs}, {flags.tokens} {c.tokens}: rate {c.rate} "
                  f"throughput {c.throughput} req/s, p99 {c.latency} ({c.probes} benchmarks)",
                  flush=True)  # fmt: skip
    good = [c for c in cells if c.throughput is not None]
    best = max(good, key=lambda c: c.throughput or 0.0, default=None)
    out = {
        "method": "vllm benchmarks/auto_tune/auto_tune.sh", "engine": opts.engine,
        "simulated": opts.engine == "sim", "slo": opts.slo, "memory_fraction": frac,
        "launches": tally.launches + (1 if opts.profile_best and best else 0),
        "benchmarks": tally.benchmarks, "wall_s": round(time.monotonic() - tally.t0, 1),
        "best": asdict(best) if best else None, "cells": [asdict(c) for c in cells],
    }  # fmt: skip
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
