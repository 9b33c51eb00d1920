"""Client accuracy against the reference engine's ground truth, inferlab vs its peers.

Starts ``inferlab sim serve`` (TTFT 50 ms, ITL 10 ms, 128 output tokens, 128 input tokens),
drives it at each concurrency with every tool — a raw-socket floor client, inferlab, and the
peers of benchmarks/peers.py in their own venvs — and compares each tool's TTFT (mean, p99) and
ITL (mean, p99) with what the server itself recorded (``GET /truth``). A fresh server per run.

    python benchmarks/client_accuracy.py [--levels 1,16,64,128,256] [--tools floor,inferlab,...]
                                         [--record]   # append the table to RESULTS.md

error = client statistic − ground-truth statistic (ms); "kept schedule" = the server's own
lateness p99 ≤ 2 ms in that run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from floor_client import run_floor  # noqa: E402
from inferlab.config.bench import BenchConfig, WorkloadSpec  # noqa: E402
from inferlab.load.bench import run_bench  # noqa: E402
from inferlab.records import RequestRecord  # noqa: E402
from inferlab.sim.process import sim_process  # noqa: E402
from inferlab.sim.tokenizer import WordTokenizer  # noqa: E402
from inferlab.stats.metrics import itl_ms  # noqa: E402
from inferlab.stats.summary import percentile  # noqa: E402

TTFT_MS, ITL_MS, N_IN, N_OUT = 50.0, 10.0, 128, 128
MODEL = "inferlab-sim"


@dataclass
class Row:
    tool: str
    level: int
    ok: int
    ttft_mean: float
    ttft_p99: float
    itl_mean: float
    itl_p99: float
    truth: dict[str, float]
    lateness_p99: float
    load1: float
    note: str = ""

    def err(self, key: str) -> float:
        return float(getattr(self, key) - self.truth[key])


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as r:
        return bytes(r.read())


def truth_stats(url: str) -> tuple[dict[str, float], float, int]:
    rows = [json.loads(x) for x in _get(url + "/truth").decode().splitlines() if x]
    rows = [r for r in rows if r.get("chunks") and r.get("status") == 200]
    ttft = [(r["chunks"][0][1] - r["recv_ns"]) / 1e6 for r in rows]
    itl: list[float] = []
    for r in rows:
        ch = r["chunks"]
        for i in range(1, len(ch)):
            k = ch[i][2]
            itl.extend([(ch[i][1] - ch[i - 1][1]) / 1e6 / k] * k)
    summary = json.loads(_get(url + "/truth/summary"))
    stats = {
        "ttft_mean": sum(ttft) / len(ttft) if ttft else float("nan"),
        "ttft_p99": percentile(ttft, 99),
        "itl_mean": sum(itl) / len(itl) if itl else float("nan"),
        "itl_p99": percentile(itl, 99),
    }
    return stats, float(summary["lateness_ms"]["p99"] or 0.0), len(rows)


def _stats(ttft: list[float], itl: list[float]) -> dict[str, float]:
    return {
        "ttft_mean": sum(ttft) / len(ttft) if ttft else float("nan"),
        "ttft_p99": percentile(ttft, 99),
        "itl_mean": sum(itl) / len(itl) if itl else float("nan"),
        "itl_p99": percentile(itl, 99),
    }


def run_tool(
    tool: str, level: int, n: int, tokdir: Path, work: Path, workers: int | None = None
) -> Row:
    load1 = os.getloadavg()[0]
    with sim_process("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS)) as sim:
        note = ""
        if tool == "floor":
            tok = WordTokenizer()
            rng = random.Random(level)
            prompts = [tok.decode(tok.random_ids(N_IN, rng)) for _ in range(n)]
            host, port = sim.url.split("//")[1].split(":")
            recs = run_floor(
                host, int(port), model=MODEL, prompts=prompts, n_out=N_OUT, concurrency=level
            )
            ttft, itl = [], []
            for fr in recs:
                if not fr.token_ns:
                    continue
                ttft.append((fr.token_ns[0] - fr.send_ns) / 1e6)
                times = sorted(set(fr.token_ns))
                rr = RequestRecord(
                    0, "", event_ns=times, event_tokens=[fr.token_ns.count(t) for t in times]
                )
                itl.extend(itl_ms(rr))
            ok = len(ttft)
        elif tool == "inferlab":
            cfg = BenchConfig(
                url=sim.url,
                model=MODEL,
                engine="sim",
                concurrency=[level],
                workload=WorkloadSpec(input_tokens=N_IN, output_tokens=N_OUT),
                requests=n,
                tokenizer=tokdir,
                workers=workers,
            )
            res = run_bench(cfg)
            pr = res.points[0]
            good = [r for r in pr.records if r.ok and not r.warmup]
            ttft = [r.ttft_ns / 1e6 for r in good if r.ttft_ns is not None]
            itl = [g for r in good for g in itl_ms(r)]
            ok = len(good)
            note = f"{pr.workers} worker(s), loop lag p99 {pr.loop_lag_ms.p99:.2f} ms"
        else:
            import peers

            pres = peers.run_peer(
                tool,
                url=sim.url,
                model=MODEL,
                tokenizer_dir=tokdir,
                concurrency=level,
                num_requests=n,
                input_tokens=N_IN,
                output_tokens=N_OUT,
                workdir=work / f"{tool}-{level}",
            )
            if pres.error:
                note = "FAILED: " + pres.error.strip().splitlines()[-1][:120]
            ttft, itl, ok = pres.ttft_ms, pres.itl_ms, pres.ok
        truth, late, _ = truth_stats(sim.url)
    s = _stats(ttft, itl)
    return Row(
        tool,
        level,
        ok,
        s["ttft_mean"],
        s["ttft_p99"],
        s["itl_mean"],
        s["itl_p99"],
        truth,
        late,
        load1,
        note,
    )


def table(rows: list[Row]) -> list[str]:
    """Errors against the server's truth, and each tool's own error beyond the floor client's
    at the same level ("own" = tool error − floor error)."""
    floor = {r.level: r for r in rows if r.tool == "floor"}
    lines = [
        "| C | tool | ok | TTFT mean err | own | TTFT p99 err | ITL mean err | ITL p99 err "
        "| own | truth TTFT mean / ITL p99 | server lateness p99 | load1 | note |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for r in rows:
        kept = "" if r.lateness_p99 <= 2.0 else " (server behind)"
        f = floor.get(r.level)
        own_ttft = r.err("ttft_mean") - f.err("ttft_mean") if f and r is not f else float("nan")
        own_itl = r.err("itl_p99") - f.err("itl_p99") if f and r is not f else float("nan")
        lines.append(
            f"| {r.level} | {r.tool} | {r.ok} | {r.err('ttft_mean'):+.2f} | {own_ttft:+.2f} | "
            f"{r.err('ttft_p99'):+.2f} | {r.err('itl_mean'):+.3f} | {r.err('itl_p99'):+.2f} | "
            f"{own_itl:+.2f} | {r.truth['ttft_mean']:.2f} / {r.truth['itl_p99']:.2f} | "
            f"{r.lateness_p99:.2f}{kept} | {r.load1:.2f} | {r.note} |"
        )
    return lines


def verdicts(rows: list[Row]) -> list[str]:
    """The targets of the issue, checked per level where the server kept its schedule."""
    out = []
    for level in sorted({r.level for r in rows}):
        at = {r.tool: r for r in rows if r.level == level}
        me = at.get("inferlab")
        if me is None:
            continue
        peers = [r for t, r in at.items() if t not in ("inferlab", "floor") and r.ok]
        best = min((abs(r.err("ttft_mean")) for r in peers), default=float("nan"))
        kept = me.lateness_p99 <= 2.0
        limit = 2.0 if level == 1 else 5.0
        out.append(
            f"- C={level}: inferlab TTFT mean error {me.err('ttft_mean'):+.2f} ms "
            f"(target ≤ {limit:g} ms{'' if level <= 64 else ', none set'}), ITL p99 error "
            f"{me.err('itl_p99'):+.2f} ms (target ≤ 2 ms), best peer TTFT mean error "
            f"{best:.2f} ms → ratio {abs(me.err('ttft_mean')) / best if best else float('nan'):.2f}"
            f" (target ≤ 0.25); server {'kept' if kept else 'did NOT keep'} its schedule"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="1,16,64,128,256")
    ap.add_argument("--tools", default="floor,inferlab,vllm,sglang,aiperf")
    ap.add_argument("--requests", type=int, default=0, help="per level (default max(32, 2C))")
    ap.add_argument("--record", action="store_true", help="append the table to RESULTS.md")
    ap.add_argument("--workers", type=int, default=None, help="inferlab's worker processes")
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    tools = args.tools.split(",")
    work = Path(tempfile.mkdtemp(prefix="inferlab-acc-"))
    tokdir = WordTokenizer().save_hf(work / "tokenizer")
    rows: list[Row] = []
    for level in levels:
        n = args.requests or max(32, 2 * level)
        for tool in tools:
            t0 = time.monotonic()
            try:
                row = run_tool(tool, level, n, tokdir, work, args.workers)
            except Exception as exc:  # a peer that breaks must not end the benchmark
                nan = float("nan")
                row = Row(
                    tool,
                    level,
                    0,
                    nan,
                    nan,
                    nan,
                    nan,
                    {"ttft_mean": nan, "ttft_p99": nan, "itl_mean": nan, "itl_p99": nan},
                    nan,
                    os.getloadavg()[0],
                    f"FAILED: {type(exc).__name__}: {exc}"[:160],
                )
            rows.append(row)
            print(table([row])[-1], f"({time.monotonic() - t0:.0f} s)", flush=True)
    out = [*table(rows), "", *verdicts(rows)]
    print("\n".join(out))
    if args.record:
        cpu = os.cpu_count()
        with (ROOT / "RESULTS.md").open("a", encoding="utf-8") as f:
            f.write(
                f"\n### Client accuracy, {time.strftime('%Y-%m-%d %H:%M')} "
                f"({cpu} CPUs, sim TTFT {TTFT_MS:g} ms / ITL {ITL_MS:g} ms, "
                f"{N_IN} in / {N_OUT} out)\n\n" + "\n".join(out) + "\n"
            )


if __name__ == "__main__":
    main()
