"""How often ``inferlab optimize``'s own A/B accepts a trial that does nothing (issue 42, item 4).

SIMULATED. Each repetition is one trial of a search as ``optimize`` measures it
(``search.trials.Trials.evaluate``): the incumbent launched again as ``t01-ref`` and measured
at the search's point to the cap, then the trial launched and measured by the sequential A/B
against it (Lan–DeMets O'Brien–Fleming, ``[load]`` looks), on the reference engine in this
process, read on its model clock (``ModelClock``: the verdict does not depend on this machine's
load). The trial changes nothing the engine's timing reads: only ``--seed`` (of its jitter and
text), so that the two launches draw different noise (``--jitter-ms``, normal noise on TTFT
and each token gap) — a do-nothing lever. Each repetition has its own campaign and seeds.

Counted: the trial's verdict on the objective (``tpot_ms``, as ``optimize`` decides it). A
"better" is a false acceptance (the incumbent would move). The A/B is run at the level one
trial gets: ``[load] alpha`` / ``[search] budget_trials`` (``--budget`` 1: the nominal α).

    .venv/bin/python benchmarks/optimize_false_accept.py --reps 100 [--budget 1] [--alpha 0.05]
        [--min-effect 0.02] [--jitter-ms 0.2]

``--confirm --launch-sd S``: the confirmation instead (``search.confirm``), the engine's speed
drawn afresh at each launch (``sim serve --launch-sd``): the baseline launched three times
(``baseline``, ``t01-ref``, ``t02-ref``: what a search's incumbent measurements give the prior
spread) and a do-nothing winner once, then the four confirmation launches; counted: confirmed.

``--min-effect 0`` tests the level alone: a "better" then needs only significance, so a
calibrated two-sided test reads "better" for a do-nothing trial α/2 of the time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from inferlab.campaign.context import CampaignEvents
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import InProcessSim
from inferlab.search.driver import _Runs, search_plan
from inferlab.search.space import Space
from inferlab.search.trials import Trials
from inferlab.stats.slo import wilson
from inferlab.store import Store
from support.campaign import write_campaign
from support.campaigns import optimize_campaign


def one(tmp: Path, rep: int, budget: int, alpha: float, jitter: float, effect: float) -> str:
    """One do-nothing trial's verdict against a fresh measurement of the incumbent."""
    camp = optimize_campaign(tmp, budget_trials=budget, min_effect=effect, load={"alpha": alpha})
    camp["args"] = ["--ttft-ms", "4", "--itl-ms", "4", "--jitter-ms", str(jitter),
                    "--seed", str(2 * rep)]  # fmt: skip
    camp["search"]["dim"] = [{"flag": "--seed", "values": [str(2 * rep + 1)]}]
    path = write_campaign(tmp / f"r{rep}.toml", **camp)
    plan, section = search_plan(path)
    with Store(tmp / f"r{rep}.db") as store:
        runs = _Runs(store, CampaignEvents(), InProcessSim(), ModelClock(), None)
        trials = Trials(plan, section, store, runs.trials(section), list(plan.campaign.config))
        space = Space(tuple(section.dim), plan.campaign.config[0])
        trial = space.config(1, {"--seed": str(2 * rep + 1)})
        got = trials.evaluate(trial, "baseline")
    return got.verdict or f"failed: {got.reason}"


def one_confirm(tmp: Path, rep: int, alpha: float, jitter: float, sd: float) -> str:
    """One do-nothing winner's confirmation: its claim (``better`` = falsely confirmed)."""
    from inferlab.search.confirm import confirm_winner

    camp = optimize_campaign(tmp, load={"alpha": alpha})
    camp["args"] = ["--ttft-ms", "4", "--itl-ms", "4", "--jitter-ms", str(jitter), "--seed",
                    str(rep), "--launch-sd", str(sd), "--launch-seed", str(rep)]  # fmt: skip
    camp["config"] = [{"name": "baseline"}, {"name": "t01-ref", "extends": "baseline"},
                      {"name": "t02-ref", "extends": "baseline"},
                      {"name": "t01-same", "set": {"--itl-ms": "4"}}]  # fmt: skip
    path = write_campaign(tmp / f"c{rep}.toml", **camp)
    plan, section = search_plan(path)
    with Store(tmp / f"c{rep}.db") as store:
        runs = _Runs(store, CampaignEvents(), InProcessSim(), ModelClock(), None)
        trials = Trials(plan, section, store, runs.trials(section), list(plan.campaign.config))
        names = [c.name for c in plan.campaign.config]
        trials.run(trials.derived("baseline", names, confirm=True))
        c = confirm_winner(trials, "t01-same", "tpot_ms", {})
    return c.claim if c.ratio is not None else f"no ratio: {c.reason}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--budget", type=int, default=1, help="[search] budget_trials (α spent)")
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--jitter-ms", type=float, default=0.2)
    ap.add_argument("--min-effect", type=float, default=0.02, help="[search] min_effect")
    ap.add_argument("--first", type=int, default=0, help="first repetition's number (seeds)")
    ap.add_argument("--confirm", action="store_true", help="the confirmation A/B instead")
    ap.add_argument("--launch-sd", type=float, default=0.04, help="--confirm: sim --launch-sd")
    a = ap.parse_args()
    started = time.monotonic()
    counts: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as d:
        for rep in range(a.first, a.first + a.reps):
            v = (
                one_confirm(Path(d), rep, a.alpha, a.jitter_ms, a.launch_sd)
                if a.confirm
                else one(Path(d), rep, a.budget, a.alpha, a.jitter_ms, a.min_effect)
            )
            counts[v] += 1
            print(f"rep {rep}: {v}", flush=True)
    n = sum(counts.values())
    fa = wilson(counts["better"], n)
    per = a.alpha / a.budget  # search.trials.trial_alpha
    print(f"do-nothing trials: {n}, verdicts {dict(counts)}")
    print(
        f"false acceptances ('better'): {counts['better']} of {n} = {fa.estimate:.1%} "
        f"[{fa.low:.1%}, {fa.high:.1%}] (Wilson 95%), at a trial's α = {per:g} "
        f"(alpha {a.alpha:g} / budget {a.budget}), min_effect {a.min_effect:g}, jitter "
        f"{a.jitter_ms:g} ms; {time.monotonic() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
