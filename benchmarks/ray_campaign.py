"""``inferlab run --ray``: how much of a campaign's wall time side-by-side configs save.

The SIMULATED campaign: 4 configs of the reference engine, each with a 20 s startup standing in
for weight loading (``--startup-s``), one logical GPU each. It runs once on one host
(``inferlab run``, the sequential baseline), then with ``--ray`` on local Ray clusters of 1, 2
and 4 "GPU nodes" (``ray.cluster_utils.Cluster``, one logical GPU per node). The ratio is the
sequential wall time over the cluster's; the target is ≥ 0.8·N on N nodes.

    python benchmarks/ray_campaign.py [--startup-s 20] [--nodes 1,2,4] [--record]

``--record`` appends the table to benchmarks/RESULTS.md. Needs ``pip install 'inferlab[ray]'``.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.cluster.campaign import run_campaign_ray
from inferlab.cluster.connect import REAPER_CONFIG
from inferlab.store import Store

CAMPAIGN = """
[campaign]
name = "raybench"
output = "{out}"

[engine]
kind = "sim"
args = ["--ttft-ms", "20", "--itl-ms", "5", "--startup-s", "{startup}"]
ready_timeout_s = 300
stop_grace_s = 5
gpus = 1

[[config]]
name = "baseline"

[[config]]
name = "A"
extends = "baseline"
set = {{ "--itl-ms" = "4" }}

[[config]]
name = "B"
extends = "baseline"
set = {{ "--itl-ms" = "3" }}

[[config]]
name = "C"
extends = "baseline"
set = {{ "--ttft-ms" = "15" }}

[verify]
probes = [{{ prompt = "Capital of France in one word?", expect = '\\w' }}]

[load]
workload = {{ input_tokens = 64, output_tokens = 64 }}
concurrency = [1, 4]
requests = 16
"""

OBJ = 80 * 2**20


def _campaign(tmp: Path, startup: float) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    p = tmp / "raybench.toml"
    p.write_text(CAMPAIGN.format(out=tmp / "out", startup=startup))
    return p


def _ready_s(st: Store) -> float:
    """Mean launch-to-ready seconds of the campaign's configs (the startup plus the engine's
    own start: under CPU contention the part beyond the startup delay grows)."""
    import json

    rows = st.db.execute("SELECT detail_json FROM verifications WHERE kind = 'launch'").fetchall()
    vals = [float(json.loads(r[0])["ready_s"]) for r in rows]
    return sum(vals) / len(vals)


def sequential(tmp: Path, startup: float) -> tuple[float, float]:
    t0 = time.monotonic()
    with Store(tmp / "seq.db") as st:
        res = run_campaign(_campaign(tmp / "seq", startup), store=st)
        assert all(o.status == "measured" for o in res.outcomes), res.outcomes
        return time.monotonic() - t0, _ready_s(st)


def on_cluster(tmp: Path, startup: float, nodes: int) -> tuple[float, float, float]:
    """(campaign wall s, cluster start s, mean ready s) on a fresh local cluster of ``nodes``
    GPU nodes."""
    import ray
    from ray.cluster_utils import Cluster

    t0 = time.monotonic()
    c = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "include_dashboard": False,
            "object_store_memory": OBJ,
            "_system_config": REAPER_CONFIG,
        },
    )
    for _ in range(nodes):
        c.add_node(num_cpus=2, num_gpus=1, object_store_memory=OBJ)
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False, logging_level="warning")
    up = time.monotonic() - t0
    try:
        t1 = time.monotonic()
        with Store(tmp / f"ray{nodes}.db") as st:
            res = run_campaign_ray(
                _campaign(tmp / f"ray{nodes}", startup), store=st, address=c.address
            )
            wall = time.monotonic() - t1
            assert all(o.status == "measured" for o in res.outcomes), res.outcomes
            return wall, up, _ready_s(st)
    finally:
        ray.shutdown()
        c.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--startup-s", type=float, default=20.0)
    ap.add_argument("--nodes", default="1,2,4")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    sizes = [int(x) for x in args.nodes.split(",")]
    load0 = os.getloadavg()[0]
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="inferlab-raybench-") as d:
        tmp = Path(d)
        seq, seq_ready = sequential(tmp, args.startup_s)
        print(f"sequential (inferlab run): {seq:.1f} s", flush=True)
        rows = []
        for n in sizes:
            wall, up, ready = on_cluster(tmp, args.startup_s, n)
            ratio = seq / wall
            rows.append((n, wall, ratio, ratio / n, up, ready))
            print(f"{n} node(s): {wall:.1f} s, {ratio:.2f}× ({ratio / n:.2f}·N), cluster start "
                  f"{up:.1f} s", flush=True)  # fmt: skip
    load1 = os.getloadavg()[0]
    lines = [
        "",
        f"## `inferlab run --ray`: 4 configs with a {args.startup_s:g} s startup "
        f"({stamp}, `benchmarks/ray_campaign.py`)",
        "",
        f"SIMULATED engine (`--startup-s {args.startup_s:g}` stands in for weight loading); "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, shared machine, load1 "
        f"{load0:.2f} before → {load1:.2f} after. Local Ray clusters (`ray.cluster_utils`): a "
        "1-CPU head plus N nodes of 2 CPUs and 1 logical GPU; each config asks for 1 GPU, so N "
        "configs run at once. Sequential = the same campaign with `inferlab run` on one host. "
        "Wall = `run_campaign_ray` from plan to the last stop (the cluster's own start, shown "
        "apart, is not included). Target: ratio ≥ 0.8·N.",
        "",
        f"Sequential: {seq:.1f} s (mean launch-to-ready {seq_ready:.1f} s).",
        "",
        "| nodes | wall s | sequential / wall | per node (·N) | target met | mean ready s | "
        "cluster start s |",
        "|---:|---:|---:|---:|:---:|---:|---:|",
    ]
    for n, wall, ratio, per, up, ready in rows:
        ok = "yes" if per >= 0.8 else "no"
        lines.append(
            f"| {n} | {wall:.1f} | {ratio:.2f}× | {per:.2f} | {ok} | {ready:.1f} | {up:.1f} |"
        )
    print("\n".join(lines))
    if args.record:
        with open(Path(__file__).with_name("RESULTS.md"), "a", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
