"""Tuning results: read a saved run, derive the per-(shape, M) table, store it (the report's
section is ``report.sections.tuning``).

Definitions (every number in the table):

- default µs / tuned µs: median kernel time of the engine's default config
  (BM64_BN128_G32_w4, stages 3 in SGLang, 2 in vLLM) and of the best config the engine can run
  (no split-K), CUDA-graph replay over rotating inputs larger than L2;
- speedup = default µs / tuned µs;
- TFLOP/s = 2·M·N·K / tuned time; GB/s = bytes / tuned time, bytes = A (M·K fp8) + B (N·K fp8)
  + C (M·N bf16) + scales (M·⌈K/128⌉ + ⌈N/128⌉·⌈K/128⌉ fp32), each counted once;
- % roof = roofline time / tuned time, roofline = max(2MNK / fp8 peak, bytes / copy bandwidth)
  with the ceilings measured at the start of the run (copy GB/s counts read + write);
- split-K µs: the best split-K config (inferlab's kernel only; never written to engine files).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from inferlab.store import Store
from inferlab.tune.saved import TuneData

__all__ = ["COLUMNS", "analysis_records", "num", "store_run", "table_rows"]


def analysis_records(
    run: TuneData,
    *,
    engine: str,
    files: Sequence[Mapping[str, Any]] = (),
    warnings: Sequence[str] = (),
) -> dict[str, dict[str, Any]]:
    """One stored analysis per shape, named ``N=..,K=..``: its cells and what was written."""
    out: dict[str, dict[str, Any]] = {}
    for n, k in run.shapes():
        name = f"N={n},K={k}"
        out[name] = {
            "n": n,
            "k": k,
            "engine": engine,
            "device_name": run.device_name,
            "devices": run.devices,
            "ceilings": run.ceilings,
            "wall_s": run.wall_s,
            "compile_s": run.compile_s,
            "cells": [c.to_json(run.ceilings) for c in run.cells if (c.n, c.k) == (n, k)],
            "files": [dict(f) for f in files if (f.get("n"), f.get("k")) == (n, k)],
            "warnings": [w for w in warnings if f"N={n},K={k}" in w],
        }
    return out


def store_run(
    store: Store,
    run: TuneData,
    *,
    campaign: str,
    engine: str,
    files: Sequence[Mapping[str, Any]] = (),
    warnings: Sequence[str] = (),
) -> list[int]:
    """Store one analysis per shape (kind ``tune``) in one transaction; returns their ids."""
    records = analysis_records(run, engine=engine, files=files, warnings=warnings)
    with store.transaction():
        return [
            store.add_analysis("tune", name, d, campaign=campaign) for name, d in records.items()
        ]


# -- the per-M table (shown by `inferlab tune show` and the report) ---------------------------


def num(x: Any, digits: int = 1) -> str:
    """A table number: ``digits`` decimals with thousands separators, "–" for none."""
    return "–" if x is None else f"{float(x):,.{digits}f}"


COLUMNS = (
    "M",
    "default µs",
    "tuned µs",
    "speedup",
    "TFLOP/s",
    "GB/s",
    "% roof",
    "tuned config",
    "split-K µs",
    "split-K % roof",
    "split-K config",
)


def table_rows(cells: Iterable[Mapping[str, Any]]) -> list[list[str]]:
    """Rows of the per-M table from stored cell dicts (all text, not escaped)."""
    return [
        [
            str(c["m"]),
            num(c["default_us"]),
            num(c["tuned_us"]),
            f"{num(c['speedup'], 2)}×",
            num(c["tflops"], 0),
            num(c["gbps"], 0),
            num(c.get("roof_pct"), 0),
            str(c["tuned"]),
            num(c.get("split_us")),
            num(c.get("split_roof_pct"), 0),
            str(c.get("split") or "–"),
        ]
        for c in sorted(cells, key=lambda c: int(c["m"]))
    ]
