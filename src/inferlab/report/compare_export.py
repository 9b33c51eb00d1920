"""``inferlab compare`` as JSON and CSV (the formats scripts read)."""

from __future__ import annotations

import csv
import io
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inferlab.report.compare import Comparison

__all__ = ["render_csv", "to_json"]


def to_json(c: Comparison) -> dict[str, Any]:
    return {
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
            }
            for cell in c.cells.values()
        ],
        "saturation": {cfg: s.sentence for cfg, s in c.saturation.items()},
        "differences": {
            cfg: [{"field": d.field, "a": d.a, "b": d.b} for d in ds]
            for cfg, ds in c.differences.items()
        },
    }


def render_csv(c: Comparison) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(
        [
            "config",
            "load",
            "trials",
            "metric",
            "value",
            "ratio",
            "ratio_low",
            "ratio_high",
            "p_value",
            "claim",
            "not_comparable",
        ]
    )
    for cell in c.cells.values():
        for m in c.metrics:
            v = cell.verdicts.get(m)
            w.writerow(
                [
                    cell.config,
                    cell.label,
                    cell.trials,
                    m,
                    cell.values.get(m),
                    v.ratio.estimate if v else "",
                    v.ratio.low if v else "",
                    v.ratio.high if v else "",
                    v.p_value if v else "",
                    v.claim if v else "",
                    ";".join(d.field for d in cell.forced),
                ]
            )
    return buf.getvalue()
