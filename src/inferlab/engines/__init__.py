"""Per-engine knowledge (pure: no I/O). One module per engine, registered by name.

Each engine module (``vllm``, ``sglang``, ``llamacpp``, ``transformers``, ``sim``, ``openai``,
``command``) builds one ``EngineSpec``: launch command lines, HTTP paths, fixed-output-length
request fields, flag aliases (``flags``), Prometheus metric names (``prometheus``), log
signatures (``logs``), and what recon, tune and the log miner read of it (``facts``).
"""

from __future__ import annotations

from inferlab.engines.base import (
    EngineSpec,
    Launcher,
    NativeApi,
    classify_log,
    get_engine,
    is_simulated,
    register,
    registered,
    specs,
    unregister,
)
from inferlab.engines.facts import Fp8Tuning, LogFacts, OomAdvice, ReconFacts
from inferlab.engines.flags import Change, FlagSyntax, ParsedArgs
from inferlab.engines.logs import LogMatch, LogSignature, clean_line, primary_failure
from inferlab.engines.prometheus import MetricDef, Sample, histogram_buckets, parse_prometheus

# importing the modules registers them, in this order: the order recon, tune and the log miner
# try engines in (``specs()``)
from inferlab.engines import sglang, vllm, llamacpp, transformers, sim, openai, command  # noqa: F401  isort: skip

__all__ = [
    "Change",
    "EngineSpec",
    "FlagSyntax",
    "Fp8Tuning",
    "Launcher",
    "LogFacts",
    "LogMatch",
    "LogSignature",
    "MetricDef",
    "NativeApi",
    "OomAdvice",
    "ParsedArgs",
    "ReconFacts",
    "Sample",
    "classify_log",
    "clean_line",
    "get_engine",
    "histogram_buckets",
    "is_simulated",
    "parse_prometheus",
    "primary_failure",
    "register",
    "registered",
    "specs",
    "unregister",
]
