"""The SIMULATED engine's continuous-batching timing model (pure: no clock, no I/O).

One decode loop serves every running sequence. A decode step over a batch of ``b`` sequences
costs::

    step(b) = fixed + per_seq × min(b, sat) + per_seq_over × max(0, b − sat)

(compute saturates at ``sat`` sequences: past it, each sequence costs ``per_seq_over``), plus
``prefill_per_token × prompt tokens`` of every request that joins the batch in that step (its
prefill yields its first token at the step's end), times ``eager_penalty`` when the batch is
larger than the biggest captured CUDA graph.

With speculative decoding (``spec``), each step drafts ``k`` tokens per sequence and verifies
``k + 1`` per sequence::

    step(b) = draft_fixed + draft_per_seq × b
              + fixed + per_token × min(T, sat_tokens) + per_token_over × max(0, T − sat_tokens)

with ``T = (k + 1) × b`` verified tokens; each sequence then emits ``1 + A`` tokens where ``A``
is the accepted prefix of its ``k`` drafts, each accepted with probability ``accept_prob``
(mean accept length ``1 + p + p² + … + p^k``).

Times are milliseconds of the simulated engine, before ``--time-scale``.
"""

from __future__ import annotations

import random
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MemoryModel",
    "SpecCosts",
    "SpecModel",
    "StepCosts",
    "StepModel",
    "accept_draw",
    "graph_capture_need",
    "mean_accept_length",
    "spec_step_ms",
    "step_ms",
]


#: a time of the simulated engine in ms, ≥ 0
_Ms = Annotated[float, Field(ge=0.0)]


class SpecCosts(BaseModel):
    """Speculative-decoding costs of a preset (the draft count comes from the levers)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    accept_prob: float = Field(ge=0.0, le=1.0, description="per-draft-token acceptance p")
    draft_fixed_ms: _Ms
    draft_per_seq_ms: _Ms
    verify_per_token_ms: _Ms
    verify_sat_tokens: float = Field(gt=0.0)
    verify_per_token_over_ms: _Ms


class SpecModel(SpecCosts):
    """Speculative decoding (EAGLE/MTP chain): ``k`` drafts per step, one verify pass."""

    draft_tokens: int = Field(ge=1, le=64, description="k: drafted tokens per sequence per step")


class StepCosts(BaseModel):
    """The decode-step and prefill costs (ms; ``saturation`` in sequences) of the formula above,
    as a preset states them and a configuration runs them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fixed_ms: _Ms
    per_seq_ms: _Ms
    saturation: float = Field(gt=0.0)
    per_seq_over_ms: _Ms
    prefill_per_token_ms: _Ms


class StepModel(StepCosts):
    """The timing parameters of one engine configuration (levers already applied)."""

    max_running: int = Field(ge=1)
    kv_tokens: int = Field(ge=1, description="KV-cache capacity in tokens")
    cuda_graph_max_bs: int = Field(ge=0, description="0: no CUDA graphs (every step eager)")
    eager_penalty: float = Field(default=1.0, ge=1.0)
    spec: SpecModel | None = None


class MemoryModel(BaseModel):
    """GPU memory as fractions of one GPU: what CUDA-graph capture needs outside the static pool.

    The static pool (``--mem-fraction-static``) holds weights and KV cache; capture needs
    ``reserve + graph_per_bs × max_bs × (k + 1) + spec_extra`` (``k + 1 = 1`` without spec) of
    what is left, ``1 − mem_fraction_static``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu_gib: float = Field(gt=0.0)
    weights_fraction: float = Field(gt=0.0, lt=1.0)
    kv_tokens_per_fraction: float = Field(gt=0.0)
    reserve_fraction: float = Field(ge=0.0, lt=1.0)
    graph_per_bs_fraction: float = Field(ge=0.0)
    spec_extra_fraction: float = Field(ge=0.0)


def _piecewise(x: float, per: float, sat: float, over: float) -> float:
    return per * min(x, sat) + over * max(0.0, x - sat)


def step_ms(m: StepModel, batch: int, prefill_tokens: int = 0) -> float:
    """Duration of one step with ``batch`` sequences decoding plus ``prefill_tokens`` joining.

    ``batch`` counts every sequence in the step, the joining ones included; a step with
    nothing to do costs 0.
    """
    if batch <= 0 and prefill_tokens <= 0:
        return 0.0
    spec = m.spec
    if spec is None:
        t = m.fixed_ms + _piecewise(batch, m.per_seq_ms, m.saturation, m.per_seq_over_ms)
    else:
        t = spec_step_ms(m, batch)
    t += m.prefill_per_token_ms * prefill_tokens
    if batch > m.cuda_graph_max_bs:
        t *= m.eager_penalty
    return t


def spec_step_ms(m: StepModel, batch: int) -> float:
    """Draft + verify cost of one speculative step over ``batch`` sequences (no prefill)."""
    spec = m.spec
    assert spec is not None
    tokens = (spec.draft_tokens + 1) * batch
    return (
        spec.draft_fixed_ms
        + spec.draft_per_seq_ms * batch
        + m.fixed_ms
        + _piecewise(
            tokens,
            spec.verify_per_token_ms,
            spec.verify_sat_tokens,
            spec.verify_per_token_over_ms,
        )
    )


def accept_draw(rng: random.Random, k: int, p: float) -> int:
    """Accepted prefix length of ``k`` drafts, each accepted with probability ``p``."""
    n = 0
    while n < k and rng.random() < p:
        n += 1
    return n


def mean_accept_length(k: int, p: float) -> float:
    """Expected tokens per sequence per speculative step: ``1 + p + … + p^k``."""
    return sum(p**i for i in range(k + 1))


def graph_capture_need(mem: MemoryModel, max_bs: int, verify_width: int, spec: bool) -> float:
    """Fraction of GPU memory CUDA-graph capture needs outside the static pool."""
    need = mem.reserve_fraction + mem.graph_per_bs_fraction * max_bs * verify_width
    return need + (mem.spec_extra_fraction if spec else 0.0)
