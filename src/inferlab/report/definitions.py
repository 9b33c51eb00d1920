"""Metric definitions the report quotes next to its numbers (docs/metrics.md, version 1)."""

from __future__ import annotations

__all__ = ["DEFINITIONS"]

#: metric name → its definition, as the report prints it
DEFINITIONS: dict[str, str] = {
    "output_tok_s": "output throughput = output tokens of successful measured requests / window "
    "(first send → last end; adaptive points: token events in the steady window, end of the "
    "ramp-up → stop), tok/s; mean over trials",
    "tpot_ms": "TPOT = (E2E − TTFT) / (output tokens − 1), ms; median over requests",
    "ttft_ms": "TTFT = send → first token-bearing SSE event, ms",
    "itl_ms": "ITL = gap between token-bearing events / k for an event carrying k tokens, "
    "repeated k times, ms",
    "ratio": "×ratio = candidate / baseline at the same load point, with its 95% interval "
    "(bootstrap; batch means for one-trial throughput); a change is claimed only when "
    "p < α, the interval excludes 1 and |change| ≥ the minimum effect, else “~ within noise” "
    "(docs/compare.md); a point measured with a starved client (loop-lag p99 over its limit), "
    "a TPOT median of 0 or cut short is untrusted and never claimed from; a sequential A/B "
    "names the look that settled it",
    "saturation": "saturated by C: no higher concurrency gains ≥ 5% output throughput while "
    "TPOT grows (docs/compare.md)",
    "server": "scraped from the server's /metrics around each load point: accept length = "
    "1 + accepted / drafts (tokens per verifier step); maxima over scrapes for gauges",
}
