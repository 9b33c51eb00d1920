"""Terminal sparklines of a log's time series (lists of strings: easy to test)."""

from __future__ import annotations

from collections.abc import Sequence

from inferlab.logs.model import SeriesPoint

__all__ = ["METRICS", "series_lines", "sparkline"]

_BARS = "▁▂▃▄▅▆▇█"

#: (attribute, label with unit)
METRICS: tuple[tuple[str, str], ...] = (
    ("gen_tps", "gen throughput (tok/s)"),
    ("running", "running requests"),
    ("queued", "queued requests"),
    ("kv_usage", "KV usage (0-1)"),
    ("accept_len", "accept length (tok/step)"),
)


def sparkline(values: Sequence[float], width: int = 60) -> str:
    """``values`` as one row of block characters, bucket means when longer than ``width``."""
    if not values:
        return ""
    if len(values) > width:
        step = len(values) / width
        vals = []
        for i in range(width):
            chunk = values[int(i * step) : max(int(i * step) + 1, int((i + 1) * step))]
            vals.append(sum(chunk) / len(chunk))
    else:
        vals = list(values)
    lo, hi = min(vals), max(vals)
    span = hi - lo
    if span <= 0:
        return _BARS[3 if hi else 0] * len(vals)
    return "".join(_BARS[min(7, int((v - lo) / span * 7.999))] for v in vals)


def _n(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def series_lines(points: Sequence[SeriesPoint], width: int = 60) -> list[str]:
    """One line per metric the series has: label, sparkline, min / max / last, points."""
    out = []
    for attr, label in METRICS:
        vals = [float(v) for p in points if (v := getattr(p, attr)) is not None]
        if not vals:
            continue
        out.append(
            f"{label:<26} {sparkline(vals, width):<{width}}  min {_n(min(vals))} · "
            f"max {_n(max(vals))} · last {_n(vals[-1])} ({len(vals)} pts)"
        )
    return out
