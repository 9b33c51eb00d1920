"""Trace replay: a ``Replay`` point's send offsets and prompts, from its parsed trace.

Every trace of a sweep is parsed before anything is sent (``read_traces``). A point takes its
slice (window, then limit), leaves out the requests whose input + output exceed the model's
context (counted: ``ReplayPlan.refused``), and sends the rest at their arrival times divided
by the speed, from its start (s), with prompts synthesised so that shared hash blocks are
shared token for token (``load.synth``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from inferlab.config.bench import BenchConfig
from inferlab.config.pattern import Replay
from inferlab.errors import ConfigError, TokenizerError
from inferlab.load.synth import WordSource, fit_context, trace_prompts
from inferlab.load.traces import TraceRequest, read_trace, slice_trace
from inferlab.load.workload import Prompt

__all__ = ["ReplayPlan", "plan_replay", "read_traces"]


@dataclass(frozen=True)
class ReplayPlan:
    """Send offsets (s from the point's start) parallel to ``prompts``; ``warmup`` prompts of
    their own; ``refused``: requests beyond the model's context, not sent."""

    offsets: list[float]
    prompts: list[Prompt]
    warmup: list[Prompt]
    refused: int
    context: int | None


def read_traces(cfg: BenchConfig) -> dict[str, list[TraceRequest]]:
    """Every trace the sweep replays (file → its requests), each parsed whole; ConfigError
    naming file:line for the first malformed line."""
    out: dict[str, list[TraceRequest]] = {}
    for p in cfg.patterns():
        if isinstance(p, Replay) and p.trace is not None and p.trace not in out:
            out[p.trace] = read_trace(Path(p.trace), p.format)
    return out


def plan_replay(
    pattern: Replay,
    traces: dict[str, list[TraceRequest]],
    tokenizer: WordSource | None,
    *,
    warmup: int,
    seed: int,
    max_model_len: int | None,
) -> ReplayPlan:
    """The point's plan (see the module docstring); ConfigError when nothing is left to send,
    TokenizerError without a tokenizer."""
    if pattern.trace is None or pattern.trace not in traces:
        raise ConfigError(f"{pattern.label}: no trace file to replay (give --trace FILE)")
    if tokenizer is None:
        raise TokenizerError(
            "trace replay synthesises prompts of exact length: pass --tokenizer DIR "
            "(the server has no working /tokenize)"
        )
    reqs = slice_trace(
        traces[pattern.trace],
        start_s=pattern.start_s,
        end_s=pattern.end_s,
        limit=pattern.limit,
        where=pattern.trace,
    )
    kept, refused = fit_context(reqs, max_model_len)
    if not kept:
        raise ConfigError(
            f"{pattern.trace}: all {len(reqs)} requests of the slice exceed the model's context "
            f"({max_model_len} tokens, input + output); nothing to send"
        )
    t0 = kept[0].arrival_s
    return ReplayPlan(
        offsets=[(r.arrival_s - t0) / pattern.speed for r in kept],
        prompts=trace_prompts(kept, tokenizer, seed),
        warmup=trace_prompts(kept[:warmup], tokenizer, seed + 1) if warmup else [],
        refused=refused,
        context=max_model_len,
    )
