"""A snapshot of where a measurement ran: inferlab, host, CPU, GPUs (NVML when present)."""

from __future__ import annotations

import ctypes
import os
import platform
import socket
from collections.abc import Callable
from functools import partial
from typing import Any

from inferlab import __version__

__all__ = ["gpu_info", "nvml_gpus", "snapshot"]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _nvml_absent_reason(exc: BaseException | None = None) -> str:
    """Why NVML cannot be read here, in words a user can act on."""
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return "NVML not available: no NVIDIA driver (libnvidia-ml.so.1 not found)"
    if exc is None:
        return (
            "NVML not available: the NVIDIA driver is installed but nvidia-ml-py is not "
            "(pip install nvidia-ml-py)"
        )
    return f"NVML not available: {type(exc).__name__}: {exc}"


def _text(x: object) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


def _nvml_read(fn: Callable[[], Any]) -> Any:
    """One NVML query; a query this GPU or driver does not support reads as None."""
    try:
        return fn()
    except Exception:
        return None


def _process_name(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as f:
            return f.read().strip() or None
    except OSError:
        return None


def nvml_gpus() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every GPU NVML sees, and the system facts (driver, CUDA driver API, or why none).

    Per GPU: ``index``, ``name``, ``uuid``, ``memory_total_mib`` / ``memory_used_mib`` (MiB),
    ``sm_clock_mhz`` (current) and ``sm_clock_max_mhz`` (MHz), ``processes`` (``pid``, ``name``,
    ``used_mib``). System: ``driver``, ``cuda_driver`` (e.g. ``"12.8"``) or ``note``. Never
    raises: without a driver the list is empty and ``note`` says why."""
    try:
        import pynvml
    except ImportError:
        return [], {"note": _nvml_absent_reason()}
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # no driver / no GPU / driver-library mismatch
        return [], {"note": _nvml_absent_reason(exc)}
    try:
        system: dict[str, Any] = {"driver": _nvml_read(pynvml.nvmlSystemGetDriverVersion)}
        if system["driver"] is not None:
            system["driver"] = _text(system["driver"])
        cuda = _nvml_read(pynvml.nvmlSystemGetCudaDriverVersion)
        system["cuda_driver"] = f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None
        gpus: list[dict[str, Any]] = []
        for i in range(int(pynvml.nvmlDeviceGetCount())):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            mem = _nvml_read(partial(pynvml.nvmlDeviceGetMemoryInfo, h))
            sm = pynvml.NVML_CLOCK_SM
            procs = _nvml_read(partial(pynvml.nvmlDeviceGetComputeRunningProcesses, h)) or []
            uuid = _nvml_read(partial(pynvml.nvmlDeviceGetUUID, h))
            gpus.append(
                {
                    "index": i,
                    "name": _text(pynvml.nvmlDeviceGetName(h)),
                    "uuid": _text(uuid) if uuid is not None else None,
                    "memory_total_mib": int(mem.total) // (1 << 20) if mem else None,
                    "memory_used_mib": int(mem.used) // (1 << 20) if mem else None,
                    "sm_clock_mhz": _nvml_read(partial(pynvml.nvmlDeviceGetClockInfo, h, sm)),
                    "sm_clock_max_mhz": _nvml_read(
                        partial(pynvml.nvmlDeviceGetMaxClockInfo, h, sm)
                    ),
                    "processes": [
                        {
                            "pid": int(p.pid),
                            "name": _process_name(int(p.pid)),
                            "used_mib": int(getattr(p, "usedGpuMemory", 0) or 0) // (1 << 20),
                        }
                        for p in procs
                    ],
                }
            )
        if not gpus:
            system["note"] = "NVML: the NVIDIA driver sees no GPU"
        return gpus, system
    finally:
        pynvml.nvmlShutdown()


def gpu_info() -> dict[str, Any]:
    """GPU name, count, memory (MiB) and driver through NVML; ``{"gpu_count": 0}`` without."""
    gpus, system = nvml_gpus()
    if not gpus:
        return {"gpu_count": 0, "gpu_note": system.get("note")}
    names = [g["name"] for g in gpus]
    return {
        "gpu_count": len(gpus),
        "gpu_name": names[0],
        "gpu_names": names,
        "gpu_memory_mib": gpus[0]["memory_total_mib"],
        "driver": system.get("driver"),
    }


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
