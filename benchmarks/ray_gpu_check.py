"""Issue 20's three checks of a 2×H200 ``inferlab run --ray`` (scripts/h200x2_ray.sh), from the
store and the nvidia-smi sampler's CSV; prints Markdown, exit 1 when a check fails.

    python benchmarks/ray_gpu_check.py --db h200x2.db --ray-campaign h200x2-ray \\
        --seq-campaign h200x2-seq --smi smi.csv --wall-ray 120.5 --wall-seq 230.1

1. **Side by side, each on its own GPU**: the configs' server lives (launch record → stop
   record, store clock, 1 s resolution) overlap; each config's GPU (the one Ray gave it: the
   NVML index its run's environment snapshot mapped, else its ``CUDA_VISIBLE_DEVICES``) differs; in the sampler, every device held at
   most one compute process at a time, no pid ever showed on two devices, and each device's
   memory rose more than 1 GiB above its first sample while its config's server lived.
2. **The drain read the right device**: the stop record's ``gpu_indices`` is the config's GPU,
   and its ``after_mib`` matches the sampler's ``memory.used`` of that GPU at the record's time
   (within the drain tolerance + 256 MiB; the other GPU's figure then is shown beside it).
3. **Wall time**: ``--ray`` over sequential, the ratio (< 1 passes).

The CSV is what the script's sampler writes: ``t,kind,a,b,c`` then, every 0.5 s, nvidia-smi's
``--format=csv,noheader`` rows prefixed with the epoch time and ``app`` (``pid, gpu_uuid,
used_memory``) or ``gpu`` (``index, uuid, memory.used``), e.g.
``1764590000.512,gpu,1, GPU-5c1d…, 81234 MiB``. Rows that are not that are counted, not fatal.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

RISE_MIB = 1024  # a server's memory on its GPU: at least this much above the device's floor
MATCH_MIB = 256  # sampler vs stored figure, on top of the drain's tolerance


@dataclass
class Smi:
    """The sampler's rows: ``apps`` (t, pid, uuid, MiB) and ``gpus`` (t, index, uuid, MiB)."""

    apps: list[tuple[float, int, str, int]] = field(default_factory=list)
    gpus: list[tuple[float, int, str, int]] = field(default_factory=list)
    skipped: int = 0

    def series(self, index: int) -> list[tuple[float, int]]:
        return sorted((t, m) for t, i, _, m in self.gpus if i == index)

    def uuid_index(self) -> dict[str, int]:
        return {u: i for _, i, u, _ in self.gpus}

    def at(self, index: int, t: float) -> tuple[float, int] | None:
        """The sample of GPU ``index`` nearest to ``t``: (t, MiB)."""
        s = self.series(index)
        if not s:
            return None
        j = bisect_left(s, (t, -1))
        near = [s[k] for k in (j - 1, j) if 0 <= k < len(s)]
        return min(near, key=lambda x: abs(x[0] - t))


def _mib(text: str) -> int:
    return int(text.strip().split()[0])


def read_smi(path: str | Path) -> Smi:
    """Parse the sampler's CSV (see the module docstring)."""
    out = Smi()
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines()[1:]:
        parts = [p.strip() for p in line.split(",")]
        try:
            t, kind = float(parts[0]), parts[1]
            if kind == "app" and len(parts) == 5:
                out.apps.append((t, int(parts[2]), parts[3], _mib(parts[4])))
            elif kind == "gpu" and len(parts) == 5:
                out.gpus.append((t, int(parts[2]), parts[3], _mib(parts[4])))
            else:
                out.skipped += 1
        except (ValueError, IndexError):
            out.skipped += 1  # "[N/A]", "No devices were found", a cut line
    return out


@dataclass
class Life:
    """One config's server as the store recorded it (epoch seconds)."""

    name: str
    launched: float  # the launch record (server ready)
    ready_s: float
    stopped: float  # the stop record (after the drain)
    gpu: int | None  # NVML index of the GPU Ray gave it (its run's snapshot, else its CVD)
    cuda_visible: str | None
    server_pid: int | None
    drain: dict[str, Any] | None


def _epoch(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S%z").timestamp()


def _env_gpu(db: sqlite3.Connection, config_id: int) -> int | None:
    row = db.execute(
        "SELECT e.snapshot_json FROM runs r JOIN environments e ON e.id = r.environment_id "
        "WHERE r.config_id=? ORDER BY r.id LIMIT 1",
        (config_id,),
    ).fetchone()
    idx = json.loads(row[0]).get("gpu_indices") if row else None
    return int(idx[0]) if idx and len(idx) == 1 else None


def load_lives(db_path: str | Path, campaign: str) -> list[Life]:
    """Every config of ``campaign`` with a launch and a stop record."""
    db = sqlite3.connect(str(db_path))
    rows = db.execute(
        "SELECT g.id, g.name, v.kind, v.detail_json, v.created_at FROM verifications v "
        "JOIN configs g ON g.id = v.config_id JOIN campaigns c ON c.id = g.campaign_id "
        "WHERE c.name=? AND v.kind IN ('launch', 'stop') ORDER BY v.id",
        (campaign,),
    ).fetchall()
    got: dict[str, dict[str, Any]] = {}
    for gid, name, kind, detail, at in rows:
        got.setdefault(name, {"id": gid})[kind] = (json.loads(detail), _epoch(at))
    lives = []
    for name, g in got.items():
        if "launch" not in g or "stop" not in g:
            continue
        (launch, t_launch), (stop, t_stop) = g["launch"], g["stop"]
        drain = stop.get("gpu_memory")
        cvd = launch.get("cuda_visible_devices")
        gpu = _env_gpu(db, g["id"])  # what Ray gave it, as the node's snapshot mapped it
        if gpu is None and cvd is not None and str(cvd).isdigit():
            gpu = int(cvd)  # a CUDA index is the NVML index on GPUs of one model (docs/cluster.md)
        lives.append(
            Life(
                name,
                t_launch,
                float(launch.get("ready_s") or 0.0),
                t_stop,
                gpu,
                cvd,
                launch.get("server_pid"),
                drain,
            )
        )
    db.close()
    return lives


@dataclass
class Check:
    name: str
    passed: bool | None  # None: not checked (the reason is in lines)
    lines: list[str]


def side_by_side(lives: list[Life], smi: Smi | None) -> Check:
    """Check 1 (see the module docstring)."""
    lines: list[str] = []
    if len(lives) < 2:
        return Check("side by side", False, [f"{len(lives)} config(s) with launch and stop"])
    start = max(x.launched - x.ready_s for x in lives)
    end = min(x.stopped for x in lives)
    lines.append(f"server lives overlap {max(0.0, end - start):.0f} s (store clock, ±1 s)")
    for x in lives:
        lines.append(
            f"{x.name}: GPU {x.gpu} (CUDA_VISIBLE_DEVICES={x.cuda_visible}, "
            f"server group {x.server_pid}), {x.launched - x.ready_s - start:+.0f} s … "
            f"{x.stopped - start:+.0f} s"
        )
    gpus = [x.gpu for x in lives]
    ok = end > start and None not in gpus and len(set(gpus)) == len(gpus)
    if smi is None or not smi.gpus:
        lines.append("no sampler rows: the per-process and per-GPU memory part is not checked")
        return Check("side by side", ok, lines)
    where = smi.uuid_index()
    per_t: dict[tuple[float, int], set[int]] = {}
    pid_gpus: dict[int, set[int]] = {}
    for t, pid, uuid, _ in smi.apps:
        if uuid in where:
            per_t.setdefault((t, where[uuid]), set()).add(pid)
            pid_gpus.setdefault(pid, set()).add(where[uuid])
    most = max((len(p) for p in per_t.values()), default=0)
    shared = sorted(p for p, g in pid_gpus.items() if len(g) > 1)
    lines.append(
        f"sampler: {len(smi.gpus)} GPU rows, {len(smi.apps)} process rows; at most {most} "
        f"process(es) on one device at a time; pids per GPU: "
        + ", ".join(
            f"GPU {g}: {sorted(p for p, gs in pid_gpus.items() if g in gs)}"
            for g in sorted(set(where.values()))
        )
    )
    if not smi.apps:
        lines.append("no process rows (a container's NVML may list none): devices' memory only")
    ok = ok and most <= 1 and not shared
    if shared:
        lines.append(f"pids on two devices: {shared}")
    for x in lives:
        if x.gpu is None:
            continue
        s = smi.series(x.gpu)
        floor = s[0][1] if s else 0
        inside = [m for t, m in s if x.launched - x.ready_s <= t <= x.stopped]
        peak = max(inside, default=0)
        rose = peak - floor >= RISE_MIB
        ok = ok and rose
        lines.append(
            f"{x.name}: GPU {x.gpu} peaked at {peak:,} MiB during its life (floor {floor:,})"
        )
    return Check("side by side", ok, lines)


def drain_device(lives: list[Life], smi: Smi | None) -> Check:
    """Check 2 (see the module docstring)."""
    if not lives:
        return Check("drain read the right device", None, ["no config launched and stopped"])
    lines: list[str] = []
    ok: bool | None = True
    for x in lives:
        d = x.drain
        if d is None:
            lines.append(f"{x.name}: no drain figures stored (no NVML where it ran)")
            ok = None if ok is not False else ok
            continue
        idx = d.get("gpu_indices")
        right = idx == [x.gpu] if x.gpu is not None else None
        after = list(d["after_mib"])
        line = f"{x.name}: stop record reads GPU {idx}, after {after} MiB"
        if smi is not None and smi.gpus and x.gpu is not None:
            near = smi.at(x.gpu, x.stopped)
            others = sorted({i for _, i, _, _ in smi.gpus} - {x.gpu})
            other = [smi.at(i, x.stopped) for i in others]
            if near is not None:
                match = abs(near[1] - after[0]) <= int(d.get("tolerance_mib", 256)) + MATCH_MIB
                right = bool(right) and match
                line += f"; sampler GPU {x.gpu}: {near[1]:,} MiB ({near[0] - x.stopped:+.1f} s)"
                line += "".join(f", GPU {i}: {o[1]:,} MiB" for i, o in zip(others, other) if o)
        lines.append(line + (" ✓" if right else " ✗"))
        ok = False if right is False else ok
    return Check("drain read the right device", ok, lines)


def wall_ratio(wall_ray: float | None, wall_seq: float | None) -> Check:
    """Check 3: the ``--ray`` campaign's wall time over the sequential run's."""
    if not wall_ray or not wall_seq:
        return Check("wall time", None, ["wall times not given"])
    r = wall_ray / wall_seq
    return Check(
        "wall time", r < 1.0, [f"--ray {wall_ray:.1f} s / sequential {wall_seq:.1f} s = {r:.3f}"]
    )


def render(checks: list[Check], extra: list[str]) -> str:
    mark = {True: "PASS", False: "FAIL", None: "not checked"}
    out = ["## Issue 20 checks (benchmarks/ray_gpu_check.py)", ""]
    for c in checks:
        out.append(f"- **{c.name}**: {mark[c.passed]}")
        out += [f"  - {line}" for line in c.lines]
    return "\n".join(out + extra) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--ray-campaign", required=True)
    ap.add_argument("--seq-campaign")
    ap.add_argument("--smi", help="the sampler's CSV")
    ap.add_argument("--wall-ray", type=float)
    ap.add_argument("--wall-seq", type=float)
    ap.add_argument("--tune-wall", default="", help="'ray=S dev01=S gpu0=S' (shown)")
    a = ap.parse_args(argv)
    smi = read_smi(a.smi) if a.smi and Path(a.smi).exists() else None
    lives = load_lives(a.db, a.ray_campaign)
    checks = [
        side_by_side(lives, smi),
        drain_device(lives, smi),
        wall_ratio(a.wall_ray, a.wall_seq),
    ]
    extra = []
    if a.seq_campaign:
        seq = load_lives(a.db, a.seq_campaign)
        extra.append(f"- sequential run: {len(seq)} config(s) launched and stopped")
    if a.tune_wall:
        extra.append(f"- tune wall seconds: {a.tune_wall}")
    if smi is not None and smi.skipped:
        extra.append(f"- sampler rows not parsed: {smi.skipped}")
    sys.stdout.write(render(checks, extra))
    return 1 if any(c.passed is False for c in checks) else 0


if __name__ == "__main__":
    raise SystemExit(main())
