"""Test helper: facts of a CPU-only Kineto trace (vLLM's CPU build) computed from its JSON
events directly, without inferlab, to check ``inferlab profile``'s CPU mode against."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path
from typing import Any


def _events(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:  # type: ignore[operator]
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def cpu_facts(path: Path, step_prefix: str = "execute_context_0(0)_generation_") -> dict[str, Any]:
    """Decode iterations (one step range's start to the next one's), the time the worker spends
    inside the step ranges outside any op (framework), outside the ranges and outside any op
    (waiting), and in oneDNN matmuls (µs)."""
    ev = _events(path)
    ann = sorted(
        (e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("execute_")),
        key=lambda e: e["ts"],
    )
    tid = ann[0]["tid"]
    ops = sorted(
        (e for e in ev if e.get("cat") == "cpu_op" and e["tid"] == tid),
        key=lambda e: (e["ts"], -e["dur"]),
    )
    decode = [(a, b) for a, b in itertools.pairwise(ann) if a["name"].startswith(step_prefix)]
    top: list[dict[str, Any]] = []
    end = -1.0
    for e in ops:  # ops not inside another op
        if e["ts"] >= end:
            top.append(e)
            end = e["ts"] + e["dur"]
    spans = waiting = framework = mm = 0.0
    for a, b in decode:
        lo, hi, range_end = a["ts"], b["ts"], a["ts"] + a["dur"]
        mine = [e for e in top if lo <= e["ts"] < hi]
        inside = sum(
            min(e["ts"] + e["dur"], range_end) - e["ts"] for e in mine if e["ts"] < range_end
        )
        spans += hi - lo
        framework += a["dur"] - inside
        waiting += (hi - lo) - a["dur"] - (sum(e["dur"] for e in mine) - inside)
        mm += sum(e["dur"] for e in ops if e["name"] == "_C::onednn_mm" and lo <= e["ts"] < hi)
    return {
        "steps": len(decode),
        "span_us": spans,
        "waiting_us": waiting,
        "framework_us": framework,
        "onednn_mm_us": mm,
    }
