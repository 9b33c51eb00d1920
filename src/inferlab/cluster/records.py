"""What the driver stores of its actors' reports (a launch, a stop), as ``inferlab run`` stores
them."""

from __future__ import annotations

from inferlab.campaign.context import RuntimeFailure
from inferlab.campaign.parts.aftermath import record_runtime, record_stop, stop_message
from inferlab.cluster.actors import Launched, Stopped
from inferlab.cluster.shared import Shared

__all__ = ["store_launch", "store_stop"]


def store_launch(sh: Shared, gid: int, got: Launched) -> None:
    """What config ``gid``'s server actor reported of its launch: the node's recon, the
    launch check with where it ran (and, when it failed, the log's findings)."""
    where = got.placed.to_json()
    if got.recon is not None:
        with sh.store.transaction():
            host = str(got.recon.get("host") or got.placed.hostname)
            sh.store.add_analysis("recon", host, got.recon, campaign=sh.camp.campaign.name)
    if got.error is not None:
        sh.findings(gid, got.findings, str(got.error.get("log_path", "")))
        detail = {**got.error, **where}
    else:
        detail = {"ready_s": got.ready_s, "log_path": got.log_path, "argv": got.argv, **where}
        detail |= {
            "gpu_used_mib": got.gpu_ready_mib,
            "server_pid": got.server_pid,
            "server_cuda_visible_devices": got.server_cuda_visible_devices,
        }
    with sh.store.transaction():
        sh.store.add_verification(gid, "launch", got.error is None, detail)


def store_stop(sh: Shared, gid: int, name: str, got: Stopped) -> RuntimeFailure | None:
    """What config ``gid``'s server actor reported of its stop (``campaign.parts.aftermath``):
    the log's findings, the stop check with the GPU drain, told; its runtime failure, stored
    and returned (None: none)."""
    sh.findings(gid, got.findings, got.log_path)
    record_stop(sh.store, gid, got.report, got.drain)
    sh.events.message(f"{name}: {stop_message(got.report, got.drain)}")
    if got.failure is not None:
        record_runtime(sh.store, gid, got.failure)
    return got.failure
