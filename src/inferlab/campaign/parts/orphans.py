"""No orphan servers: every launched server is recorded until it is stopped.

``remember`` writes ``<output>/.running/<config>.json`` as soon as the process exists (before
the launch returns): its pid and process group, its start time (``/proc/PID/stat`` field 22,
clock ticks since boot) and command line, port and host. Stopping it (``forget``) removes the
record. A record found by a later ``run``/``up`` that holds the campaign's lock was left by a
runner that died (a live runner would hold the lock): when that pid still runs with the same
start time and command line, its process group is stopped (SIGTERM, SIGKILL after the grace
period, then the port and GPU drain checks); a pid that now belongs to another process is left
alone. ``recover_campaign`` does this, then restores pending kernel-config files, and says what
it found and did in one line each.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict

from inferlab.campaign.parts import files as lever_files
from inferlab.errors import ConfigError
from inferlab.server import ServerProcess, stop_group
from inferlab.store import Store

__all__ = [
    "campaign_lock",
    "forget",
    "process_identity",
    "reap",
    "recover_campaign",
    "remember",
]

FORMAT = "inferlab.server/1"


class ServerRecord(TypedDict):
    """A launched server's record (``.running/CONFIG.json``): what identifies its process
    (``start_ticks``: its start time in clock ticks since boot) and how to stop it."""

    format: str
    config: str
    pid: int
    pgid: int
    start_ticks: int | None
    cmdline: list[str]
    port: int
    host: str | None
    grace_s: float
    log: str
    runner_pid: int
    started_at: str


#: lock files this process holds (a POSIX record lock does not refuse its own process)
_HELD: set[Path] = set()
_HELD_GUARD = threading.Lock()


@contextlib.contextmanager
def campaign_lock(d: Path, name: str) -> Iterator[None]:
    """One runner per campaign (output directory ``d``) on a host: at most one of its servers
    runs at a time, and the records of a runner that does not hold this lock are those of a
    dead one.

    A POSIX record lock (``lockf``), not ``flock``: a process forked from the runner (the load
    workers are) does not inherit it, so a runner killed with ``kill -9`` frees its campaign
    when it dies, not when its last forked child does."""
    d.mkdir(parents=True, exist_ok=True)
    path = (d / ".lock").resolve()
    busy = ConfigError(f"campaign {name!r} is already running on this host (lock {d / '.lock'})")
    with _HELD_GUARD:
        if path in _HELD:
            raise busy
        _HELD.add(path)
    try:
        with path.open("a") as f:
            try:
                fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise busy from None
            yield
    finally:
        with _HELD_GUARD:
            _HELD.discard(path)


def _dir(out_dir: Path) -> Path:
    return out_dir / ".running"


def process_identity(pid: int) -> tuple[int, list[str]] | None:
    """(start time in clock ticks since boot, command line) of a live process, or None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except (OSError, IndexError):
        return None
    if fields[0] == "Z":
        return None
    return int(fields[19]), cmd


def remember(out_dir: Path, config: str, server: ServerProcess) -> Path:
    """Record a just-launched server (see the module docstring)."""
    ident = process_identity(server.pid)
    rec: ServerRecord = {
        "format": FORMAT,
        "config": config,
        "pid": server.pid,
        "pgid": server.pid,  # launched with start_new_session: it leads its own group
        "start_ticks": ident[0] if ident else None,
        "cmdline": ident[1] if ident else list(server.spec.argv),
        "port": server.spec.port,
        "host": server.spec.host,
        "grace_s": server.spec.stop_grace_s,
        "log": str(server.spec.log_path),
        "runner_pid": os.getpid(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    path = _dir(out_dir) / f"{config}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec, indent=2), encoding="utf-8")
    os.replace(tmp, path)
    return path


def forget(out_dir: Path, config: str) -> None:
    """The server of ``config`` was stopped: drop its record."""
    (_dir(out_dir) / f"{config}.json").unlink(missing_ok=True)


def reap(out_dir: Path) -> list[str]:
    """Stop the servers of records left by a dead runner (call with the campaign's lock
    held); one line per record, saying what was found and done."""
    lines = []
    for path in sorted(_dir(out_dir).glob("*.json")):
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            path.unlink(missing_ok=True)
            continue
        lines.append(_reap_one(rec))
        path.unlink(missing_ok=True)
    return lines


def _reap_one(rec: ServerRecord) -> str:
    pid = int(rec["pid"])
    what = (
        f"server of config {rec.get('config')} (pid {pid}, port {rec.get('port')}, started "
        f"{rec.get('started_at')}) left by a runner that died (pid {rec.get('runner_pid')})"
    )
    ident = process_identity(pid)
    if ident is None:
        return f"{what}: already gone"
    ticks, cmd = ident
    if (rec.get("start_ticks") is not None and ticks != rec["start_ticks"]) or cmd != rec.get(
        "cmdline"
    ):
        return f"{what}: pid {pid} is now another process ({' '.join(cmd)[:60]!r}), left alone"
    rep = stop_group(
        int(rec.get("pgid") or pid),
        int(rec.get("port") or 0),
        host=str(rec.get("host") or "local"),
        grace_s=float(rec.get("grace_s") or 20.0),
    )
    port = "port free" if rep.port_free else "PORT STILL IN USE"
    return f"{what}: stopped by {rep.signal} in {rep.seconds:.1f} s, {port}, GPU {rep.gpu_check}"


def _up_is_live(out_dir: Path, config: str) -> bool:
    state = out_dir / ".servers" / f"{config}.json"
    try:
        pid = int(json.loads(state.read_text(encoding="utf-8"))["pid"])
    except (OSError, ValueError, KeyError):
        return False
    return process_identity(pid) is not None


def recover_campaign(out_dir: Path, store: Store | None) -> list[str]:
    """Before anything else runs (lock held): stop orphan servers, then restore pending
    kernel-config files (those of a server ``inferlab up`` left running stay)."""
    lines = reap(out_dir)
    lines += lever_files.recover(
        out_dir,
        store,
        live=lambda inst: inst.data.get("owner") == "up" and _up_is_live(out_dir, inst.config),
    )
    return lines
