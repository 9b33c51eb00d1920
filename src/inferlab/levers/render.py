"""Levers and predictions as plain text: lines and table cells shared by the CLI and the
report (each renders and escapes them in its own format)."""

from __future__ import annotations

from .decide import Decision
from .model import Lever, speedup_text
from .predict import PredictionRow

__all__ = [
    "PREDICTION_COLUMNS",
    "SIM_NOTE",
    "config_title",
    "lever_details",
    "predicted_text",
    "prediction_cells",
]

SIM_NOTE = (
    "SIMULATED: the campaign ran on inferlab's reference engine; these levers and predictions "
    "show the method, not any hardware"
)
PREDICTION_COLUMNS = [
    "lever",
    "config vs reference",
    "load",
    "predicted",
    "measured",
    "verdict",
    "made",
]
_NAMES = {
    "fp8-gemm": "FP8 GEMM",
    "moe": "fused MoE",
    "comm": "NCCL",
    "kernel": "kernel",
    "cuda-graphs": "CUDA graphs",
    "spec-decode": "speculative decoding",
}


def config_title(d: Decision, name: str) -> str:
    if not name:
        return "profiles stored without a config"
    return name + (" (baseline)" if name == d.baseline else "")


def lever_details(lv: Lever) -> list[str]:
    """Evidence, action and confidence lines under a lever's one-line summary."""
    out = [f"evidence: {e}" for e in lv.evidence if e]
    if lv.action:
        out.append(f"action: {lv.action}")
    if lv.confidence:
        out.append(f"rests on: {lv.confidence}")
    return out


def predicted_text(row: PredictionRow) -> str:
    """``≤ ×1.068`` for a bound, ``×1.10–×1.60`` for a band (``extrapolated`` when it is)."""
    x = " (extrapolated)" if row.extrapolated else ""
    if row.low is None:
        return f"≤ {speedup_text(row.high)}{x}"
    return f"{speedup_text(row.low, 2)}–{speedup_text(row.high, 2)}{x}"


def _made(row: PredictionRow) -> str:
    """When the prediction was stored, and whether that preceded the measurement."""
    if row.made_at is None:
        return "computed now (not stored before)"
    text = row.made_at
    if row.preceded is not None:
        text += ", before the measurement" if row.preceded else ", after the measurement"
    if row.fresh:
        text += "; " + " + ".join(_NAMES.get(k, k) for k in row.fresh) + " computed now"
    return text


def prediction_cells(row: PredictionRow) -> list[str]:
    """One row of the Predictions table, as ``PREDICTION_COLUMNS``."""
    m = row.measured
    measured = "–" if m is None else f"×{m.estimate:.3f} [{m.low:.3f}, {m.high:.3f}]"
    verdict = {"above": "ABOVE THE BOUND", "below": "below the prediction"}.get(
        row.verdict, row.verdict
    )
    detail = row.detail
    if row.also_changed:
        detail += "; also changed (not predicted): " + ", ".join(row.also_changed)
    if row.suspects:
        detail += "; suspects: " + "; ".join(row.suspects)
    return [
        " + ".join(_NAMES.get(k, k) for k in row.kinds),
        f"{row.config} vs {row.reference}",
        row.label,
        predicted_text(row),
        measured,
        f"{verdict}: {detail}",
        _made(row),
    ]
