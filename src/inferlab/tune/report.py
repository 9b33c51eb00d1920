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

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from html import escape
from pathlib import Path
from typing import Any

from inferlab.config.jsonfile import read_json
from inferlab.errors import ConfigError
from inferlab.report.sections import Section, register_section
from inferlab.report.sections import md_text as _md
from inferlab.store import Store
from inferlab.tune.config import ENGINE_KEYS, KernelConfig
from inferlab.tune.roofline import Ceilings, gemm_bytes, gemm_flops, roof_pct

#: the ``version`` of ``TuneRun.to_json()`` this module reads (``inferlab.tune.runner``)
RESULT_VERSION = 1

__all__ = [
    "COLUMNS",
    "Cell",
    "TuneData",
    "analysis_records",
    "parse_config",
    "parse_run",
    "read_run",
    "store_run",
    "table_rows",
    "tuning_section",
]

_KEY_RE = re.compile(r"^BM(\d+)_BN(\d+)(?:_BK(\d+))?_G(\d+)_w(\d+)_s(\d+)(?:_k(\d+))?$")


def parse_config(obj: Any) -> KernelConfig:
    """A config from JSON: the engines' entry (+ optional ``split_k``), the dataclass fields,
    or its key (``BM64_BN128_G32_w4_s3``, ``..._k4``). Raises ``ValueError``."""
    if isinstance(obj, KernelConfig):
        return obj
    if isinstance(obj, str):
        m = _KEY_RE.match(obj)
        if not m:
            raise ValueError(f"not a config key: {obj!r}")
        bm, bn, bk, g, w, s, sk = m.groups()
        return KernelConfig(int(bm), int(bn), int(bk or 128), int(g), int(w), int(s), int(sk or 1))
    if isinstance(obj, Mapping):
        if all(k in obj for k in ENGINE_KEYS):
            base = KernelConfig.from_engine(obj)
            split = int(obj.get("split_k", obj.get("SPLIT_K", 1)) or 1)
            return replace(base, split_k=split)
        fields = ("block_m", "block_n", "block_k", "group_m", "num_warps", "num_stages")
        if all(f in obj for f in fields):
            bm, bn, bk, g, w, s = (int(obj[f]) for f in fields)
            return KernelConfig(bm, bn, bk, g, w, s, int(obj.get("split_k", 1)))
    raise ValueError(f"not a kernel config: {obj!r}")


@dataclass(frozen=True)
class Cell:
    """One tuned (N, K, M) cell; times in µs (medians), derived rates from the tuned time."""

    n: int
    k: int
    m: int
    default: KernelConfig
    default_us: float
    tuned: KernelConfig
    tuned_us: float
    split: KernelConfig | None = None
    split_us: float | None = None
    samples_us: list[float] = field(default_factory=list)
    default_samples_us: list[float] = field(default_factory=list)
    split_samples_us: list[float] = field(default_factory=list)
    rel_err: float | None = None
    candidates: int | None = None
    screened: int | None = None

    @property
    def speedup(self) -> float:
        return self.default_us / self.tuned_us

    @property
    def tflops(self) -> float:
        return gemm_flops(self.m, self.n, self.k) / self.tuned_us / 1e6

    @property
    def gbps(self) -> float:
        return gemm_bytes(self.m, self.n, self.k) / self.tuned_us / 1e3

    def roof_pct(self, ceilings: Mapping[str, float], us: float | None = None) -> float | None:
        """% of the measured roofline reached at ``us`` (default: the tuned time)."""
        bw, peak = ceilings.get("copy_gbps"), ceilings.get("fp8_tflops")
        if not bw or not peak:
            return None
        t = self.tuned_us if us is None else us
        return roof_pct(self.m, self.n, self.k, t, Ceilings(bw, peak))

    def to_json(self, ceilings: Mapping[str, float]) -> dict[str, Any]:
        return {
            "n": self.n,
            "k": self.k,
            "m": self.m,
            "default": self.default.key,
            "default_us": self.default_us,
            "tuned": self.tuned.key,
            "tuned_engine": self.tuned.to_engine(),
            "tuned_us": self.tuned_us,
            "speedup": self.speedup,
            "tflops": self.tflops,
            "gbps": self.gbps,
            "roof_pct": self.roof_pct(ceilings),
            "split": self.split.key if self.split else None,
            "split_us": self.split_us,
            "split_roof_pct": self.roof_pct(ceilings, self.split_us) if self.split_us else None,
            "samples_us": self.samples_us,
            "default_samples_us": self.default_samples_us,
            "split_samples_us": self.split_samples_us,
            "rel_err": self.rel_err,
            "candidates": self.candidates,
            "screened": self.screened,
        }


@dataclass(frozen=True)
class TuneData:
    """A whole tuning run as saved by the runner (``TuneRun.to_json()``)."""

    device_name: str
    devices: int
    ceilings: dict[str, float]
    cells: list[Cell]
    wall_s: float | None
    compile_s: float | None
    raw: dict[str, Any]

    def shapes(self) -> list[tuple[int, int]]:
        return list(dict.fromkeys((c.n, c.k) for c in self.cells))

    def engine_configs(self) -> dict[tuple[int, int], dict[int, KernelConfig]]:
        """Per shape, M → the best engine-usable config (what goes into the engine file)."""
        out: dict[tuple[int, int], dict[int, KernelConfig]] = {}
        for c in self.cells:
            out.setdefault((c.n, c.k), {})[c.m] = c.tuned
        return out


def _num(d: Mapping[str, Any], key: str, where: str, *, optional: bool = False) -> float | None:
    v = d.get(key)
    if v is None and optional:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ConfigError(f"{where}: field {key!r} must be a finite number, got {v!r}")
    return float(v)


def parse_run(data: Any, source: str = "results") -> TuneData:
    """Validate a saved run (``TuneRun.to_json()``); errors name ``source`` and the field."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a JSON object (a saved tuning run)")
    version = data.get("version", RESULT_VERSION)
    if version != RESULT_VERSION:
        raise ConfigError(
            f"{source}: tuning result version {version!r}; this inferlab reads version "
            f"{RESULT_VERSION} (upgrade inferlab to read newer runs)"
        )
    for key in ("device_name", "results"):
        if key not in data:
            raise ConfigError(f"{source}: missing field {key!r}: not a saved tuning run")
    if not isinstance(data["results"], list):
        raise ConfigError(f"{source}: field 'results' must be a list of cells")
    ceilings = {
        k: float(v)
        for k, v in (data.get("ceilings") or {}).items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    cells: list[Cell] = []
    for i, r in enumerate(data["results"]):
        where = f"{source}: results[{i}]"
        if not isinstance(r, dict):
            raise ConfigError(f"{where}: expected an object")
        try:
            n, k, m = (int(r[f]) for f in ("n", "k", "m"))
        except (KeyError, TypeError, ValueError):
            raise ConfigError(f"{where}: fields 'n', 'k', 'm' must be integers") from None
        try:
            default = parse_config(r.get("default"))
            best = parse_config(r.get("best")) if r.get("best") is not None else None
            engine = parse_config(r.get("best_engine") or r.get("best"))
        except (ValueError, KeyError) as exc:
            raise ConfigError(f"{where} (N={n},K={k},M={m}): {exc}") from None
        if not engine.engine_usable:
            raise ConfigError(
                f"{where} (N={n},K={k},M={m}): 'best_engine' {engine.key} is a split-K config"
            )
        default_us = _num(r, "default_us", where)
        engine_us = _num(r, "best_engine_us", where, optional=True)
        best_us = _num(r, "best_us", where, optional=True)
        if engine_us is None:
            if best is None or not best.engine_usable or best_us is None:
                raise ConfigError(f"{where}: field 'best_engine_us' missing")
            engine_us = best_us
        split = best if best is not None and not best.engine_usable else None

        def samples(key: str, r: dict[str, Any] = r) -> list[float]:
            v = r.get(key) or []
            return (
                [float(x) for x in v if isinstance(x, (int, float))] if isinstance(v, list) else []
            )

        cells.append(
            Cell(
                n,
                k,
                m,
                default,
                float(default_us or 0.0),
                engine,
                engine_us,
                split,
                best_us if split is not None else None,
                samples("samples_us"),
                samples("default_samples_us"),
                samples("best_samples_us") if split is not None else [],
                _num(r, "rel_err", where, optional=True),
                int(r["candidates"]) if isinstance(r.get("candidates"), int) else None,
                int(r["screened"]) if isinstance(r.get("screened"), int) else None,
            )
        )
        if cells[-1].tuned_us <= 0 or cells[-1].default_us <= 0:
            raise ConfigError(f"{where}: times must be positive")
    devs = data.get("devices")
    devices = len(devs) if isinstance(devs, list) else int(devs) if isinstance(devs, int) else 0
    return TuneData(
        device_name=str(data["device_name"]),
        devices=devices,
        ceilings=ceilings,
        cells=sorted(cells, key=lambda c: (c.n, c.k, c.m)),
        wall_s=_num(data, "wall_s", source, optional=True),
        compile_s=_num(data, "compile_s", source, optional=True),
        raw=data,
    )


def read_run(path: Path) -> TuneData:
    """``--from-results FILE.json``: a run saved by ``inferlab tune fp8-gemm``."""
    data = read_json(path, "--from-results")
    return parse_run(data, str(path))


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
