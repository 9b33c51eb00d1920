"""On the model clock a sequential point's stop is decided on the model clock too
(``campaign.parts.clockstop``), not by the client's wall-clock reads. The reference engine on a thread
of this process, real HTTP on loopback, real SQLite: the same sequential A/B (a candidate that
serves exactly the baseline's timing) is run twice, once with the candidate's server stalled
(its event loop blocked 15 ms every 40 ms: its writes late, its ground truth unchanged). The
wall clock reads the stalled candidate slower; the model clock reads the same schedule, so the
two campaigns must store the same stop: the same reason, look, counts and test, where
the TPOT reads exactly the baseline's (equivalent)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import InProcessSim
from inferlab.server import ServerProcess
from inferlab.server.lifecycle import LaunchSpec
from inferlab.sim.inprocess import SimThread
from inferlab.store import Store
from support.campaign import write_campaign


class StalledSim(InProcessSim):
    """``InProcessSim`` whose launches of config ``stalled`` have their event loop blocked
    ``block_s`` every ``every_s`` while they serve."""

    def __init__(self, block_s: float = 0.015, every_s: float = 0.04) -> None:
        self.block_s, self.every_s = block_s, every_s

    def start(self, spec: LaunchSpec) -> ServerProcess:
        server = super().start(spec)
        if spec.name.startswith("stalled"):
            thread = server.proc
            assert isinstance(thread, SimThread)
            threading.Thread(target=self._stall, args=(thread,), daemon=True).start()
        return server

    def _stall(self, sim: SimThread) -> None:
        while sim.poll() is None:
            time.sleep(self.every_s)
            loop = sim._loop
            if loop is not None and not loop.is_closed():
                try:
                    loop.call_soon_threadsafe(time.sleep, self.block_s)
                except RuntimeError:  # the loop has just ended
                    return


def _stops(tmp_path: Path, name: str, stall: bool) -> dict[str, Any]:
    """The stored stop of the candidate."""
    cand = "stalled" if stall else "same"
    path = write_campaign(
        tmp_path / f"{name}.toml",
        name=name,
        output=tmp_path / f"out-{name}",
        args=["--ttft-ms", "2", "--itl-ms", "1"],
        config=[{"name": "baseline"}, {"name": cand, "extends": "baseline"}],
        load={
            "concurrency": [2], "requests": "auto", "sequential": True, "min_requests": 16,
            "max_requests": 48, "looks": 3,
        },
    )  # fmt: skip
    with Store(tmp_path / f"{name}.db") as store:
        run_campaign(path, store=store, launcher=StalledSim(), clock=ModelClock())
        (run,) = store.runs(campaign=name, config=cand)
    assert run.stop is not None
    return run.stop


def _comparable(stop: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in stop.items() if k != "window_ns"}


def test_the_stop_of_a_sequential_point_is_decided_on_the_model_clock(tmp_path: Path) -> None:
    quiet = _stops(tmp_path, "quiet", stall=False)
    stalled = _stops(tmp_path, "stalled", stall=True)
    tpot = stalled["sequential"]["metrics"]["tpot_ms"]
    assert abs(tpot["ratio"] - 1.0) < 1e-9, tpot  # the schedule's own: exactly the baseline's
    assert tpot["status"] == "equivalent", tpot
    assert stalled["reason"] not in ("sequential-worse", "sequential-better"), stalled["reason"]
    assert _comparable(stalled) == _comparable(quiet)
