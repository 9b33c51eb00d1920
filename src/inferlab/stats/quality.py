"""Measurement-quality warnings of one load point, each with the fix that removes it."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from inferlab.stats.difference import min_attainable_p
from inferlab.stats.intervals import QUANTILES, Statistic

__all__ = ["QualityWarning", "min_samples", "quality_warnings"]


@dataclass(frozen=True, slots=True)
class QualityWarning:
    """A measurement-quality problem and the fix that removes it."""

    kind: str  # too-few-samples | too-few-trials | unstable-trials | client-lag | ...
    message: str
    fix: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


def min_samples(statistic: Statistic) -> int:
    """Fewest samples for a usable interval of ``statistic``: 10, and for a pq percentile at
    least 1/(1 − q) so it is not just the maximum (p95: 20, p99: 100)."""
    q = QUANTILES.get(statistic, 50.0) / 100.0
    return max(10, math.ceil(round(1.0 / (1.0 - q), 9)))


def _trials_needed(alpha: float) -> int:
    n = 2
    while min_attainable_p(n, n) >= alpha and n < 50:
        n += 1
    return n


def _too_few_samples(samples: int, statistic: Statistic) -> QualityWarning | None:
    need = min_samples(statistic)
    if samples >= need:
        return None
    return QualityWarning(
        "too-few-samples",
        f"the {statistic} rests on {samples} request(s); its interval needs ≥ {need}",
        f"measure ≥ {need} requests per load point (--requests {need}, or a longer --duration)",
    )


def _too_few_trials(trials_per_side: int, alpha: float) -> QualityWarning | None:
    if trials_per_side < 2:
        return None
    floor = min_attainable_p(trials_per_side, trials_per_side)
    if floor < alpha:
        return None
    return QualityWarning(
        "too-few-trials",
        f"with {trials_per_side} trials per side no permutation test can reach "
        f"p < {alpha:g} (smallest possible p = {floor:.2g}): throughput verdicts "
        "rest on Welch's t, which assumes normal trial throughputs",
        f"run --trials {_trials_needed(alpha)} or more for a distribution-free test",
    )


def _unstable_trials(trial_tok_s: Sequence[float], cv_limit: float) -> QualityWarning | None:
    vals = [v for v in trial_tok_s if math.isfinite(v)]
    if len(vals) < 2:
        return None
    mean = sum(vals) / len(vals)
    sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1))
    if mean <= 0 or sd / mean <= cv_limit:
        return None
    return QualityWarning(
        "unstable-trials",
        f"throughput varies {sd / mean:.1%} (sd/mean) across {len(vals)} trials, "
        f"more than {cv_limit:.0%}",
        "look for interference (other jobs on the GPUs, clock or thermal "
        "throttling), add warmup (--warmup), lengthen each trial (--requests), "
        "or run more --trials",
    )


def _client_lag(lag_p99_ms: float, lag_limit_ms: float) -> QualityWarning | None:
    if not lag_p99_ms > lag_limit_ms:  # NaN: no warning
        return None
    return QualityWarning(
        "client-lag",
        f"the client ran late: loop-lag p99 {lag_p99_ms:.2f} ms > {lag_limit_ms:g} ms",
        "give the client CPUs of its own ([load] client_cpus, bench --client-cpus), "
        "add --workers, lower the concurrency, or run the client on another host",
    )


def _length_mismatch(length_mismatches: int) -> QualityWarning | None:
    if length_mismatches <= 0:
        return None
    return QualityWarning(
        "length-mismatch",
        f"{length_mismatches} request(s) returned a different number of output tokens "
        "than requested; configs may not have done the same work",
        "force the length (--engine vllm|sglang sends ignore_eos and min_tokens) or "
        "check the server's max length",
    )


def _errors(errors: int | Mapping[str, int], requests: int | None) -> QualityWarning | None:
    n_err = sum(errors.values()) if isinstance(errors, Mapping) else errors
    if n_err <= 0:
        return None
    kinds = (
        " (" + ", ".join(f"{k} {v}" for k, v in sorted(errors.items()) if v) + ")"
        if isinstance(errors, Mapping)
        else ""
    )
    of = f" of {requests}" if requests is not None else ""
    return QualityWarning(
        "errors",
        f"{n_err}{of} request(s) failed{kinds}; they are excluded from latency, and "
        "throughput counts only successful requests",
        "see the request records for the server's messages; fix them before comparing",
    )


def quality_warnings(
    *,
    samples: int | None = None,
    statistic: Statistic = "median",
    trial_tok_s: Sequence[float] = (),
    trials_per_side: int | None = None,
    alpha: float = 0.05,
    lag_p99_ms: float | None = None,
    length_mismatches: int = 0,
    errors: int | Mapping[str, int] = 0,
    requests: int | None = None,
    cv_limit: float = 0.05,
    lag_limit_ms: float = 1.0,
) -> list[QualityWarning]:
    """Warnings for one load point of one config; every argument is optional. ``samples``:
    requests behind ``statistic``; ``trial_tok_s``: throughput per trial (tok/s);
    ``lag_p99_ms``: the client's loop-lag p99 (ms); ``errors``: count or counts by kind."""
    found = [
        None if samples is None else _too_few_samples(samples, statistic),
        None if trials_per_side is None else _too_few_trials(trials_per_side, alpha),
        _unstable_trials(trial_tok_s, cv_limit),
        None if lag_p99_ms is None else _client_lag(lag_p99_ms, lag_limit_ms),
        _length_mismatch(length_mismatches),
        _errors(errors, requests),
    ]
    return [w for w in found if w is not None]
