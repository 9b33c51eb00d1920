"""``inferlab compare`` rendered: Markdown tables, JSON and CSV (the formats scripts read).
Each reads the comparison model (``report.comparison``); ``cell_text`` is one cell's text."""

from __future__ import annotations

import csv
import io
import math
from typing import Any

from inferlab.report.applied import LEVER_NOT_APPLIED
from inferlab.report.comparison import Comparison
from inferlab.report.interleave import PASSES_HEAD, launch_md, passes_md
from inferlab.report.recheck import recheck_md
from inferlab.report.verdicts import claim_text, num, ratio_text
from inferlab.stats.metrics import METRICS
from inferlab.store.export import FORMAT_VERSION

__all__ = ["capacity_md", "cell_text", "render_csv", "render_md", "to_json"]


def capacity_md(c: Comparison) -> list[str]:
    """Capacity at SLO per config against the baseline's (nothing when none is stored)."""
    if not c.capacity:
        return []
    sim = " — SIMULATED" if any(r.simulated for r in c.capacity) else ""
    out = ["", f"### Capacity at SLO{sim}", "", "| config | SLO | capacity | vs baseline |"]
    out.append("|---|---|---|---|")
    out += [
        f"| {r.config} | {r.value.slo} | {r.capacity_text} | {r.ratio_text} |" for r in c.capacity
    ]
    return out


def to_json(c: Comparison) -> dict[str, Any]:
    """The comparison as the JSON document of ``compare --format json`` (``format_version``:
    ``store.export.FORMAT_VERSION``)."""
    return {
        "format_version": FORMAT_VERSION,
        "baseline": c.baseline,
        "configs": c.configs,
        "labels": c.labels,
        "min_effect": c.min_effect,
        "alpha": c.alpha,
        "forced": c.forced,
        "cells": [
            {
                "config": cell.config,
                "label": cell.label,
                "trials": cell.trials,
                "values": {k: (None if math.isnan(v) else v) for k, v in cell.values.items()},
                "verdicts": {m: v.to_json() for m, v in cell.verdicts.items()},
                "warnings": [w.to_json() for w in cell.warnings],
                "not_comparable": [d.field for d in cell.forced],
                "untrusted": cell.untrusted_reasons,
                "settled_at": cell.looks,
                "lever_not_applied": cell.levers,
                "baseline_drift": cell.drift,
                **({"baseline_measurement": cell.against} if cell.against else {}),
            }
            for cell in c.cells.values()
        ],
        "saturation": {cfg: s.sentence for cfg, s in c.saturation.items()},
        "differences": {
            cfg: [{"field": d.field, "a": d.a, "b": d.b} for d in ds]
            for cfg, ds in c.differences.items()
        },
        "recheck": [p.to_json() for p in c.rechecks],
        **(
            {"baseline_passes": [dict(zip(PASSES_HEAD, r, strict=True)) for r in c.passes]}
            if c.passes
            else {}
        ),
        **({"capacity": [r.to_json() for r in c.capacity]} if c.capacity else {}),
        **(
            {
                "launch_spread": [
                    {"label": lb, "metric": m, "tau": x.tau, "df": x.df, "launches": x.launches}
                    for (lb, m), x in c.launch.items()
                ]
            }
            if c.launch
            else {}
        ),
    }


_CSV_COLUMNS = (  # noqa: SIM905 (a column list reads best on one line)
    "config load trials metric value ratio ratio_low ratio_high p_value claim not_comparable "
    "lever_not_applied"
).split()


def render_csv(c: Comparison) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(_CSV_COLUMNS)
    for cell in c.cells.values():
        for m in c.metrics:
            v = cell.verdicts.get(m)
            r = (
                (v.ratio.estimate, v.ratio.low, v.ratio.high, v.p_value, v.claim)
                if v
                else ("",) * 5
            )
            row = [cell.config, cell.label, cell.trials, m, cell.values.get(m), *r]
            bad = [d.field for d in cell.forced] + (["baseline_drift"] if cell.drift else [])
            w.writerow([*row, ";".join(bad), ";".join(cell.levers)])
    return buf.getvalue()


def cell_text(c: Comparison, cfg: str, label: str, metric: str) -> str:
    """``value`` for the baseline; ``value ×ratio [low, high] verdict`` for the others;
    ``value untrusted: client lag`` where no claim may be made."""
    cell = c.cells.get((cfg, label))
    if cell is None:
        return "–"
    digits = METRICS[metric].digits
    text = num(cell.values.get(metric, math.nan), digits)
    v = cell.verdicts.get(metric)
    refusal = cell.no_claim(metric)
    if refusal:
        text += f" {refusal}"
    elif v is not None:
        r = v.ratio
        if math.isnan(r.estimate):
            text += " (no ratio)"
        else:
            text += " " + ratio_text(r)
        text += " " + claim_text(v, None, cell.looks.get(metric))
    if cell.forced:
        text += " !"
    if cell.levers and v is not None:
        text += f" ({LEVER_NOT_APPLIED}{'!' if c.forced else ''})"
    return text


def render_md(c: Comparison) -> list[str]:
    """Markdown: one table per metric (rows load points, columns configs), then saturation,
    differences and warnings."""
    out = [
        f"Baseline: **{c.baseline}**. A change is claimed only when significant "
        f"(p < {c.alpha:g}) and larger than {c.min_effect:.0%}; ×ratio [95% interval]."
    ]
    for m in c.metrics:
        out += [
            "",
            f"### {METRICS[m].title} ({METRICS[m].unit})",
            "",
            "| load | " + " | ".join(c.configs) + " |",
            "|---|" + "---:|" * len(c.configs),
        ]
        for lb in c.labels:
            out.append(
                f"| {lb} | " + " | ".join(cell_text(c, cfg, lb, m) for cfg in c.configs) + " |"
            )
    out += capacity_md(c)
    if c.saturation:
        out += ["", "### Saturation", ""]
        out += [f"- {cfg}: {s.sentence}" for cfg, s in c.saturation.items()]
    if c.forced:
        out += ["", "### Not comparable (forced; cells marked !)", ""]
        out += [
            f"- {cfg}: " + ", ".join(f"{d.field} {d.a!r} vs {d.b!r}" for d in ds)
            for cfg, ds in c.differences.items()
            if ds
        ]
    warns = [(k, w) for k, cell in c.cells.items() for w in cell.warnings]
    if warns:
        out += ["", "### Measurement-quality warnings", ""]
        out += [f"- {cfg} {lb}: {w.message} — fix: {w.fix}" for (cfg, lb), w in warns]
    out += recheck_md(c.rechecks) + passes_md(c.passes, c.passes_simulated)
    out += launch_md(c.launch_lines(), c.launch_simulated)
    reasons = [(k, m, v) for k, cell in c.cells.items() for m, v in cell.verdicts.items()]
    if reasons:
        out += ["", "### Why each verdict", ""]
        out += [f"- {cfg} {lb} {m}: {v.claim} — {v.reason}" for (cfg, lb), m, v in reasons]
    return out
