"""The serial pass in lanes: ``make unit`` runs the ``serial`` tests in pytest-xdist workers
(``-n 2``), each pinned to a share of the CPUs of its own (``INFERLAB_TEST_LANES=1``), so two
vLLM CPU servers never share a CPU. A pinned worker's processes inherit its CPUs: a server
``inferlab run`` launches there sees one CPU list, vLLM binds its OpenMP threads inside it
(``sched_getaffinity``), and on a 2-CPU machine each lane has one CPU, as the server alone
had before (the client took the other). On 2 CPUs the serial pass was about 6 minutes of
launches that each keep one CPU busy (2026-12-07: test_vllm_campaign.py used 97% of one CPU
over its 153 s)."""

from __future__ import annotations

import os

__all__ = ["ENV", "lane_cpus", "pin_lane"]

#: set (to anything) by ``make unit`` for the serial pass
ENV = "INFERLAB_TEST_LANES"


def lane_cpus(worker: str, workers: int, cpus: tuple[int, ...]) -> tuple[int, ...]:
    """The CPUs of xdist worker ``worker`` ("gw1") of ``workers``: a contiguous share of
    ``cpus``, the last lane taking the remainder; with fewer CPUs than lanes, one CPU each,
    shared round robin."""
    i = int(worker.removeprefix("gw"))
    if len(cpus) < workers:
        return (cpus[i % len(cpus)],)
    share = len(cpus) // workers
    return cpus[i * share :] if i == workers - 1 else cpus[i * share : (i + 1) * share]


def pin_lane() -> tuple[int, ...] | None:
    """Pin this process to its lane's CPUs when it is an xdist worker of a run that asks for
    lanes (``ENV``); the CPUs, or None (nothing pinned)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not os.environ.get(ENV) or not worker or not hasattr(os, "sched_setaffinity"):
        return None
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    cpus = lane_cpus(worker, workers, tuple(sorted(os.sched_getaffinity(0))))
    os.sched_setaffinity(0, cpus)
    return cpus
