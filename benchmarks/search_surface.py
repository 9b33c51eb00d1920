"""``inferlab optimize`` against a grid and random search, on a known surface (issue 29).

SIMULATED. The surface is the reference engine's stated timing model (``inferlab.sim.model``,
``step_ms`` of ``sim.presets.resolve``, preset ``dsv4-flash-8gpu``, the seed campaign's):

    output tok/s at C=8 = b × A / step_ms(b),  b = min(8, --max-running-requests)
    no drafts:  step_ms(b) = F + 34.19 × min(b, 8) + 44.54 × max(0, b − 8),  A = 1
    k = --speculative-num-draft-tokens (the verify width; k − 1 drafts), T = k × b:
                step_ms(b) = 6 + 0.5 b + F + 20.80 × min(T, 7.28) + 35.38 × max(0, T − 7.28),
                A = 1 + p + … + p^(k−1), p = 0.6
    F = 59.81 − 4.5 (--tuned-fp8) − 1.5 (NCCL_PROTO=LL) ms;  step × 1.25 when b >
    --cuda-graph-max-bs (eager)

and a launch fails (CUDA-graph capture OOM) when the capture needs more than
``1 − --mem-fraction-static``: 0.22 + 0.00025 × cuda_graph_max_bs × k (+ 0.09 with drafts).
Seven dimensions, 1536 points: ``--max-running-requests``, ``--cuda-graph-max-bs``,
``--speculative-num-draft-tokens`` (``off``, 2, 3, 4), ``--mem-fraction-static``, ``NCCL_PROTO`` (trims 1.5 ms of a 333 ms
step), ``--tuned-fp8`` (4.5 ms) and ``INFERLAB_NOOP``, which the engine ignores.

The methods, with the same trial budget, each trial measured the same way (10 batch rates, each
the true rate × (1 + N(0, cv)), beside a fresh measurement of the incumbent; the verdict is
``stats.verdict.compare_throughput`` at α = 0.05 with a 2% minimum effect; the incumbent moves
only on "better": ``search.loop``, the loop ``optimize`` runs):

- ``optimize``: the whole method. The baseline is measured and profiled on the reference engine
  (in process, on its model clock: ``campaign.runner``, ``ModelClock``), its levers ranked as
  ``inferlab levers`` ranks them and each dimension bounded and pruned by the real
  ``search.prune`` (``levers_of``, ``bound_dims``) — nothing is hand-fed — then TPE (its
  ordinal encoding, ``search.space``) over the dimensions left;
- ``optimize, per-dim pruning``: the same with the rule before the joint bound (each dimension
  pruned alone when its own bound is below ×1.02);
- ``TPE, full space``: inferlab's sampler without the bounds;
- ``random``, ``grid`` (shuffled by the seed) and ``grid-file`` (in the order the file lists
  the values, as a grid tuner walks it), over the full space: the peers' methods;
- TPE variants (``--variants``): Optuna's options on the optimize method, each over the seeds.

The bounds' own stop (nothing left against a new incumbent) cannot fire here: the running cap
and the draft tokens carry no numeric bound (their rules bound nothing at C=8), so it is not run.

Counted over seeds: the trials until the incumbent was within 2% of the exhaustive grid's best
(and until a config that close was first measured); a search that never got there counts as
its budget, so the ratios against a peer that did not get there are lower bounds. False
acceptances: the optimize method over a space whose dimensions do nothing (``INFERLAB_NOOP``
and an unused flag), where every "better" is false; their share of A/Bs must be ≤ α.

    python benchmarks/search_surface.py [--seeds 20] [--budget 60] [--cv 0.04] [--variants]
        [--record]
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
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import optuna
from optuna.samplers import BaseSampler, TPESampler

from inferlab.campaign.clock import ModelClock
from inferlab.campaign.launch import InProcessSim
from inferlab.campaign.plan import select_configs
from inferlab.campaign.runner import run_plan
from inferlab.config.campaign import ConfigSpec
from inferlab.config.search import SearchDim, SearchSection
from inferlab.search import Space, TrialResult, run_search, samplers
from inferlab.search.driver import search_plan
from inferlab.search.prune import DimBound, bound_dims, levers_of
from inferlab.sim.model import step_ms
from inferlab.sim.presets import (
    Levers,
    StartupFailure,
    expected_accept_length,
    get_preset,
    resolve,
)
from inferlab.stats.verdict import ThroughputSample, compare_throughput
from inferlab.store import Store

PRESET = "dsv4-flash-8gpu"
C = 8
MIN_EFFECT = 0.02
DIMS: list[dict[str, object]] = [
    {"flag": "--max-running-requests", "values": [2, 4, 8, 16]},
    {"flag": "--cuda-graph-max-bs", "values": [4, 8, 16, 64]},
    {"flag": "--speculative-num-draft-tokens", "values": ["off", 2, 3, 4], "short": "k"},
    {"flag": "--mem-fraction-static", "values": [0.6, 0.65, 0.7]},
    {"env": "NCCL_PROTO", "values": ["Simple", "LL"]},
    {"flag": "--tuned-fp8", "presence": True, "short": "fp8"},
    {"env": "INFERLAB_NOOP", "values": ["0", "1"]},
]
NOOP_DIMS: list[dict[str, object]] = [
    {"env": "INFERLAB_NOOP", "values": ["0", "1", "2", "3"]},
    {"flag": "--unused-flag", "values": [1, 2, 3, 4, 5]},
]
CAMPAIGN = f"""[campaign]
name = "surface"
output = "{{out}}"
[engine]
kind = "sim"
args = ["--preset", "{PRESET}", "--tp-size", "8", "--time-scale", "0.01"]
ready_timeout_s = 60
stop_grace_s = 5
[[config]]
name = "baseline"
[verify]
enabled = false
[load]
workload = {{{{ kind = "random", input_tokens = 64, output_tokens = 16 }}}}
concurrency = [{C}]
requests = "auto"
sequential = true
min_requests = 16
max_requests = 64
[profile]
at = ["C={C}"]
steps = 10
[search]
objective = "output_tok_s"
at = "C={C}"
min_effect = {MIN_EFFECT}
"""


def real_bounds() -> list[DimBound]:
    """The dimensions' bounds as ``optimize`` reads them: the baseline measured and profiled on
    the reference engine (model clock), its levers, ``bound_dims``."""
    with tempfile.TemporaryDirectory() as tmp:
        dims = "".join(
            "[[search.dim]]\n"
            + "".join(f"{k} = {_toml(v)}\n" for k, v in d.items())
            for d in DIMS
        )  # fmt: skip
        path = Path(tmp) / "surface.toml"
        path.write_text(CAMPAIGN.format(out=Path(tmp) / "out") + dims, encoding="utf-8")
        plan, section = search_plan(path)
        with Store(Path(tmp) / "db.sqlite") as store:
            run_plan(select_configs(plan, ["baseline"]), store=store, launcher=InProcessSim(),
                     clock=ModelClock())  # fmt: skip
            levers = levers_of(store, "surface", "baseline")
        return bound_dims(section.dim, levers, f"C={C}", MIN_EFFECT)


def _toml(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return f'"{v}"' if isinstance(v, str) else repr(v)


def levers(cfg: ConfigSpec) -> Levers:
    """The sim's levers of a trial config (a dimension not set: the preset's default)."""
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
        tuned_fp8=s.get("--tuned-fp8") is True,
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
        v = compare_throughput(ref, cand, min_effect=MIN_EFFECT, resamples=500, seed=self.abs)
        verdict = {"better": "better", "worse": "worse"}.get(v.claim, "equivalent")
        return TrialResult("ok", cand.trials[0], verdict)  # type: ignore[arg-type]


Builder = Callable[[SearchSection, int], tuple[BaseSampler, int]]


def _tpe(**kw: object) -> Builder:
    """A TPE builder with Optuna options ``kw`` (start-up: inferlab's unless given)."""

    def build(section: SearchSection, parallel: int = 1) -> tuple[BaseSampler, int]:
        opts: dict[str, object] = {"multivariate": True, **kw}
        opts.setdefault("n_startup_trials", samplers._startup(section))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return TPESampler(seed=section.seed, **opts), int(opts["n_startup_trials"])  # type: ignore[arg-type]

    return build


#: TPE variants tried on the optimize method (name → builder); "inferlab" is src's own
VARIANTS: dict[str, Builder] = {
    "inferlab (multivariate, start-up 5)": samplers.BUILDERS["tpe"],
    "univariate": _tpe(multivariate=False),
    "multivariate + group": _tpe(group=True),
    "start-up 2": _tpe(n_startup_trials=2),
    "start-up 10 (Optuna's default)": _tpe(n_startup_trials=10),
    "consider_endpoints": _tpe(consider_endpoints=True),
    "n_ei_candidates 64": _tpe(n_ei_candidates=64),
    "start-up 2 + n_ei_candidates 64": _tpe(n_startup_trials=2, n_ei_candidates=64),
}


@contextmanager
def tpe_as(build: Builder) -> Iterator[None]:
    """``[search] sampler = "tpe"`` built by ``build`` for the duration."""
    before = samplers.BUILDERS["tpe"]
    samplers.BUILDERS["tpe"] = build
    try:
        yield
    finally:
        samplers.BUILDERS["tpe"] = before


@dataclass(frozen=True)
class Method:
    """A search method: its sampler, the dimensions it searches, its space's order."""

    name: str
    sampler: str
    dims: tuple[SearchDim, ...]
    file_order: bool = False
    build: Builder | None = None


def run(m: Method, seed: int, budget: int, cv: float):  # type: ignore[no-untyped-def]
    """One search by ``m``: the loop ``optimize`` runs, on the stated model."""
    section = SearchSection.model_validate(
        {"at": f"C={C}", "budget_trials": budget, "patience": budget, "seed": seed,
         "sampler": m.sampler, "min_effect": MIN_EFFECT,
         "dim": [d.model_dump(exclude_defaults=True) for d in m.dims]}
    )  # fmt: skip
    kind = FileOrder if m.file_order else Space
    space = kind(tuple(section.dim), ConfigSpec(name="baseline"))
    ev = Measured(space, cv, seed * 7919 + 1)
    with tpe_as(m.build or samplers.BUILDERS["tpe"]):
        res = run_search(space, section, ev)
    return space, ev, res


def first_within(values: Sequence[float | None], best: float, budget: int) -> int:
    """1-based index of the first value within 2% of ``best``; ``budget`` when none was."""
    return next((i + 1 for i, v in enumerate(values) if v is not None and v >= 0.98 * best), budget)


def counts(m: Method, seeds: int, budget: int, cv: float, best: float) -> tuple[list[int], ...]:
    """Per seed: trials until a config within 2% was measured, and until the incumbent was."""
    found, held = [], []
    base = true_rate(ConfigSpec(name="baseline")) or 0.0
    for seed in range(seeds):
        _, ev, res = run(m, seed, budget, cv)
        rates = [true_rate(ev.configs[t.name]) for t in res.trials]
        found.append(first_within(rates, best, budget))
        inc, path, cur = [], set(res.path[1:]), base
        for t in res.trials:
            if t.name in path:
                cur = true_rate(ev.configs[t.name]) or 0.0
            inc.append(cur)
        held.append(first_within(inc, best, budget))
    return found, held


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--budget", type=int, default=60)
    ap.add_argument("--cv", type=float, default=0.04)
    ap.add_argument("--variants", action="store_true", help="also Optuna's TPE options")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    t0, load0 = time.monotonic(), os.getloadavg()[0]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    section = SearchSection.model_validate({"at": f"C={C}", "dim": DIMS})
    full = tuple(section.dim)
    bounds = real_bounds()
    t_bounds = time.monotonic() - t0
    kept = tuple(d for d, b in zip(full, bounds, strict=True) if not b.pruned)
    alone = tuple(
        d for d, b in zip(full, bounds, strict=True)
        if b.high is None or b.high >= 1 + MIN_EFFECT
    )  # fmt: skip
    space0 = Space(full, ConfigSpec(name="baseline"))
    rates = [true_rate(space0.config(1, p)) for p in space0.grid_points(0)]
    best = max(r or 0.0 for r in rates)
    base = true_rate(space0.baseline) or 0.0

    def space_best(dims: tuple[SearchDim, ...]) -> float:
        sp = Space(dims, ConfigSpec(name="baseline"))
        return max(true_rate(sp.config(1, p)) or 0.0 for p in sp.grid_points(0))

    methods = [
        Method("optimize (bounds → prune → TPE → A/B)", "tpe", kept),
        Method("optimize, per-dim pruning (before the joint bound)", "tpe", alone),
        Method("TPE, full space (no bounds)", "tpe", full),
        Method("random, full space", "random", full),
        Method("grid, full space, shuffled", "grid", full),
        Method("grid, full space, file order", "grid", full, file_order=True),
    ]
    results = {m.name: counts(m, args.seeds, args.budget, args.cv, best) for m in methods}
    variants: dict[str, tuple[list[int], ...]] = {}
    if args.variants:
        for name, build in VARIANTS.items():
            m = Method(name, "tpe", kept, build=build)
            variants[name] = counts(m, args.seeds, args.budget, args.cv, best)
    false_acc = abs_run = 0
    noop = tuple(SearchSection.model_validate({"at": "C=8", "dim": NOOP_DIMS}).dim)
    for seed in range(args.seeds):
        _, ev, res = run(Method("noop", "tpe", noop), seed, 20, args.cv)
        false_acc += sum(t.result.verdict == "better" for t in res.trials)
        abs_run += ev.abs
    lines = _table(args, bounds, full, kept, alone, best, base, rates, space_best, results)
    if variants:
        lines += _variants(args, variants, results[methods[3].name][1])
    lines += [
        f"- false acceptances on dimensions that do nothing (optimize's method, {args.seeds} "
        f"seeds × 20 trials): {false_acc} of {abs_run} A/Bs ({false_acc / max(1, abs_run):.1%}; "
        "α = 5%)",
        f"- {time.monotonic() - t0:.0f} s ({t_bounds:.0f} s of it the baseline's measurement and "
        f"profile) on {os.cpu_count()} CPUs, load1 {load0:.1f} → {os.getloadavg()[0]:.1f}, "
        f"Python {platform.python_version()}, Optuna {optuna.__version__}",
    ]
    print("\n".join(lines))
    if args.record:
        when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        out = Path(__file__).with_name("RESULTS.md")
        with out.open("a") as fh:
            fh.write(
                f"\n## `inferlab optimize` against a grid and random search on a known surface "
                f"(issue 29; {when}, `benchmarks/search_surface.py`)\n\n" + "\n".join(lines) + "\n"
            )


def _mean(xs: Sequence[int]) -> float:
    return statistics.fmean(xs)


def _table(  # type: ignore[no-untyped-def]
    args, bounds, full, kept, alone, best, base, rates, space_best, results
) -> list[str]:
    fails = sum(r is None for r in rates)
    within = sum(r is not None and r >= 0.98 * best for r in rates)
    lines = [
        f"SIMULATED surface (preset {PRESET}, C={C}; the timing function in the benchmark's "
        f"docstring): {len(rates)} points, {fails} fail to start (capture OOM), {within} within "
        f"2% of the grid's best; default {base:.2f} tok/s, grid best {best:.2f} tok/s "
        f"(×{best / base:.3f}); noise cv {args.cv:.0%} per batch; budget {args.budget} trials "
        f"for every method; {args.seeds} seeds",
        "",
        "The bounds, from the baseline's profile at C=8 (`inferlab levers` → `bound_dims`):",
        "",
    ]
    lines += [f"- {b.key}: {b.why(f'C={C}')}" for b in bounds]
    kb, ab = space_best(kept), space_best(alone)
    lines += [
        "",
        f"optimize searches {len(kept)} of {len(full)} dimensions "
        f"({Space(kept, ConfigSpec(name='b')).size():.0f} points; their best {kb:.2f} tok/s, "
        f"{kb / best:.1%} of the grid's); pruning each dimension alone would search "
        f"{len(alone)} ({Space(alone, ConfigSpec(name='b')).size():.0f} points; best "
        f"{ab:.2f} tok/s, {ab / best:.1%} of the grid's"
        + (": within 2% is out of its reach)" if ab < 0.98 * best else ")"),
        "",
        "| method | trials to measure a config within 2% of the grid's best: median (mean) | "
        "trials until the incumbent is within 2%: median (mean) | reached in budget |",
        "|---|---:|---:|---:|",
    ]
    for name, (f, h) in results.items():
        reached = sum(x < args.budget for x in h)
        lines.append(
            f"| {name} | {statistics.median(f):.1f} ({_mean(f):.1f}) | "
            f"{statistics.median(h):.1f} ({_mean(h):.1f}) | {reached}/{args.seeds} |"
        )
    names = list(results)
    opt = _mean(results[names[0]][1])
    walk = FileOrder(full, ConfigSpec(name="baseline")).grid_points(0)
    nth = first_within([true_rate(Space(full, ConfigSpec(name="b")).config(1, p)) for p in walk],
                       best, len(walk))  # fmt: skip
    lines += [
        "",
        "Ratios of the mean trials until the incumbent is within 2% of the grid's best (peer "
        "over optimize; > 1: optimize needs fewer; a peer that never got there counts as the "
        "budget, so a ratio against it is a lower bound):",
        "",
        f"- grid in file order ×{_mean(results[names[5]][1]) / opt:.2f}, shuffled grid "
        f"×{_mean(results[names[4]][1]) / opt:.2f} (goal ≥ 3); the file-order walk's first "
        f"point within 2% is its {nth}th of {len(walk)}: ×{nth / opt:.1f} with a budget that "
        "let it get there",
        f"- random search ×{_mean(results[names[3]][1]) / opt:.2f} (goal ≥ 1.5)",
        f"- TPE over the full space ×{_mean(results[names[2]][1]) / opt:.2f}, per-dim pruning "
        f"×{_mean(results[names[1]][1]) / opt:.2f} (what the bounds and the joint rule buy)",
    ]
    return lines


def _variants(args, variants, random_held) -> list[str]:  # type: ignore[no-untyped-def]
    lines = [
        "",
        "TPE variants on the optimize method (the same pruned space, seeds and budget):",
        "",
        "| TPE variant | trials until the incumbent is within 2%: median (mean) | "
        "reached | random / it |",
        "|---|---:|---:|---:|",
    ]
    for name, (_, h) in variants.items():
        lines.append(
            f"| {name} | {statistics.median(h):.1f} ({_mean(h):.1f}) | "
            f"{sum(x < args.budget for x in h)}/{args.seeds} | "
            f"×{_mean(random_held) / _mean(h):.2f} |"
        )
    return [*lines, ""]


if __name__ == "__main__":
    main()
