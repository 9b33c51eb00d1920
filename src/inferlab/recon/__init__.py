"""Recon before acting: GPUs, the engine's Python (torch, triton, CUDA), its version and git
checkout, the flags its ``--help`` offers, the tuned kernel configs it ships for this GPU versus
the shapes a log says are needed, NCCL variables, and a running server."""

from __future__ import annotations

from inferlab.recon.core import RECON_VERSION, EngineInfo, Recon, ReconOptions, run_recon
from inferlab.recon.engines import ENGINES, ReconEngine, config_dirs_for, engine_config_dirs

__all__ = [
    "ENGINES",
    "RECON_VERSION",
    "EngineInfo",
    "Recon",
    "ReconEngine",
    "ReconOptions",
    "config_dirs_for",
    "engine_config_dirs",
    "run_recon",
]
