"""Sparklines and series lines (``logs.plot``)."""

from __future__ import annotations

from inferlab.logs import (
    analyze_log,
)
from inferlab.logs.plot import series_lines, sparkline
from support import FIXTURES

FIX = FIXTURES / "engine_logs"
VLLM = FIX / "vllm_metrics_log"


def test_sparklines() -> None:
    assert sparkline([1, 2, 3, 4, 5, 6, 7, 8]) == "▁▂▃▄▅▆▇█"
    assert len(sparkline(list(range(1000)), width=40)) == 40
    a = analyze_log(VLLM / "tt-inference-server-246_vllm-v0-metrics-py-wrapped.log")
    lines = series_lines(a.series)
    assert lines[0].startswith("gen throughput (tok/s)") and "max 616" in lines[0]
