"""GPU memory held per process, through NVML (when present): the drain check after a stop."""

from __future__ import annotations

__all__ = ["gpu_pids_memory"]


def gpu_pids_memory() -> dict[int, int] | None:
    """MiB held per process on every GPU, or None without NVML/GPU."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        held: dict[int, int] = {}
        for i in range(int(pynvml.nvmlDeviceGetCount())):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
                mem = int(getattr(p, "usedGpuMemory", 0) or 0) // (1 << 20)
                held[int(p.pid)] = held.get(int(p.pid), 0) + mem
        return held
    finally:
        pynvml.nvmlShutdown()
