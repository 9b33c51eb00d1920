"""How fast ``analyze_log`` streams a big server log, beside a ``grep -c`` / ``wc -l`` ceiling.

Builds a log of ``--size-mb`` (default 1024) under /tmp by repeating real fixture lines
(tests/fixtures/engine_logs: SGLang Decode/Prefill batch lines, uvicorn access lines, vLLM
engine stats, tqdm bars joined by ``\\r``, ANSI colours, a docker-compose prefix) with varied
numbers, a few untuned-FP8 warnings and a CUDA-graph OOM at the end. Then, in child processes:

- ``analyze_log`` on it: seconds, lines/s, MB/s, peak RSS (the child's ``ru_maxrss``);
- ``wc -l`` and ``grep -c 'Decode batch'`` on the same file: the ceiling of one pass in C.

With ``--baseline COMMIT`` the same file is also analysed by that commit's ``src`` (``git
archive``), ``--repeat`` times each, interleaved (new, old, new, old, ...; the machine may be
shared): the medians, their ratio, the load average around each run, and whether the two
gave the same ``to_json()`` (``seconds`` aside).

    python benchmarks/log_throughput.py [--size-mb 1024] [--keep] [--baseline REV --repeat 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "engine_logs"


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

    t0, c0 = time.perf_counter(), time.process_time()
    a = analyze_log(path)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = a.to_json()
    out.pop("seconds")
    print(
        json.dumps(
            {
                "seconds": dt,
                "cpu_seconds": cpu,
                "json_sha256": hashlib.sha256(json.dumps(out).encode()).hexdigest(),
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


def _analyze(path: Path, src: Path) -> dict[str, object]:
    """``analyze_log`` of ``path`` in a child process running the code under ``src``."""
    load = os.getloadavg()[0]
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, __file__, "--analyze", str(path)]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    res: dict[str, object] = json.loads(r.stdout)
    res["load1"] = f"{load:.2f} → {os.getloadavg()[0]:.2f}"
    return res


def _compare(path: Path, rev: str, repeat: int) -> None:
    """The current code and ``rev``'s, interleaved, ``repeat`` times each."""
    with tempfile.TemporaryDirectory() as tmp:
        tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], capture_output=True)
        subprocess.run(["tar", "-x", "-C", tmp], input=tar.stdout, check=True)
        runs: dict[str, list[dict[str, object]]] = {"new": [], rev: []}
        for i in range(repeat):
            for name, src in (("new", ROOT / "src"), (rev, Path(tmp) / "src"))[:: 1 - 2 * (i % 2)]:
                runs[name].append(_analyze(path, src))
                r = runs[name][-1]
                print(
                    f"  {name:>8}: {r['seconds']:6.2f} s wall, {r['cpu_seconds']:6.2f} s CPU, "
                    f"load1 {r['load1']}",
                    flush=True,
                )
    same = {r["json_sha256"] for v in runs.values() for r in v}
    for key in ("seconds", "cpu_seconds"):  # CPU time: less of the other jobs' share in it
        med = {k: statistics.median(float(str(r[key])) for r in v) for k, v in runs.items()}
        print(
            f"median {key}: new {med['new']:.2f}, {rev} {med[rev]:.2f}: ratio "
            f"{med['new'] / med[rev]:.3f} ({repeat} runs each, interleaved)"
        )
    print(f"to_json identical (seconds aside): {len(same) == 1}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--path", default="/tmp/inferlab-log-throughput.log")
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    ap.add_argument("--baseline", help="a git revision to compare with (interleaved runs)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each code (--baseline)")
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
        if args.baseline:
            _compare(path, args.baseline, args.repeat)
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
