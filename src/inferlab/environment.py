"""A snapshot of where a measurement ran: inferlab, host, CPU, GPUs (NVML when present)."""

from __future__ import annotations

import ctypes
import os
import platform
import socket
from collections.abc import Callable
from functools import partial
from typing import Any, TypedDict, TypeVar

from inferlab import __version__

__all__ = [
    "GpuInfo",
    "GpuKey",
    "GpuProcess",
    "NvmlGpu",
    "NvmlSystem",
    "gpu_info",
    "nvml_gpus",
    "snapshot",
    "visible_gpus",
]


class GpuProcess(TypedDict):
    """A process NVML sees on a GPU; ``used_mib`` in MiB."""

    pid: int
    name: str | None
    used_mib: int


class GpuKey(TypedDict):
    """What names a GPU: its NVML index, model name and UUID (``visible_gpus`` maps by them)."""

    index: int
    name: str
    uuid: str | None


class NvmlGpu(GpuKey):
    """One GPU as NVML reports it (memory in MiB, SM clocks in MHz; None: not supported)."""

    memory_total_mib: int | None
    memory_used_mib: int | None
    sm_clock_mhz: int | None
    sm_clock_max_mhz: int | None
    processes: list[GpuProcess]


class NvmlSystem(TypedDict, total=False):
    """The driver's facts (``cuda_driver`` e.g. ``"12.8"``), or ``note``: why none."""

    driver: str | None
    cuda_driver: str | None
    note: str


class GpuInfo(TypedDict, total=False):
    """A snapshot's GPU keys (``gpu_info``); the ``cuda_visible_devices`` … ``gpu_mapping_notes``
    keys only with ``restrict``."""

    gpu_count: int
    gpu_note: str | None
    gpu_name: str
    gpu_names: list[str]
    gpu_memory_mib: int | None
    driver: str | None
    cuda_visible_devices: str | None
    gpu_indices: list[int]
    gpu_uuids: list[str | None]
    gpu_mapping_notes: list[str]


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


def nvml_gpus() -> tuple[list[NvmlGpu], NvmlSystem]:
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
        driver = _nvml_read(pynvml.nvmlSystemGetDriverVersion)
        system: NvmlSystem = {"driver": _text(driver) if driver is not None else None}
        cuda = _nvml_read(pynvml.nvmlSystemGetCudaDriverVersion)
        system["cuda_driver"] = f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None
        gpus: list[NvmlGpu] = []
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


_G = TypeVar("_G", bound=GpuKey)


def visible_gpus(gpus: list[_G], cuda_visible: str | None) -> tuple[list[_G], list[str]]:
    """The NVML GPUs (rows of :func:`nvml_gpus`) a process with ``CUDA_VISIBLE_DEVICES`` =
    ``cuda_visible`` uses, in CUDA order, and notes on entries that could not be mapped.

    An integer entry is a CUDA index, read as the NVML index: NVML enumerates by PCI bus id,
    and so does CUDA with ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` or on GPUs of one model (its
    default "fastest first" breaks ties by PCI bus id). ``GPU-…`` entries (or unique
    prefixes) are UUIDs. Like CUDA, parsing stops at the first invalid entry; unset means all."""
    if cuda_visible is None:
        return list(gpus), []
    out: list[_G] = []
    notes: list[str] = []
    for raw in cuda_visible.split(","):
        entry = raw.strip()
        if entry.lstrip("-").isdigit():
            i = int(entry)
            hit = [g for g in gpus if g["index"] == i] if i >= 0 else []
        elif entry.startswith("GPU-"):
            hit = [g for g in gpus if str(g.get("uuid") or "").startswith(entry)]
        else:
            if entry:
                notes.append(f"CUDA_VISIBLE_DEVICES entry {entry!r} is not mapped to NVML")
            break
        if len(hit) != 1:
            notes.append(f"CUDA_VISIBLE_DEVICES entry {entry!r} matches no single NVML GPU")
            break
        out.append(hit[0])
    models = {g["name"] for g in gpus}
    order = os.environ.get("CUDA_DEVICE_ORDER", "FASTEST_FIRST")
    if len(models) > 1 and order != "PCI_BUS_ID" and any(g in out for g in gpus):
        notes.append(
            "GPUs of several models and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA indices may "
            "not be NVML indices (set CUDA_DEVICE_ORDER=PCI_BUS_ID)"
        )
    return out, notes


def gpu_info(cuda_visible: str | None = None, *, restrict: bool = False) -> GpuInfo:
    """GPU name, count, memory (MiB) and driver through NVML; ``{"gpu_count": 0}`` without.
    With ``restrict``, only the GPUs ``CUDA_VISIBLE_DEVICES`` = ``cuda_visible`` names, with
    their NVML indices and UUIDs (what a server placed on some of a node's GPUs used)."""
    gpus, system = nvml_gpus()
    notes: list[str] = []
    if restrict:
        gpus, notes = visible_gpus(gpus, cuda_visible)
    if not gpus:
        out: GpuInfo = {"gpu_count": 0, "gpu_note": system.get("note")}
    else:
        names = [g["name"] for g in gpus]
        out = {
            "gpu_count": len(gpus),
            "gpu_name": names[0],
            "gpu_names": names,
            "gpu_memory_mib": gpus[0]["memory_total_mib"],
            "driver": system.get("driver"),
        }
    if restrict:
        out["cuda_visible_devices"] = cuda_visible
        out["gpu_indices"] = [g["index"] for g in gpus]
        out["gpu_uuids"] = [g.get("uuid") for g in gpus]
        if notes:
            out["gpu_mapping_notes"] = notes
    return out


def snapshot(
    engine_name: str | None = None,
    engine_version: str | None = None,
    *,
    cuda_visible: str | None = None,
    restrict: bool = False,
) -> dict[str, Any]:
    """Everything that makes two measurements comparable or not, as one flat dict (GPUs: see
    :func:`gpu_info`)."""
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
    snap.update(gpu_info(cuda_visible, restrict=restrict))
    return snap
