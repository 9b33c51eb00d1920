"""Tuning results: read a saved run, derive the per-(shape, M) table, store it, report it.

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
from html import escape
from typing import Any

from inferlab.report.sections import Section, register_section
from inferlab.report.sections import md_text as _md
from inferlab.store import Store
from inferlab.tune.saved import TuneData

__all__ = ["COLUMNS", "analysis_records", "store_run", "table_rows", "tuning_section"]


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


# -- the report section -----------------------------------------------------------------------


def _f(x: Any, digits: int = 1) -> str:
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
            _f(c["default_us"]),
            _f(c["tuned_us"]),
            f"{_f(c['speedup'], 2)}×",
            _f(c["tflops"], 0),
            _f(c["gbps"], 0),
            _f(c.get("roof_pct"), 0),
            str(c["tuned"]),
            _f(c.get("split_us")),
            _f(c.get("split_roof_pct"), 0),
            str(c.get("split") or "–"),
        ]
        for c in sorted(cells, key=lambda c: int(c["m"]))
    ]


_DEFINITION = (
    "Median kernel times (CUDA-graph replay over rotating inputs larger than L2). Tuned: the best "
    "config the engine can run. TFLOP/s = 2MNK / tuned time; GB/s = (A + B + C + scales bytes) / "
    "tuned time; % roof = max(2MNK / fp8 peak, bytes / copy bandwidth) / tuned time, ceilings "
    "measured at the start of the run. Split-K configs run only in the inferlab kernel and are "
    "never written to engine files."
)


@register_section("tuning")
def tuning_section(store: Store, campaign: str) -> Section | None:
    """W8A8 block-FP8 GEMM tuning results of ``campaign`` (latest run per shape)."""
    rows = store.analyses("tune", campaign)
    if not rows:
        return None
    latest: dict[str, dict[str, Any]] = {}
    for r in rows:
        latest[r["name"]] = r
    md: list[str] = [_md(_DEFINITION), ""]
    html: list[str] = [f'<p class="muted">{escape(_DEFINITION)}</p>']
    for name, r in latest.items():
        d = r["data"]
        ceil = d.get("ceilings") or {}
        head = (
            f"{name} on {d.get('device_name', '?')} ({d.get('engine', '?')}); ceilings: copy "
            f"{_f(ceil.get('copy_gbps'), 0)} GB/s, fp8 {_f(ceil.get('fp8_tflops'), 0)} TFLOP/s; "
            f"stored {r['created_at']}"
        )
        md += [f"### {_md(head)}", ""]
        md.append("| " + " | ".join(COLUMNS) + " |")
        md.append("|" + "---|" * len(COLUMNS))
        html.append(f"<h3>{escape(head)}</h3>")
        html.append("<table><thead><tr>" + "".join(f"<th>{escape(c)}</th>" for c in COLUMNS))
        html.append("</tr></thead><tbody>")
        for row in table_rows(d.get("cells") or []):
            md.append("| " + " | ".join(_md(x) for x in row) + " |")
            html.append("<tr>" + "".join(f"<td>{escape(x)}</td>" for x in row) + "</tr>")
        html.append("</tbody></table>")
        md.append("")
        for f in d.get("files") or []:
            line = f"wrote {f.get('path')} (M added {f.get('added')}, replaced {f.get('replaced')})"
            md.append(f"- {_md(line)}")
            html.append(f"<p>{escape(line)}</p>")
        for w in d.get("warnings") or []:
            md.append(f"- warning: {_md(w)}")
            html.append(f'<p class="warn">warning: {escape(w)}</p>')
        md.append("")
    return Section("tuning", "FP8 GEMM tuning", "\n".join(md), "\n".join(html))
