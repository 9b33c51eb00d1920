"""Measurement-quality warnings of a load point, typed and with the fix that fits."""

from __future__ import annotations

from inferlab.config.bench import BenchConfig
from inferlab.engines import get_engine
from inferlab.load.promptcheck import check_prompt_counts
from inferlab.load.results import BenchWarning, PointResult

__all__ = ["FEW_SAMPLES", "LAG_WARN_MS", "point_warnings"]

LAG_WARN_MS = 1.0

FEW_SAMPLES = 100  # successful requests below which a point warns that its p99s rest on few


def point_warnings(cfg: BenchConfig, res: PointResult, workers: int) -> list[BenchWarning]:
    """Measurement-quality warnings of one finished point, each with the fix that fits."""
    out = _lag_warnings(cfg, res, workers)
    s = res.summary
    if res.refused:
        out.append(
            BenchWarning(
                "over-context",
                f"{res.refused} requests of the trace need more than the model's context "
                f"({res.context} tokens, input + output): refused up front, not sent",
                "replay a slice without them (--trace-window, --limit), or serve a longer context",
            )
        )
    failed = s.requests - s.ok
    if failed:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(s.errors.items()))
        out.append(
            BenchWarning(
                "errors",
                f"{failed} of {s.requests} requests failed ({kinds}); they are excluded "
                "from latency statistics",
                "see the request records (--out) for the server's messages",
            )
        )
    if s.length_warnings:
        told = bool(get_engine(cfg.engine or "openai").fixed_length_fields(1))
        out.append(
            BenchWarning(
                "length-mismatch",
                f"{s.length_warnings} requests returned a different number of output tokens "
                "than requested, reported or counted" + ("" if told else " (max_tokens only)"),
                f"check --engine ({cfg.engine}) sends the server's ignore_eos/min_tokens fields, "
                "and --tokenizer matches the served model",
            )
        )
    out += _tokenizer_warning(cfg, res)
    if 0 < s.ok < FEW_SAMPLES:
        out.append(
            BenchWarning(
                "few-samples",
                f"only {s.ok} successful requests: p99 values rest on very few samples",
                "raise --requests or --duration (adaptive points: min_requests)",
            )
        )
    return out


def _lag_warnings(cfg: BenchConfig, res: PointResult, workers: int) -> list[BenchWarning]:
    """The client's loop lag, and an open-loop point's sends late against its schedule."""
    out: list[BenchWarning] = []
    s = res.summary
    lag = res.loop_lag_ms
    # the rule of trust (stats/trust.py): p99 over the limit; a lone stall (the max) moves no
    # median or p99 and is kept in the stored loop lag
    if lag.count and lag.p99 > cfg.lag_limit_ms:
        out.append(
            BenchWarning(
                "client-lag",
                f"the client ran late: p99 {lag.p99:.2f} ms > {cfg.lag_limit_ms:g} ms, max "
                f"{lag.max:.2f} ms with {workers} worker process(es); timestamps can be late by "
                "that much",
                "give the client CPUs of its own (inferlab run and up split them; bench: "
                f"--client-cpus), run with --workers {workers + 1} if CPUs are free, lower the "
                "concurrency, or run the client on another host",
            )
        )
    q = s.queue_delay_ms
    if res.point.pattern.lateness.warns and q.count and q.p99 > LAG_WARN_MS:
        out.append(
            BenchWarning(
                "send-lag",
                f"requests were sent late against the arrival schedule: p99 {q.p99:.2f} ms",
                f"run with --workers {workers + 1} or a lower --rate",
            )
        )
    return out


def _tokenizer_warning(cfg: BenchConfig, res: PointResult) -> list[BenchWarning]:
    """``tokenizer-mismatch`` when the server's prompt counts are not the client's
    (``load.promptcheck``): a ``--tokenizer`` of another model."""
    got = check_prompt_counts(res.records, chat=cfg.endpoint == "chat")
    if got is None or not got.mismatch:
        return []
    which = f"--tokenizer {cfg.tokenizer}" if cfg.tokenizer else "the server's /tokenize"
    return [
        BenchWarning(
            "tokenizer-mismatch",
            f"{got.message()} ({which} is not the served model's tokenizer)",
            "pass --tokenizer DIR of the served model ([load] tokenizer), then measure again",
        )
    ]
