"""``lossy = {...}``: the distribution-agreement gate's limits and sampling (docs/verify.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["LossyGate"]


class LossyGate(BaseModel):
    """``lossy = { max_kl = 0.01, min_top1 = 0.98 }``: the distribution-agreement gate
    (docs/verify.md). A config passes when the high end of its KL upper bound's interval is at
    most ``max_kl`` (nats per position) and its top-1 interval's low end at least ``min_top1``.
    Prompts: a first look of ``prompts``, doubled until each interval's width is at most
    ``width`` times its limit's margin (``max_kl``; ``1 − min_top1``), a limit is clearly
    missed, or ``max_prompts`` are scored; each look at the Bonferroni level over the looks.
    ``top_k``: logprobs asked per position (past 20, vLLM needs ``--max-logprobs``; the
    vocabulary makes the KL exact); ``log_floor``: the least logprob (nats) the KL's upper
    bound assumes the config gives any token."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_kl: float = Field(default=0.01, ge=0.0)
    min_top1: float = Field(default=0.98, ge=0.0, le=1.0)
    prompts: int = Field(default=16, ge=2)
    max_prompts: int = Field(default=64, ge=2)
    tokens: int = Field(default=32, ge=1)
    top_k: int = Field(default=20, ge=1, le=1_000_000)
    log_floor: float = Field(default=-30.0, lt=0.0)
    width: float = Field(default=0.5, gt=0.0)
    level: float = Field(default=0.95, gt=0.5, lt=1.0)
    seed: int = 0

    @model_validator(mode="after")
    def _looks(self) -> LossyGate:
        if self.max_prompts < self.prompts:
            raise ValueError(f"max_prompts ({self.max_prompts}) < prompts ({self.prompts})")
        return self
