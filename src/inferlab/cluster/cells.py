"""A config's cells under ``run --ray``: what is left to measure, and each finished point
committed by the driver as ``inferlab run`` commits it (``campaign.parts.bench.StoreSink``).

The client's actor measures one cell per call; the server's actor then says whether its
server exited during the point (the campaign's server watch, ``campaign.parts.watch``). A
point is committed in one transaction; a point that was refused, cut short or interrupted ends
the config's cells with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inferlab.campaign.parts.bench import StoreSink, bench_config
from inferlab.campaign.parts.watch import mark_exited
from inferlab.cluster.actors import Launched, Measured
from inferlab.cluster.shared import Shared
from inferlab.config.resolve import ResolvedConfig
from inferlab.load.adaptive import BaselineRef
from inferlab.records import ErrorKind

__all__ = ["Cell", "Cells"]

Cell = tuple[str, int]


@dataclass
class Cells:
    """The cells of one config still to measure (``todo``, in order), its sink once its server
    is up, the runs stored so far, and the sequential A/B's baselines once read."""

    todo: list[Cell]
    sink: StoreSink | None = None
    run_ids: list[int] = field(default_factory=list)
    baselines: dict[str, BaselineRef] | None = None

    def aim(self, sh: Shared, client: Any, cfg: ResolvedConfig, gid: int, got: Launched) -> None:
        """The client's actor aimed at ``cfg``'s launched server; the sink its points go to."""
        assert got.url is not None
        name = cfg.name
        ref = bool(sh.reference) and name == sh.reference  # measured to the cap
        bench = bench_config(sh.camp, got.url, got.model, cfg.engine, reference=ref)
        client.aim.remote(bench)  # ordered before the driver's next call to it
        self.sink = StoreSink(
            sh.store,
            bench,
            sh.camp.campaign.name,
            name,
            scrape=False,
            config_id=gid,
            environment=got.environment,
        )

    def watch_call(self, got: Measured) -> tuple[bool, str]:
        """What the server's watch is asked after a point: whether a request was refused, and
        when (``ServerActor.exited``)."""
        label, trial = self.todo[0]
        if got.point is None:  # nothing measured: the server may have been gone already
            return got.error is not None, f"before {label} trial {trial}"
        refused = any(r.error_kind is ErrorKind.CONNECT for r in got.point.records)
        return refused, f"during {label} trial {trial}"

    def commit(self, sh: Shared, got: Measured, exited: str | None, hint: str) -> tuple[str, str]:
        """The point committed (marked when its server exited during it); the config's end
        (status, message), or ("", "") while cells are left to measure."""
        assert self.sink is not None
        if exited is not None:
            if got.point is not None:
                mark_exited(got.point, exited)
            got.error = ("ConnectError", exited)
        if got.point is not None:
            if not self.run_ids:
                self.sink.start(got.meta)
            self.sink.commit(got.point, got.scrapes)
            self.run_ids[:] = self.sink.run_ids
            sh.events.point_finished(got.point)
        if got.error is not None or got.point is None:
            cell = "{}#{}".format(*self.todo[0])
            return "failed", got.error[1] if got.error else f"{cell}: nothing was measured"
        if got.point.interrupted:
            return "interrupted", f"interrupted; {hint} continues"
        self.todo.pop(0)
        return "", ""
