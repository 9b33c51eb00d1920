"""Does a verdict reproduce? One comparison rerun from scratch N times (issue 42).

``sim`` mode (SIMULATED, where the truth is known): the reference engine with a per-launch
speed factor (``sim serve --launch-sd S``: every launch's whole timing × exp(N(0, S²)), drawn
from ``--launch-seed`` and a fresh ``--launch-state`` counter per rerun; each launch's jitter
seeded by the rerun's ``--seed`` and its launch number), at S = 0, 2, 4 and 8%.
Each rerun is a fresh ``inferlab run`` of a campaign file this script writes (engine kind
``sim``, a fresh store, fresh launches; the library's ``campaign.drivers.runner.run_campaign``, which
``inferlab run`` calls, with the engine on threads of this process and every point read on its
model clock, ``campaign.parts.clock``: fast and free of this machine's CPU noise). Three configs:

- ``baseline``: ``--ttft-ms 2 --itl-ms 1 --jitter-ms 0.3`` (the jitter: a request-to-request
  spread within a launch);
- ``fast``: ``--itl-ms 0.9``: true TPOT ratio ×0.900;
- ``noop``: an environment variable the engine ignores: true ratio ×1.000.

The verdicts are read through the library (``report.compare.build_comparison``, the TPOT
cell at each load point): how often the fast candidate's interval holds ×0.9 (goal ≥ 90% for
a nominal 95%), how often it is claimed better, how often the do-nothing lever is claimed
(goal ≤ α = 5%), the median interval width, and how often the verdict says it is undecided.
The campaign's ``[load]`` is the defaults (today's design) except the workload, C=2 and a
fixed count; ``--set KEY=TOML`` overrides any ``[load]`` key (e.g. ``--set launches=2``).

``vllm`` mode (vLLM's CPU build, the demo's configs, truth unknown): C=1, the baseline and one
candidate, a few reruns (each fresh launches, a fresh store, the wall clock); how often a
rerun's estimate falls inside the first run's 95% interval, beside the ~83% that correct 95%
intervals give (Cumming & Maillardet 2006, "Confidence intervals and replication: where will
the next mean fall?", Psychological Methods 11(3):217-227). CPU-heavy (minutes).

    python benchmarks/reproducibility.py sim [--reruns 20] [--spreads 0 0.02 0.04 0.08]
        [--set KEY=TOML ...] [--label TEXT] [--record]
    python benchmarks/reproducibility.py vllm [--reruns 4] [--record]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
TRUE_FAST = 0.9
ALPHA = 0.05


@dataclass(frozen=True)
class Cell:
    """One candidate's TPOT verdict in one rerun."""

    claim: str
    estimate: float
    low: float
    high: float
    undecided: bool

    def holds(self, truth: float) -> bool:
        return self.low <= truth <= self.high


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str | Path):
        return json.dumps(str(v))
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml(x)}" for k, x in v.items()) + " }"
    return "[" + ", ".join(_toml(x) for x in v) + "]"


def sim_campaign(path: Path, name: str, sd: float, seed: int, overrides: dict[str, str]) -> Path:
    """Write the sim mode's campaign (see the module docstring) to ``path``."""
    state = path.parent / f"{name}.launches"
    args = ["--ttft-ms", "2", "--itl-ms", "1", "--jitter-ms", "0.3", "--launch-sd", f"{sd:g}"]
    args += ["--launch-seed", str(seed), "--launch-state", str(state), "--seed", str(seed)]
    load: dict[str, str] = {
        "workload": _toml({"input_tokens": 16, "output_tokens": 16}),
        "concurrency": "[2]",
        "requests": "40",
    }
    load.update(overrides)
    text = f"""[campaign]
name = {_toml(name)}
output = {_toml(path.parent / f"out-{name}")}

[engine]
kind = "sim"
args = {_toml(args)}
ready_timeout_s = 30
stop_grace_s = 5

[[config]]
name = "baseline"

[[config]]
name = "fast"
extends = "baseline"
set = {{ "--itl-ms" = "0.9" }}

[[config]]
name = "noop"
extends = "baseline"
env = {{ INFERLAB_REPRO_NOOP = "1" }}

[verify]
enabled = false

[load]
""" + "".join(f"{k} = {v}\n" for k, v in load.items())
    path.write_text(text)
    return path


def _cell(v: Any) -> Cell:
    r = v.ratio
    return Cell(v.claim, r.estimate, r.low, r.high, str(v.reason).startswith("undecided"))


def sim_rerun(
    work: Path, i: int, sd: float, seed: int, overrides: dict[str, str]
) -> dict[str, Any]:
    """One fresh campaign: ``{"fast": Cell, "noop": Cell, "launches": n, "s": wall s}``."""
    from inferlab.campaign.drivers.runner import run_campaign
    from inferlab.campaign.parts.clock import ModelClock
    from inferlab.campaign.parts.launch import InProcessSim
    from inferlab.report.compare import build_comparison
    from inferlab.store import Store

    t0 = time.monotonic()
    name = f"repro{i}"
    path = sim_campaign(work / f"{name}.toml", name, sd, seed, overrides)
    with Store(work / f"{name}.db") as store:
        run_campaign(path, store=store, launcher=InProcessSim(), clock=ModelClock())
        c = build_comparison(store, campaign=name, metrics=["tpot_ms"])
        out: dict[str, Any] = {}
        for cand in ("fast", "noop"):
            cells = [cell for (cfg, _), cell in c.cells.items() if cfg == cand]
            assert cells, f"no {cand} cell"
            out[cand] = _cell(cells[0].verdicts["tpot_ms"])
    state = work / f"{name}.launches"
    out["launches"] = int(state.read_text()) if state.exists() else 0
    out["s"] = time.monotonic() - t0
    return out


def summarize_sim(sd: float, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One row of the sim table."""
    fast = [r["fast"] for r in runs]
    noop = [r["noop"] for r in runs]
    n = len(runs)
    widths = [math.log(c.high / c.low) for c in fast if c.low > 0 and math.isfinite(c.high)]
    return {
        "sd": sd,
        "n": n,
        "fast_holds": sum(c.holds(TRUE_FAST) for c in fast) / n,
        "fast_better": sum(c.claim == "better" for c in fast) / n,
        "fast_undecided": sum(c.undecided for c in fast) / n,
        "fast_width": statistics.median(widths) if widths else float("nan"),
        "noop_claimed": sum(c.claim != "~" for c in noop) / n,
        "noop_holds": sum(c.holds(1.0) for c in noop) / n,
        "launches": statistics.fmean(r["launches"] for r in runs),
        "s": statistics.fmean(r["s"] for r in runs),
    }


def sim_table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| launch sd | reruns | fast: interval holds ×0.9 | fast: claimed better | "
        "fast: undecided | fast: median width (log) | noop: claimed | noop: holds ×1 | "
        "launches a rerun | s a rerun |\n|---|---|---|---|---|---|---|---|---|---|\n"
    )
    body = "".join(
        f"| {r['sd']:.0%} | {r['n']} | {r['fast_holds']:.0%} | {r['fast_better']:.0%} | "
        f"{r['fast_undecided']:.0%} | {r['fast_width']:.3f} | {r['noop_claimed']:.0%} | "
        f"{r['noop_holds']:.0%} | {r['launches']:.1f} | {r['s']:.1f} |\n"
        for r in rows
    )
    return head + body


def run_sim(a: argparse.Namespace) -> str:
    overrides = dict(kv.split("=", 1) for kv in a.set)
    rows = []
    with tempfile.TemporaryDirectory(prefix="inferlab-repro-") as tmp:
        for si, sd in enumerate(a.spreads):
            runs = []
            for i in range(a.reruns):
                work = Path(tmp) / f"s{si}-r{i}"
                work.mkdir()
                runs.append(sim_rerun(work, i, sd, a.seed + 1000 * si + i, overrides))
                f, z = runs[-1]["fast"], runs[-1]["noop"]
                print(
                    f"sd {sd:.0%} rerun {i}: fast {f.claim} ×{f.estimate:.3f} "
                    f"[{f.low:.3f}, {f.high:.3f}]; noop {z.claim} ×{z.estimate:.3f} "
                    f"[{z.low:.3f}, {z.high:.3f}] ({runs[-1]['s']:.1f} s)",
                    file=sys.stderr,
                    flush=True,
                )
            rows.append(summarize_sim(sd, runs))
    return sim_table(rows)


def vllm_campaign(path: Path, name: str, overrides: dict[str, str]) -> Path:
    """The demo's engine (``examples/vllm-cpu.toml``), its baseline and ``ngram``, at C=1,
    verification off (the demo verifies them; this measures only)."""
    import tomllib

    demo = tomllib.loads((ROOT / "src" / "inferlab" / "examples" / "vllm-cpu.toml").read_text())
    eng = demo["engine"]
    ngram = next(c for c in demo["config"] if c["name"] == "ngram")
    load: dict[str, str] = {
        k: _toml(v)
        for k, v in demo["load"].items()
        if k not in ("concurrency", "recheck_baseline", "interleave")
    }
    load["concurrency"] = "[1]"
    load.update(overrides)
    env = "".join(f"{k} = {_toml(v)}\n" for k, v in eng["env"].items())
    text = f"""[campaign]
name = {_toml(name)}
output = {_toml(path.parent / f"out-{name}")}

[engine]
kind = "vllm"
launcher = "module"
python = {_toml(eng["python"])}
model = {_toml(eng["model"])}
args = {_toml(eng["args"])}
ready_timeout_s = 300
stop_grace_s = 30

[engine.env]
{env}
[[config]]
name = "baseline"

[[config]]
name = "ngram"
extends = "baseline"
args = {_toml(ngram["args"])}

[verify]
enabled = false

[load]
""" + "".join(f"{k} = {v}\n" for k, v in load.items())
    path.write_text(text)
    return path


def run_vllm(a: argparse.Namespace) -> str:
    """Reruns of the demo's ngram A/B at C=1 on vLLM-CPU; the table of where each rerun's
    estimate falls against the first run's interval."""
    from inferlab.campaign.context import CampaignEvents
    from inferlab.campaign.drivers.demo import prepare_vllm_demo
    from inferlab.campaign.drivers.runner import run_campaign
    from inferlab.report.compare import build_comparison
    from inferlab.store import Store

    prepare_vllm_demo(CampaignEvents())
    overrides = dict(kv.split("=", 1) for kv in a.set)
    cells: dict[str, list[Cell]] = {"tpot_ms": [], "output_tok_s": []}
    spent: list[str] = []  # each rerun's launches of baseline + ngram (the rounds' tally)
    with tempfile.TemporaryDirectory(prefix="inferlab-repro-vllm-") as tmp:
        for i in range(a.reruns):
            t0 = time.monotonic()
            work = Path(tmp) / f"r{i}"
            work.mkdir()
            name = f"reprovllm{i}"
            path = vllm_campaign(work / f"{name}.toml", name, overrides)
            with Store(work / f"{name}.db") as store:
                res = run_campaign(path, store=store)
                n = {t.config: t.launches for t in res.launches}
                spent.append(f"{n.get('baseline', 1)}+{n.get('ngram', 1)}")
                for t in res.launches:
                    print(f"vllm rerun {i}: {t.line()}", file=sys.stderr)
                c = build_comparison(store, campaign=name, metrics=list(cells))
                cell = next(x for (cfg, _), x in c.cells.items() if cfg == "ngram")
                for m in cells:
                    cells[m].append(_cell(cell.verdicts[m]))
            got = ", ".join(
                f"{m} {v[-1].claim} ×{v[-1].estimate:.3f} [{v[-1].low:.3f}, {v[-1].high:.3f}]"
                for m, v in cells.items()
            )
            print(f"vllm rerun {i}: {got} ({time.monotonic() - t0:.0f} s)", file=sys.stderr)
    head = (
        "| metric | reruns | first run's interval | later estimates inside it | "
        "claims | launches (baseline+ngram) |\n|---|---|---|---|---|---|\n"
    )
    rows = []
    for m, v in cells.items():
        first, later = v[0], v[1:]
        inside = sum(first.low <= c.estimate <= first.high for c in later)
        claims = " ".join(c.claim for c in v)
        rows.append(
            f"| {m} | {len(v)} | ×{first.estimate:.3f} [{first.low:.3f}, {first.high:.3f}] | "
            f"{inside}/{len(later)} (correct 95% intervals: ~83%) | {claims} | "
            f"{' '.join(spent)} |\n"
        )
    return head + "".join(rows)


def record(mode: str, table: str, argv: list[str], label: str) -> None:
    """Append the table to benchmarks/RESULTS.md as a dated section."""
    day = time.strftime("%Y-%m-%d", time.gmtime())
    cpus = os.cpu_count()
    what = "SIMULATED reference engine, model clock" if mode == "sim" else "vLLM-CPU, wall clock"
    text = (
        f"\n## {day} — reproducibility ({mode}{': ' + label if label else ''})\n\n"
        f"`python benchmarks/reproducibility.py {' '.join(argv)}` — {what}; "
        f"{platform.machine()}, {cpus} vCPU (shared with other work, loaded). "
        "Each rerun: a fresh campaign, fresh launches, a fresh store.\n\n" + table
    )
    with RESULTS.open("a", encoding="utf-8") as f:
        f.write(text)


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("sim", "vllm"))
    ap.add_argument("--reruns", type=int, default=None, help="sim: 20, vllm: 4")
    ap.add_argument("--spreads", type=float, nargs="+", default=[0.0, 0.02, 0.04, 0.08])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--set", action="append", default=[], help="[load] KEY=TOML override")
    ap.add_argument("--label", default="", help="what this run is (e.g. today's design)")
    ap.add_argument("--record", action="store_true", help="append to benchmarks/RESULTS.md")
    a = ap.parse_args(argv)
    a.reruns = a.reruns or (20 if a.mode == "sim" else 4)
    table = run_sim(a) if a.mode == "sim" else run_vllm(a)
    print(table)
    if a.record:
        record(a.mode, table, [x for x in argv if x != "--record"], a.label)


if __name__ == "__main__":
    main()
