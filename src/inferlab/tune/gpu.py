"""The GPU stack and the compile pool of the tuner: torch/Triton checks, the representative
config of each compiled binary, and compiling every binary once in parallel processes.

torch and triton are imported lazily (inside the functions)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from inferlab.errors import TuneError
from inferlab.tune.config import KernelConfig

__all__ = ["binary_rep", "compile_binaries", "require_gpu_stack", "triton_version"]


def require_gpu_stack() -> Any:
    """Import torch and check for a CUDA device; raises :class:`TuneError` saying what is
    missing. Returns the torch module."""
    try:
        import torch
    except ImportError as exc:
        raise TuneError(
            "tuning needs PyTorch with CUDA and Triton on a machine with an NVIDIA GPU "
            f"(import torch failed: {exc}); install torch (it brings triton) where the GPU is"
        ) from exc
    try:
        import triton  # noqa: F401
    except ImportError as exc:
        raise TuneError(f"tuning needs Triton (import triton failed: {exc})") from exc
    if not torch.cuda.is_available():
        raise TuneError("tuning needs a CUDA GPU: torch.cuda.is_available() is False")
    return torch


def binary_rep(cfg: KernelConfig) -> KernelConfig:
    """The representative config of ``cfg``'s compiled binary (runtime arguments normalized)."""
    return KernelConfig(
        cfg.block_m,
        cfg.block_n,
        cfg.block_k,
        1,
        cfg.num_warps,
        cfg.num_stages,
        2 if cfg.split_k > 1 else 1,
    )


def _compile_one(cfg: KernelConfig, n: int, k: int) -> tuple[KernelConfig, int, int, float, str]:
    t0 = time.perf_counter()
    try:
        from inferlab.tune import kernel

        kernel.warm(cfg, n, k)
        err = ""
    except Exception as exc:  # a config that cannot compile is excluded, not fatal
        err = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return cfg, n, k, time.perf_counter() - t0, err


def compile_binaries(
    specs: Sequence[tuple[KernelConfig, int, int]],
    *,
    workers: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[float, dict[tuple[KernelConfig, int, int], str]]:
    """Compile every (binary representative, N, K) into Triton's on-disk cache in a pool of
    spawned processes; returns (wall seconds, {spec: error} for those that failed)."""
    import concurrent.futures as cf
    import multiprocessing as mp

    t0 = time.perf_counter()
    if not specs:
        return 0.0, {}
    nproc = workers or max(1, min(len(specs), (os.cpu_count() or 2) - 1))
    order = sorted(specs, key=lambda s: -(s[0].block_m * s[0].block_n * s[0].num_stages))
    failed: dict[tuple[KernelConfig, int, int], str] = {}
    done = 0
    with cf.ProcessPoolExecutor(max_workers=nproc, mp_context=mp.get_context("spawn")) as pool:
        futs = [pool.submit(_compile_one, c, n, k) for c, n, k in order]
        for fut in cf.as_completed(futs):
            cfg, n, k, _sec, err = fut.result()
            done += 1
            if err:
                failed[(cfg, n, k)] = err
            if progress and (done % 50 == 0 or done == len(futs)):
                progress(f"compiled {done}/{len(futs)} binaries ({time.perf_counter() - t0:.1f} s)")
    return time.perf_counter() - t0, failed


def triton_version() -> str:
    """The installed Triton's version ("" without Triton)."""
    try:
        import triton
    except ImportError:
        return ""
    return str(getattr(triton, "__version__", ""))
