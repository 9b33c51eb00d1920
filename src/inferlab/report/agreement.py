"""The verification section's distribution-agreement table (docs/verify.md): per config the
newest ``agreement`` check's top-1 agreement, the KL's lumped lower bound and its upper bound
(nats/token, the gated one), the largest TV's bracket, the prompts scored, the limits and the
gate's decision with its reason; the reference config's row says its logprobs were stored. A
check stored before the upper bound was gated shows its ``kl_high`` bare, marked "not gated"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inferlab.report.sections.base import table
from inferlab.store import Store
from inferlab.store.checks import CheckRecord, LogprobReferenceRecord

__all__ = ["AGREEMENT_NOTE", "HEAD", "AgreementRow", "agreement_rows", "agreement_table"]

AGREEMENT_NOTE = (
    "Each config scored on the baseline's greedy continuations of seeded prompts (teacher "
    "forced, top-k logprobs): top-1 agreement and KL(baseline ‖ config) between two bounds, "
    "each with its bootstrap interval over prompts (at the level of one look of the doubling "
    "prompt count): the lumped KL (a lower bound: the mass outside the shared top-k as one "
    "bucket) and the upper bound (exact when both sides list every token; else it assumes no "
    "token of the config is below e^log_floor, and is loose when the tail is not small), which "
    "is what the gate reads. Largest TV: the bracket of the largest per-position total "
    "variation over the positions scored. A gated (lossless = false) config passes only when "
    "the KL upper bound's high end and top-1's low end are inside the limits; else it is "
    "stopped before measurement. Lossless configs: for information (KL 0 says they are "
    "deterministic). docs/verify.md"
)

HEAD = (
    "config",
    "gate",
    "top-1 agreement",
    "KL lower bound, lumped (nats/token)",
    "KL upper bound (gated)",
    "largest TV",
    "prompts (positions)",
    "limits",
    "decision",
)


@dataclass(frozen=True)
class AgreementRow:
    """One config's figures as shown (strings); ``stopped``: the gate ended the config."""

    config: str
    cells: tuple[str, ...]
    stopped: bool


def _ival(d: Any, fmt: str) -> str:
    if not isinstance(d, dict) or not isinstance(d.get("estimate"), (int, float)):
        return "–"
    lo, hi, lvl = d.get("low"), d.get("high"), d.get("level")
    if not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)):
        return format(d["estimate"], fmt)
    pct = f"{100 * lvl:.4g}% " if isinstance(lvl, (int, float)) else ""
    return f"{d['estimate']:{fmt}} ({pct}[{lo:{fmt}}, {hi:{fmt}}])"


def _bracket(d: Any) -> str:
    """The largest TV: its bracket ``[low, high]`` (level 1); an older bootstrap as stored."""
    if isinstance(d, dict) and d.get("level") == 1.0:
        lo, hi = d.get("low"), d.get("high")
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
            return f"[{lo:.3g}, {hi:.3g}]"
    return _ival(d, ".3g")


def _decision(detail: dict[str, Any], gating: bool) -> tuple[str, bool]:
    """The decision text and whether the config was stopped by the gate."""
    verdict = str(detail.get("verdict"))
    if verdict == "cannot-gate":
        why = f"cannot gate: {detail.get('why')}"
        return (f"STOPPED before measurement: {why}", True) if gating else (why, False)
    reasons = []
    top1 = detail.get("top1") or {}
    kl, what = detail.get("kl_upper"), "KL upper bound's high end"
    if not isinstance(kl, dict):  # stored before the upper bound was gated
        kl, what = detail.get("kl") or {}, "lumped KL's high end"
    max_kl, min_top1 = detail.get("max_kl"), detail.get("min_top1")
    if isinstance(max_kl, (int, float)) and float(kl.get("high", 0.0)) > max_kl:
        reasons.append(f"{what} {kl['high']:.4g} > max_kl {max_kl:g}")
    if isinstance(min_top1, (int, float)) and float(top1.get("low", 1.0)) < min_top1:
        reasons.append(f"top-1's low end {top1['low']:.2%} < min_top1 {min_top1:.2%}")
    if not gating:
        seen = "; ".join(reasons) or "inside the limits"
        return f"for information (lossless, not gating): {seen}", False
    if verdict == "pass":
        return "passed: the pessimistic ends are inside the limits (measured)", False
    return "STOPPED before measurement: " + "; ".join(reasons), True


def _row(config: str, stored: LogprobReferenceRecord | CheckRecord) -> AgreementRow:
    """``stored``: the reference's logprobs, or the agreement check (its ``detail`` inside)."""
    if isinstance(stored, LogprobReferenceRecord):
        n = len(stored.prompts)
        what = f"the reference: logprobs stored (top-{stored.top_k}, {n} prompts)"
        return AgreementRow(config, (config, "reference", *("–",) * 4, str(n), "–", what), False)
    detail, gating = stored.detail, stored.gating
    decision, stopped = _decision(detail, gating)
    limits = "–"
    if isinstance(detail.get("max_kl"), (int, float)):
        top1 = detail.get("min_top1")
        least = top1 if isinstance(top1, int | float) else 0.0
        limits = f"KL ≤ {detail['max_kl']:g}, top-1 ≥ {least:.0%}"
    upper = _ival(detail.get("kl_upper"), ".3g")
    if upper == "–" and isinstance(detail.get("kl_high"), (int, float)):
        upper = f"{detail['kl_high']:.3g} (not gated)"
    prompts = f"{detail.get('prompts')} ({detail.get('positions')})" if "prompts" in detail else "–"
    if detail.get("width_met") is False:
        prompts += ", width not reached"
    cells = (
        config,
        "gating" if gating else "information",
        _ival(detail.get("top1"), ".2%"),
        _ival(detail.get("kl"), ".3g"),
        upper,
        _bracket(detail.get("tv_max")),
        prompts,
        limits,
        decision,
    )
    return AgreementRow(config, cells, stopped)


def agreement_rows(store: Store, campaign: str) -> list[AgreementRow]:
    """The newest agreement figures (or stored reference) of each config, in config order."""
    newest: dict[str, LogprobReferenceRecord | CheckRecord] = {}
    for v in store.verifications(campaign, kinds=("agreement", "logprob-reference")):
        if isinstance(v.detail, LogprobReferenceRecord | CheckRecord):
            newest[v.config] = v.detail
    return [_row(name, body) for name, body in newest.items()]


def agreement_table(rows: list[AgreementRow]) -> tuple[list[str], str]:
    """The rows as Markdown lines and an HTML table (escaped)."""
    return table(HEAD, [r.cells for r in rows])
