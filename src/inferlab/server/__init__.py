"""Server lifecycle: launch a config as a process group, wait until ready, watch, stop, drain."""

from inferlab.server.lifecycle import (
    LaunchSpec,
    ServerProcess,
    clean_env,
    free_port,
    launch,
    log_tail,
    stop,
    wait_ready,
)
from inferlab.server.stop import StopReport, stop_group

__all__ = [
    "LaunchSpec",
    "ServerProcess",
    "StopReport",
    "clean_env",
    "free_port",
    "launch",
    "log_tail",
    "stop",
    "stop_group",
    "wait_ready",
]
