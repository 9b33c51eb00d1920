"""The floor under one W8A8 block-FP8 GEMM: bytes over bandwidth, FLOPs over the fp8 peak.

Definitions (used in every tuning report):

- bytes moved = A (M·K fp8) + B (N·K fp8) + As (M·⌈K/128⌉ fp32) + Bs (⌈N/128⌉·⌈K/128⌉ fp32)
  + C (M·N bf16): each input read once, the output written once;
- FLOPs = 2·M·N·K;
- roofline time = max(FLOPs / fp8 peak, bytes / copy bandwidth), with the ceilings *measured* on
  the device at the start of the run (:func:`measure_ceilings`): device-to-device copy GB/s
  counting bytes read + written, and ``torch._scaled_mm`` 8192³ fp8 TFLOP/s;
- % of roofline = roofline time / measured time × 100 (100 = at the floor).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

__all__ = [
    "SCALE_BLOCK",
    "Ceilings",
    "gemm_bytes",
    "gemm_flops",
    "measure_ceilings",
    "roof_pct",
    "roofline_us",
]

#: the quantization block (1×128 activation groups, 128×128 weight blocks), elements
SCALE_BLOCK = 128


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def gemm_bytes(m: int, n: int, k: int) -> int:
    """Fewest bytes one C[M,N] = (A·As)(B·Bs)ᵀ must move through device memory."""
    kb = _cdiv(k, SCALE_BLOCK)
    return m * k + n * k + 4 * m * kb + 4 * _cdiv(n, SCALE_BLOCK) * kb + 2 * m * n


def gemm_flops(m: int, n: int, k: int) -> int:
    """Multiply-adds counted as 2 FLOPs: 2·M·N·K."""
    return 2 * m * n * k


@dataclass(frozen=True)
class Ceilings:
    """Measured device ceilings: copy bandwidth (GB/s, read + write), fp8 matmul (TFLOP/s)."""

    copy_gbps: float
    fp8_tflops: float

    def to_json(self) -> dict[str, float]:
        return {"copy_gbps": self.copy_gbps, "fp8_tflops": self.fp8_tflops}


def roofline_us(m: int, n: int, k: int, ceilings: Ceilings) -> float:
    """The floor for one GEMM, µs: max(FLOPs / peak, bytes / bandwidth)."""
    t_mem = gemm_bytes(m, n, k) / (ceilings.copy_gbps * 1e3)
    t_math = gemm_flops(m, n, k) / (ceilings.fp8_tflops * 1e6)
    return max(t_mem, t_math)


def roof_pct(m: int, n: int, k: int, us: float, ceilings: Ceilings) -> float:
    """Roofline time / measured time, percent (100 = at the floor)."""
    return 100.0 * roofline_us(m, n, k, ceilings) / us if us > 0 else float("nan")


def measure_ceilings(torch: Any, *, copy_bytes: int = 1 << 30, reps: int = 10) -> Ceilings:
    """Measure the current CUDA device's ceilings (medians of ``reps`` timed runs after 3
    warm-ups): a ``copy_bytes`` device-to-device copy (GB/s counting read + write) and an
    8192³ ``torch._scaled_mm`` with per-tensor scales on random fp8 data (TFLOP/s)."""
    dev = torch.device("cuda", torch.cuda.current_device())

    def _median_ms(fn: Any) -> float:
        for _ in range(3):
            fn()
        times = []
        for _ in range(reps):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return float(statistics.median(times))

    copy_ms = _median_ms(_copy_fn(torch, copy_bytes, dev))
    size = 8192
    mm_ms = _median_ms(_scaled_mm_fn(torch, size, dev))
    torch.cuda.empty_cache()
    return Ceilings(
        copy_gbps=2 * copy_bytes / (copy_ms * 1e-3) / 1e9,
        fp8_tflops=2 * size**3 / (mm_ms * 1e-3) / 1e12,
    )


def _copy_fn(torch: Any, nbytes: int, dev: Any) -> Any:
    src = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def _scaled_mm_fn(torch: Any, size: int, dev: Any) -> Any:
    a = torch.randn(size, size, device=dev).to(torch.float8_e4m3fn)
    b = torch.randn(size, size, device=dev).to(torch.float8_e4m3fn)
    one = torch.ones((), device=dev, dtype=torch.float32)
    return lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
