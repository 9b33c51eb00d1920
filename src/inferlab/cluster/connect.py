"""Reaching a Ray cluster: the optional extra, the address, the nodes it has.

``ray`` is imported only here and only when asked for, so inferlab without the ``ray`` extra
works as before and ``--ray`` says how to install it. An address is checked with a plain TCP
connect first (a Ray client otherwise retries an unreachable GCS for minutes).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from inferlab.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "CLIENT_RESOURCE",
    "INSTALL_HINT",
    "REAPER_CONFIG",
    "NodeInfo",
    "alive_nodes",
    "connect",
    "is_subreaper",
    "own_children",
    "require_ray",
    "resolve_address",
]

INSTALL_HINT = "pip install 'inferlab[ray]'"
#: the custom resource a load-generating node is started with (``bench --ray --clients N``)
CLIENT_RESOURCE = "inferlab_client"
#: Ray's child-process reaping: the raylet kills every process a dead worker left behind (a
#: crashed server actor must not leave an engine holding GPUs). Given to a Ray that inferlab
#: starts; a cluster started with ``ray start`` needs the variable
#: ``RAY_kill_child_processes_on_worker_exit_with_raylet_subreaper=true`` (docs/cluster.md).
REAPER_CONFIG = {"kill_child_processes_on_worker_exit_with_raylet_subreaper": True}


def own_children() -> None:
    """Wait for our own children again. With child-process reaping on, Ray's core worker (in
    an actor, and in the driver too) ignores SIGCHLD, so every child's exit status reads 0: a
    crashed engine would look like a clean exit, and the setting is inherited by every process
    started afterwards. The raylet still kills what a dead worker leaves behind."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    except ValueError:  # not the main thread: nothing to restore from here
        pass


_PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 36, 37


def is_subreaper() -> bool | None:
    """Whether this process adopts its orphaned descendants (Linux ``PR_GET_CHILD_SUBREAPER``);
    None where that cannot be asked."""
    if not sys.platform.startswith("linux"):
        return None
    flag = ctypes.c_int(0)
    try:
        ok = ctypes.CDLL(None).prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return None
    return bool(flag.value) if ok else None


def _init(ray: Any, **kwargs: Any) -> None:
    """``ray.init``, leaving this process the subreaper it was before: with child-process
    reaping on, Ray's core worker makes the driver a child subreaper, and ``ray.shutdown()``
    leaves it one, so every orphan a server leaves would stay a zombie child of inferlab (and
    keep its process group "alive" for the stop's checks) instead of being reaped by init."""
    before = is_subreaper()
    ray.init(**kwargs)
    if before is False and is_subreaper():
        ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def require_ray() -> ModuleType:
    """The ``ray`` module, or a ``ConfigError`` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(f"--ray needs Ray, an optional extra: {INSTALL_HINT}") from None
    return ray


@dataclass(frozen=True)
class NodeInfo:
    """One alive Ray node: its id, address, host name and total resources (CPUs, GPUs, custom)."""

    node_id: str
    ip: str
    hostname: str
    cpus: float
    gpus: float
    resources: dict[str, float] = field(default_factory=dict)

    @property
    def short(self) -> str:
        return f"{self.hostname or self.ip} ({self.node_id[:8]})"


def alive_nodes(ray: Any) -> list[NodeInfo]:
    """Every alive node of the connected cluster."""
    out = []
    for n in ray.nodes():
        if not n.get("Alive"):
            continue
        res = {str(k): float(v) for k, v in (n.get("Resources") or {}).items()}
        out.append(
            NodeInfo(
                node_id=str(n["NodeID"]),
                ip=str(n.get("NodeManagerAddress", "")),
                hostname=str(n.get("NodeManagerHostname", "")),
                cpus=res.get("CPU", 0.0),
                gpus=res.get("GPU", 0.0),
                resources=res,
            )
        )
    return out


def resolve_address(address: str) -> tuple[str, int] | None:
    """``host:port`` of a Ray address (``auto``: ``$RAY_ADDRESS`` or the cluster that the last
    ``ray start`` on this host recorded; ``ray://host:port``: a Ray client server), or None
    for ``local`` (start a Ray instance in this process). ``ConfigError`` when none is found."""
    addr = address.strip()
    if addr == "local":
        return None
    if addr == "auto":
        addr = os.environ.get("RAY_ADDRESS", "") or _recorded_address() or ""
        if not addr:
            raise ConfigError(
                "--ray auto: no Ray cluster found on this host (start one with "
                "`ray start --head`, or give its address: --ray HOST:6379)"
            )
    hostport = addr.split("://", 1)[-1].rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ConfigError(f"--ray {address!r}: expected HOST:PORT, ray://HOST:PORT, auto or local")
    return host.strip("[]"), int(port)


def _recorded_address() -> str | None:
    try:
        from ray._private.services import find_bootstrap_address  # Ray's own lookup

        found = find_bootstrap_address(None)
    except Exception:  # a private helper: its absence is only "not found"
        return None
    return str(found) if found else None


def _probe(host: str, port: int, timeout_s: float) -> str | None:
    """None when ``host:port`` accepts a TCP connection within ``timeout_s``, else why not."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except OSError as exc:
        return str(exc.strerror or exc) if not isinstance(exc, TimeoutError) else "timed out"


def connect(address: str, *, timeout_s: float = 10.0) -> ModuleType:
    """Connect this process to the Ray cluster at ``address`` (see :func:`resolve_address`);
    returns the ``ray`` module. An unreachable address is a ``ConfigError`` within
    ``timeout_s``. Already connected: nothing changes."""
    ray = require_ray()
    if ray.is_initialized():
        own_children()
        return ray
    target = resolve_address(address)
    quiet: dict[str, JsonValue] = {"logging_level": "warning", "log_to_driver": False}
    if target is None:
        _init(ray, include_dashboard=False, _system_config=REAPER_CONFIG, **quiet)
        own_children()
        return ray
    host, port = target
    why = _probe(host, port, timeout_s)
    if why is not None:
        raise ConfigError(
            f"--ray {address}: cannot reach a Ray cluster at {host}:{port} ({why}); start "
            "one with `ray start --head` and give the address it prints"
        )
    url = address if address.startswith("ray://") else f"{host}:{port}"
    try:
        _init(ray, address=url, **quiet)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"--ray {address}: {exc}") from None
    own_children()
    return ray
