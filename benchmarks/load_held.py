"""How much load ``inferlab bench`` holds on this machine: its TTFT against the server's truth.

For each concurrency C (and each worker count asked), a fresh reference engine (SIMULATED,
TTFT 50 ms, ITL 10 ms, 128 tokens in and out) is driven by ``run_bench`` with max(32, 2C)
requests; the client's TTFT mean is compared with the engine's own (``GET /truth``: receipt of
the request's first byte → write of the first token chunk). Reported per C: the error, the
client's loop lag (p99, max) and whether bench warned ``client-lag`` (p99 over the 1 ms limit),
with the load average before and after the run (the machine may be shared).

    python benchmarks/load_held.py [--levels 1,2,4,...,512] [--workers auto,2] [--record]

"held" = the highest C up to which every level kept |TTFT mean error| ≤ 5 ms; "lag ceiling" =
the lowest C at which bench warned of client lag instead.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from client_accuracy import ITL_MS, MODEL, N_IN, N_OUT, TTFT_MS, truth_stats  # noqa: E402
from inferlab.config.bench import BenchConfig, WorkloadSpec  # noqa: E402
from inferlab.load.bench import run_bench  # noqa: E402
from inferlab.sim.process import sim_process  # noqa: E402
from inferlab.sim.tokenizer import WordTokenizer  # noqa: E402

TARGET_MS = 5.0


@dataclass
class Level:
    c: int
    workers: int
    ok: int
    err_ms: float
    err_p99_ms: float
    lag_p99: float
    lag_max: float
    warned: bool
    lateness_p99: float
    load_before: float
    load_after: float


def measure(c: int, workers: int | None, tokdir: Path) -> Level:
    load0 = os.getloadavg()[0]
    with sim_process("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS)) as sim:
        cfg = BenchConfig(
            url=sim.url,
            model=MODEL,
            engine="sim",
            concurrency=[c],
            workload=WorkloadSpec(input_tokens=N_IN, output_tokens=N_OUT),
            requests=max(32, 2 * c),
            tokenizer=tokdir,
            workers=workers,
        )
        (p,) = run_bench(cfg).points
        truth, late, _ = truth_stats(sim.url)
    good = [r for r in p.records if r.ok and not r.warmup]
    ttft = sorted((r.ttft_ns or 0) / 1e6 for r in good)
    mean = sum(ttft) / len(ttft) if ttft else float("nan")
    p99 = ttft[min(len(ttft) - 1, int(0.99 * len(ttft)))] if ttft else float("nan")
    return Level(
        c,
        p.workers,
        len(good),
        mean - truth["ttft_mean"],
        p99 - truth["ttft_p99"],
        p.loop_lag_ms.p99,
        p.loop_lag_ms.max,
        any(w.kind == "client-lag" for w in p.warnings),
        late,
        load0,
        os.getloadavg()[0],
    )


def summary(rows: list[Level], label: str) -> str:
    held = 0
    for r in sorted(rows, key=lambda x: x.c):
        if abs(r.err_ms) > TARGET_MS:
            break
        held = r.c
    warned = [r.c for r in rows if r.warned]
    ceiling = f"C={min(warned)}" if warned else f"none up to C={max(r.c for r in rows)}"
    workers = sorted({r.workers for r in rows})
    return (
        f"- workers {label} (used: {', '.join(map(str, workers))}): TTFT error ≤ "
        f"{TARGET_MS:g} ms held up to C={held}; client-lag warning from {ceiling}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="1,2,4,8,16,32,64,128,256,512")
    ap.add_argument("--workers", default="auto,2", help="worker counts: auto and/or numbers")
    ap.add_argument("--record", action="store_true", help="append the table to RESULTS.md")
    args = ap.parse_args()
    tokdir = WordTokenizer().save_hf(Path(tempfile.mkdtemp(prefix="inferlab-held-")) / "tok")
    head = (
        "| workers asked | C | workers | ok | TTFT mean err | TTFT p99 err | loop lag p99 / max "
        "| client-lag warned | server lateness p99 | load1 before → after |"
    )
    out = [head, "|---|---:|---:|---:|---:|---:|---:|---|---:|---|"]
    lines: list[str] = []
    for label in args.workers.split(","):
        rows = []
        for c in (int(x) for x in args.levels.split(",")):
            r = measure(c, None if label == "auto" else int(label), tokdir)
            rows.append(r)
            out.append(
                f"| {label} | {c} | {r.workers} | {r.ok} | {r.err_ms:+.2f} | {r.err_p99_ms:+.2f} "
                f"| {r.lag_p99:.2f} / {r.lag_max:.2f} | {'yes' if r.warned else 'no'} "
                f"| {r.lateness_p99:.2f} | {r.load_before:.2f} → {r.load_after:.2f} |"
            )
            print(out[-1], flush=True)
        lines.append(summary(rows, label))
    text = "\n".join([*out, "", *lines])
    print(text)
    if args.record:
        with (ROOT / "RESULTS.md").open("a", encoding="utf-8") as f:
            f.write(
                f"\n### Load held, {time.strftime('%Y-%m-%d %H:%M')} ({os.cpu_count()} CPUs, "
                f"sim TTFT {TTFT_MS:g} ms / ITL {ITL_MS:g} ms, {N_IN} in / {N_OUT} out)\n\n"
                + text
                + "\n"
            )


if __name__ == "__main__":
    main()
