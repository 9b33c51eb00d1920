"""``inferlab profile``: where the GPU time of a decode (or prefill) step goes.

Readers (``kineto``: PyTorch profiler Chrome traces, streamed; ``nsys``: Nsight Systems SQLite
exports) reduce a trace to GPU ops, ranges and launches (:class:`Trace`); ``analysis`` segments
it into steps and attributes kernel time to categories and kernels, with occupancy and Amdahl
bounds; ``report`` renders the stored result as a report section."""

from __future__ import annotations

from pathlib import Path

from inferlab.errors import TraceError

from .analysis import Profile, ProfileDiff, analyze, diff_profiles
from .categories import Categorizer, Rule, load_rules
from .trace import CpuOps, GpuRange, Trace

__all__ = [
    "Categorizer",
    "CpuOps",
    "GpuRange",
    "Profile",
    "ProfileDiff",
    "Rule",
    "Trace",
    "analyze",
    "diff_profiles",
    "load_rules",
    "read_trace",
]


def read_trace(path: Path) -> Trace:
    """Read a Kineto ``.json``/``.json.gz`` or an Nsight Systems ``.sqlite`` export (by content)."""
    if not path.is_file():
        raise TraceError(f"{path}: no such file")
    with path.open("rb") as f:
        magic = f.read(16)
    if magic.startswith(b"SQLite format 3"):
        from .nsys import read_nsys

        return read_nsys(path)
    if path.suffix in (".nsys-rep", ".qdrep"):
        raise TraceError(
            f"{path}: an Nsight Systems report; export it first: "
            f"nsys export --type sqlite {path.name}"
        )
    from .kineto import read_kineto

    tr = read_kineto(path)
    if tr.n_ops == 0:  # no GPU activity: keep the CPU operators for CPU mode
        tr = read_kineto(path, cpu=True)
    return tr
