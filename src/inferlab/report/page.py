"""What both report renderers show, as rows and texts: verdict cells, warnings, server values."""

from __future__ import annotations

import math

from inferlab.report.comparison import Comparison
from inferlab.report.data import SERVER_KEYS, Report
from inferlab.report.verdicts import claim_text, num, ratio_text
from inferlab.stats.metrics import METRICS

__all__ = ["SIM_BANNER", "cell_parts", "quality_rows", "server_runs", "value_text"]

SIM_BANNER = (
    "SIMULATED: these numbers come from inferlab's reference engine (sim), not a real "
    "inference server. They show the method, not any hardware's performance."
)


def value_text(v: object) -> str:
    """A scraped server value: 3 significant digits below 10, else one decimal."""
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 10 else f"{v:,.1f}"
    return str(v)


def cell_parts(c: Comparison, cfg: str, label: str, metric: str) -> tuple[str, str, str, str]:
    """(value, ratio text, claim, what the cell says) of one cell; claim '' for the baseline."""
    cell = c.cells.get((cfg, label))
    if cell is None:
        return "–", "", "", ""
    value = num(cell.values.get(metric, math.nan), METRICS[metric].digits)
    v = cell.verdicts.get(metric)
    refusal = cell.no_claim(metric)
    if refusal:
        return value, "", "~", refusal
    if v is None:
        return value, "", "", ""
    r, says = v.ratio, claim_text(v, None, cell.looks.get(metric))
    if math.isnan(r.estimate):
        return value, "no ratio", "~", says
    return value, ratio_text(r), v.claim, says


def quality_rows(report: Report) -> list[tuple[str, str, str, str, str]]:
    """(config, load, kind, message, fix) of every run and compare quality warning."""
    out: list[tuple[str, str, str, str, str]] = []
    for r in report.runs:
        for w in r.warnings:
            row = (
                r.config,
                f"{r.label} trial {r.trial}",
                w.get("kind", ""),
                w.get("message", ""),
                w.get("fix", ""),
            )
            if row not in out:
                out.append(row)
    if report.comparison is not None:
        for (cfg, lb), cell in report.comparison.cells.items():
            for q in cell.warnings:
                out.append((cfg, lb, q.kind, q.message, q.fix))
    return out


def server_runs(report: Report) -> list[tuple[str, str, int, dict[str, object]]]:
    return [
        (r.config, r.label, r.trial, {k: r.server[k] for k in SERVER_KEYS if k in r.server})
        for r in report.runs
        if any(k in r.server for k in SERVER_KEYS)
    ]
