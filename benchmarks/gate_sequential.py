"""The lossy gate's error rates on both sides and over every look of its doubling, by
simulation where the truth is known (issue 42, item 6).

SIMULATED, no engine: a seeded numpy generator draws each prompt's figures
(``verify.agreement.PromptFigures``) from a stated model, and the gate's own code
(``verify.gate.sequential``: the looks, their Bonferroni level, the width and clear-miss stops;
``verify.gate.decide``) decides. The model, per prompt of ``POSITIONS`` positions:

- KL side: each position's KL is ``μ · g · w`` with ``g ~ Gamma(1/cv², cv²)`` a prompt's own
  level (mean 1, coefficient of variation ``cv``) and ``w ~ Exp(1)``; the true mean KL per
  position is ``μ``. Both KL bounds equal the truth (full logprobs): the worst case for a false
  acceptance, since a tail only raises the upper bound. Top-1 agreement is 1.
- top-1 side: a prompt's agreement rate is ``Beta(π s, (1 − π) s)`` (mean ``π``), its
  positions Binomial; the true rate is ``π``. KL is 0.

Each side is run at multiples of its limit's margin (KL ``m · max_kl``; top-1
``1 − m · (1 − min_top1)``): below 1 a fail is a false rejection, at 1 and past it a pass is
a false acceptance. Two rules decide on the same draws: the gate now, and 82ddb2d's (every
look's plain percentile interval at the nominal level, stopped on the width only). For the latter, the pass rate at the
first look alone is shown too: what a fixed 16-prompt test would claim.

    python benchmarks/gate_sequential.py [--seeds 400] [--record]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from inferlab.config.lossy import LossyGate
from inferlab.stats.slo import wilson
from inferlab.verify.agreement import Agreement, PromptFigures, agreement
from inferlab.verify.gate import decide, looks, sequential, widths_met

ROOT = Path(__file__).resolve().parent.parent
POSITIONS = 32
MULTIPLES = (0.5, 0.9, 1.0, 1.1, 2.0)


@dataclass(frozen=True)
class Scenario:
    """How heterogeneous the prompts are (``cv``: of a prompt's KL level; ``s``: the Beta
    concentration of a prompt's top-1 rate) and the gate's width."""

    name: str
    cv: float
    s: float
    width: float


SCENARIOS = (
    Scenario("like the H200 FP8 run (prompt cv 0.15)", 0.15, 400.0, 0.5),
    Scenario("heterogeneous prompts (prompt cv 0.5)", 0.5, 50.0, 0.5),
    Scenario("forced doubling (width 0.1, prompt cv 0.5)", 0.5, 50.0, 0.1),
)


def draw(
    rng: np.random.Generator, side: str, truth: float, sc: Scenario, n: int
) -> list[PromptFigures]:
    """``n`` prompts' figures where the true mean KL (side "kl") or top-1 rate is ``truth``."""
    out = []
    for _ in range(n):
        if side == "kl":
            g = rng.gamma(1.0 / sc.cv**2, sc.cv**2)
            kl = float(truth * g * rng.exponential(1.0, POSITIONS).sum())
            out.append(PromptFigures(POSITIONS, POSITIONS, kl, kl, 0.0, 0.0, 0.0))
        else:
            rate = rng.beta(truth * sc.s, (1.0 - truth) * sc.s) if truth < 1.0 else 1.0
            agree = int(rng.binomial(POSITIONS, rate))
            out.append(PromptFigures(POSITIONS, agree, 0.0, 0.0, 0.0, 0.0, 0.0))
    return out


def today(figs: list[PromptFigures], limits: LossyGate) -> tuple[Agreement, Agreement]:
    """82ddb2d's rule: every look at ``level``, doubled until the width; (stopping look, first)."""
    first = None
    for n in looks(limits.prompts, len(figs)):
        a = agreement(figs[:n], limits.level, limits.seed, expand=False)
        first = first or a
        if widths_met(a, limits):
            return a, first
    assert first is not None
    return a, first


def _passes(a: Agreement, limits: LossyGate) -> bool:
    return a.kl_upper.high <= limits.max_kl and a.top1.low >= limits.min_top1


def run(seeds: int) -> list[dict[str, object]]:
    """One row per scenario, side and multiple: the rates of both rules."""
    rows: list[dict[str, object]] = []
    for sc in SCENARIOS:
        for side in ("kl", "top1"):
            for m in MULTIPLES:
                rows.append(_cell(sc, side, m, seeds))
    return rows


def _cell(sc: Scenario, side: str, m: float, seeds: int) -> dict[str, object]:
    base = LossyGate(max_kl=0.01, min_top1=0.98, width=sc.width)
    truth = m * base.max_kl if side == "kl" else 1.0 - m * (1.0 - base.min_top1)
    now = old = old_first = 0
    prompts = 0.0
    stops = {n: 0 for n in looks(base.prompts, base.max_prompts)}
    for seed in range(seeds):
        limits = base.model_copy(update={"seed": seed})
        rng = np.random.default_rng([seed, int(m * 1000), side == "kl", int(sc.cv * 100)])
        figs = draw(rng, side, truth, sc, limits.max_prompts)
        a, stopped = sequential(figs, limits)
        verdict, _, _ = decide(a, limits, width_met=stopped)
        now += verdict == "pass"
        prompts += a.prompts
        stops[a.prompts] += 1
        last, first = today(figs, limits)
        old += _passes(last, limits)
        old_first += _passes(first, limits)
    return {"scenario": sc.name, "side": side, "m": m, "truth": truth, "now": now,
            "old": old, "old_first": old_first, "seeds": seeds, "prompts": prompts / seeds,
            "stops": stops}  # fmt: skip


def _rate(k: int, n: int, err_is_pass: bool) -> str:
    e = k if err_is_pass else n - k
    iv = wilson(e, n, 0.95)
    return f"{e / n:.1%} [{iv.low:.1%}, {iv.high:.1%}]"


def table(rows: list[dict[str, object]]) -> list[str]:
    """The rows as Markdown, one table per scenario."""
    out: list[str] = []
    for sc in SCENARIOS:
        out += [
            "", f"**{sc.name}**, width {sc.width:g}:", "",
            "| side | truth (× margin) | error | now: rate (Wilson 95%) | now: prompts (stops at 16/32/64) "
            "| 82ddb2d: rate, every look | 82ddb2d: first look only |",
            "|---|---|---|---|---|---|---|",
        ]  # fmt: skip
        for r in (r for r in rows if r["scenario"] == sc.name):
            m, n = float(r["m"]), int(r["seeds"])  # type: ignore[call-overload]
            bad_pass = m >= 1.0
            err = "false acceptance" if bad_pass else "false rejection"
            truth = f"KL {r['truth']:.4g}" if r["side"] == "kl" else f"top-1 {r['truth']:.2%}"
            stops = "/".join(str(v) for v in r["stops"].values())  # type: ignore[attr-defined]
            out.append(
                f"| {r['side']} | {truth} ({m:g}×) | {err} | {_rate(int(r['now']), n, bad_pass)} "  # type: ignore[call-overload]
                f"| {r['prompts']:.1f} ({stops}) | {_rate(int(r['old']), n, bad_pass)} "  # type: ignore[call-overload]
                f"| {_rate(int(r['old_first']), n, bad_pass)} |"  # type: ignore[call-overload]
            )
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=400)
    ap.add_argument("--record", action="store_true", help="append to benchmarks/RESULTS.md")
    args = ap.parse_args(argv)
    load0, t0 = os.getloadavg()[0], time.monotonic()
    rows = run(args.seeds)
    wall, load1 = time.monotonic() - t0, os.getloadavg()[0]
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = [
        f"## The lossy gate's error rates, both sides, every look (issue 42; {when}, "
        f"`benchmarks/gate_sequential.py --seeds {args.seeds}`)",
        "",
        "SIMULATED prompts from a seeded generator (the model in the script's docstring), "
        f"{POSITIONS} positions a prompt, decided by the gate's own code: `max_kl = 0.01`, "
        '`min_top1 = 0.98`, 16 prompts first, doubled up to 64, level 0.95. "now": the upper '
        "bound gated, each look's expanded percentile interval at the Bonferroni level "
        '1 − 0.05/3, stops on the width or a clear miss; "82ddb2d": every look\'s plain '
        "percentile interval at 95%, stops on the width only. "
        f"{args.seeds} seeds a cell; {os.cpu_count()} CPUs (shared, loaded: load1 "
        f"{load0:.1f} → {load1:.1f}), Python {platform.python_version()}, {wall:.0f} s; "
        "no clock is read by the gate.",
    ]
    text = "\n".join(head + table(rows)) + "\n"
    print(text)
    if args.record:
        with (ROOT / "benchmarks" / "RESULTS.md").open("a", encoding="utf-8") as fh:
            fh.write("\n" + text)
    return 0 if math.isfinite(wall) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
