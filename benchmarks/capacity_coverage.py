"""Coverage of the capacity-at-SLO bracket, by seeded simulation of probe outcomes where the
true capacity is known (no server: each probe's requests are drawn from a known model and
judged by the real ``campaign.parts.capacity.ProbeJudge``, the search by the real ``next_probe``).

The model (SIMULATED): the reference engine's ``generic`` preset, a decode step of C
sequences taking 8 + 0.25·C ms; a request's TPOT at concurrency C on a launch of log offset
``u`` is ``(8 + 0.25·C)·e^u·e^(σ·ε)``, ε standard normal, σ = 5% request to request; each
launch draws ``u ~ N(0, τ²)``. SLO ``tpot_p50_ms = 10.625`` (the step at C = 10.5): the
config's capacity (u = 0) is 10; one launch's is ``floor((10.625·e^(−u) − 8) / 0.25)``.
Each probe measures ``--requests`` requests; the search starts at C = 1, up to 64, at most 12
probes. Variants:

- ``today``: each probe at a two-sided 95% (one-sided 2.5%), 1000 resamples, no launch term
  (the code before this change);
- ``bonferroni``: the 95% spent over 12 probes (``stats.capacity_error.ErrorBudget``);
- ``bonferroni+launch``: and the launch term, τ estimated from six other launches of the
  config (each with its own sampling error; ``stats.spread.launch_spread``, 5 df).

It reports how often the bracket holds the launch's capacity and the config's, the bracket's
mean width, the probes spent, and how often the isotonic 95% interval holds the true crossing
(from each probe's first 1000 replicates, to keep the refits few).

    .venv/bin/python benchmarks/capacity_coverage.py [--reps 400] [--requests 100]
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass

import numpy as np

from inferlab.campaign.parts.capacity import CONCURRENCY, ProbeJudge
from inferlab.records import RequestRecord
from inferlab.stats.capacity import MarginSample, bracket, isotonic_capacity, next_probe
from inferlab.stats.capacity_error import ErrorBudget, LaunchTerm
from inferlab.stats.slo import SloState
from inferlab.stats.spread import launch_spread

LIMIT_MS = 8 + 0.25 * 10.5
SIGMA = 0.05
MS = 1_000_000
TOP, MAX_PROBES = 64, 12


def step_ms(c: float) -> float:
    return 8 + 0.25 * c


def capacity_of(u: float) -> int:
    """The highest C whose median TPOT on a launch of offset ``u`` is within the limit."""
    return max(0, math.floor((LIMIT_MS * math.exp(-u) - 8) / 0.25 + 1e-12))


def crossing_of(u: float) -> float:
    return (LIMIT_MS * math.exp(-u) - 8) / 0.25


def records(tpots: np.ndarray) -> list[RequestRecord]:
    """Requests of two tokens each, ``tpots`` ms apart (their TPOT), the first at 10 ms."""
    out = []
    for i, x in enumerate(tpots):
        ev = [10 * MS, 10 * MS + int(x * MS)]
        out.append(
            RequestRecord(
                index=i,
                request_id=f"r{i}",
                status=200,
                send_ns=0,
                end_ns=ev[-1],
                event_ns=ev,
                event_tokens=[1, 1],
            )
        )
    return out


@dataclass
class Outcome:
    launch_covered: bool
    config_covered: bool
    width: float
    probes: int
    iso_launch: bool | None
    iso_config: bool | None


def search(judge: ProbeJudge, u: float, n: int, rng: np.random.Generator) -> Outcome:
    """One bisection on one launch of offset ``u``."""
    states: dict[int, SloState] = {}
    samples: list[MarginSample] = []
    while len(states) < MAX_PROBES:
        c = next_probe(states, 1, TOP)
        if c is None:
            break
        tp = step_ms(c) * math.exp(u) * np.exp(SIGMA * rng.standard_normal(n))
        slo, margin, reps, _ = judge.decide(records(tp), c)
        states[c] = slo.state or "undecided"
        samples.append(MarginSample(c, margin, reps[:1000], slo.requests))  # the fit: 1000
    b = bracket(states)
    hi = math.inf if b.high is None else b.high
    e = isotonic_capacity(samples)
    ok = e is not None and not math.isnan(e.low)
    iso = [e.low <= crossing_of(v) <= e.high if e is not None and ok else None for v in (u, 0.0)]
    return Outcome(
        b.low <= capacity_of(u) <= hi, b.low <= capacity_of(0.0) <= hi,
        (min(hi, TOP) - b.low), len(states), iso[0], iso[1],
    )  # fmt: skip


def estimated_spread(tau: float, n: int, rng: np.random.Generator) -> LaunchTerm:
    """τ as the store would have it: six other launches of the config, each its log median
    with the sampling error of ``n`` requests (≈ 1.25·σ/√n)."""
    se = 1.2533 * SIGMA / math.sqrt(n)
    ys = [(float(rng.normal(0, tau) + rng.normal(0, se)), se) for _ in range(6)]
    s = launch_spread([ys])
    assert s is not None
    return LaunchTerm(s, "six simulated launches")


def judge_of(variant: str, seed: int, term: LaunchTerm | None) -> ProbeJudge:
    limits = {"tpot_p50_ms": LIMIT_MS}
    if variant == "today":
        budget = ErrorBudget(0.975, 1, 1)  # a two-sided 95% at every probe
        return ProbeJudge(limits, CONCURRENCY, budget, 1000, seed, None)
    budget = ErrorBudget(0.95, MAX_PROBES, 1)
    launch = term if variant == "bonferroni+launch" else None
    return ProbeJudge(limits, CONCURRENCY, budget, budget.resamples, seed, launch)


def cell(variant: str, tau: float, reps: int, n: int) -> dict[str, float]:
    outs = []
    for r in range(reps):
        rng = np.random.default_rng([r, round(tau * 1000)])
        u = float(rng.normal(0, tau))
        term = estimated_spread(tau, n, rng)
        outs.append(search(judge_of(variant, r, term), u, n, rng))
    il = [o.iso_launch for o in outs if o.iso_launch is not None]
    ic = [o.iso_config for o in outs if o.iso_config is not None]
    return {
        "launch": float(np.mean([o.launch_covered for o in outs])),
        "config": float(np.mean([o.config_covered for o in outs])),
        "width": float(np.mean([o.width for o in outs])),
        "probes": float(np.mean([o.probes for o in outs])),
        "iso_launch": float(np.mean(il)) if il else math.nan,
        "iso_config": float(np.mean(ic)) if ic else math.nan,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--taus", type=float, nargs="+", default=[0.0, 0.02, 0.04, 0.08])
    ap.add_argument("--variants", nargs="+", default=["today", "bonferroni", "bonferroni+launch"])
    a = ap.parse_args()
    print(
        f"SIMULATED probe outcomes; {a.reps} searches a cell, {a.requests} requests a probe; "
        "covered = the bracket [low, high] holds the true capacity"
    )
    print("| variant | launch sd τ | holds launch's capacity | holds config's capacity "
          "| mean width (C) | probes | isotonic 95% holds launch's / config's crossing |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for v in a.variants:
        for tau in a.taus:
            t0 = time.perf_counter()
            c = cell(v, tau, a.reps, a.requests)
            print(
                f"| {v} | {tau:.0%} | {c['launch']:.1%} | {c['config']:.1%} | "
                f"{c['width']:.2f} | {c['probes']:.1f} | "
                f"{c['iso_launch']:.1%} / {c['iso_config']:.1%} |"
                f"  <!-- {time.perf_counter() - t0:.0f} s -->",
                flush=True,
            )


if __name__ == "__main__":
    main()
