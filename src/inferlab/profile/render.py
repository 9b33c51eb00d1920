"""Formatting of a stored profile (``Profile.to_dict``, read as ``store.models.ProfileBody``)
as lines of text.

Builders return lists of rows and sentences, so the CLI (rich tables), the report (Markdown and
HTML) and tests share them."""

from __future__ import annotations

from inferlab.store.models import ProfileBody, ProfileRow

__all__ = [
    "amdahl_sentences",
    "category_rows",
    "headline",
    "kernel_rows",
    "occupancy_rows",
    "share_caption",
]


def ms(us: float) -> str:
    """µs → ms with 2 decimals below 10 ms, else 1."""
    v = us / 1000
    return f"{v:.2f}" if v < 10 else f"{v:.1f}"


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _bound(x: float | None) -> str:
    return "∞" if x is None or x > 1e6 else f"{x:.3f}×"


def _sim_mark(p: ProfileBody) -> str:
    ours = p.meta.get("inferlab")
    return "SIMULATED trace: " if isinstance(ours, dict) and ours.get("simulated") else ""


def headline(p: ProfileBody) -> list[str]:
    """Segment summary sentences: steps, busy/idle, kernels, verdict, graphs, warnings."""
    if p.mode == "cpu":
        return _cpu_headline(p)
    out = [f"{_sim_mark(p)}{p.trace} ({p.format}), segment {p.segment}: steps from {p.step_source}"]
    m = p.mean_step
    if m and p.segment != "all":
        out.append(
            f"{len(p.steps)} steps: GPU span {ms(m.span_us)} ms mean "
            f"({ms(m.min_span_us)}–{ms(m.max_span_us)}), kernels busy {ms(m.busy_us)} ms, "
            f"idle {ms(m.idle_us)} ms, {m.kernels:.0f} kernels per step"
        )
    out.append(
        f"kernel time {ms(p.kernel_us)} ms in {p.kernels:,} kernels ({p.kernel_names} "
        f"names); memcpy/memset {ms(p.copy_us)} ms in {p.copies:,} ops (not in shares)"
    )
    out.append(p.verdict)
    if p.host is not None:
        h = p.host
        out.append(
            f"host: the engine thread's loop {ms(h.loop_us)} ms per step (its step range "
            f"{ms(h.range_us)} ms, blocking waits {ms(h.wait_us)} ms, launch calls "
            f"{ms(h.launch_us)} ms; median of {h.steps}); {h.ahead:.0%} of steps began while "
            "the GPU ran an earlier one. Under full overlap the step is at least the host's "
            "loop: a faster kernel cannot take it lower (the profiler slows the host)"
        )
    if p.graph_launches:
        out.append(
            f"CUDA graphs: {p.graph_kernels:,} kernels from {p.graph_launches} graph "
            f"launches ({p.graph_kernels / p.graph_launches:.0f} per launch): they share "
            "their launch's correlation, so kernels are attributed by name"
        )
    return out


def _cpu_headline(p: ProfileBody) -> list[str]:
    out = [
        f"{p.trace} ({p.format}, CPU mode: no GPU activity), segment {p.segment}: "
        f"steps from {p.step_source}"
    ]
    m = p.mean_step
    if m:
        out.append(
            f"{len(p.steps)} steps: {ms(m.span_us)} ms mean ({ms(m.min_span_us)}–"
            f"{ms(m.max_span_us)}), CPU ops busy {ms(m.busy_us)} ms, outside ops "
            f"{ms(m.idle_us)} ms, {m.kernels:.0f} ops per step"
        )
    out.append(
        f"op self time {ms(p.kernel_us)} ms in {p.kernels:,} ops ({p.kernel_names} "
        "names); shares are of the step time, so the categories sum to 100%"
    )
    out.append(p.verdict)
    return out


def share_caption(p: ProfileBody) -> str:
    """What the shares and bounds of the tables mean."""
    of = p.share_of or "kernel time"
    return f"share: of the segment's {of}; ≤: Amdahl bound on the whole step's speed-up"


def category_rows(p: ProfileBody) -> list[list[str]]:
    """category, time ms, share of kernel time, count, mean µs, per step ms, ≤ if 2× / if free."""
    return [
        [
            r.name,
            ms(r.time_us),
            pct(r.share),
            f"{r.count:,}",
            f"{r.mean_us:.1f}",
            "–" if r.per_step_us is None else ms(r.per_step_us),
            _bound(r.amdahl_2x),
            _bound(r.amdahl_free),
        ]
        for r in p.categories
    ]


def kernel_rows(p: ProfileBody, top: int) -> list[list[str]]:
    return [
        [
            r.short,
            r.category,
            ms(r.time_us),
            pct(r.share),
            f"{r.count:,}",
            f"{r.mean_us:.1f}",
            _bound(r.amdahl_free),
        ]
        for r in p.kernel_rows[:top]
    ]


def occupancy_rows(p: ProfileBody, top: int) -> list[list[str]]:
    sm = p.sm_count
    return [
        [
            o.short,
            f"{o.blocks} on {sm}",
            f"{100 * o.sm_fraction:.0f}%",
            pct(o.share),
            f"{o.count:,}",
        ]
        for o in p.occupancy[:top]
    ]


def occupancy_sentence(p: ProfileBody) -> str:
    if p.mode == "cpu":
        return "occupancy: not applicable (CPU mode: no GPU grids)"
    if p.occupancy_share is None:
        return "occupancy: SM count unknown (pass --sms N)"
    sm = p.sm_count
    s = f"under-occupied kernels (grid < {sm} SMs): {pct(p.occupancy_share)} of kernel time"
    if p.occupancy:
        o = p.occupancy[0]
        s += (
            f"; largest: {o.short} with {o.blocks} blocks on {sm} SMs: at most "
            f"{100 * o.sm_fraction:.0f}% of SMs busy, {pct(o.share)} of {p.segment} "
            "kernel time"
        )
    return s


def amdahl_sentences(p: ProfileBody, n: int = 3) -> list[str]:
    """The largest categories and kernels as Amdahl bounds on the whole step."""
    span = p.span_us
    out = []
    rows: list[ProfileRow] = [*p.categories[:n], *p.kernel_rows[:n]]
    for r in rows:
        if r.share is None or span <= 0:
            continue
        f = r.time_us / span
        out.append(
            f"{r.short or r.name} is {100 * f:.1f}% of {p.segment} time: at most "
            f"{_bound(r.amdahl_2x)} if 2× faster, {_bound(r.amdahl_free)} even if free"
        )
    return out
