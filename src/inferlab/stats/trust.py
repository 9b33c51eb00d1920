"""Whether a load point can carry a verdict: ``trusted`` or ``untrusted``, with reasons and fixes.

A point is untrusted when its numbers do not measure the server:
- ``client-lag``: the measuring client's event loop ran late (loop-lag p99 above the limit),
  so token timestamps are late by that much;
- ``late-sends``: a replayed trace's requests left late against their schedule (send −
  scheduled, p99 above the same limit): the load offered was not the trace's;
- ``tpot-zero``: the median TPOT is below 0.1 ms (10,000 tok/s for one stream) — most requests'
  tokens were read at once (a starved client, or a server or proxy that buffers its stream), a
  measurement failure and not a speed;
- ``interrupted``: the point was cut short (Ctrl-C): what it had is stored, never used;
- ``all-failed``: no request of the point succeeded (a server that died, 5xx): there is no speed
  to measure, and the client's lag during the burst of errors is not reported;
- ``too-short`` (``too_short``, judged by ``compare`` from the stored requests): a closed-loop
  point at C ≥ 2 whose counted requests (its steady window: ramp-up and drain left out) are
  fewer than :data:`MIN_WAVES` waves of C: its throughput is the fill and drain of a few
  waves, not a steady state (the H200's C=128 points of 2 waves read ±130–146%).

Pure functions; ``compare`` and the report never claim a change from an untrusted point.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "DEFAULT_LAG_LIMIT_MS",
    "MIN_WAVES",
    "TPOT_ZERO_MS",
    "Trust",
    "TrustIssue",
    "assess",
    "too_short",
    "trust_from_json",
]

DEFAULT_LAG_LIMIT_MS = 1.0
TPOT_ZERO_MS = 0.1  # 10,000 tok/s for one stream: no real server decodes that fast; a burst read
#: fewest waves (counted requests ÷ C) a closed-loop point's steady window needs to carry a claim
MIN_WAVES = 8

TrustState = Literal["trusted", "untrusted"]

_LABELS = {
    "client-lag": "client lag",
    "late-sends": "late sends",
    "tpot-zero": "TPOT 0",
    "interrupted": "interrupted",
    "all-failed": "all requests failed",
    "too-short": "too short",
}


@dataclass(frozen=True, slots=True)
class TrustIssue:
    """One reason a point is untrusted, and what removes it."""

    reason: str  # client-lag | late-sends | tpot-zero | interrupted | all-failed | too-short
    message: str
    fix: str

    def to_json(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "fix": self.fix}


@dataclass(frozen=True, slots=True)
class Trust:
    issues: tuple[TrustIssue, ...] = ()

    @property
    def state(self) -> TrustState:
        return "untrusted" if self.issues else "trusted"

    @property
    def label(self) -> str:
        """``"untrusted: client lag, TPOT 0"`` (``"trusted"`` when there is no issue)."""
        if not self.issues:
            return "trusted"
        return "untrusted: " + ", ".join(_LABELS.get(i.reason, i.reason) for i in self.issues)

    def to_json(self) -> list[dict[str, str]]:
        return [i.to_json() for i in self.issues]


def assess(
    *,
    lag_p99_ms: float | None,
    tpot_median_ms: float | None,
    interrupted: bool = False,
    lag_limit_ms: float = DEFAULT_LAG_LIMIT_MS,
    workers: int | None = None,
    failed: tuple[int, int] | None = None,
    late_p99_ms: float | None = None,
) -> Trust:
    """The trust of one load point from its client loop-lag p99 (ms, None: not measured), its
    median TPOT (ms, None/NaN: no request had 2 tokens), whether it was interrupted,
    ``failed`` = (failed, sent) requests, and (a replay) its sends' lateness p99 (ms)."""
    if failed is not None and failed[1] > 0 and failed[0] >= failed[1]:
        rest = assess(lag_p99_ms=None, tpot_median_ms=None, interrupted=interrupted)
        return Trust((_all_failed(failed[1]), *rest.issues))
    issues: list[TrustIssue] = []
    if lag_p99_ms is not None and math.isfinite(lag_p99_ms) and lag_p99_ms > lag_limit_ms:
        w = f" with {workers} worker process(es)" if workers else ""
        issues.append(
            TrustIssue(
                "client-lag",
                f"the client's event loop ran late: p99 {lag_p99_ms:.2f} ms > {lag_limit_ms:g} "
                f"ms{w}; token timestamps can be late by that much",
                "give the client CPUs of its own ([load] client_cpus, or a smaller [engine] "
                "cpus; inferlab bench --client-cpus), stop other work on this host, lower the "
                "concurrency, or run the client on another host; then measure the point again",
            )
        )
    if late_p99_ms is not None and math.isfinite(late_p99_ms) and late_p99_ms > lag_limit_ms:
        issues.append(_late_sends(late_p99_ms, lag_limit_ms))
    if (
        tpot_median_ms is not None
        and math.isfinite(tpot_median_ms)
        and (tpot_median_ms < TPOT_ZERO_MS)
    ):
        issues.append(
            TrustIssue(
                "tpot-zero",
                f"median TPOT {tpot_median_ms:.4f} ms < {TPOT_ZERO_MS:g} ms: most requests' "
                "tokens were read at once, a measurement failure and not a speed",
                "give the client CPUs of its own (a starved client reads a whole stream in one "
                "go) and check that nothing between client and server buffers the stream",
            )
        )
    if interrupted:
        issues.append(
            TrustIssue(
                "interrupted",
                "the point was interrupted: what it measured is stored, never used for a verdict",
                "measure it again (inferlab run --resume)",
            )
        )
    return Trust(tuple(issues))


def _late_sends(late_p99_ms: float, limit_ms: float) -> TrustIssue:
    return TrustIssue(
        "late-sends",
        f"requests left late against the trace's schedule: p99 {late_p99_ms:.2f} ms > "
        f"{limit_ms:g} ms; the load offered was not the trace's",
        "give the client CPUs of its own, run with more --workers, or replay at a lower "
        "--speed; then measure the point again",
    )


def _all_failed(sent: int) -> TrustIssue:
    return TrustIssue(
        "all-failed",
        f"all {sent} requests failed: there is no speed to measure",
        "read the point's request errors and the server's log (a server that died has its "
        "runtime failure in the report), fix the config, then measure the point again",
    )


def trust_from_json(items: Sequence[Mapping[str, Any]]) -> Trust:
    """The inverse of ``Trust.to_json``."""
    return Trust(
        tuple(
            TrustIssue(str(i.get("reason", "")), str(i.get("message", "")), str(i.get("fix", "")))
            for i in items
        )
    )


def too_short(
    counted: Sequence[int], concurrency: int | None, min_waves: int = MIN_WAVES
) -> TrustIssue | None:
    """``too-short`` when the shortest of a point's runs (``counted``: each run's counted,
    successful requests) has fewer than ``min_waves`` × C of them; None at C = 1 (a wave is
    one request there: ``too-few-samples`` covers it), for a point that is not closed-loop,
    or without runs."""
    if concurrency is None or concurrency < 2 or not counted:
        return None
    n = min(counted)
    waves = n / concurrency
    if waves >= min_waves:
        return None
    return TrustIssue(
        "too-short",
        f"{waves:.1f} waves at C={concurrency} ({n} counted requests in its steady window), "
        f"need ≥ {min_waves}: its throughput is the fill and drain of a few waves, not a "
        "steady state",
        f'measure ≥ {min_waves * concurrency} requests at C={concurrency} (requests = "auto" '
        f"raises its min_requests and max_requests to {min_waves} × C; a fixed requests = N: "
        "raise N)",
    )
