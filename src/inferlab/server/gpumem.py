"""GPU memory around one server's life, read from NVML (MiB, one figure per GPU).

``used_mib`` reads every GPU's used memory; ``wait_returned`` waits after a stop until each GPU
is back within a tolerance of what it used before the launch, and returns the figures. Device
totals are the check that works everywhere: inside containers and VMs NVML's per-process list
can be empty or name pids of another namespace (``pids_mib`` is kept for the per-process check
of ``stop_group``). Without NVML or a GPU every reader returns None and nothing is waited for.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import JsonValue


__all__ = ["GpuDrain", "nvml_indices", "pids_mib", "used_mib", "wait_returned"]

#: what may stay above the pre-launch figure once a server is gone (driver bookkeeping, another
#: tenant's small allocations): MiB per GPU
DEFAULT_TOLERANCE_MIB = 256


def _nvml() -> Any:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # no driver / no GPU / driver-library mismatch
        return None
    return pynvml


def _indices(nv: Any, cuda_visible: str | None) -> list[int]:
    """NVML indices of the GPUs a ``CUDA_VISIBLE_DEVICES`` value names (None: every GPU),
    mapped as :func:`inferlab.environment.visible_gpus` does."""
    from inferlab.environment import GpuKey, visible_gpus

    count = int(nv.nvmlDeviceGetCount())
    if cuda_visible is None:
        return list(range(count))
    rows = [GpuKey(index=i, name="", uuid=None) for i in range(count)]
    if "GPU-" in cuda_visible:
        for r in rows:
            uuid = nv.nvmlDeviceGetUUID(nv.nvmlDeviceGetHandleByIndex(r["index"]))
            r["uuid"] = uuid.decode() if isinstance(uuid, bytes) else str(uuid)
    return [int(g["index"]) for g in visible_gpus(rows, cuda_visible)[0]]


def nvml_indices(cuda_visible: str | None = None) -> list[int] | None:
    """The NVML indices :func:`used_mib` reads for ``cuda_visible``, in its order (None
    without NVML or GPU): what a drain's figures are figures of."""
    nv = _nvml()
    if nv is None:
        return None
    try:
        return _indices(nv, cuda_visible) or None
    except Exception:
        return None
    finally:
        nv.nvmlShutdown()


def used_mib(cuda_visible: str | None = None) -> list[int] | None:
    """Used memory of every GPU NVML sees (MiB) — or of those ``cuda_visible`` (a
    ``CUDA_VISIBLE_DEVICES`` value: a server placed on some of a node's GPUs) names — or
    None without NVML or GPU."""
    nv = _nvml()
    if nv is None:
        return None
    try:
        out = []
        for i in _indices(nv, cuda_visible):
            mem = nv.nvmlDeviceGetMemoryInfo(nv.nvmlDeviceGetHandleByIndex(i))
            out.append(int(mem.used) // (1 << 20))
        return out or None
    except Exception:
        return None
    finally:
        nv.nvmlShutdown()


def pids_mib(cuda_visible: str | None = None) -> dict[int, int] | None:
    """MiB held per process on every GPU (or those ``cuda_visible`` names), or None without
    NVML/GPU."""
    nv = _nvml()
    if nv is None:
        return None
    try:
        held: dict[int, int] = {}
        for i in _indices(nv, cuda_visible):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            for p in nv.nvmlDeviceGetComputeRunningProcesses(h):
                mem = int(getattr(p, "usedGpuMemory", 0) or 0) // (1 << 20)
                held[int(p.pid)] = held.get(int(p.pid), 0) + mem
        return held
    finally:
        nv.nvmlShutdown()


def _mib(xs: Sequence[int]) -> str:
    return " + ".join(f"{x:,}" for x in xs) + " MiB"


@dataclass(frozen=True)
class GpuDrain:
    """GPU memory before a launch, while the server ran, and after its stop (MiB per GPU)."""

    before_mib: list[int]
    at_ready_mib: list[int] | None
    at_stop_mib: list[int] | None
    after_mib: list[int]
    returned: bool
    seconds: float  # from the start of the wait until returned (or the timeout)
    tolerance_mib: int
    gpu_indices: list[int] | None = None  # NVML index of each figure (None: not known)

    def to_dict(self) -> dict[str, JsonValue]:
        return asdict(self)

    def message(self) -> str:
        """One line: ``GPU 1 memory 612 MiB before launch, 128,531 MiB at stop, 615 MiB after
        (returned in 1.8 s)`` (``GPU memory …`` when the NVML indices are not known)."""
        gpus = "GPU " + ",".join(map(str, self.gpu_indices)) if self.gpu_indices else "GPU"
        parts = [f"{gpus} memory {_mib(self.before_mib)} before launch"]
        if self.at_ready_mib is not None:
            parts.append(f"{_mib(self.at_ready_mib)} once ready")
        if self.at_stop_mib is not None:
            parts.append(f"{_mib(self.at_stop_mib)} at stop")
        parts.append(f"{_mib(self.after_mib)} after")
        verdict = (
            f"returned in {self.seconds:.1f} s"
            if self.returned
            else f"NOT returned after {self.seconds:.0f} s (tolerance {self.tolerance_mib} MiB)"
        )
        return ", ".join(parts) + f" ({verdict})"


def wait_returned(
    before: Sequence[int] | None,
    *,
    at_ready: Sequence[int] | None = None,
    at_stop: Sequence[int] | None = None,
    tolerance_mib: int = DEFAULT_TOLERANCE_MIB,
    timeout_s: float = 60.0,
    poll_s: float = 0.5,
    read: Callable[[], list[int] | None] = used_mib,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    indices: Sequence[int] | None = None,
) -> GpuDrain | None:
    """Wait until every GPU uses at most ``before + tolerance_mib`` again; None when there was
    no pre-launch figure or NVML cannot be read now. ``indices``: the NVML index of each
    figure, stored with them."""
    if before is None:
        return None
    t0 = clock()
    while True:
        now = read()
        if now is None or len(now) != len(before):
            return None
        ok = all(n <= b + tolerance_mib for n, b in zip(now, before))
        waited = clock() - t0
        if ok or waited >= timeout_s:
            return GpuDrain(
                before_mib=list(before),
                at_ready_mib=list(at_ready) if at_ready is not None else None,
                at_stop_mib=list(at_stop) if at_stop is not None else None,
                after_mib=list(now),
                returned=ok,
                seconds=waited,
                tolerance_mib=tolerance_mib,
                gpu_indices=list(indices) if indices is not None else None,
            )
        sleep(poll_s)
