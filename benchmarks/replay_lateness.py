"""Send lateness of a trace replay: N requests of a Mooncake-format trace at R req/s.

Writes a synthetic trace in the published Mooncake layout (Poisson arrivals at ``--rate``,
inputs of 1-4 blocks of 512 tokens sharing 16 system-prompt blocks, 4-16 output tokens), starts
``inferlab sim serve`` (TTFT 5 ms, ITL 1 ms) and replays it with ``run_bench`` (``--trace``, one
client process), then prints the lateness of every send (send − scheduled: p50, p99, max),
the client's loop lag and the server's own chunk lateness (``GET /truth/summary``).

    .venv/bin/python benchmarks/replay_lateness.py [--requests 10000] [--rate 200]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

from inferlab.config.bench import BenchConfig
from inferlab.load.bench import run_bench
from inferlab.sim.tokenizer import WordTokenizer

ROOT = Path(__file__).resolve().parent.parent
READY = "inferlab sim (SIMULATED engine) listening on "


def write_trace(path: Path, n: int, rate: float, seed: int = 0) -> None:
    """``n`` Mooncake lines, Poisson arrivals at ``rate``/s (ms timestamps)."""
    rng = random.Random(seed)
    t, next_id, lines = 0.0, 16, []
    for _ in range(n):
        t += rng.expovariate(rate)
        shared = rng.sample(range(16), rng.randint(0, 2))
        own = rng.randint(1, 2)
        ids = [*shared, *range(next_id, next_id + own)]
        next_id += own
        inp = 512 * (len(ids) - 1) + rng.randint(1, 512)
        lines.append(json.dumps({"timestamp": int(t * 1000), "input_length": inp,
                                 "output_length": rng.randint(4, 16), "hash_ids": ids}))  # fmt: skip
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--rate", type=float, default=200.0)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    trace = tmp / "trace.jsonl"
    write_trace(trace, a.requests, a.rate)
    cmd = [sys.executable, "-m", "inferlab.cli.main", "sim", "serve", "--port", "0",
           "--ttft-ms", "5", "--itl-ms", "1"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith(READY):
        proc.kill()
        raise SystemExit(f"sim did not start: {line!r}")
    url = line[len(READY) :].strip()
    try:
        cfg = BenchConfig(url=url, engine="sim", trace=trace, workers=1,
                          tokenizer=WordTokenizer().save_hf(tmp / "tok"))  # fmt: skip
        load1 = os.getloadavg()[0]
        t0 = time.monotonic()
        [point] = run_bench(cfg).points
        wall = time.monotonic() - t0
        with urllib.request.urlopen(url + "/truth/summary") as r:
            server = json.loads(r.read())
    finally:
        proc.terminate()
        proc.wait(10)
    late = np.array([r.client_queue_delay_ns for r in point.records if r.scheduled_ns]) / 1e6
    ok = sum(r.ok for r in point.records)
    print(f"{point.point.label}: {len(point.records)} requests ({ok} ok) at {a.rate:g}/s, "
          f"{wall:.1f} s wall (prompts included), load1 {load1:.2f} -> {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"send lateness (send - scheduled), ms: p50 {np.percentile(late, 50):.3f}  "
          f"p99 {np.percentile(late, 99):.3f}  max {late.max():.3f}")  # fmt: skip
    lag = point.loop_lag_ms
    print(f"client loop lag, ms: p50 {lag.p50:.3f}  p99 {lag.p99:.3f}  max {lag.max:.3f}")
    print(f"trust: {point.trust.label}; server summary: {json.dumps(server)[:300]}")


if __name__ == "__main__":
    main()
