"""How fast ``analyze_log`` streams a big server log, beside a ``grep -c`` / ``wc -l`` ceiling.

Builds a log of ``--size-mb`` (default 1024) under /tmp by repeating real fixture lines
(tests/fixtures/engine_logs: SGLang Decode/Prefill batch lines, uvicorn access lines, vLLM
engine stats, tqdm bars joined by ``\\r``, ANSI colours, a docker-compose prefix) with varied
numbers, a few untuned-FP8 warnings and a CUDA-graph OOM at the end. Then, in child processes:

- ``analyze_log`` on it: seconds, lines/s, MB/s, peak RSS (the child's ``ru_maxrss``);
- ``wc -l`` and ``grep -c 'Decode batch'`` on the same file: the ceiling of one pass in C.

    python benchmarks/log_throughput.py [--size-mb 1024] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

FIX = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "engine_logs"


def _real(rel: str, n: int) -> str:
    return (FIX / rel).read_text().splitlines()[n - 1]


def build(path: Path, size: int, seed: int = 0) -> int:
    """Write about ``size`` bytes of log to ``path``; returns the number of lines."""
    rng = random.Random(seed)
    decode = _real("sglang_decode/sglang-issue4407_old-style-decode-batch-largest-len.log", 1)
    decode_new = _real("sglang_decode/sglang-pr22166_new-style-prefill-decode-mixed.log", 1)
    prefill = _real("sglang_decode/sglang-pr22166_new-style-prefill-decode-mixed.log", 3)
    access = _real("sglang_decode/sglang-pr22166_new-style-prefill-decode-mixed.log", 2)
    stats = _real("vllm_metrics_log/sendnn-inference-pr1030_vllm-loggers-prefix-hit-rate.log", 2)
    fp8 = _real("sglang_fp8_default/sglang-pr5675_h20-w8a8-default-single-line.log", 1)
    oom = (
        FIX / "oom_graph_capture/sglang-issue5285_deepep-h20-capture-oom-traceback.log"
    ).read_text()
    bar = "Capturing batches (bs=1 avail_mem=14.43 GB):  50%|█████     | 1/2 [00:01<00:01]"
    lines = 0
    with path.open("w", encoding="utf-8") as f:
        buf: list[str] = [fp8.replace("N=2112", f"N={n}") for n in (2112, 4096, 7168)]
        written = 0
        while written < size:
            r = rng.randint(1, 64)
            tps = 20.0 + 3.0 * min(r, 8) + rng.random()
            kind = rng.random()
            if kind < 0.35:
                line = decode.replace("#running-req: 509", f"#running-req: {r}").replace(
                    "7897.87", f"{tps:.2f}"
                )
            elif kind < 0.45:
                line = decode_new.replace("1635.11", f"{tps:.2f}")
            elif kind < 0.55:
                line = prefill
            elif kind < 0.60:
                line = stats
            elif kind < 0.62:
                line = f"{bar}\r{bar.replace('50%', '100%')}\r{access}"
            elif kind < 0.64:
                line = f"\x1b[32m{access}\x1b[0m"
            elif kind < 0.66:
                line = f"sglang-1  | {access}"
            else:
                line = access
            buf.append(line)
            if len(buf) >= 4096:
                chunk = "\n".join(buf) + "\n"
                f.write(chunk)
                written += len(chunk.encode())
                lines += len(buf)
                buf = []
        buf.append(oom.rstrip("\n"))
        chunk = "\n".join(buf) + "\n"
        f.write(chunk)
        lines += chunk.count("\n")
    return lines


def _child_analyze(path: str) -> None:
    from inferlab.logs import analyze_log

    t0 = time.perf_counter()
    a = analyze_log(path)
    dt = time.perf_counter() - t0
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "seconds": dt,
                "lines": a.lines,
                "bytes": a.bytes,
                "visited": a.visited,
                "findings": [f.kind for f in a.findings],
                "series_total": a.series_total,
                "series_kept": len(a.series),
                "peak_rss_mib": rss_kib / 1024,
            }
        )
    )


def _timed(cmd: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip()
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--path", default="/tmp/inferlab-log-throughput.log")
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    ap.add_argument("--analyze", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.analyze:
        _child_analyze(args.analyze)
        return
    path = Path(args.path)
    t0 = time.perf_counter()
    n = build(path, args.size_mb << 20)
    size = path.stat().st_size
    print(f"built {path}: {size / 1e6:,.0f} MB, {n:,} lines in {time.perf_counter() - t0:.1f} s")
    try:
        wc_s, wc = _timed(["wc", "-l", str(path)])  # also warms the page cache
        wc_s, wc = _timed(["wc", "-l", str(path)])
        grep_s, grep = _timed(["grep", "-c", "Decode batch", str(path)])
        r = subprocess.run(
            [sys.executable, __file__, "--analyze", str(path)],
            capture_output=True,
            text=True,
            check=True,
        )
        res = json.loads(r.stdout)
    finally:
        if not args.keep:
            os.unlink(path)
    mb = size / 1e6
    print(f"wc -l:                 {wc_s:6.2f} s  {mb / wc_s:8,.0f} MB/s  ({wc.split()[0]} lines)")
    print(f"grep -c 'Decode batch': {grep_s:5.2f} s  {mb / grep_s:8,.0f} MB/s  ({grep} lines)")
    print(
        f"analyze_log:           {res['seconds']:6.2f} s  {mb / res['seconds']:8,.0f} MB/s  "
        f"{res['lines'] / res['seconds']:,.0f} lines/s  peak RSS {res['peak_rss_mib']:.0f} MiB"
    )
    print(
        f"  ratio to grep -c: {grep_s / res['seconds']:.3f}; to wc -l: {wc_s / res['seconds']:.3f}"
        f"; lines visited {res['visited']:,} of {res['lines']:,}; series kept "
        f"{res['series_kept']} of {res['series_total']:,}; findings {res['findings']}"
    )


if __name__ == "__main__":
    main()
