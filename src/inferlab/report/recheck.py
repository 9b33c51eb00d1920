"""The baseline recheck in a comparison: candidate verdicts refused where the baseline drifted
(``store.recheck``), and the recheck as a table (point, first pass, recheck, ratio, drift)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from inferlab.report.verdicts import num, refused_verdict
from inferlab.store import RunRow, Store
from inferlab.store.recheck import RecheckPoint, recheck_points

if TYPE_CHECKING:
    from inferlab.report.compare import Cell

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
    "counts; ratio = recheck / first pass. Where it drifted beyond the minimum effect, no "
    "candidate verdict at that point is claimed."
)


def apply_rechecks(
    store: Store, base: RunRow, cells: dict[tuple[str, str], Cell], alpha: float, min_effect: float
) -> list[RecheckPoint]:
    """The baseline's recheck (same ``alpha`` and ``min_effect`` as the A/B); every candidate
    verdict at a point where the baseline drifted is refused, with the drift as the reason."""
    out = recheck_points(store, base.campaign, base.config, alpha=alpha, min_effect=min_effect)
    for p in out:
        if not p.drift:
            continue
        for (_, label), cell in cells.items():
            if label == p.label and cell.verdicts:
                cell.blocked, cell.drift = "not comparable: baseline drift", p.reason()
                cell.verdicts = {m: refused_verdict(p.reason()) for m in cell.verdicts}
    return out


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
