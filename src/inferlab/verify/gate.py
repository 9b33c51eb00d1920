"""The distribution-agreement gate: measure a config against the baseline's stored logprobs,
with adaptive prompt counts, and decide pass / fail / cannot gate (docs/verify.md).

A config passes only when the **upper bound** of its KL has an interval whose high end is at
most ``max_kl`` and its top-1 interval's low end is at least ``min_top1``. The prompt count
starts at ``prompts`` and doubles (the **looks**: ``prompts, 2·prompts, …`` up to the
reference's ``max_prompts``) until both intervals are at most ``width`` times their limit's
margin wide (``max_kl``; ``1 − min_top1``), a limit is clearly missed (the low end of the
KL upper bound's interval above ``max_kl``, or top-1's high end below ``min_top1``: a fail), or
every prompt is scored. Each look's
intervals are at the Bonferroni level ``1 − (1 − level) / looks``, so the chance that any look
passes a config outside a limit is at most ``(1 − level) / 2`` per side, whichever look stops.
An engine that serves no teacher-forced logprobs "cannot gate": never a pass. ``scorer``: how
the engine serving the measured side is teacher forced (:mod:`inferlab.verify.scorers`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from inferlab.config.lossy import LossyGate
from inferlab.load.http import HttpClient
from inferlab.verify.agreement import Agreement, PromptFigures, agreement, prompt_figures
from inferlab.verify.logprobs import LogprobReference, NoLogprobs, continue_greedy, seeded_prompts
from inferlab.verify.scorers import get_scorer

__all__ = [
    "AgreementTask",
    "Verdict",
    "build_reference",
    "decide",
    "look",
    "look_level",
    "looks",
    "measure",
    "sequential",
    "widths_met",
]

Verdict = Literal["pass", "fail", "cannot-gate"]


@dataclass(frozen=True)
class AgreementTask:
    """What verification measures: ``reference`` None (and nothing ``missing``) makes this
    config the reference (its logprobs are stored); else it is measured against it,
    ``gating`` or for information; ``missing``: why there is no reference (cannot gate)."""

    limits: LossyGate
    reference: LogprobReference | None
    gating: bool
    missing: str | None = None


async def build_reference(
    client: HttpClient, model: str, limits: LossyGate, scorer: str = "echo"
) -> LogprobReference:
    """The baseline's greedy continuations of ``max_prompts`` seeded prompts, each scored."""
    score = get_scorer(scorer)
    prompts = seeded_prompts(limits.seed, limits.max_prompts)
    conts = [await continue_greedy(client, model, p, limits.tokens) for p in prompts]
    positions = [await score(client, model, p, c, limits.top_k) for p, c in zip(prompts, conts)]
    texts, ids = [c.tokens for c in conts], [c.ids for c in conts]
    return LogprobReference(
        prompts=prompts,
        continuations=[c.text for c in conts],
        positions=positions,
        top_k=limits.top_k,
        tokens=limits.tokens,
        seed=limits.seed,
        token_texts=texts,
        token_ids=ids,
    )


def looks(first: int, total: int) -> list[int]:
    """The prompt counts of the looks: ``first``, doubled, up to ``total`` (the last)."""
    out = [min(first, total)]
    while out[-1] < total:
        out.append(min(2 * out[-1], total))
    return out


def look_level(level: float, n_looks: int) -> float:
    """Each look's interval level: Bonferroni over ``n_looks`` (two-sided ``level`` overall)."""
    return 1.0 - (1.0 - level) / n_looks


def widths_met(a: Agreement, limits: LossyGate) -> bool:
    """Whether both intervals (the KL's upper bound, top-1) are as narrow as ``width`` asks."""
    kl_ok = a.kl_upper.high - a.kl_upper.low <= limits.width * limits.max_kl
    top1_ok = a.top1.high - a.top1.low <= limits.width * (1.0 - limits.min_top1)
    return kl_ok and top1_ok


def _missed(a: Agreement, limits: LossyGate) -> bool:
    """A limit clearly missed: even the optimistic end (of the KL's upper bound) is outside it."""
    return a.kl_upper.low > limits.max_kl or a.top1.high < limits.min_top1


def look(figs: Sequence[PromptFigures], limits: LossyGate, level: float) -> tuple[Agreement, bool]:
    """One look: the agreement at ``level`` and whether it stops (width met or a clear miss)."""
    a = agreement(figs, level, limits.seed, log_floor=limits.log_floor)
    return a, widths_met(a, limits) or _missed(a, limits)


def sequential(
    figs: Sequence[PromptFigures], limits: LossyGate, *, corrected: bool = True
) -> tuple[Agreement, bool]:
    """The looks over already scored ``figs`` (the first ``n`` at each): the last look's
    agreement and whether it stopped on its own; ``corrected`` False: every look at
    ``level`` (the uncorrected rule, for the error-rate benchmark)."""
    sizes = looks(limits.prompts, len(figs))
    lvl = look_level(limits.level, len(sizes)) if corrected else limits.level
    for n in sizes:
        a, stop = look(figs[:n], limits, lvl)
        if stop or n == sizes[-1]:
            return a, stop
    raise AssertionError("unreachable")


async def measure(
    client: HttpClient, model: str, ref: LogprobReference, limits: LossyGate, scorer: str = "echo"
) -> tuple[Agreement, bool]:
    """The config's agreement with ``ref`` and whether the looks stopped on their own."""
    score = get_scorer(scorer)
    figs: list[PromptFigures] = []
    sizes = looks(limits.prompts, len(ref.prompts))
    lvl = look_level(limits.level, len(sizes))
    for n in sizes:
        for i in range(len(figs), n):
            mine = await score(client, model, ref.prompts[i], ref.forced(i), ref.top_k)
            if len(mine) != len(ref.positions[i]):
                raise NoLogprobs(
                    f"prompt {i + 1}: {len(mine)} scored positions, the baseline had "
                    f"{len(ref.positions[i])} (another tokenizer?)"
                )
            figs.append(
                prompt_figures(ref.positions[i], mine, top_k=ref.top_k, log_floor=limits.log_floor)
            )
        a, stop = look(figs, limits, lvl)
        if stop or n == sizes[-1]:
            return a, stop
    raise AssertionError("unreachable")


def decide(
    a: Agreement | None, limits: LossyGate, *, width_met: bool = True, why: str | None = None
) -> tuple[Verdict, str, dict[str, Any]]:
    """The verdict, its one-line message with the figures, and the stored detail."""
    lim = {
        "max_kl": limits.max_kl,
        "min_top1": limits.min_top1,
        "width": limits.width,
        "level": limits.level,
    }
    if a is None:
        return "cannot-gate", f"cannot gate: {why}", {"verdict": "cannot-gate", "why": why, **lim}
    kl_ok = a.kl_upper.high <= limits.max_kl
    top1_ok = a.top1.low >= limits.min_top1
    verdict: Verdict = "pass" if kl_ok and top1_ok else "fail"
    pct = f"{100 * a.kl.level:.4g}%"
    tail = f"tail outside the shared top-k {a.tail:.2%}"
    if not kl_ok and a.kl.low <= limits.max_kl and a.tail > 0.0:
        tail += " (the upper bound is loose: ask for more logprobs, docs/verify.md)"
    msg = (
        f"KL upper bound {a.kl_upper.estimate:.4g} nats/token (high end {a.kl_upper.high:.4g}) "
        f"{'≤' if kl_ok else '>'} {limits.max_kl:g}; lumped lower bound {a.kl.estimate:.4g} "
        f"[{a.kl.low:.4g}, {a.kl.high:.4g}]; "
        f"top-1 {a.top1.estimate:.2%} ([{a.top1.low:.2%}, {a.top1.high:.2%}]) "
        f"{'≥' if top1_ok else '<'} {limits.min_top1:.2%}; {pct} intervals per look; "
        f"max TV in [{a.tv_max.low:.3g}, {a.tv_max.high:.3g}]; {tail}; "
        f"{a.prompts} prompts, {a.positions} positions"
        + ("" if width_met else " (interval width not reached: more prompts would narrow it)")
    )
    detail = {"verdict": verdict, "width_met": width_met, **lim, **a.to_json()}
    return verdict, msg, detail
