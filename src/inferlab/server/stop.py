"""Stopping a server's process group and draining it: SIGTERM, SIGKILL after a grace period,
then until the port is free and NVML lists none of the group's processes on a GPU; after a
Ctrl-C, within seconds."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from inferlab import interrupts
from inferlab.config.hosts import is_local_host
from inferlab.server.gpumem import pids_mib

__all__ = ["INTERRUPT_GRACE_S", "INTERRUPT_WAIT_S", "StopReport", "signal_group", "stop_group"]


@dataclass
class StopReport:
    """How the server stopped and what was checked afterwards."""

    signal: str  # "SIGTERM", "SIGKILL" or "already exited"
    exit_code: int | None
    seconds: float
    port_free: bool
    gpu_check: str  # "drained", "skipped: ...", or what is still held
    notes: list[str] = field(default_factory=list)


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) != 0


def _zombie(pid: int) -> bool | None:
    """Whether ``pid`` has exited and waits to be reaped (None: /proc cannot say)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return None


def _group_pids(pgid: int) -> set[int]:
    """The live processes of group ``pgid``. A zombie is left out: it holds no port, memory or
    GPU and no signal moves it; only its parent's wait removes it (a server that ``up`` started
    in a process that is still running, a library caller's say, stays one until then)."""
    pids = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if os.getpgid(int(d.name)) == pgid and not _zombie(int(d.name)):
                    pids.add(int(d.name))
            except (ProcessLookupError, PermissionError):
                continue
    return pids


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (works for processes we did not start)."""
    zombie = _zombie(pid)
    if zombie is not None:
        return not zombie
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


#: an interrupted run's stop (``inferlab.interrupts``): SIGKILL this long after the SIGTERM
#: (s), whatever ``stop_grace_s`` says; nothing is wanted of a server Ctrl-C left behind
INTERRUPT_GRACE_S = 2.0
#: ... and each wait after the SIGKILL (the group gone, the port, the GPU memory) this long (s)
INTERRUPT_WAIT_S = 2.0


def _end_group(
    pgid: int, alive: Callable[[], bool], grace_s: float, wait_s: float, hit: list[bool]
) -> tuple[str, list[str]]:
    """SIGTERM, SIGKILL after ``grace_s`` (at once on a Ctrl-C: ``hit``), then until no process
    of the group is left (``wait_s`` at most); the signal that ended it and notes."""
    notes: list[str] = []
    sent = "already exited"
    if alive():
        sent = "SIGTERM"
        signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while alive() and time.monotonic() < deadline and not hit[0]:
            time.sleep(0.05)
        if hit[0] or alive():
            sent = "SIGKILL"
            why = "Ctrl-C during the stop" if hit[0] else f"ignored SIGTERM for {grace_s:g} s"
            notes.append(f"{why}: killed")
            signal_group(pgid, signal.SIGKILL)
    deadline = time.monotonic() + wait_s
    while (alive() or _group_pids(pgid)) and time.monotonic() < deadline:
        signal_group(pgid, signal.SIGKILL)  # stragglers: workers that outlive the parent
        time.sleep(0.05)
    return sent, notes


def stop_group(
    pgid: int,
    port: int,
    *,
    host: str = "local",
    grace_s: float = 20.0,
    drain_timeout_s: float = 60.0,
    reap: Callable[[], int | None] | None = None,
    cuda_visible: str | None = None,
) -> StopReport:
    """Stop the process group ``pgid`` (a server started by ``launch``, maybe by another
    inferlab process): SIGTERM, SIGKILL after ``grace_s``; then the port check, and the GPU
    check on the devices ``cuda_visible`` (its ``CUDA_VISIBLE_DEVICES``; None: every GPU).

    After a Ctrl-C (``inferlab.interrupts.seen``) every wait is short (``INTERRUPT_GRACE_S``,
    ``INTERRUPT_WAIT_S``: 8 s in all at most). A Ctrl-C during the stop kills the group at
    once; the stop then finishes its checks and raises ``KeyboardInterrupt``."""
    t0 = time.monotonic()
    hurry = interrupts.seen()
    grace = min(grace_s, INTERRUPT_GRACE_S) if hurry else grace_s
    wait = INTERRUPT_WAIT_S if hurry else 10.0
    drain = min(drain_timeout_s, INTERRUPT_WAIT_S) if hurry else drain_timeout_s

    def alive() -> bool:
        if reap is not None:
            return reap() is None
        return _alive(pgid)

    pids = _group_pids(pgid) | {pgid}
    with interrupts.on_sigint(lambda: signal_group(pgid, signal.SIGKILL)) as hit:
        sent, notes = _end_group(pgid, alive, grace, wait, hit)
        port_free = False
        deadline = time.monotonic() + drain
        while time.monotonic() < deadline:
            if not is_local_host(host) or _port_free(port):
                port_free = True
                break
            time.sleep(0.2)
        if not port_free:
            notes.append(f"port {port} still in use after {drain:g} s")
        gpu = _wait_pids_gone(pids, deadline, cuda_visible)
    if gpu.startswith("not drained"):
        notes.append(gpu)
    if hit[0]:
        raise KeyboardInterrupt
    return StopReport(sent, None, time.monotonic() - t0, port_free, gpu, notes)


def _wait_pids_gone(pids: set[int], deadline: float, cuda_visible: str | None = None) -> str:
    """Wait until NVML lists none of ``pids`` on the GPUs ``cuda_visible`` names (None: any):
    "drained", "not drained: ..." or "skipped: ..." (no NVML)."""
    if pids_mib(cuda_visible) is None:
        return "skipped: no GPU visible through NVML"
    while True:
        left = {p: m for p, m in (pids_mib(cuda_visible) or {}).items() if p in pids}
        if not left:
            return "drained"
        if time.monotonic() > deadline:
            return f"not drained: {sum(left.values())} MiB still held by pids {sorted(left)}"
        time.sleep(0.5)
