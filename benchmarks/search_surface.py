"""``inferlab optimize``'s search against a grid and random search, on a known surface (issue 29).

SIMULATED. The surface is the reference engine's stated timing model (``inferlab.sim.model``:
``step_ms`` of ``sim.presets.resolve``, preset ``dsv4-flash-8gpu``): output tok/s at C=8 is
``b × accept_length / step_ms(b)`` with ``b = min(8, max running)``, and a config whose CUDA-graph
capture does not fit fails at start (the seed campaign's OOM). Six dimensions, 768 points:
``--max-running-requests``, ``--cuda-graph-max-bs``, the speculative draft count (or off),
``--mem-fraction-static``, ``NCCL_PROTO`` and ``INFERLAB_NOOP``, which the engine ignores.

Each trial is measured as a load point would be: one trial of 10 batch rates, each the true
rate × (1 + N(0, cv)), and the incumbent re-measured beside it (interleaved); the verdict is
``stats.verdict.compare_throughput`` at α = 0.05 with a 2% minimum effect, and the incumbent
moves only on "better" (``search.loop``, the loop ``optimize`` runs). Three samplers share the
loop and the budget: TPE (inferlab's), random, and a seeded grid walk (a grid tuner's order).

Counted over seeds: the trials until a config within 2% of the exhaustive grid's best was
measured, and until the incumbent was within 2% of it; a search that never got there counts
as its budget (so the ratios are lower bounds for the peers). False acceptances: the same loop
over a space whose dimensions do nothing (``INFERLAB_NOOP`` and an unused flag), where every
"better" is false; their share of A/Bs must be ≤ α.

    python benchmarks/search_surface.py [--seeds 20] [--budget 60] [--cv 0.04] [--record]
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import random
import statistics
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from inferlab.config.campaign import ConfigSpec
from inferlab.config.search import SearchSection
from inferlab.search import Space, TrialResult, run_search
from inferlab.sim.model import step_ms
from inferlab.sim.presets import (
    Levers,
    StartupFailure,
    expected_accept_length,
    get_preset,
    resolve,
)
from inferlab.stats.verdict import ThroughputSample, compare_throughput

PRESET = "dsv4-flash-8gpu"
C = 8
DIMS = [
    {"flag": "--max-running-requests", "values": [2, 4, 8, 16]},
    {"flag": "--cuda-graph-max-bs", "values": [4, 8, 16, 64]},
    {"flag": "--speculative-num-draft-tokens", "values": ["off", 2, 3, 4], "short": "k"},
    {"flag": "--mem-fraction-static", "values": [0.6, 0.65, 0.7]},
    {"env": "NCCL_PROTO", "values": ["Simple", "LL"]},
    {"env": "INFERLAB_NOOP", "values": ["0", "1"]},
]
SAMPLERS = ("tpe", "random", "grid", "grid-file")
NOOP_DIMS = [
    {"env": "INFERLAB_NOOP", "values": ["0", "1", "2", "3"]},
    {"flag": "--unused-flag", "values": [1, 2, 3, 4, 5]},
]


def levers(cfg: ConfigSpec) -> Levers:
    """The sim's levers of a trial config (the baseline: the preset's defaults)."""
    s, env = cfg.set, cfg.env
    k = s.get("--speculative-num-draft-tokens", "off")
    spec = {}
    if k != "off":
        spec = {
            "speculative_algorithm": "EAGLE",
            "speculative_num_steps": int(k) - 1 if int(k) > 2 else 1,
            "speculative_eagle_topk": 1,
            "speculative_num_draft_tokens": int(k),
        }
    mrr, cgbs = s.get("--max-running-requests"), s.get("--cuda-graph-max-bs")
    mfs = s.get("--mem-fraction-static")
    return Levers(
        max_running_requests=int(mrr) if mrr is not None else None,
        cuda_graph_max_bs=int(cgbs) if cgbs is not None else None,
        mem_fraction_static=float(mfs) if mfs is not None else None,
        nccl_proto=env.get("NCCL_PROTO"),
        **spec,
    )


def true_rate(cfg: ConfigSpec) -> float | None:
    """Output tok/s at C=8 by the stated model; None when the launch fails."""
    try:
        m = resolve(get_preset(PRESET), levers(cfg))
    except StartupFailure:
        return None
    b = min(C, m.max_running)
    return b * expected_accept_length(m) / step_ms(m, b) * 1000.0


class FileOrder(Space):
    """A grid tuner's walk: the grid in the order the dimensions list their values."""

    def grid_points(self, seed: int) -> list[dict[str, object]]:
        grid = self.grid()
        return [dict(zip(grid, combo, strict=True)) for combo in itertools.product(*grid.values())]


class Measured:
    """Measures a trial and its incumbent, side by side, with noise of ``cv`` per batch."""

    def __init__(self, space: Space, cv: float, seed: int) -> None:
        self.configs: dict[str, ConfigSpec] = {space.baseline.name: space.baseline}
        self.rng = random.Random(seed)
        self.cv = cv
        self.abs = 0

    def sample(self, rate: float) -> ThroughputSample:
        batches = tuple(rate * (1.0 + self.rng.gauss(0.0, self.cv)) for _ in range(10))
        return ThroughputSample((statistics.fmean(batches),), batches)

    def evaluate(self, config: ConfigSpec, incumbent: str) -> TrialResult:
        self.configs[config.name] = config
        rate = true_rate(config)
        if rate is None:
            return TrialResult("failed", reason="oom_graph_capture")
        ref_rate = true_rate(self.configs[incumbent])
        assert ref_rate is not None
        cand, ref = self.sample(rate), self.sample(ref_rate)
        self.abs += 1
        v = compare_throughput(ref, cand, min_effect=0.02, resamples=500, seed=self.abs)
        verdict = {"better": "better", "worse": "worse"}.get(v.claim, "equivalent")
        return TrialResult("ok", cand.trials[0], verdict)  # type: ignore[arg-type]


def grid_best(space: Space) -> float:
    best = 0.0
    for i, params in enumerate(space.grid_points(0)):
        r = true_rate(space.config(i + 1, params))
        best = max(best, r or 0.0)
    return best


def run(sampler: str, seed: int, budget: int, cv: float, dims: Sequence[dict[str, object]]):  # type: ignore[no-untyped-def]
    """One search: ``sampler`` tpe, random, grid (shuffled by the seed) or grid-file (in the
    order the file lists the values, as a grid tuner walks it)."""
    section = SearchSection.model_validate(
        {
            "at": f"C={C}",
            "budget_trials": budget,
            "patience": budget,
            "sampler": "grid" if sampler == "grid-file" else sampler,
            "seed": seed,
            "dim": list(dims),
        }
    )
    kind = FileOrder if sampler == "grid-file" else Space
    space = kind(tuple(section.dim), ConfigSpec(name="baseline"))
    ev = Measured(space, cv, seed * 7919 + 1)
    return space, ev, run_search(space, section, ev)


def first_within(values: Sequence[float | None], best: float, budget: int) -> int:
    """1-based index of the first value within 2% of ``best``; ``budget`` when none was."""
    return next((i + 1 for i, v in enumerate(values) if v is not None and v >= 0.98 * best), budget)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--budget", type=int, default=60)
    ap.add_argument("--cv", type=float, default=0.04)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    t0 = time.monotonic()
    load0 = os.getloadavg()[0]
    space0 = Space(
        tuple(SearchSection.model_validate({"at": "C=8", "dim": DIMS}).dim),
        ConfigSpec(name="baseline"),
    )
    best = grid_best(space0)
    base = true_rate(space0.baseline) or 0.0
    fails = sum(
        true_rate(space0.config(1, p)) is None for p in space0.grid_points(0)
    )  # fmt: skip
    found: dict[str, list[int]] = {}
    held: dict[str, list[int]] = {}
    for sampler, seed in itertools.product(SAMPLERS, range(args.seeds)):
        space, ev, res = run(sampler, seed, args.budget, args.cv, DIMS)
        rates = [true_rate(ev.configs[t.name]) for t in res.trials]
        found.setdefault(sampler, []).append(first_within(rates, best, args.budget))
        inc = []  # the incumbent's true rate after each trial
        path = iter(res.path[1:])
        nxt, cur = next(path, None), base
        for t in res.trials:
            if t.name == nxt:
                cur = true_rate(ev.configs[t.name]) or 0.0
                nxt = next(path, None)
            inc.append(cur)
        held.setdefault(sampler, []).append(first_within(inc, best, args.budget))
    false_acc = abs_run = 0
    for seed in range(args.seeds):
        _, ev, res = run("tpe", seed, 20, args.cv, NOOP_DIMS)
        false_acc += sum(t.result.verdict == "better" for t in res.trials)
        abs_run += ev.abs
    lines = [
        f"SIMULATED surface (preset {PRESET}, C={C}): {space0.size():.0f} points, {fails} fail "
        f"to start (capture OOM); default {base:.2f} tok/s, grid best {best:.2f} tok/s "
        f"(×{best / base:.3f}); noise cv {args.cv:.0%} per batch; budget {args.budget} trials; "
        f"{args.seeds} seeds",
        "",
        "| sampler | trials to measure a config within 2% of best: median (mean) | "
        "trials until the incumbent is within 2%: median (mean) | reached in budget |",
        "|---|---:|---:|---:|",
    ]
    for s in SAMPLERS:
        f, h = found[s], held[s]
        reached = sum(x < args.budget for x in h)
        lines.append(
            f"| {s} | {statistics.median(f):.1f} ({statistics.fmean(f):.1f}) | "
            f"{statistics.median(h):.1f} ({statistics.fmean(h):.1f}) | {reached}/{args.seeds} |"
        )
    tpe = statistics.fmean(held["tpe"])
    lines += [
        "",
        f"- ratio of mean trials until the incumbent is within 2% (peer / TPE): grid in file "
        f"order ×{statistics.fmean(held['grid-file']) / tpe:.2f} (goal ≥ 3), shuffled grid "
        f"×{statistics.fmean(held['grid']) / tpe:.2f}, random "
        f"×{statistics.fmean(held['random']) / tpe:.2f} (goal ≥ 1.5); a peer that never got "
        "there counts as the budget, so these are lower bounds",
        f"- false acceptances on dimensions that do nothing: {false_acc} of {abs_run} A/Bs "
        f"({false_acc / max(1, abs_run):.1%}; α = 5%)",
        f"- {time.monotonic() - t0:.0f} s on {os.cpu_count()} CPUs, load1 {load0:.1f} → "
        f"{os.getloadavg()[0]:.1f}, Python {platform.python_version()}",
    ]
    print("\n".join(lines))
    if args.record:
        when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        out = Path(__file__).with_name("RESULTS.md")
        with out.open("a") as fh:
            fh.write(
                f"\n## `optimize`'s search on a known surface (issue 29; {when}, "
                "`benchmarks/search_surface.py`)\n\n" + "\n".join(lines) + "\n"
            )


if __name__ == "__main__":
    main()
