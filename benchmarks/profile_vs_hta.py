"""``inferlab profile`` against HolisticTraceAnalysis (HTA) on a large Kineto trace.

The large trace is made from the real eager MoE decode trace (tests/fixtures/traces/
moe_decode_trace.json.gz, one H200): its 16 decode steps are repeated, every copy shifted in time
(ts) and in ids (correlation, External id, flow id) and its ranges renamed ``decode_step_<n>``,
keeping Kineto's own text layout, until the file reaches the target size.

Each tool runs in its own subprocess, measured with ``resource.getrusage(RUSAGE_CHILDREN)``
(wall time, peak RSS of the child): inferlab (``python -m inferlab.cli.main profile TRACE
--format json --segment all``) under the project's python, and HTA's ``TraceAnalysis(...).get_gpu_kernel_breakdown
(visualize=False)`` in a separate venv under ``~/.cache/inferlab/hta-0.5.0`` installed from the
frozen ``benchmarks/hta_requirements.txt`` with ``--no-deps`` (never into the project venv).

Usage::

    python benchmarks/profile_vs_hta.py --size-mb 1000 [--size-mb 250] [--hta-timeout 1800]
        [--append-results]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "tests" / "fixtures" / "traces" / "moe_decode_trace.json.gz"
REQS = Path(__file__).resolve().parent / "hta_requirements.txt"
HTA_VERSION = "0.5.0"
MARKER = ".inferlab-hta-ok"
SEP = "\n  },\n  {"

HTA_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
ta = TraceAnalysis(trace_dir=sys.argv[1])
t1 = time.perf_counter()
kernel_type_df, kernel_df = ta.get_gpu_kernel_breakdown(visualize=False)
t2 = time.perf_counter()
top = kernel_df.sort_values("sum (us)", ascending=False).head(3)
print(json.dumps({"load_s": t1 - t0, "breakdown_s": t2 - t1,
                  "kernel_types": kernel_type_df.to_dict("records"),
                  "top": [[str(n)[:60], float(s)] for n, s in zip(top["name"], top["sum (us)"])]}))
"""


def hta_python() -> Path:
    """The HTA venv's python; installs it (pinned, --no-deps) on first use."""
    home = Path(os.environ.get("INFERLAB_HTA_HOME", Path.home() / ".cache" / "inferlab"))
    venv = home / f"hta-{HTA_VERSION}"
    py = venv / "bin" / "python"
    if (venv / MARKER).exists():
        return py
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", "-r", str(REQS)], check=True
    )
    subprocess.run([str(py), "-c", "import hta.trace_analysis"], check=True)
    (venv / MARKER).write_text(HTA_VERSION)
    return py


def make_trace(dst: Path, size_mb: float, src: Path = SRC) -> dict[str, Any]:
    """Write a Kineto trace of about ``size_mb`` MB by repeating ``src``'s decode steps."""
    text = gzip.decompress(src.read_bytes()).decode()
    start = text.index('"traceEvents": [') + len('"traceEvents": [')
    end = text.rindex("\n  }\n  ]") + len("\n  }")
    header, body, trailer = text[:start], text[start:end], text[end:]
    pieces = body.split(SEP)
    events = [
        json.loads(("" if i == 0 else "{") + p + ("}" if i < len(pieces) - 1 else ""))
        for i, p in enumerate(pieces)
    ]
    dec = [
        e
        for e in events
        if e.get("cat") == "user_annotation" and e["name"].startswith("decode_step_")
    ]
    d0 = min(e["ts"] for e in dec)
    idx = [
        i
        for i, e in enumerate(events)
        if e.get("ph") in ("X", "s", "f") and e.get("cat") != "Trace" and e["ts"] >= d0
    ]
    d1 = max(events[i]["ts"] + events[i].get("dur", 0.0) for i in idx)
    period = d1 - d0 + 1000.0
    max_id = max(
        max(
            e.get("args", {}).get("correlation", 0),
            e.get("args", {}).get("External id", 0),
            e.get("id", 0) if isinstance(e.get("id"), int) else 0,
        )
        for e in events
    )
    nsteps = len(dec)
    step_bytes = sum(len(pieces[i]) + len(SEP) for i in idx)
    reps = max(0, int((size_mb * 1e6 - len(text)) / step_bytes))
    ts_re = re.compile(r'"ts": ([0-9.]+)')
    id_re = re.compile(r'("(?:correlation|External id|id)": )(\d+)')
    name_re = re.compile(r'"name": "decode_step_(\d+)"')
    with dst.open("w") as f:
        f.write(header)
        f.write(SEP.join(pieces[:-1]))
        for r in range(1, reps + 1):
            shift, ids = r * period, r * (max_id + 1)
            for i in idx:
                p = pieces[i]
                p = ts_re.sub(lambda m, s=shift: f'"ts": {float(m.group(1)) + s:.3f}', p)
                p = id_re.sub(lambda m, k=ids: f"{m.group(1)}{int(m.group(2)) + k}", p)
                p = name_re.sub(
                    lambda m, k=r * nsteps: f'"name": "decode_step_{int(m.group(1)) + k}"', p
                )
                f.write(SEP + p)
        f.write(SEP + pieces[-1])
        f.write(trailer)
    return {"bytes": dst.stat().st_size, "decode_steps": nsteps * (reps + 1), "copies": reps}


def measure(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``argv`` once; wall seconds and the child's peak RSS (MiB, from getrusage)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {
            "ok": False,
            "wall_s": time.perf_counter() - t0,
            "error": f"timeout after {timeout:.0f} s",
        }
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out: dict[str, Any] = {"ok": p.returncode == 0, "wall_s": wall, "rc": p.returncode}
    # ru_maxrss of RUSAGE_CHILDREN is the largest child so far: valid when it grew
    out["peak_rss_mib"] = peak / 1024 if peak > before else None
    out["stdout"] = p.stdout[-4000:]
    if p.returncode != 0:
        out["error"] = (p.stderr or p.stdout)[-2000:]
    return out


def run_one(kind: str, trace: Path, timeout: float) -> dict[str, Any]:
    """Measure one tool in a fresh subprocess (so its peak RSS is its own)."""
    argv = [sys.executable, __file__, "_child", kind, str(trace), str(timeout)]
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        return {"ok": False, "error": p.stderr[-2000:]}
    return dict(json.loads(p.stdout.splitlines()[-1]))


def child(kind: str, trace: Path, timeout: float) -> dict[str, Any]:
    if kind == "inferlab":
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        argv = [
            sys.executable,
            "-m",
            "inferlab.cli.main",
            "profile",
            str(trace),
            "--segment",
            "all",
            "--format",
            "json",
        ]
        return measure(argv, timeout, env)
    py = hta_python()
    d = trace.parent / f"hta-{trace.stem}"
    d.mkdir(exist_ok=True)
    link = d / trace.name
    if not link.exists():
        link.symlink_to(trace)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return measure([str(py), "-c", HTA_SCRIPT, str(d)], timeout, env)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_child":
        print(json.dumps(child(sys.argv[2], Path(sys.argv[3]), float(sys.argv[4]))))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mb", type=float, action="append", help="trace size(s), MB (1e6 B)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/inferlab-profile-bench"))
    ap.add_argument("--hta-timeout", type=float, default=1800.0)
    ap.add_argument("--skip-hta", action="store_true")
    ap.add_argument("--append-results", action="store_true", help="append to benchmarks/RESULTS.md")
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for size in args.size_mb or [1000.0]:
        trace = args.workdir / f"moe_x{int(size)}MB.json"
        if not trace.exists():
            t0 = time.perf_counter()
            info = make_trace(trace, size)
            print(
                f"made {trace} ({info['bytes'] / 1e6:.0f} MB, {info['decode_steps']} decode steps) in {time.perf_counter() - t0:.0f} s",
                flush=True,
            )
        row: dict[str, Any] = {"size_mb": trace.stat().st_size / 1e6, "trace": str(trace)}
        row["inferlab"] = run_one("inferlab", trace, 3600)
        print(
            f"inferlab: {row['inferlab'].get('wall_s', 0):.1f} s, {row['inferlab'].get('peak_rss_mib')} MiB",
            flush=True,
        )
        if not args.skip_hta:
            row["hta"] = run_one("hta", trace, args.hta_timeout)
            print(
                f"hta: {row['hta'].get('wall_s', 0):.1f} s, {row['hta'].get('peak_rss_mib')} MiB ok={row['hta'].get('ok')} {row['hta'].get('error', '')[-300:]}",
                flush=True,
            )
        rows.append(row)
        if args.json_out:
            args.json_out.write_text(json.dumps(rows, indent=2))
    print(json.dumps([{k: v for k, v in r.items()} for r in rows], indent=2)[:20000])
    if args.append_results:
        append_results(rows)


def append_results(rows: list[dict[str, Any]]) -> None:
    lines = [
        "",
        f"## `inferlab profile` vs HolisticTraceAnalysis {HTA_VERSION} ({time.strftime('%Y-%m-%d %H:%M')}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()})",
        "",
        "`benchmarks/profile_vs_hta.py`: the real MoE decode trace's 16 decode steps repeated to the size below; "
        "each tool in its own subprocess (wall time; peak RSS from getrusage). HTA: "
        "`TraceAnalysis(trace_dir).get_gpu_kernel_breakdown(visualize=False)`, default parser backend. "
        "inferlab: `inferlab profile TRACE --segment all --format json` (all analyses, not only the breakdown).",
        "",
        "| trace | inferlab wall | inferlab peak RSS | HTA wall | HTA peak RSS | speed-up | memory ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        a, h = r["inferlab"], r.get("hta", {})
        aw, am = a.get("wall_s"), a.get("peak_rss_mib")
        hw, hm = h.get("wall_s"), h.get("peak_rss_mib")
        sp = f"{hw / aw:.1f}×" if h.get("ok") and aw else "–"
        mr = f"{am / hm:.3f}" if h.get("ok") and am and hm else "–"
        hws = f"{hw:.1f} s" if h.get("ok") else f"failed ({h.get('error', 'not run')[-80:]})"
        lines.append(
            f"| {r['size_mb']:.0f} MB | {aw:.1f} s | {am:.0f} MiB | {hws} | "
            f"{(f'{hm:.0f} MiB' if hm else '–')} | {sp} | {mr} |"
        )
    with (Path(__file__).resolve().parent / "RESULTS.md").open("a") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
