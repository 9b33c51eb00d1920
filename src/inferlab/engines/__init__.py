"""Per-engine knowledge (pure: no I/O). One module per engine, registered by name.

Each engine module (``vllm``, ``sglang``, ``llamacpp``, ``transformers``, ``sim``, ``openai``)
builds one ``EngineSpec``: launch command lines, HTTP paths, fixed-output-length request fields,
flag aliases (``flags``), Prometheus metric names (``prometheus``) and log signatures (``logs``).
"""

from __future__ import annotations

from inferlab.engines.base import (
    EngineSpec,
    Launcher,
    NativeApi,
    classify_log,
    get_engine,
    register,
    registered,
)
from inferlab.engines.flags import Change, FlagSyntax, ParsedArgs
from inferlab.engines.logs import LogMatch, LogSignature, clean_line, primary_failure
from inferlab.engines.prometheus import MetricDef, Sample, histogram_buckets, parse_prometheus

# importing the modules registers them
from inferlab.engines import llamacpp, openai, sglang, sim, transformers, vllm  # noqa: F401  isort: skip

__all__ = [
    "Change",
    "EngineSpec",
    "FlagSyntax",
    "Launcher",
    "LogMatch",
    "LogSignature",
    "MetricDef",
    "NativeApi",
    "ParsedArgs",
    "Sample",
    "classify_log",
    "clean_line",
    "get_engine",
    "histogram_buckets",
    "parse_prometheus",
    "primary_failure",
    "register",
    "registered",
]
