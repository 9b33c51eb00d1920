"""The baseline's passes in a comparison (``[load] interleave``): one row per load point and
pass — which candidate it was measured before, its output throughput, its ratio to the first
pass (did the baseline move?), and the candidates whose verdicts there were taken against it
(their nearest, ``store.interleave``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from inferlab.engines import is_simulated
from inferlab.report.comparison import Cell
from inferlab.report.verdicts import num
from inferlab.stats.groups import group_value
from inferlab.stats.launches import Launches
from inferlab.stats.recheck import recheck_point
from inferlab.store import Store
from inferlab.store.groups import RunGroup, group_runs
from inferlab.store.interleave import BaselinePass

__all__ = [
    "LAUNCH_NOTE",
    "PASSES_HEAD",
    "PASSES_NOTE",
    "launch_md",
    "launch_title",
    "pass_rows",
    "passes_md",
    "passes_title",
]

PASSES_HEAD = (
    "point",
    "baseline pass",
    "output tok/s",
    "ratio to the first pass [95% interval]",
    "drift",
    "verdicts taken against it",
)
PASSES_NOTE = (
    "[load] interleave: the baseline measured again just before each candidate after the "
    "first. Each candidate's verdicts at a point are taken against the baseline's nearest pass "
    "there (the one measured just before it); ratio = this pass / the first pass."
)


LAUNCH_NOTE = (
    "From the configs launched more than once at a point (the baseline's passes): how far one "
    "launch reads from another beyond its own requests' error, as the sd of a launch's log "
    "offset. Counted in every verdict with one launch a side (docs/compare.md, "
    '"Launch-to-launch spread").'
)


def launch_title(simulated: bool) -> str:
    return "Launch-to-launch spread" + (" — SIMULATED" if simulated else "")


def _head(title: str, note: str, esc: Callable[[str], str], level: str) -> list[str]:
    """A Markdown section's heading and its note, each escaped by ``esc``."""
    return ["", f"{level} {esc(title)}", "", esc(note), ""]


def launch_md(
    lines: Sequence[str],
    simulated: bool = False,
    esc: Callable[[str], str] = str,
    level: str = "###",
) -> list[str]:
    """The spread's lines (``Comparison.launch_lines``) as Markdown; nothing when none."""
    if not lines:
        return []
    return _head(launch_title(simulated), LAUNCH_NOTE, esc, level) + [f"- {esc(x)}" for x in lines]


def _untrusted(g: RunGroup) -> bool:
    return any(r.trust == "untrusted" for r in g.runs)


def _group(store: Store, p: BaselinePass) -> RunGroup:
    return group_runs(store, p.runs, lambda r: 0)[0]


def pass_rows(
    store: Store,
    passes: Mapping[str, Sequence[BaselinePass]],
    cells: Mapping[tuple[str, str], Cell],
    alpha: float,
    min_effect: float,
    launch: Launches | None = None,
) -> tuple[list[tuple[str, ...]], bool]:
    """The rows of ``PASSES_HEAD`` (none when the baseline was not interleaved), and whether
    they are the reference engine's (SIMULATED)."""
    rows: list[tuple[str, ...]] = []
    firsts = [r for ps in passes.values() for r in ps[0].runs]
    sim = any(is_simulated(r.environment.get("engine_name")) for r in firsts)
    for label, ps in passes.items():
        first = _group(store, ps[0])
        for p in ps:
            g = first if p is ps[0] else _group(store, p)
            ratio, drift = "–", "–"
            bad = [n for n, x in (("first pass", first), ("this pass", g)) if _untrusted(x)]
            if p is not ps[0] and bad:
                ratio = f"{' and '.join(bad)} untrusted (client lag or an unusable point)"
                drift = "not assessed"
            elif p is not ps[0]:
                rp = recheck_point(
                    label, first, g, alpha=alpha, min_effect=min_effect, launch=launch
                )
                ratio, drift = rp.ratio_text(), "yes" if rp.drift else "no"
            users = [
                c.config for c in cells.values() if c.label == label and c.against == (p.describe())
            ]
            which = "first pass" if p.before is None else f"before {p.before}"
            tok_s = num(group_value("output_tok_s", g))
            rows.append((label, which, tok_s, ratio, drift, ", ".join(users) or "–"))
    return rows, sim


def passes_title(rows: Sequence[tuple[str, ...]], simulated: bool) -> str:
    sim = " — SIMULATED" if simulated else ""
    return f"Baseline passes (interleave){sim}"


def passes_md(
    rows: Sequence[tuple[str, ...]],
    simulated: bool = False,
    esc: Callable[[str], str] = str,
    level: str = "###",
) -> list[str]:
    """The passes as Markdown (``esc``: the page's escaping); nothing when not interleaved."""
    if not rows:
        return []
    out = _head(passes_title(rows, simulated), PASSES_NOTE, esc, level)
    out += ["| " + " | ".join(PASSES_HEAD) + " |", "|---|---|---:|---|---|---|"]
    return out + ["| " + " | ".join(esc(x) for x in row) + " |" for row in rows]
