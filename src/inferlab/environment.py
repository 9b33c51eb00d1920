"""A snapshot of where a measurement ran: inferlab, host, CPU, GPUs (NVML when present)."""

from __future__ import annotations

import os
import platform
import socket
from typing import Any

from inferlab import __version__

__all__ = ["gpu_info", "snapshot"]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_info() -> dict[str, Any]:
    """GPU name, count, memory (MiB) and driver through NVML; ``{"gpu_count": 0}`` without."""
    try:
        import pynvml
    except ImportError:
        return {"gpu_count": 0, "gpu_note": "NVML not available (pip install nvidia-ml-py)"}
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # no driver / no GPU
        return {"gpu_count": 0, "gpu_note": f"NVML: {exc}"}
    try:
        n = int(pynvml.nvmlDeviceGetCount())
        names, mems = [], []
        for i in range(n):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            names.append(name.decode() if isinstance(name, bytes) else str(name))
            mems.append(int(pynvml.nvmlDeviceGetMemoryInfo(h).total) // (1 << 20))
        drv = pynvml.nvmlSystemGetDriverVersion()
        return {
            "gpu_count": n,
            "gpu_name": names[0] if names else None,
            "gpu_names": names,
            "gpu_memory_mib": mems[0] if mems else None,
            "driver": drv.decode() if isinstance(drv, bytes) else str(drv),
        }
    finally:
        pynvml.nvmlShutdown()


def snapshot(engine_name: str | None = None, engine_version: str | None = None) -> dict[str, Any]:
    """Everything that makes two measurements comparable or not, as one flat dict."""
    snap: dict[str, Any] = {
        "inferlab_version": __version__,
        "host": socket.gethostname(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "engine_name": engine_name,
        "engine_version": engine_version,
    }
    snap.update(gpu_info())
    return snap
