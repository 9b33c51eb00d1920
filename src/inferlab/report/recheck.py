"""The baseline recheck in a comparison: where the baseline drifted (``stats.recheck``), a
candidate's verdict kept only when it holds against both passes (A-B-A), and the recheck as a
table (point, first pass, recheck, ratio, drift)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from inferlab.report.comparison import Cell
from inferlab.report.verdicts import num, ratio_text, refused_verdict
from inferlab.stats.groups import group_verdict
from inferlab.stats.launches import Launches
from inferlab.stats.recheck import RecheckPoint, recheck_points
from inferlab.stats.verdict import Verdict
from inferlab.store import RunRow, Store
from inferlab.store.groups import RunGroup
from inferlab.store.recheck import recheck_groups

__all__ = [
    "RECHECK_HEAD",
    "RECHECK_NOTE",
    "apply_rechecks",
    "recheck_md",
    "recheck_rows",
    "recheck_title",
]

RECHECK_HEAD = ("point", "first pass (tok/s)", "recheck (tok/s)", "ratio [95% interval]", "drift")
RECHECK_NOTE = (
    "The baseline launched again after every other config and measured with the same request "
    "counts; ratio = recheck / first pass. Where it drifted beyond the minimum effect, a "
    "candidate's verdict there stands only when it reads the same against the recheck."
)


def apply_rechecks(
    store: Store,
    base: RunRow,
    cells: dict[tuple[str, str], Cell],
    groups: Mapping[tuple[str, str], RunGroup],
    alpha: float,
    min_effect: float,
    launch: Launches | None = None,
) -> list[RecheckPoint]:
    """The baseline's recheck (same ``alpha`` and ``min_effect`` as the A/B). Where the
    baseline drifted, a candidate's verdict stands only when it reads the same against the
    recheck (A-B-A: the claim holds against both passes of the baseline); else it is refused,
    with the drift as the reason (``Cell.drift_refused``). A cell with no verdict left is
    blocked. ``launch``: the campaign's launches, their spread counted in each one-launch A/B."""
    pairs = recheck_groups(store, base.campaign, base.config)
    out = recheck_points(pairs, alpha=alpha, min_effect=min_effect, launch=launch)
    for p in out:
        if not p.drift or p.again is None:
            continue
        for key, cell in cells.items():
            if key[1] != p.label or not cell.verdicts or cell.blocked or key not in groups:
                continue
            if cell.interleaved:  # judged against its nearest pass (interleave), not the first
                continue
            for m, v in list(cell.verdicts.items()):
                spread = launch.spread(p.label, m) if launch else None
                again = group_verdict(
                    m, p.again, groups[key], alpha=alpha, min_effect=min_effect, launch=spread
                )
                cell.verdicts[m] = _bracketed(p, v, again)
                if v.claim != again.claim:
                    cell.drift_refused.append(m)
            if cell.drift_refused:
                cell.drift = p.reason()
            if set(cell.drift_refused) == set(cell.verdicts):
                cell.blocked = "not comparable: baseline drift"
    return out


def _bracketed(p: RecheckPoint, first: Verdict, again: Verdict) -> Verdict:
    """``first`` (against the baseline's first pass) where ``again`` (against its recheck)
    makes the same claim, else refused."""
    if first.claim == again.claim:
        return replace(
            first,
            reason=f"{first.reason}; the same against the baseline's recheck "
            f"({ratio_text(again.ratio)}), which drifted",
        )
    return refused_verdict(
        f"{p.reason()}; against the first pass {first.claim} {ratio_text(first.ratio)}, "
        f"against the recheck {again.claim} {ratio_text(again.ratio)}"
    )


def recheck_title(rechecks: Sequence[RecheckPoint]) -> str:
    sim = " — SIMULATED" if any(p.simulated for p in rechecks) else ""
    return f"Baseline recheck (order effects){sim}"


def recheck_rows(rechecks: Sequence[RecheckPoint]) -> list[tuple[str, ...]]:
    """One row per rechecked point, the columns of ``RECHECK_HEAD``."""
    rows: list[tuple[str, ...]] = []
    for p in rechecks:
        ratio = p.untrusted or p.ratio_text()
        drift = "not assessed" if p.untrusted else ("yes" if p.drift else "no")
        rows.append((p.label, num(p.first_tok_s), num(p.recheck_tok_s), ratio, drift))
    return rows


def recheck_md(
    rechecks: Sequence[RecheckPoint], esc: Callable[[str], str] = str, level: str = "###"
) -> list[str]:
    """The recheck as Markdown (``esc``: the page's escaping); nothing when not rechecked."""
    if not rechecks:
        return []
    out = ["", f"{level} {esc(recheck_title(rechecks))}", "", esc(RECHECK_NOTE), ""]
    out += ["| " + " | ".join(RECHECK_HEAD) + " |", "|---|---:|---:|---|---|"]
    out += ["| " + " | ".join(esc(x) for x in row) + " |" for row in recheck_rows(rechecks)]
    return [*out, "", *(f"- {esc(p.line())}" for p in rechecks)]
