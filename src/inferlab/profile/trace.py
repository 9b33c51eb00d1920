"""What the readers keep of a trace: GPU operations as columns, ranges, launches (times in µs).

Readers fill a :class:`TraceBuilder` event by event, so memory grows with the GPU operations
kept (about 50 bytes each), never with the size of the file."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "KIND_KERNEL",
    "KIND_MEMCPY",
    "KIND_MEMSET",
    "MAX_DUR_US",
    "CpuOps",
    "GpuRange",
    "Trace",
]

KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET = 0, 1, 2

#: longer than an hour, or negative: a corrupt timestamp (CUPTI overflow), never a real duration
MAX_DUR_US = 3.6e9

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class GpuRange:
    """A named range in µs: a user annotation or NVTX range, on the GPU row (``gpu``) or the
    host (``cpu``)."""

    name: str
    start: float
    end: float
    where: str
    tid: int = -1  # the host thread (Kineto ``tid``); -1 when unknown


@dataclass
class CpuOps:
    """The CPU operators (``cpu_op``) of a trace without GPU activity, as parallel columns
    (µs), with the host ranges (annotations, each with its thread)."""

    names: list[str]
    start: F64
    dur: F64
    name_id: I64
    tid: I64
    ranges: list[GpuRange]

    @property
    def n_ops(self) -> int:
        return int(self.start.size)


def _intern(ids: dict[str, int], names: list[str], s: str) -> int:
    """``s``'s index in ``names``, appended when new (``ids``: each name's index)."""
    i = ids.get(s)
    if i is None:
        i = ids[s] = len(names)
        names.append(s)
    return i


def _columns(builder: object, names: tuple[str, ...]) -> dict[str, Any]:
    """The builder's ``array`` columns ``names`` as numpy arrays of their own type (``d``:
    float64, ``q``: int64), copied out of the growing buffers."""
    out: dict[str, Any] = {}
    for n in names:
        a: array[Any] = getattr(builder, n)
        out[n] = np.frombuffer(a, dtype=a.typecode).copy()
    return out


class _CpuBuilder:
    def __init__(self) -> None:
        self.names: list[str] = []
        self._ids: dict[str, int] = {}
        self.start, self.dur = array("d"), array("d")
        self.name_id, self.tid = array("q"), array("q")

    def op(self, name: str, start: float, dur: float, tid: int) -> None:
        if not 0 <= dur <= MAX_DUR_US or start != start:
            return
        self.start.append(start)
        self.dur.append(dur)
        self.name_id.append(_intern(self._ids, self.names, name))
        self.tid.append(tid)

    def build(self, ranges: list[GpuRange]) -> CpuOps:
        return CpuOps(
            names=self.names,
            **_columns(self, ("start", "dur", "name_id", "tid")),
            ranges=[r for r in ranges if r.where == "cpu"],
        )


@dataclass
class Trace:
    """One trace, reduced to what the analyses need. Op columns are parallel arrays, in µs."""

    path: str
    format: str
    names: list[str]
    start: F64
    dur: F64
    name_id: I64
    kind: I64
    blocks: I64  # grid size in blocks (x·y·z); -1 when unknown (memcpy/memset)
    stream: I64
    corr: I64
    ranges: list[GpuRange]
    launch_names: list[str]
    launch_name_id: I64
    launch_start: F64
    launch_dur: F64
    launch_corr: I64
    sm_count: int | None = None
    device: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: CPU operators, kept only when the trace has no GPU ops (read again for CPU mode)
    cpu: CpuOps | None = None
    #: top-level trace metadata kept by the reader (e.g. the sim's ``inferlab`` block)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n_ops(self) -> int:
        return int(self.start.size)


#: the ``TraceBuilder`` columns that become ``Trace`` arrays
_GPU_COLUMNS = (
    *("start", "dur", "name_id", "kind", "blocks", "stream", "corr"),
    *("launch_name_id", "launch_start", "launch_dur", "launch_corr"),
)


class TraceBuilder:
    """Accumulates GPU ops, launches and ranges; rejects absurd durations with one warning."""

    def __init__(self, path: str, fmt: str, *, cpu: bool = False) -> None:
        self.path, self.format = path, fmt
        self.cpu = _CpuBuilder() if cpu else None
        self.meta: dict[str, Any] = {}
        self.names: list[str] = []
        self._ids: dict[str, int] = {}
        self.start, self.dur = array("d"), array("d")
        self.name_id, self.kind, self.blocks = array("q"), array("q"), array("q")
        self.stream, self.corr = array("q"), array("q")
        self.launch_names: list[str] = []
        self._lids: dict[str, int] = {}
        self.launch_name_id = array("q")
        self.launch_start, self.launch_dur, self.launch_corr = array("d"), array("d"), array("q")
        self.ranges: list[GpuRange] = []
        self.sm_count: int | None = None
        self.device: str | None = None
        self.warnings: list[str] = []
        self.bad_dur: list[tuple[str, float]] = []
        self.devices: dict[int, tuple[int, str]] = {}  # device id → (SM count, name)
        self.kernel_devices: dict[int, int] = {}  # device id → kernels seen

    def name(self, s: str) -> int:
        return _intern(self._ids, self.names, s)

    def op(
        self, kind: int, name: str, start: float, dur: float, blocks: int, stream: int, corr: int
    ) -> None:
        if not 0 <= dur <= MAX_DUR_US or start != start:
            self.bad_dur.append((name, dur))
            return
        self.start.append(start)
        self.dur.append(dur)
        self.name_id.append(self.name(name))
        self.kind.append(kind)
        self.blocks.append(blocks)
        self.stream.append(stream)
        self.corr.append(corr)

    def launch(self, name: str, start: float, dur: float, corr: int) -> None:
        self.launch_name_id.append(_intern(self._lids, self.launch_names, name))
        self.launch_start.append(start)
        self.launch_dur.append(dur)
        self.launch_corr.append(corr)

    def build(self) -> Trace:
        w = list(self.warnings)
        if self.sm_count is None and self.devices:
            used = [d for d in self.kernel_devices if d in self.devices] or list(self.devices)
            dev = max(used, key=lambda d: self.kernel_devices.get(d, 0))
            self.sm_count, self.device = self.devices[dev]
            if len({self.devices[d][0] for d in used}) > 1:
                w.append(
                    "kernels ran on GPUs with different SM counts; occupancy uses "
                    f"{self.sm_count} SMs (device {dev})"
                )
        if self.bad_dur:
            ex = ", ".join(f"{n[:40]} ({d:g} µs)" for n, d in self.bad_dur[:3])
            w.append(
                f"{len(self.bad_dur)} GPU op(s) with a negative or absurd duration (> 1 h: a "
                f"CUPTI timestamp overflow) were excluded, e.g. {ex}; results cover the rest"
            )
        return Trace(
            path=self.path,
            format=self.format,
            names=self.names,
            **_columns(self, _GPU_COLUMNS),
            ranges=self.ranges,
            launch_names=self.launch_names,
            sm_count=self.sm_count,
            device=self.device,
            warnings=w,
            cpu=self.cpu.build(self.ranges) if self.cpu is not None else None,
            meta=self.meta,
        )
