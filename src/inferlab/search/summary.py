"""What a finished search leaves for the report beside its trials: the launch command of the
recommendation, and each trial's predicted speed-up (the Amdahl bounds of the dimensions it
changed against its incumbent) next to the measured one (the A/B's TPOT ratio, inverted).

Everything here is computed once, when the search stops, and stored (``search`` analysis); the
report formats it and recomputes nothing."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from inferlab.config.resolve import ResolvedConfig
from inferlab.config.search import SearchDim

from .loop import TrialRecord

__all__ = ["baseline_values", "combined_bound", "command_line", "predicted_rows"]


def command_line(launch: Sequence[str]) -> str:
    """The engine's command line from a config's ``run --dry-run`` lines: its environment
    (``env K=V``) before its argv; "" for an endpoint that inferlab does not launch."""
    argv = next((ln.split("argv: ", 1)[1] for ln in launch if "    argv: " in ln), "")
    env = next((ln.split("env: ", 1)[1] for ln in launch if ln.startswith("    env: ")), "")
    if not argv:
        return ""
    return f"env {env} {argv}" if env else argv


def baseline_values(dims: Sequence[SearchDim], base: ResolvedConfig) -> dict[str, Any]:
    """The baseline's own value of each dimension, from its resolved args, env and files (a
    flag given bare: True; not given: absent; a files kind not installed: ``none``)."""
    out: dict[str, Any] = {}
    args = list(base.args)
    for d in dims:
        if d.flag is not None and d.flag in args:
            i = args.index(d.flag)
            bare = i + 1 >= len(args) or args[i + 1].startswith("--")
            out[d.key] = True if bare else args[i + 1]
        elif d.flag is not None and d.presence:
            out[d.key] = False
        elif d.env is not None and d.env in base.env:
            out[d.key] = base.env[d.env]
        elif d.files is not None:
            out[d.key] = base.files.get(d.files, "none")
    return out


def combined_bound(highs: Sequence[float | None]) -> float | None:
    """The most a change of several dimensions can buy: Amdahl's law on the sum of their
    fractions (each ``1 - 1/bound``), which holds whether their shares overlap or not; None
    when one has no bound or the fractions reach the whole step."""
    if any(h is None or math.isinf(h) for h in highs):
        return None
    share = sum(1.0 - 1.0 / float(h) for h in highs if h is not None)
    return 1.0 / (1.0 - share) if share < 1.0 else None


def _speedup(ab: Mapping[str, Any]) -> tuple[float, float, float] | None:
    """The measured TPOT speed-up (incumbent / trial) with its interval, from the A/B."""
    d = ab.get("tpot_ms") or {}
    try:
        r, lo, hi = float(d["ratio"]), float(d["low"]), float(d["high"])
    except (KeyError, TypeError, ValueError):
        return None
    if min(r, lo, hi) <= 0:
        return None
    return 1.0 / r, 1.0 / hi, 1.0 / lo


def predicted_rows(
    trials: Sequence[TrialRecord], baseline: str, base_values: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Per measured trial: the dimensions it changed against its incumbent, their combined
    bound (``predicted``, a TPOT speed-up; None: unbounded), the measured speed-up and
    interval, and whether the measurement stays within the bound."""
    values: dict[str, Mapping[str, Any]] = {baseline: base_values}
    rows: list[dict[str, Any]] = []
    for t in trials:
        values[t.name] = t.params
        measured = _speedup(t.result.ab)
        if t.result.status != "ok" or measured is None:
            continue
        before = values.get(t.against, {})
        changed = [k for k, v in t.params.items() if k not in before or str(before[k]) != str(v)]
        bound = combined_bound([t.bounds.get(k) for k in changed]) if changed else 1.0
        if bound is None:
            check = "no bound"
        elif measured[1] > bound:
            check = "exceeds the bound"
        else:
            check = "within the bound"
        rows.append(
            {
                "trial": t.name,
                "against": t.against,
                "changed": changed,
                "predicted": bound,
                "measured": list(measured),
                "check": check,
            }
        )
    return rows
