"""Which CPUs the server and the measuring client get when both run on this host.

When ``inferlab run`` or ``inferlab up`` launches the server locally, the host's CPUs are
split: the client gets ``[load] client_cpus`` or, by default, one CPU per 16 concurrent
streams (at least one, at most a quarter of the host's CPUs) taken from the end of the list;
the server's process group is pinned to ``[engine] cpus`` or the rest, and the engine's own
thread knob is set to match (the engine registry's ``cpu_env``: vLLM's CPU build
``VLLM_CPU_OMP_THREADS_BIND`` and ``VLLM_CPU_NUM_OF_RESERVED_CPU``, ``OMP_NUM_THREADS``
otherwise). ``[engine] cpus = "none"`` turns it off. A remote (ssh) server, or an endpoint
inferlab does not launch, is never pinned.
"""

from __future__ import annotations

import math
from pathlib import Path

from inferlab.campaign.context import CpuSplit
from inferlab.config.campaign import CampaignFile
from inferlab.config.hosts import is_local_host
from inferlab.config.source import locate
from inferlab.cpus import format_cpu_list, host_cpus, parse_cpu_list
from inferlab.engines import get_engine
from inferlab.errors import ConfigError

__all__ = ["campaign_streams", "plan_cpus"]

#: one client CPU per this many streams: on the H200 (vLLM 0.26, 2026-12-01) one client CPU
#: read loop-lag p99 1.09-2.37 ms (over the 1 ms trust limit) at C=8, 32 and 128 with 2-12 k
#: output tok/s, while the same client unpinned stayed at 0.04-0.09 ms up to C=256
STREAMS_PER_CLIENT_CPU = 16
#: the client never takes more than this share of the host's CPUs by default
CLIENT_SHARE = 0.25


def campaign_streams(camp: CampaignFile) -> int:
    """Most requests the load section keeps in flight (256 for an uncapped rate)."""
    ld = camp.load
    rate = [ld.max_concurrency or 256] if ld.rate else []
    return max([*ld.concurrency, *rate, 1])


def _where(path: Path | None, text: str | None, loc: tuple[str, ...]) -> str:
    line = locate(text, loc) if text else None
    return f"{path}:{line}: " if path and line else f"{path}: " if path else ""


def _checked(
    text: str, fld: str, host: tuple[int, ...], path: Path | None, src: str | None
) -> tuple[int, ...]:
    loc = tuple(fld.split("."))
    try:
        cpus = parse_cpu_list(text, fld)
    except ConfigError as exc:
        raise ConfigError(_where(path, src, loc) + str(exc)) from None
    missing = [c for c in cpus if c not in host]
    if missing:
        raise ConfigError(
            f"{_where(path, src, loc)}{fld}: CPU {format_cpu_list(missing)} is not on this host "
            f"(it has {format_cpu_list(host)})"
        )
    return cpus


def plan_cpus(
    camp: CampaignFile,
    streams: int,
    *,
    path: Path | None = None,
    text: str | None = None,
    host: tuple[int, ...] | None = None,
) -> CpuSplit:
    """The split for ``camp`` with at most ``streams`` requests in flight. Raises
    ``ConfigError`` (file:line, field) for CPUs this host lacks or overlapping sets."""
    eng, ld = camp.engine, camp.load
    spec = get_engine(eng.kind)
    cpus = host or host_cpus()
    if (eng.cpus or "").strip().lower() == "none":
        return CpuSplit(None, None, "off", 'engine.cpus = "none": nothing is pinned')
    if not is_local_host(eng.host):
        return CpuSplit(
            None, None, "remote", f"the server runs on {eng.host} (ssh): nothing is pinned"
        )
    client = (
        _checked(ld.client_cpus, "load.client_cpus", cpus, path, text) if ld.client_cpus else None
    )
    if not spec.launchers:
        return CpuSplit(
            None,
            client,
            "not launched",
            "inferlab does not launch this server: it is not pinned",
        )
    server = _checked(eng.cpus, "engine.cpus", cpus, path, text) if eng.cpus else None
    if server is not None and client is not None:
        both = sorted(set(server) & set(client))
        if both:
            raise ConfigError(
                f"{_where(path, text, ('load', 'client_cpus'))}engine.cpus and load.client_cpus "
                f"overlap (CPU {format_cpu_list(both)}): the server and the client need their own"
            )
        source, note = "campaign file", "engine.cpus and load.client_cpus"
    elif server is not None or client is not None:
        given = server if server is not None else client
        assert given is not None
        rest = tuple(c for c in cpus if c not in given)
        if not rest:
            fld = "engine.cpus" if server is not None else "load.client_cpus"
            raise ConfigError(
                f"{_where(path, text, tuple(fld.split('.')))}{fld} takes every CPU of this "
                f"host ({format_cpu_list(cpus)}): leave at least one to the "
                + ("client" if server is not None else "server")
            )
        server, client = (server, rest) if server is not None else (rest, client)
        source, note = "campaign file", "the other side gets the remaining CPUs"
    elif len(cpus) < 2:
        return CpuSplit(None, None, "one CPU", "this host has one CPU: server and client share it")
    else:
        server, client, source, note = _auto(cpus, streams)
    return CpuSplit(server, client, source, note, spec.cpu_env(server))


def _auto(cpus: tuple[int, ...], streams: int) -> tuple[tuple[int, ...], tuple[int, ...], str, str]:
    """The default split: the client's CPUs from the end of the list."""
    cap = max(1, int(len(cpus) * CLIENT_SHARE))
    need = min(cap, max(1, math.ceil(streams / STREAMS_PER_CLIENT_CPU)))
    note = (
        f"1 client CPU per {STREAMS_PER_CLIENT_CPU} streams (at most a quarter of the CPUs), "
        f"at most {streams} in flight"
    )
    return cpus[:-need], cpus[-need:], "auto", note
