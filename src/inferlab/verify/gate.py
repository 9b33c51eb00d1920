"""The distribution-agreement gate: measure a config against the baseline's stored logprobs,
with adaptive prompt counts, and decide pass / fail / cannot gate (docs/verify.md).

A config passes only when its KL interval's high end is at most ``max_kl`` and its top-1
interval's low end at least ``min_top1``. The prompt count starts at ``prompts`` and doubles
until both intervals are at most ``width`` times their limit's margin wide (``max_kl``;
``1 − min_top1``) or every prompt of the reference is scored. An engine that serves no
teacher-forced logprobs "cannot gate": never a pass. ``scorer``: how the engine serving the
measured side is teacher forced (``EngineSpec.teacher_forcing``, :mod:`inferlab.verify.scorers`).
"""

from __future__ import annotations

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
    "measure",
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
        prompts, [c.text for c in conts], positions, limits.top_k, limits.tokens, limits.seed,
        texts, ids,
    )  # fmt: skip


def widths_met(a: Agreement, limits: LossyGate) -> bool:
    """Whether both intervals are as narrow as ``limits.width`` asks."""
    kl_ok = a.kl.high - a.kl.low <= limits.width * limits.max_kl
    top1_ok = a.top1.high - a.top1.low <= limits.width * (1.0 - limits.min_top1)
    return kl_ok and top1_ok


async def measure(
    client: HttpClient, model: str, ref: LogprobReference, limits: LossyGate, scorer: str = "echo"
) -> tuple[Agreement, bool]:
    """The config's agreement with ``ref`` and whether the width was reached (adaptive)."""
    score = get_scorer(scorer)
    figs: list[PromptFigures] = []
    n = min(limits.prompts, len(ref.prompts))
    while True:
        for i in range(len(figs), n):
            mine = await score(client, model, ref.prompts[i], ref.forced(i), ref.top_k)
            if len(mine) != len(ref.positions[i]):
                raise NoLogprobs(
                    f"prompt {i + 1}: {len(mine)} scored positions, the baseline had "
                    f"{len(ref.positions[i])} (another tokenizer?)"
                )
            figs.append(prompt_figures(ref.positions[i], mine))
        a = agreement(figs, limits.level, limits.seed)
        met = widths_met(a, limits)
        if met or n >= len(ref.prompts):
            return a, met
        n = min(2 * n, len(ref.prompts))


def decide(
    a: Agreement | None, limits: LossyGate, *, width_met: bool = True, why: str | None = None
) -> tuple[Verdict, str, dict[str, Any]]:
    """The verdict, its one-line message with the figures, and the stored detail."""
    lim = {"max_kl": limits.max_kl, "min_top1": limits.min_top1, "width": limits.width}
    if a is None:
        return "cannot-gate", f"cannot gate: {why}", {"verdict": "cannot-gate", "why": why, **lim}
    kl_ok = a.kl.high <= limits.max_kl
    top1_ok = a.top1.low >= limits.min_top1
    verdict: Verdict = "pass" if kl_ok and top1_ok else "fail"
    pct = f"{a.kl.level:.0%}"
    msg = (
        f"KL {a.kl.estimate:.4g} nats/token ({pct} [{a.kl.low:.4g}, {a.kl.high:.4g}]) "
        f"{'≤' if kl_ok else '>'} {limits.max_kl:g}; "
        f"top-1 {a.top1.estimate:.2%} ([{a.top1.low:.2%}, {a.top1.high:.2%}]) "
        f"{'≥' if top1_ok else '<'} {limits.min_top1:.2%}; max TV {a.tv_max.estimate:.3g}; "
        f"{a.prompts} prompts, {a.positions} positions"
        + ("" if width_met else " (interval width not reached: more prompts would narrow it)")
    )
    detail = {"verdict": verdict, "width_met": width_met, **lim, **a.to_json()}
    return verdict, msg, detail
