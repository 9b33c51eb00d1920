"""The report section "Where the time goes": the profiles a campaign captured, per load point
and config (rank 0 as the headline, the spread of each category's share over ranks, the top
kernels, under-occupied kernels, the host-bound verdict, Amdahl bounds, and a diff against the
baseline at the same point), then any profile stored by hand (``inferlab profile --campaign``).
"""

from __future__ import annotations

from html import escape

from inferlab.profile import render
from inferlab.report.sections.base import Section
from inferlab.report.sections.base import md_text as _md
from inferlab.store import Store
from inferlab.store.analyses import StoredAnalysis
from inferlab.store.models import ProfileBody, ProfileCapture

__all__ = ["profile_section"]

#: a stored profile captured at a load point, with its capture block
Captured = tuple[StoredAnalysis[ProfileBody], ProfileCapture]
#: one rank's profile of a capture, with its capture block
Ranked = tuple[ProfileBody, ProfileCapture]

_CAT_COLS = ["category", "ms", "share", "count", "mean µs", "ms/step", "≤ if 2×", "≤ if free"]
_K_COLS = ["kernel", "category", "ms", "share", "count", "mean µs", "≤ if free"]
_OCC_COLS = ["kernel", "blocks", "≤ SMs busy", "share", "count"]
_DIFF_COLS = ["category", "baseline ms/step", "this ms/step", "Δ ms", "×"]
TOP = 10


class _Out:
    """Markdown and HTML of the section, built side by side."""

    def __init__(self) -> None:
        self.md: list[str] = []
        self.html: list[str] = []

    def head(self, text: str) -> None:
        self.md += [f"### {_md(text)}", ""]
        self.html.append(f"<h3>{escape(text)}</h3>")

    def bullets(self, lines: list[str]) -> None:
        self.md += [*(f"- {_md(s)}" for s in lines), ""]
        self.html.append("<ul>" + "".join(f"<li>{escape(s)}</li>" for s in lines) + "</ul>")

    def table(self, cols: list[str], rows: list[list[str]]) -> None:
        if not rows:
            return
        self.md += ["| " + " | ".join(_md(c) for c in cols) + " |", "|" + "---|" * len(cols)]
        self.md += [*("| " + " | ".join(_md(x) for x in r) + " |" for r in rows), ""]
        head = "<tr>" + "".join(f"<th>{escape(c)}</th>" for c in cols) + "</tr>"
        body = "".join("<tr>" + "".join(f"<td>{escape(x)}</td>" for x in r) + "</tr>" for r in rows)
        self.html.append(f"<table>{head}{body}</table>")


def _per_step(p: ProfileBody) -> dict[str, float]:
    n = len(p.steps) if p.segment != "all" else 0
    return {r.name: r.time_us / (n or 1) for r in p.categories}


def _spread(ranks: list[Ranked]) -> dict[str, tuple[float, float]]:
    """Each category's share: (min, max) over the ranks."""
    out: dict[str, tuple[float, float]] = {}
    for p, _ in ranks:
        for r in p.categories:
            if r.share is None:
                continue
            lo, hi = out.get(r.name, (r.share, r.share))
            out[r.name] = (min(lo, r.share), max(hi, r.share))
    return out


def _capture_line(p: ProfileBody, cap: ProfileCapture, n_ranks: int) -> str:
    size = cap.size_bytes or 0
    steps = len(p.steps) or 1
    sim = "SIMULATED trace (synthesized by inferlab sim's timing model); " if cap.simulated else ""
    return (
        f"{sim}captured in a profiled pass at {cap.point} (its requests are stored apart and "
        f"never enter a verdict): {cap.steps} engine steps asked, {len(p.steps)} "
        f"{p.segment} steps analyzed; {n_ranks} rank trace(s), rank 0 "
        f"{size / 2**20:.2f} MiB ({size / steps / 1024:.1f} KiB per step); the pass took "
        f"{cap.seconds or 0.0:.1f} s; {cap.path}"
    )


def _diff(out: _Out, mine: Ranked, theirs: Ranked, base_name: str) -> None:
    (p, cap), (base, base_cap) = mine, theirs
    if p.mode != base.mode or bool(cap.simulated) != bool(base_cap.simulated):
        out.bullets([f"no diff against {base_name}: the profiles are not comparable (mode)"])
        return
    a, b = _per_step(base), _per_step(p)
    rows = []
    for name in sorted(set(a) | set(b), key=lambda n: (-abs(b.get(n, 0.0) - a.get(n, 0.0)), n)):
        va, vb = a.get(name, 0.0), b.get(name, 0.0)
        ratio = f"×{vb / va:.2f}" if va > 0 else "–"
        rows.append(
            [
                name,
                render.ms(va),
                render.ms(vb),
                f"{'+' if vb >= va else ''}{render.ms(vb - va)}",
                ratio,
            ]
        )
    ma, mb = base.mean_step, p.mean_step
    sa, sb = (m.span_us if m is not None else 0.0 for m in (ma, mb))
    line = f"vs {base_name} at the same point: step {render.ms(sa)} → {render.ms(sb)} ms"
    if sa > 0:
        line += f" (×{sb / sa:.3f})"
    ba, bb = (m.batch if m is not None else None for m in (ma, mb))
    if ba and bb:
        line += f", mean batch {ba:.1f} → {bb:.1f}"
        if abs(bb - ba) > 0.05 * ba:
            line += (
                " — the steps ran different batches, so per-step times are not comparable "
                "(compare shares, or capture more steps)"
            )
    out.bullets([line])
    out.table(_DIFF_COLS, rows)


def _captured(out: _Out, config: str, ranks: list[Ranked], base: tuple[str, Ranked] | None) -> None:
    ranks = sorted(ranks, key=lambda r: r[1].rank or 0)
    p, cap = ranks[0]
    sim = " (SIMULATED)" if cap.simulated else ""
    which = f": rank {cap.rank}" if cap.rank is not None else ""
    out.head(f"{config} at {cap.point}{sim}{which}")
    out.bullets(
        [_capture_line(p, cap, len(ranks)), *render.headline(p), render.occupancy_sentence(p)]
    )
    spread = _spread(ranks)
    rows = render.category_rows(p)
    cols = list(_CAT_COLS)
    if len(ranks) > 1:
        cols.append(f"share over {len(ranks)} ranks")
        for row, r in zip(rows, p.categories):
            lo, hi = spread.get(r.name, (None, None))
            row.append("–" if lo is None else f"{render.pct(lo)}–{render.pct(hi)}")
    out.table(cols, rows)
    out.table(_K_COLS, render.kernel_rows(p, TOP))
    out.table(_OCC_COLS, render.occupancy_rows(p, 5))
    out.bullets(render.amdahl_sentences(p))
    if base is not None:
        _diff(out, ranks[0], base[1], base[0])


def _latest_capture(rows: list[Captured]) -> list[Ranked]:
    """The ranks of the newest capture among several of one config and point: the run of the
    newest stored analysis (a trace analyzed again later, with no run, supersedes as levers'
    evidence does), each rank once, its newest analysis."""
    newest = max(rows, key=lambda r: r[0].id)
    same = [r for r in rows if r[1].run_id == newest[1].run_id]
    by_rank = {cap.rank or 0: (a.data, cap) for a, cap in sorted(same, key=lambda r: r[0].id)}
    return [by_rank[k] for k in sorted(by_rank)]


def profile_section(store: Store, campaign: str) -> Section | None:
    """Every profile stored under ``campaign``; ``None`` when it has none."""
    rows = store.analyses.profiles(campaign)
    if not rows:
        return None
    out = _Out()
    out.md += [
        "Shares are of the segment's kernel time (CPU mode: of the step time); ≤ bounds are "
        "Amdahl's law on the whole step (docs/profile.md).",
        "",
    ]
    out.html.append(
        '<p class="muted">Shares are of the segment\'s kernel time (CPU mode: of the step '
        "time); ≤ bounds are Amdahl's law on the whole step (docs/profile.md).</p>"
    )
    groups: dict[tuple[str, str], list[Captured]] = {}
    for r in rows:
        cap = r.data.capture
        if cap is not None and cap.point and r.config:
            groups.setdefault((cap.point, r.config), []).append((r, cap))
    order = list(dict.fromkeys(c for _, c in groups))
    for point in dict.fromkeys(pt for pt, _ in groups):
        base_name = order[0]
        base_rows = groups.get((point, base_name))
        base = (base_name, _latest_capture(base_rows)[0]) if base_rows else None
        for config in order:
            if (point, config) in groups:
                ranks = _latest_capture(groups[(point, config)])
                _captured(out, config, ranks, base if config != base_name else None)
    for r in rows:
        if r.data.capture is None or not r.data.capture.point:
            _stored(out, r.name, r.data)
    return Section("profile", "Where the time goes", "\n".join(out.md), "\n".join(out.html))


def _stored(out: _Out, name: str, p: ProfileBody) -> None:
    """A profile stored by hand, without a load point."""
    out.head(f"{name}: {p.segment}")
    out.bullets([*render.headline(p), render.occupancy_sentence(p), *render.amdahl_sentences(p)])
    out.table(_CAT_COLS, render.category_rows(p))
    out.table(_K_COLS, render.kernel_rows(p, TOP))
