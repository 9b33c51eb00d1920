"""Inline SVG charts for the HTML report: no JavaScript, no external resources.

Every text that reaches the SVG is escaped here; callers pass plain strings."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from inferlab.report.data import Quantiles

__all__ = ["PALETTE", "Box", "Series", "box_chart", "line_chart", "nice_ticks"]

#: colour-blind-safe (Okabe–Ito), in config order
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")

_W, _H = 550, 320
_ML, _MR, _MT, _MB = 60, 140, 28, 48


@dataclass(frozen=True)
class Series:
    """One line: a name for the legend and (x, y) points."""

    name: str
    points: Sequence[tuple[float, float]]


@dataclass(frozen=True)
class Box:
    """One box of a grouped box chart: the quantiles ``q`` of one config (``series``) at one
    load point (``group``)."""

    group: str
    series: str
    q: Quantiles


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (steps of 1, 2, 2.5 or 5 × 10^k)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(1, count)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks = []
    t = start
    while t < hi + step * 0.999:
        ticks.append(round(t, 10))
        t += step
    return ticks


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.0f}" if v == int(v) else f"{v:.1f}"
    return f"{v:g}"


def _frame(title: str, x_label: str, y_label: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" width="{_W}" '
        f'height="{_H}" role="img" aria-label="{escape(title)}" class="chart">',
        f"<title>{escape(title)}</title>",
        f'<text x="{_ML}" y="16" class="ct">{escape(title)}</text>',
        f'<text x="{_ML + (_W - _ML - _MR) / 2:.1f}" y="{_H - 8}" text-anchor="middle" '
        f'class="al">{escape(x_label)}</text>',
        f'<text transform="translate(14,{_MT + (_H - _MT - _MB) / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle" class="al">{escape(y_label)}</text>',
    ]


def _y_axis(ticks: Sequence[float], ymap: _Map) -> list[str]:
    out = []
    for t in ticks:
        y = ymap(t)
        out.append(
            f'<line x1="{_ML}" x2="{_W - _MR}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
            f'<text x="{_ML - 6}" y="{y + 4:.1f}" text-anchor="end" class="tk">{_fmt(t)}</text>'
        )
    out.append(f'<line x1="{_ML}" x2="{_ML}" y1="{_MT}" y2="{_H - _MB}" class="axis"/>')
    out.append(f'<line x1="{_ML}" x2="{_W - _MR}" y1="{_H - _MB}" y2="{_H - _MB}" class="axis"/>')
    return out


class _Map:
    """Linear (or log) map from data to pixels."""

    def __init__(self, lo: float, hi: float, a: float, b: float, log: bool = False) -> None:
        self.log = log
        f = math.log2 if log else float
        self.lo, self.hi = f(lo), f(hi)
        if self.hi == self.lo:
            self.hi = self.lo + 1.0
        self.a, self.b = a, b

    def __call__(self, v: float) -> float:
        x = math.log2(v) if self.log else v
        return self.a + (x - self.lo) / (self.hi - self.lo) * (self.b - self.a)


def _legend(names: Sequence[str]) -> list[str]:
    out = []
    x = _W - _MR + 12
    y = _MT + 10
    for i, name in enumerate(names):
        c = PALETTE[i % len(PALETTE)]
        short = name if len(name) <= 18 else name[:17] + "…"
        out.append(
            f'<rect x="{x}" y="{y - 8 + 18 * i}" width="12" height="4" fill="{c}"/>'
            f'<text x="{x + 18}" y="{y - 3 + 18 * i}" class="lg">{escape(short)}'
            f"<title>{escape(name)}</title></text>"
        )
    return out


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str,
    y_label: str,
    log_x: bool | None = None,
) -> str:
    """Lines with markers; x on a log2 axis when the x values span ≥ 8× (concurrency sweeps),
    ticks at the x values themselves. Empty input gives an empty frame with a note."""
    pts = [p for s in series for p in s.points if math.isfinite(p[0]) and math.isfinite(p[1])]
    out = _frame(title, x_label, y_label)
    if not pts:
        out.append(f'<text x="{_W / 2}" y="{_H / 2}" text-anchor="middle">no data</text></svg>')
        return "".join(out)
    xs = sorted({p[0] for p in pts})
    ys = [p[1] for p in pts]
    if log_x is None:
        log_x = xs[0] > 0 and xs[-1] / xs[0] >= 8
    pad = 12
    xmap = _Map(xs[0], xs[-1], _ML + pad, _W - _MR - pad, log=log_x)
    yt = nice_ticks(min(0.0, min(ys)), max(ys))
    ymap = _Map(yt[0], yt[-1], _H - _MB, _MT)
    out += _y_axis(yt, ymap)
    for x in xs:
        px = xmap(x)
        out.append(
            f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{_H - _MB}" y2="{_H - _MB + 4}" '
            f'class="axis"/><text x="{px:.1f}" y="{_H - _MB + 16}" text-anchor="middle" '
            f'class="tk">{_fmt(x)}</text>'
        )
    for i, s in enumerate(series):
        c = PALETTE[i % len(PALETTE)]
        good = sorted(p for p in s.points if math.isfinite(p[0]) and math.isfinite(p[1]))
        if not good:
            continue
        path = " ".join(f"{xmap(x):.1f},{ymap(y):.1f}" for x, y in good)
        out.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"/>')
        for x, y in good:
            out.append(
                f'<circle cx="{xmap(x):.1f}" cy="{ymap(y):.1f}" r="3.5" fill="{c}">'
                f"<title>{escape(s.name)}: {_fmt(x)} → {y:.4g}</title></circle>"
            )
    out += _legend([s.name for s in series])
    out.append("</svg>")
    return "".join(out)


def box_chart(boxes: Sequence[Box], *, title: str, x_label: str, y_label: str) -> str:
    """Grouped box plot: per group (load point) one box per series (config). Whiskers p5–p95,
    box p25–p75, a bar at the median, a dot at p99."""
    out = _frame(title, x_label, y_label)
    good = [b for b in boxes if b.q.n > 0 and all(math.isfinite(v) for v in (b.q.p5, b.q.p99))]
    if not good:
        out.append(f'<text x="{_W / 2}" y="{_H / 2}" text-anchor="middle">no data</text></svg>')
        return "".join(out)
    groups: list[str] = []
    names: list[str] = []
    for b in good:
        if b.group not in groups:
            groups.append(b.group)
        if b.series not in names:
            names.append(b.series)
    yt = nice_ticks(min(0.0, min(b.q.p5 for b in good)), max(b.q.p99 for b in good))
    ymap = _Map(yt[0], yt[-1], _H - _MB, _MT)
    out += _y_axis(yt, ymap)
    gw = (_W - _ML - _MR) / len(groups)
    bw = min(28.0, gw * 0.8 / len(names))
    for gi, g in enumerate(groups):
        cx = _ML + gw * (gi + 0.5)
        out.append(
            f'<text x="{cx:.1f}" y="{_H - _MB + 16}" text-anchor="middle" '
            f'class="tk">{escape(g)}</text>'
        )
        for b in (b for b in good if b.group == g):
            si = names.index(b.series)
            c = PALETTE[si % len(PALETTE)]
            x = cx + (si - (len(names) - 1) / 2) * bw * 1.15
            x0, x1 = x - bw / 2, x + bw / 2
            top, bot = ymap(b.q.p75), ymap(b.q.p25)
            tip = (
                f"<title>{escape(b.series)} {escape(b.group)}: p5 {b.q.p5:.3g}, p25 {b.q.p25:.3g},"
                f" p50 {b.q.p50:.3g}, p75 {b.q.p75:.3g}, p95 {b.q.p95:.3g}, p99 {b.q.p99:.3g}"
                f" (n={b.q.n})</title>"
            )
            out.append(
                f"<g>{tip}"
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{ymap(b.q.p95):.1f}" y2="{ymap(b.q.p5):.1f}" '
                f'stroke="{c}"/>'
                f'<rect x="{x0:.1f}" y="{top:.1f}" width="{bw:.1f}" '
                f'height="{max(1.0, bot - top):.1f}" fill="{c}" fill-opacity="0.25" '
                f'stroke="{c}"/>'
                f'<line x1="{x0:.1f}" x2="{x1:.1f}" y1="{ymap(b.q.p50):.1f}" '
                f'y2="{ymap(b.q.p50):.1f}" stroke="{c}" stroke-width="2.5"/>'
                f'<circle cx="{x:.1f}" cy="{ymap(b.q.p99):.1f}" r="2.5" fill="{c}"/></g>'
            )
    out += _legend(names)
    out.append("</svg>")
    return "".join(out)
