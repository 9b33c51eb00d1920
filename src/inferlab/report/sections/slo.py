"""The report section "SLO": at every stored point measured under an SLO, goodput (the share
of requests that met every limit, Wilson 95% interval) and whether the SLO holds, fails or is
undecided (``stats.slo``); then capacity at SLO per config against the baseline's
(``report.capacity``). Reads the store only."""

from __future__ import annotations

from html import escape
from typing import Any

from inferlab.report.capacity import capacity_rows, stored_capacities
from inferlab.report.sections.base import Section, table
from inferlab.store import Store

__all__ = ["slo_rows", "slo_section", "table"]

HEAD = ("config", "point", "trial", "SLO", "goodput [95%]", "state", "worst limit")


def _pct(x: Any) -> str:
    return f"{x * 100:.0f}%" if isinstance(x, (int, float)) else "–"


def _worst(checks: list[dict[str, Any]]) -> str:
    ok = [c for c in checks if isinstance(c.get("value_ms"), (int, float))]
    if not ok:
        return "–"
    c = max(ok, key=lambda c: c["value_ms"] / c["limit_ms"])
    lo, hi = c.get("low_ms"), c.get("high_ms")
    band = f" [{lo:.2f}–{hi:.2f}]" if lo is not None and hi is not None else ""
    return f"{c['key']} {c['value_ms']:.2f}{band} ms vs {c['limit_ms']:g}"


def slo_rows(store: Store, campaign: str) -> list[tuple[str, ...]]:
    """One row per stored run with an SLO: config, point, trial, limits, goodput, state."""
    out: list[tuple[str, ...]] = []
    for run in store.runs(campaign=campaign):
        slo = run.summary.get("slo")
        if not slo:
            continue
        g = slo.get("goodput") or {}
        share = f"{_pct(g.get('estimate'))} [{_pct(g.get('low'))}–{_pct(g.get('high'))}]"
        out.append(
            (
                run.config,
                run.label,
                str(run.trial),
                str(slo.get("slo")),
                share,
                str(slo.get("state") or "–"),
                _worst(slo.get("checks") or []),
            )
        )
    return out


INTRO = (
    "Goodput: the share of a point's measured requests whose own TTFT, TPOT, E2E and ITL met "
    "every limit (Wilson 95% interval). A percentile limit (`_pXX_ms`) holds when the upper "
    "bound of the percentile's bootstrap 95% interval (requests resampled) is within it, "
    "fails when the lower bound is above it, and is undecided otherwise."
)


def slo_section(store: Store, campaign: str) -> Section | None:
    """The SLO at each point of ``campaign``; None when no point was measured under one."""
    rows = slo_rows(store, campaign)
    names = store.configs.config_names(campaign)
    caps = capacity_rows(stored_capacities(store, campaign), names, None)
    if not rows and not caps:
        return None
    md: list[str] = []
    html: list[str] = []
    if rows:
        t_md, t_html = table(HEAD, rows)
        md += [INTRO, "", *t_md, ""]
        html += [f'<p class="muted">{escape(INTRO)}</p>', t_html]
    if caps:
        sim = "SIMULATED. " if any(r.simulated for r in caps) else ""
        intro = sim + CAPACITY_INTRO
        cap: list[tuple[str, ...]] = [
            (r.config, r.value.slo, r.capacity_text, r.ratio_text) for r in caps
        ]
        t_md, t_html = table(CAPACITY_HEAD, cap)
        md += ["### Capacity at SLO", "", intro, "", *t_md, ""]
        html += ["<h3>Capacity at SLO</h3>", f'<p class="muted">{escape(intro)}</p>', t_html]
    return Section("slo", "SLO", "\n".join(md), "\n".join(html))


CAPACITY_HEAD = ("config", "SLO", "capacity", "vs baseline")
CAPACITY_INTRO = (
    "Capacity at SLO (`inferlab bench --capacity`): the highest closed-loop concurrency at "
    "which the SLO holds, between the highest probe that holds with confidence and the lowest "
    "that fails with confidence; in brackets the isotonic estimate with its bootstrap 95% "
    "interval. Against the baseline (the first config): ×ratio of the estimates, higher or "
    "lower only when the capacity intervals separate; refused under a different SLO or "
    "workload."
)
