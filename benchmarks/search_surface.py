"""``inferlab optimize`` against a grid and random search, on known surfaces (issue 29).

SIMULATED. The surfaces are the reference engine's stated timing model (``inferlab.sim.model``,
``step_ms`` of ``sim.presets.resolve``, preset ``dsv4-flash-8gpu``, the seed campaign's):

    output tok/s at C = b × A / step_ms(b),  b = min(C, --max-running-requests)
    no drafts:  step_ms(b) = F + 34.19 × min(b, 8) + 44.54 × max(0, b − 8),  A = 1
    k = --speculative-num-draft-tokens (the verify width; k − 1 drafts), T = k × b:
                step_ms(b) = 6 + 0.5 b + F + 20.80 × min(T, 7.28) + 35.38 × max(0, T − 7.28),
                A = 1 + p + … + p^(k−1), p = 0.6
    F = 59.81 − 4.5 (--tuned-fp8) − 1.5 (NCCL_PROTO=LL) ms;  step × 1.25 when b >
    --cuda-graph-max-bs (eager)

and a launch fails (CUDA-graph capture OOM) when the capture needs more than
``1 − --mem-fraction-static``: 0.22 + 0.00025 × cuda_graph_max_bs × k (+ 0.09 with drafts).

- ``steps`` (C=8): seven dimensions of listed values, 1536 points: ``--max-running-requests``,
  ``--cuda-graph-max-bs``, ``--speculative-num-draft-tokens`` (``off``, 2, 3, 4),
  ``--mem-fraction-static``, ``NCCL_PROTO`` (trims 1.5 ms of a 333 ms step), ``--tuned-fp8``
  (4.5 ms) and ``INFERLAB_NOOP``, which the engine ignores.
- ``ranges`` (C=16): four numeric ranges, as a user writes them when the good value is not
  known: ``--max-running-requests`` 1–32 and ``--cuda-graph-max-bs`` 1–64 (integers, log
  scale), ``--speculative-num-draft-tokens`` 1–6 (1: no drafts), ``--mem-fraction-static``
  0.5–0.9 (a float: it only decides whether the capture fits). The best is over every integer
  point (12,288, the memory fraction at its lowest). A grid tuner needs listed values: its
  peers walk 6 × 6 × 7 × 5 = 1260 (powers of 2, every draft count, 0.5–0.9 by 0.1), which hold
  the best.

The methods, with the same trial budget, each trial measured the same way (10 batch rates, each
the true rate × (1 + N(0, cv)), beside a fresh measurement of the incumbent; the verdict is
``stats.verdict.compare_throughput`` at α = 0.05 with a 2% minimum effect; the incumbent moves
only on "better": ``search.loop``, the loop ``optimize`` runs):

- ``optimize``: the whole method. The baseline is measured and profiled on the reference engine
  (in process, on its model clock: ``campaign.drivers.runner``, ``ModelClock``), its levers ranked as
  ``inferlab levers`` ranks them and each dimension bounded and pruned by the real
  ``search.prune`` (``levers_of``, ``bound_dims``) — nothing is hand-fed — then TPE (its
  ordinal encoding, ``search.space``) over the dimensions left;
- ``TPE, full space``: inferlab's sampler without the bounds (when they pruned something);
- ``random``, ``grid`` (shuffled by the seed) and ``grid-file`` (in the order the file lists
  the values, as a grid tuner walks it): the peers' methods.

Counted over seeds: the trials until the incumbent was within 2% of the exhaustive grid's best
(and until a config that close was first measured); a search that never got there counts as
its budget, so the ratios against a peer that did not get there are lower bounds. Random
search's expected count without a budget is also given: 1 / p, p the share of 20,000 draws of
Optuna's RandomSampler within 2%. False acceptances: the optimize method over a space whose
dimensions do nothing (``INFERLAB_NOOP`` and an unused flag), where every "better" is false;
their share of A/Bs must be ≤ α.

    python benchmarks/search_surface.py [--seeds 20] [--budget 60] [--cv 0.04]
        [--surface steps ranges] [--record]
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import optuna

from inferlab.campaign.drivers.runner import run_plan
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import InProcessSim
from inferlab.campaign.parts.plan import select_configs
from inferlab.config.campaign import ConfigSpec
from inferlab.config.search import SearchDim, SearchSection
from inferlab.search import Space, TrialResult, run_search
from inferlab.search.driver import search_plan
from inferlab.search.prune import DimBound, bound_dims, levers_of, searched
from inferlab.sim.model import step_ms
from inferlab.sim.presets import (
    Levers,
    StartupFailure,
    expected_accept_length,
    get_preset,
    resolve,
)
from inferlab.stats.verdict import Rule, ThroughputSample, compare_throughput
from inferlab.store import Store

PRESET = "dsv4-flash-8gpu"
MIN_EFFECT = 0.02
Dims = list[dict[str, object]]


@dataclass(frozen=True)
class Surface:
    """A known surface: its load point, the dimensions searched, the listed values a grid
    tuner walks and the exhaustive points its best is taken over (None: the grid's)."""

    name: str
    c: int
    dims: Dims
    grid: Dims
    lattice: Dims | None = None


STEPS_DIMS: Dims = [
    {"flag": "--max-running-requests", "values": [2, 4, 8, 16]},
    {"flag": "--cuda-graph-max-bs", "values": [4, 8, 16, 64]},
    {"flag": "--speculative-num-draft-tokens", "values": ["off", 2, 3, 4], "short": "k"},
    {"flag": "--mem-fraction-static", "values": [0.6, 0.65, 0.7]},
    {"env": "NCCL_PROTO", "values": ["Simple", "LL"]},
    {"flag": "--tuned-fp8", "presence": True, "short": "fp8"},
    {"env": "INFERLAB_NOOP", "values": ["0", "1"]},
]
RANGE_DIMS: Dims = [
    {"flag": "--max-running-requests", "low": 1, "high": 32, "log": True},
    {"flag": "--speculative-num-draft-tokens", "low": 1, "high": 6, "short": "k"},
    {"flag": "--cuda-graph-max-bs", "low": 1, "high": 64, "log": True},
    {"flag": "--mem-fraction-static", "low": 0.5, "high": 0.9},
]
RANGE_GRID: Dims = [
    {"flag": "--max-running-requests", "values": [1, 2, 4, 8, 16, 32]},
    {"flag": "--speculative-num-draft-tokens", "values": [1, 2, 3, 4, 5, 6], "short": "k"},
    {"flag": "--cuda-graph-max-bs", "values": [1, 2, 4, 8, 16, 32, 64]},
    {"flag": "--mem-fraction-static", "values": [0.5, 0.6, 0.7, 0.8, 0.9]},
]
RANGE_LATTICE: Dims = [
    {"flag": "--max-running-requests", "values": list(range(1, 33))},
    {"flag": "--speculative-num-draft-tokens", "values": list(range(1, 7)), "short": "k"},
    {"flag": "--cuda-graph-max-bs", "values": list(range(1, 65))},
    {"flag": "--mem-fraction-static", "values": [0.5]},
]
SURFACES = {
    "steps": Surface("steps", 8, STEPS_DIMS, STEPS_DIMS),
    "ranges": Surface("ranges", 16, RANGE_DIMS, RANGE_GRID, RANGE_LATTICE),
}
NOOP_DIMS: Dims = [
    {"env": "INFERLAB_NOOP", "values": ["0", "1", "2", "3"]},
    {"flag": "--unused-flag", "values": [1, 2, 3, 4, 5]},
]
CAMPAIGN = """[campaign]
name = "surface"
output = "{out}"
[engine]
kind = "sim"
args = ["--preset", "{preset}", "--tp-size", "8", "--time-scale", "0.01"]
ready_timeout_s = 60
stop_grace_s = 5
[[config]]
name = "baseline"
[verify]
enabled = false
[load]
workload = {{ kind = "random", input_tokens = 64, output_tokens = 16 }}
concurrency = [{c}]
requests = "auto"
sequential = true
min_requests = 16
max_requests = 64
[profile]
at = ["C={c}"]
steps = 10
[search]
objective = "output_tok_s"
at = "C={c}"
min_effect = {min_effect}
"""


def section_dims(dims: Dims, c: int) -> tuple[SearchDim, ...]:
    return tuple(SearchSection.model_validate({"at": f"C={c}", "dim": dims}).dim)


def real_bounds(s: Surface) -> list[DimBound]:
    """The dimensions' bounds as ``optimize`` reads them: the baseline measured and profiled on
    the reference engine (model clock), its levers, ``bound_dims``."""
    with tempfile.TemporaryDirectory() as tmp:
        dims = "".join(
            "[[search.dim]]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in d.items())
            for d in s.dims
        )
        path = Path(tmp) / "surface.toml"
        camp = CAMPAIGN.format(out=Path(tmp) / "out", preset=PRESET, c=s.c, min_effect=MIN_EFFECT)
        path.write_text(camp + dims, encoding="utf-8")
        plan, section = search_plan(path)
        with Store(Path(tmp) / "db.sqlite") as store:
            run_plan(select_configs(plan, ["baseline"]), store=store, launcher=InProcessSim(),
                     clock=ModelClock())  # fmt: skip
            levers = levers_of(store, "surface", "baseline")
        return bound_dims(section.dim, levers, f"C={s.c}", MIN_EFFECT)


def _toml(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return f'"{v}"' if isinstance(v, str) else repr(v)


def levers(cfg: ConfigSpec) -> Levers:
    """The sim's levers of a trial config (a dimension not set: the preset's default; draft
    tokens ``off`` or ≤ 1: no speculative decoding)."""
    s, env = cfg.set, cfg.env
    k = s.get("--speculative-num-draft-tokens", "off")
    spec = {}
    if k != "off" and int(k) > 1:
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
        tuned_fp8=s.get("--tuned-fp8") is True,
        **spec,
    )


def true_rate(cfg: ConfigSpec, c: int) -> float | None:
    """Output tok/s at C=``c`` by the stated model; None when the launch fails."""
    try:
        m = resolve(get_preset(PRESET), levers(cfg))
    except StartupFailure:
        return None
    b = min(c, m.max_running)
    return b * expected_accept_length(m) / step_ms(m, b) * 1000.0


class FileOrder(Space):
    """A grid tuner's walk: the grid in the order the dimensions list their values."""

    def grid_points(self, seed: int) -> list[dict[str, object]]:
        grid = self.grid()
        return [dict(zip(grid, combo, strict=True)) for combo in itertools.product(*grid.values())]


def points(dims: tuple[SearchDim, ...], order: type[Space] = Space) -> Iterator[ConfigSpec]:
    sp = order(dims, ConfigSpec(name="baseline"))
    return (sp.config(1, p) for p in sp.grid_points(0))


class Measured:
    """Measures a trial and its incumbent, side by side, with noise of ``cv`` per batch."""

    def __init__(self, space: Space, c: int, cv: float, seed: int) -> None:
        self.configs: dict[str, ConfigSpec] = {space.baseline.name: space.baseline}
        self.rng = random.Random(seed)
        self.c, self.cv = c, cv
        self.abs = 0

    def sample(self, rate: float) -> ThroughputSample:
        batches = tuple(rate * (1.0 + self.rng.gauss(0.0, self.cv)) for _ in range(10))
        return ThroughputSample((statistics.fmean(batches),), batches)

    def evaluate(self, config: ConfigSpec, incumbent: str) -> TrialResult:
        self.configs[config.name] = config
        rate = true_rate(config, self.c)
        if rate is None:
            return TrialResult("failed", reason="oom_graph_capture")
        ref_rate = true_rate(self.configs[incumbent], self.c)
        assert ref_rate is not None
        cand, ref = self.sample(rate), self.sample(ref_rate)
        self.abs += 1
        v = compare_throughput(
            ref, cand, rule=Rule(min_effect=MIN_EFFECT, resamples=500, seed=self.abs)
        )
        verdict = {"better": "better", "worse": "worse"}.get(v.claim, "equivalent")
        return TrialResult("ok", cand.trials[0], verdict)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Method:
    """A search method: its sampler, the dimensions it searches, its space's order."""

    name: str
    sampler: str
    dims: tuple[SearchDim, ...]
    file_order: bool = False


def run(m: Method, c: int, seed: int, budget: int, cv: float):  # type: ignore[no-untyped-def]
    """One search by ``m``: the loop ``optimize`` runs, on the stated model."""
    section = SearchSection.model_validate(
        {"at": f"C={c}", "budget_trials": budget, "patience": budget, "seed": seed,
         "sampler": m.sampler, "min_effect": MIN_EFFECT,
         "dim": [d.model_dump(exclude_defaults=True) for d in m.dims]}
    )  # fmt: skip
    kind = FileOrder if m.file_order else Space
    space = kind(tuple(section.dim), ConfigSpec(name="baseline"))
    ev = Measured(space, c, cv, seed * 7919 + 1)
    return space, ev, run_search(space, section, ev)


def nth(n: float) -> str:
    """``31st``, ``115th``: ``n`` rounded, as an ordinal."""
    k = round(n)
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def first_within(values: Sequence[float | None], best: float, budget: int) -> int:
    """1-based index of the first value within 2% of ``best``; ``budget`` when none was."""
    return next((i + 1 for i, v in enumerate(values) if v is not None and v >= 0.98 * best), budget)


def counts(m: Method, c: int, args: argparse.Namespace, best: float) -> tuple[list[int], ...]:
    """Per seed: trials until a config within 2% was measured, and until the incumbent was."""
    found, held = [], []
    base = true_rate(ConfigSpec(name="baseline"), c) or 0.0
    for seed in range(args.seeds):
        _, ev, res = run(m, c, seed, args.budget, args.cv)
        rates = [true_rate(ev.configs[t.name], c) for t in res.trials]
        found.append(first_within(rates, best, args.budget))
        inc, path, cur = [], set(res.path[1:]), base
        for t in res.trials:
            if t.name in path:
                cur = true_rate(ev.configs[t.name], c) or 0.0
            inc.append(cur)
        held.append(first_within(inc, best, args.budget))
    return found, held


def random_share(dims: tuple[SearchDim, ...], c: int, best: float, draws: int = 20000) -> float:
    """The share of Optuna RandomSampler's draws over ``dims`` within 2% of ``best``."""
    space = Space(dims, ConfigSpec(name="baseline"))
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    dists, hits = space.distributions(), 0
    for _ in range(draws):
        t = study.ask(dists)
        r = true_rate(space.config(1, space.decode(t.params)), c)
        hits += r is not None and r >= 0.98 * best
    return hits / draws


def surface_lines(s: Surface, args: argparse.Namespace) -> list[str]:
    """One surface's section: the bounds, the methods' counts and the ratios."""
    full, grid = section_dims(s.dims, s.c), section_dims(s.grid, s.c)
    lattice = section_dims(s.lattice, s.c) if s.lattice is not None else grid
    rates = [true_rate(p, s.c) for p in points(lattice)]
    best = max(r or 0.0 for r in rates)
    base = true_rate(ConfigSpec(name="baseline"), s.c) or 0.0
    bounds = real_bounds(s)
    kept = searched(full, bounds)  # as optimize narrows them (a running cap above C: one)
    methods = [Method("optimize (bounds → prune → TPE → A/B)", "tpe", kept)]
    if kept != full:
        methods.append(Method("TPE, full space (no bounds)", "tpe", full))
    methods += [
        Method("random, full space", "random", full),
        Method("grid, shuffled", "grid", grid),
        Method("grid, file order", "grid", grid, file_order=True),
    ]
    results = {m.name: counts(m, s.c, args, best) for m in methods}
    share = random_share(full, s.c, best)
    walk = [true_rate(p, s.c) for p in points(grid, FileOrder)]
    first = first_within(walk, best, len(walk))
    w = sum(r is not None and r >= 0.98 * best for r in walk)
    lines = [
        f"### Surface `{s.name}` (C={s.c})",
        "",
        f"SIMULATED (preset {PRESET}; the timing function in the benchmark's docstring): best "
        f"over {len(rates)} points {best:.2f} tok/s, "
        f"{sum(r is not None and r >= 0.98 * best for r in rates)} of them within 2%; default "
        f"{base:.2f} tok/s (×{best / base:.3f} to gain); the grid peers walk {len(walk)} points, "
        f"{sum(r is None for r in walk)} of which fail to start (capture OOM); noise cv "
        f"{args.cv:.0%} per batch; budget {args.budget} trials for every method; "
        f"{args.seeds} seeds",
        "",
        f"The bounds, from the baseline's profile at C={s.c} (`inferlab levers` → `bound_dims`):",
        "",
        *[f"- {b.key}: {b.why(f'C={s.c}')}" for b in bounds],
        "",
        "| method | trials to measure a config within 2% of the best: median (mean) | "
        "trials until the incumbent is within 2%: median (mean) | reached in budget |",
        "|---|---:|---:|---:|",
    ]
    for name, (f, h) in results.items():
        lines.append(
            f"| {name} | {statistics.median(f):.1f} ({statistics.fmean(f):.1f}) | "
            f"{statistics.median(h):.1f} ({statistics.fmean(h):.1f}) | "
            f"{sum(x < args.budget for x in h)}/{args.seeds} |"
        )
    held = {name: statistics.fmean(h) for name, (_, h) in results.items()}
    opt = held[methods[0].name]
    lines += [
        "",
        "Ratios of the mean trials until the incumbent is within 2% (peer over optimize; > 1: "
        "optimize needs fewer; a peer that did not get there counts as the budget, so a ratio "
        "against it is a lower bound):",
        "",
        f"- random search ×{held['random, full space'] / opt:.2f} (goal ≥ 1.5); without a "
        f"budget it would need 1 / p = {1 / share:.0f} trials on average "
        f"(p = {share:.2%} of 20,000 draws)"
        if share
        else f"- random search ×{held['random, full space'] / opt:.2f} (goal ≥ 1.5)",
        f"- grid in file order ×{held['grid, file order'] / opt:.2f}, shuffled "
        f"×{held['grid, shuffled'] / opt:.2f} (goal ≥ 3); without a budget: the file-order "
        f"walk's first point within 2% is its {nth(first)} of {len(walk)} (×{first / opt:.1f}), a "
        f"shuffled walk's is on average its (N + 1) / (w + 1) = {nth((len(walk) + 1) / (w + 1))} "
        f"(w = {w} of them within 2%; ×{(len(walk) + 1) / (w + 1) / opt:.1f})",
    ]
    if "TPE, full space (no bounds)" in held:
        lines.append(f"- TPE over the full space ×{held['TPE, full space (no bounds)'] / opt:.2f}")
    return [*lines, ""]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--budget", type=int, default=60)
    ap.add_argument("--cv", type=float, default=0.04)
    ap.add_argument("--surface", nargs="+", choices=sorted(SURFACES), default=list(SURFACES))
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    t0, load0 = time.monotonic(), os.getloadavg()[0]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    lines: list[str] = []
    for name in args.surface:
        lines += surface_lines(SURFACES[name], args)
    false_acc = abs_run = 0
    for seed in range(args.seeds):
        _, ev, res = run(Method("noop", "tpe", section_dims(NOOP_DIMS, 8)), 8, seed, 20, args.cv)
        false_acc += sum(t.result.verdict == "better" for t in res.trials)
        abs_run += ev.abs
    lines += [
        f"- false acceptances on dimensions that do nothing (optimize's method, {args.seeds} "
        f"seeds × 20 trials): {false_acc} of {abs_run} A/Bs ({false_acc / max(1, abs_run):.1%}; "
        "α = 5%)",
        f"- {time.monotonic() - t0:.0f} s on {os.cpu_count()} CPUs, load1 {load0:.1f} → "
        f"{os.getloadavg()[0]:.1f}, Python {platform.python_version()}, Optuna "
        f"{optuna.__version__}",
    ]
    print("\n".join(lines))
    if args.record:
        when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        out = Path(__file__).with_name("RESULTS.md")
        with out.open("a") as fh:
            fh.write(
                f"\n## `inferlab optimize` against a grid and random search on known surfaces "
                f"(issue 29; {when}, `benchmarks/search_surface.py`)\n\n" + "\n".join(lines) + "\n"
            )


if __name__ == "__main__":
    main()
