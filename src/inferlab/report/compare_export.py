"""``inferlab compare`` as JSON and CSV (the formats scripts read)."""

from __future__ import annotations

import csv
import io
import math
from typing import TYPE_CHECKING, Any

from inferlab.store.export import FORMAT_VERSION

if TYPE_CHECKING:
    from inferlab.report.compare import Comparison

__all__ = ["render_csv", "to_json"]


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
            }
            for cell in c.cells.values()
        ],
        "saturation": {cfg: s.sentence for cfg, s in c.saturation.items()},
        "differences": {
            cfg: [{"field": d.field, "a": d.a, "b": d.b} for d in ds]
            for cfg, ds in c.differences.items()
        },
        "recheck": [p.to_json() for p in c.rechecks],
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
