"""Test helper: saved ``inferlab tune fp8-gemm`` runs (``TuneRun.to_json()``), with the
H200's times (fp8_block_gemm_h200.md) where they are measurements."""

from __future__ import annotations

import json
from pathlib import Path

from inferlab.tune.config import DEFAULT_VLLM, KernelConfig
from inferlab.tune.runner import CellResult, TuneRun

CEIL = {"copy_gbps": 4270.0, "fp8_tflops": 1314.0}  # measured on the H200 (fixture)


def config(key: str) -> KernelConfig:
    """The kernel config named ``key`` (``BM16_BN64_G1_w8_s5``)."""
    from inferlab.tune.saved import parse_config

    return parse_config(key)


def cell(
    n: int, k: int, m: int, default_us: float, best: str, best_us: float, engine: str | None = None,
    engine_us: float | None = None, default: KernelConfig = DEFAULT_VLLM,
) -> CellResult:  # fmt: skip
    """One tuned cell: its default and best (and best in the engine) times, µs."""
    b, e = config(best), config(engine or best)
    eu = engine_us if engine_us is not None else best_us
    return CellResult(
        n=n, k=k, m=m, default=default, default_us=default_us, best=b, best_us=best_us,
        best_engine=e, best_engine_us=eu, samples_us=[eu * 0.99, eu, eu * 1.01], tflops=0.0,
        gbps=0.0, roof_pct=0.0, rel_err=1.2e-3, candidates=112, screened=112,
        best_samples_us=[best_us], default_samples_us=[default_us],
    )  # fmt: skip


def run_json(path: Path, device: str = "NVIDIA_H200") -> Path:
    """Times from fp8_block_gemm_h200.md (N=2112,K=7168 and N=7168,K=2048, M=1/16/64); the split-K
    winner at N=2112 M=1 (11.0 µs) is constructed for this test, not a measurement."""
    cells = [
        cell(2112, 7168, 1, 62.8, "BM16_BN64_G1_w4_s4_k4", 11.0, "BM16_BN64_G1_w8_s5", 22.6),
        cell(2112, 7168, 16, 62.7, "BM16_BN64_G1_w8_s5", 23.2),
        cell(2112, 7168, 64, 63.2, "BM64_BN64_G1_w4_s5", 22.4),
        cell(7168, 2048, 1, 26.5, "BM16_BN64_G1_w8_s5", 8.9),
        cell(7168, 2048, 16, 18.8, "BM16_BN64_G1_w8_s5", 9.0),
        cell(7168, 2048, 64, 19.0, "BM64_BN64_G1_w4_s5", 9.4),
    ]
    run = TuneRun(device, 1, CEIL, cells, wall_s=41.5, compile_s=15.2, binaries=94)
    path.write_text(json.dumps(run.to_json(), indent=2))
    return path
