"""Log mining: server logs of SGLang, vLLM and llama.cpp turned into findings.

::

    analyze_log(path)        -> LogAnalysis   findings, time series, timeline, engine, lines read
    untuned_fp8_gemms(path)  -> [UntunedGemm] block-FP8 GEMM shapes on the default Triton config
    untuned_moe(path)        -> [UntunedMoe]  fused-MoE shapes without a tuned config

The reader streams (bounded memory, ``.gz`` transparently); the line formats
(``inferlab.logs.formats``, one table per engine, declarations read by one matcher) make typed
records that the sinks (``inferlab.logs.sinks``) gather into a state, dispatched by
``inferlab.logs.parsers``; detectors (``inferlab.logs.detectors``, one per finding kind) turn
the state into ``Finding`` objects. See docs/logs.md.
"""

from __future__ import annotations

from inferlab.logs.analyze import (
    analyze_log,
    store_log_findings,
    untuned_fp8_gemms,
    untuned_moe,
)
from inferlab.logs.model import (
    Finding,
    LogAnalysis,
    Milestone,
    OomEvent,
    SeriesPoint,
    TunedConfig,
    UntunedGemm,
    UntunedMoe,
)

__all__ = [
    "Finding",
    "LogAnalysis",
    "Milestone",
    "OomEvent",
    "SeriesPoint",
    "TunedConfig",
    "UntunedGemm",
    "UntunedMoe",
    "analyze_log",
    "store_log_findings",
    "untuned_fp8_gemms",
    "untuned_moe",
]
