"""What a tuning run found: one ``CellResult`` per (N, K, M) and the ``TuneRun`` around them.

Format history (``TuneRun.to_json()["version"]``): 1 = first version; cells gained
``gpu_name`` and ``triton`` (the GPU that timed them, the Triton that compiled them) with
defaults, so version-1 files without them still read.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from inferlab.errors import TuneError
from inferlab.tune.config import ENGINE_FIELDS, KernelConfig

__all__ = ["RESULT_VERSION", "CellResult", "TuneRun"]

RESULT_VERSION = 1


@dataclass
class CellResult:
    """The outcome for one (N, K, M) cell. Times are medians of per-launch µs samples (CUDA-graph
    replay, see :mod:`inferlab.tune.timing`). ``best`` may be split-K; ``best_engine`` is the
    fastest config the engines' kernel can run (what goes into their files). ``samples_us``,
    ``tflops``, ``gbps`` and ``roof_pct`` describe ``best_engine``; ``rel_err`` is the larger
    reference-check error of ``best`` and ``best_engine``; ``candidates`` the pruned space for
    the cell, ``screened`` how many of them were timed (fewer at neighbour batch sizes)."""

    n: int
    k: int
    m: int
    default: KernelConfig
    default_us: float
    best: KernelConfig
    best_us: float
    best_engine: KernelConfig
    best_engine_us: float
    samples_us: list[float]
    tflops: float
    gbps: float
    roof_pct: float
    rel_err: float
    candidates: int
    screened: int
    best_samples_us: list[float] = field(default_factory=list)
    default_samples_us: list[float] = field(default_factory=list)
    best_roof_pct: float = math.nan
    source: str = "screen"
    failed: int = 0
    seconds: float = 0.0
    gpu_name: str = ""  # the GPU that timed it (``torch.cuda.get_device_name``)
    triton: str = ""  # the Triton version that compiled it

    @property
    def speedup(self) -> float:
        """Default time / tuned (engine-usable) time."""
        return self.default_us / self.best_engine_us

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("default", "best", "best_engine"):
            cfg: KernelConfig = getattr(self, key)
            d[key] = {**cfg.to_engine(), "split_k": cfg.split_k, "key": cfg.key}
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CellResult:
        kw = dict(d)
        for key in ("default", "best", "best_engine"):
            e = kw[key]
            fields = {name: int(e[k]) for k, name in ENGINE_FIELDS.items()}
            kw[key] = KernelConfig(**fields, split_k=int(e.get("split_k", 1)))
        return cls(**kw)


@dataclass
class TuneRun:
    """One tuning run: device (engine spelling), GPUs used, ceilings measured at the start
    (``copy_gbps``, ``fp8_tflops``), per-cell results, wall and compile seconds."""

    device_name: str
    devices: int
    ceilings: dict[str, float]
    results: list[CellResult]
    wall_s: float
    compile_s: float
    binaries: int = 0
    compile_failed: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": RESULT_VERSION,
            "device_name": self.device_name,
            "devices": self.devices,
            "ceilings": dict(self.ceilings),
            "wall_s": self.wall_s,
            "compile_s": self.compile_s,
            "binaries": self.binaries,
            "compile_failed": list(self.compile_failed),
            "results": [r.to_json() for r in self.results],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TuneRun:
        if d.get("version") != RESULT_VERSION:
            raise TuneError(f"tuning result version {d.get('version')!r} is not {RESULT_VERSION}")
        return cls(
            device_name=d["device_name"],
            devices=int(d["devices"]),
            ceilings={k: float(v) for k, v in d["ceilings"].items()},
            results=[CellResult.from_json(r) for r in d["results"]],
            wall_s=float(d["wall_s"]),
            compile_s=float(d["compile_s"]),
            binaries=int(d.get("binaries", 0)),
            compile_failed=list(d.get("compile_failed", [])),
        )
