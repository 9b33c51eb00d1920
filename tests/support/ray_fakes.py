"""Fake GPU work for ``tune --ray`` tests: a seam at the work function, the rest is real
(actors, ActorPool, rounds, merging). Times are a fixed function of the config and M, so the
true optimum of every cell is known."""

from __future__ import annotations

import os
import zlib
from typing import Any

from inferlab.cluster.tunework import CompileItem, FinishItem, ScreenItem
from inferlab.tune.config import KernelConfig
from inferlab.tune.results import CellResult

FAKE_GPU = "Fake GPU 80GB"


def fake_us(cfg: KernelConfig, m: int) -> float:
    """A deterministic 'time' (µs) for a config at batch size M."""
    return 10.0 + (zlib.crc32(f"{cfg.key}/{m}".encode()) % 100_000) / 1000.0


def not_built(cfg: KernelConfig) -> bool:
    """The binaries the fake compiler 'fails' on."""
    return cfg.block_m == 64 and cfg.block_n == 256


class FakeWork:
    """Screens by :func:`fake_us`, finishes by taking the fastest screened (or the default);
    a config with ``num_stages == 5`` does not 'run'; :func:`not_built` ones do not compile."""

    def identity(self) -> dict[str, Any]:
        return {"gpu_name": FAKE_GPU, "triton": "0.0-fake", "ceilings": {"copy_gbps": 1.0}}

    def compile(self, item: CompileItem) -> list[Any]:
        return [((c, n, k), "fake: no such binary") for c, n, k in item.specs if not_built(c)]

    def screen(self, item: ScreenItem) -> tuple[list[tuple[KernelConfig, float]], int]:
        ok = [c for c in item.configs if c.num_stages != 5]
        return [(c, fake_us(c, item.m)) for c in ok], len(item.configs) - len(ok)

    def finish(self, item: FinishItem) -> CellResult:
        pool = [(fake_us(c, item.m), c) for c, _ in item.screened] or [
            (fake_us(item.default, item.m), item.default)
        ]
        t, best = min(pool, key=lambda x: (x[0], x[1].key))
        eng = min((p for p in pool if p[1].split_k == 1), default=(t, best))
        d = fake_us(item.default, item.m)
        return CellResult(
            n=item.n, k=item.k, m=item.m, default=item.default, default_us=d, best=best,
            best_us=t, best_engine=eng[1], best_engine_us=eng[0], samples_us=[eng[0]],
            tflops=1.0, gbps=1.0, roof_pct=1.0, rel_err=0.0, candidates=item.candidates,
            screened=len(item.screened), source=item.source, failed=item.failed,
            gpu_name=FAKE_GPU, triton="0.0-fake",
        )  # fmt: skip


class DyingWork(FakeWork):
    """Like :class:`FakeWork`, but the process dies while finishing the cell at M=16."""

    def finish(self, item: FinishItem) -> CellResult:
        if item.m == 16:
            os._exit(3)
        return super().finish(item)
