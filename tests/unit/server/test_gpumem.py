"""GPU memory around a server's life (``inferlab.server.gpumem``) and the stop check stored
with it. NVML is the seam: without a GPU here the readers answer None (checked for real); the
drain wait is checked with a replayed reader and clock."""

from __future__ import annotations

from pathlib import Path

from inferlab.server.gpumem import GpuDrain, nvml_indices, pids_mib, used_mib, wait_returned


class Replay:
    """NVML readings (used MiB per GPU) in turn, the last repeated; a clock that advances by
    the sleeps asked for."""

    def __init__(self, readings: list[list[int] | None]) -> None:
        self.readings = readings
        self.now = 0.0
        self.reads = 0

    def read(self) -> list[int] | None:
        r = self.readings[min(self.reads, len(self.readings) - 1)]
        self.reads += 1
        return r

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


def _wait(r: Replay, before: list[int] | None, **kw: object) -> GpuDrain | None:
    return wait_returned(before, read=r.read, clock=r.clock, sleep=r.sleep, **kw)  # type: ignore[arg-type]


def test_no_nvml_here_reads_none() -> None:
    assert used_mib() is None and pids_mib() is None and nvml_indices("1") is None
    assert wait_returned([600]) is None  # nothing to compare with now
    assert wait_returned(None) is None


def test_waits_until_memory_is_back_within_tolerance() -> None:
    r = Replay([[128_000, 600], [40_000, 600], [900, 610], [700, 610]])
    d = _wait(r, [612, 600], at_ready=[6_000, 600], at_stop=[128_531, 600], poll_s=0.5)
    assert d is not None and d.returned
    assert d.after_mib == [700, 610] and d.seconds == 1.5 and r.reads == 4
    assert d.message() == (
        "GPU memory 612 + 600 MiB before launch, 6,000 + 600 MiB once ready, "
        "128,531 + 600 MiB at stop, 700 + 610 MiB after (returned in 1.5 s)"
    )
    assert d.to_dict()["before_mib"] == [612, 600]


def test_a_drain_names_the_nvml_gpus_its_figures_are_of(tmp_path: Path) -> None:
    """A server Ray placed on GPU 1 of a node: its drain says so, in the line and the record
    (what the 2×H200 check compares with nvidia-smi's per-GPU series)."""
    r = Replay([[90_000], [700]])
    d = _wait(r, [600], at_stop=[128_000], indices=[1])
    assert d is not None and d.returned and d.gpu_indices == [1]
    assert d.message().startswith("GPU 1 memory 600 MiB before launch, 128,000 MiB at stop")
    assert d.to_dict()["gpu_indices"] == [1]
    assert _wait(Replay([[700]]), [600]).message().startswith("GPU memory 600 MiB")  # type: ignore[union-attr]


def test_memory_that_stays_held_is_reported_not_hidden() -> None:
    r = Replay([[90_000]])
    d = _wait(r, [600], timeout_s=3.0, poll_s=1.0, tolerance_mib=256)
    assert d is not None and not d.returned and d.seconds == 3.0
    assert d.message().endswith("90,000 MiB after (NOT returned after 3 s (tolerance 256 MiB))")


def test_a_gpu_that_disappears_ends_the_wait() -> None:
    assert _wait(Replay([None]), [600]) is None
    assert _wait(Replay([[1, 2]]), [600]) is None  # another GPU count: not comparable
