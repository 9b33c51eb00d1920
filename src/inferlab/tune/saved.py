"""A saved tuning run read back (``TuneRun.to_json()``): the config keys, the per-cell model
and the strict parser whose errors name the file and the field."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from inferlab.config.jsonfile import read_json
from inferlab.errors import ConfigError
from inferlab.tune.config import ENGINE_FIELDS, ENGINE_KEYS, KernelConfig
from inferlab.tune.roofline import Ceilings, gemm_bytes, gemm_flops, roof_pct

__all__ = ["RESULT_VERSION", "Cell", "TuneData", "parse_config", "parse_run", "read_run"]

#: the ``version`` of ``TuneRun.to_json()`` this module reads (``inferlab.tune.runner``)
RESULT_VERSION = 1

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
        if all(f in obj for f in ENGINE_FIELDS.values()):
            kw = {f: int(obj[f]) for f in ENGINE_FIELDS.values()}
            return KernelConfig(**kw, split_k=int(obj.get("split_k", 1)))
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
    cells = [_cell(r, f"{source}: results[{i}]") for i, r in enumerate(data["results"])]
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


def _samples(r: Mapping[str, Any], key: str) -> list[float]:
    v = r.get(key) or []
    return [float(x) for x in v if isinstance(x, (int, float))] if isinstance(v, list) else []


def _cell(r: Any, where: str) -> Cell:
    """One saved cell (``results[i]``), validated; errors name ``where`` and the field."""
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
    cell = Cell(
        n,
        k,
        m,
        default,
        float(default_us or 0.0),
        engine,
        engine_us,
        split,
        best_us if split is not None else None,
        _samples(r, "samples_us"),
        _samples(r, "default_samples_us"),
        _samples(r, "best_samples_us") if split is not None else [],
        _num(r, "rel_err", where, optional=True),
        int(r["candidates"]) if isinstance(r.get("candidates"), int) else None,
        int(r["screened"]) if isinstance(r.get("screened"), int) else None,
    )
    if cell.tuned_us <= 0 or cell.default_us <= 0:
        raise ConfigError(f"{where}: times must be positive")
    return cell


def read_run(path: Path) -> TuneData:
    """``--from-results FILE.json``: a run saved by ``inferlab tune fp8-gemm``."""
    data = read_json(path, "--from-results")
    return parse_run(data, str(path))
