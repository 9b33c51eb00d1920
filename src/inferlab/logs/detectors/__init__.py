"""Finding detectors: one per kind of finding, registered with ``@detector(kind)``
(``registry``), grouped by what they look at: ``kernels`` (untuned kernel configs, the
engine's own advice), ``load`` (throughput, speculative decoding, KV and queue pressure,
context), ``failures`` (OOM, CUDA-graph capture, NCCL, the launch's fatal line).

A detector reads the sinks' ``LogState`` (and the log's path, for the suggested command) and
returns its findings; ``detect`` runs them in ``ORDER``.
"""

from __future__ import annotations

from inferlab.logs.detectors import failures, kernels, load
from inferlab.logs.detectors.registry import DETECTORS, Detector, detector
from inferlab.logs.model import Finding
from inferlab.logs.state import LogState

__all__ = ["DETECTORS", "ORDER", "Detector", "detect", "detector"]

_MODULES = (failures, kernels, load)  # imported for their registrations

#: the order findings are reported in
ORDER = (
    "untuned-fp8-gemm",
    "untuned-moe",
    "decode-plateau",
    "spec-accept",
    "oom-graph-capture",
    "oom",
    "graph-capture-failed",
    "nccl-error",
    "nccl-timeout",
    "perf-advice",
    "kv-pressure",
    "queueing",
    "context-overflow",
    "launch-failure",
)


def detect(st: LogState) -> list[Finding]:
    """Every detector's findings, in ``ORDER`` (then any other registered kind)."""
    out: list[Finding] = []
    for kind in (*ORDER, *(k for k in DETECTORS if k not in ORDER)):
        out.extend(DETECTORS[kind](st))
    if st.simulated:
        out = [
            Finding(f.kind, f.severity, f.message, {**f.evidence, "simulated": True}, f.action)
            for f in out
        ]
    return out
