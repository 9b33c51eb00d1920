"""What a ``tune --ray`` actor does on its GPU: the work items and the work that runs them.

Items are small and self-describing, so any actor can take any of them: a chunk of binaries
to compile, a chunk of configs to screen at one (N, K, M), or one cell to re-time and check.
``GpuWork`` runs them with the local tuner's functions (:mod:`inferlab.tune.runner`) on the
actor's GPU; tests pass fakes with the same methods.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from inferlab.tune.config import KernelConfig
from inferlab.tune.results import CellResult

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["CompileItem", "FinishItem", "GpuWork", "ScreenItem", "TuneActor", "TuneWork"]

Spec = tuple[KernelConfig, int, int]
Timed = tuple[KernelConfig, float]


@dataclass(frozen=True)
class CompileItem:
    specs: tuple[Spec, ...]
    workers: int = 1


@dataclass(frozen=True)
class _CellItem:
    """Work on the cell (N, K, M); ``ms`` are every M of the shape (operand sizing)."""

    n: int
    k: int
    m: int
    ms: tuple[int, ...]


@dataclass(frozen=True)
class ScreenItem(_CellItem):
    """Screen ``configs`` at the cell."""

    configs: tuple[KernelConfig, ...]


@dataclass(frozen=True)
class FinishItem(_CellItem):
    """Re-time and check the leaders of a cell's merged screen."""

    screened: tuple[Timed, ...]
    candidates: int
    source: str
    default: KernelConfig
    failed: int
    count_default: bool


class TuneWork(Protocol):
    """The GPU side of one actor."""

    def identity(self) -> dict[str, JsonValue]:
        """``gpu_name``, ``triton`` and ``ceilings`` (copy_gbps, fp8_tflops) of this GPU."""
        ...

    def compile(self, item: CompileItem) -> list[tuple[Spec, str]]:
        """Compile into this node's Triton cache; the specs that failed, with the error."""
        ...

    def screen(self, item: ScreenItem) -> tuple[list[Timed], int]:
        """(config, µs) of each config that ran, and how many did not."""
        ...

    def finish(self, item: FinishItem) -> CellResult: ...


class GpuWork:
    """The real work on the actor's GPU, with the local tuner's functions."""

    def __init__(self) -> None:
        from inferlab.tune import kernel
        from inferlab.tune.roofline import measure_ceilings
        from inferlab.tune.runner import require_gpu_stack

        self.torch = require_gpu_stack()
        self.kernel = kernel
        self.ceilings = measure_ceilings(self.torch)
        self._ctx: dict[tuple[int, int], Any] = {}

    def identity(self) -> dict[str, JsonValue]:
        from inferlab.tune.runner import triton_version

        name = str(self.torch.cuda.get_device_name())
        return {
            "gpu_name": name,
            "triton": triton_version(),
            "ceilings": dict(self.ceilings.to_json()),
        }

    def _shape(self, n: int, k: int, ms: Sequence[int]) -> Any:
        from inferlab.tune.runner import ShapeContext, alloc_shape

        if (n, k) not in self._ctx:
            self._ctx.clear()  # one shape's operands at a time on the GPU
            self.torch.cuda.empty_cache()
            ctx = ShapeContext(self.torch, self.kernel, n, k, [], self.ceilings, seed=n * 7 + k)
            ctx.sets = alloc_shape(self.torch, self.kernel, n, k, ms)
            self._ctx[(n, k)] = ctx
        return self._ctx[(n, k)]

    def compile(self, item: CompileItem) -> list[tuple[Spec, str]]:
        from inferlab.tune.runner import compile_binaries

        _, failed = compile_binaries(list(item.specs), workers=item.workers)
        return list(failed.items())

    def screen(self, item: ScreenItem) -> tuple[list[Timed], int]:
        from inferlab.tune.runner import screen_cell

        return screen_cell(self._shape(item.n, item.k, item.ms), item.m, item.configs)

    def finish(self, item: FinishItem) -> CellResult:
        from inferlab.tune.runner import finish_cell

        ctx = self._shape(item.n, item.k, item.ms)
        return finish_cell(
            ctx,
            item.m,
            item.screened,
            item.candidates,
            item.default,
            item.source,
            item.failed,
            None,
            item.count_default,
        )


class TuneActor:
    """One GPU's actor: runs items with its ``TuneWork`` (made on the actor, on its GPU)."""

    def __init__(self, index: int, work: Callable[[], TuneWork]) -> None:
        self.index = index
        self.work = work()

    def identity(self) -> dict[str, JsonValue]:
        import ray

        return {
            **self.work.identity(),
            "actor": self.index,
            "node_id": str(ray.get_runtime_context().get_node_id()),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        }

    def run(self, item: CompileItem | ScreenItem | FinishItem) -> tuple[Any, Any, int]:
        """(item, its result, this actor's index)."""
        if isinstance(item, CompileItem):
            return item, self.work.compile(item), self.index
        if isinstance(item, ScreenItem):
            return item, self.work.screen(item), self.index
        return item, self.work.finish(item), self.index
