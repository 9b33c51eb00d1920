"""``lossy = {...}``: the distribution-agreement gate's limits and sampling (docs/verify.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["LossyGate"]


class LossyGate(BaseModel):
    """``lossy = { max_kl = 0.01, min_top1 = 0.98 }``: the distribution-agreement gate
    (docs/verify.md). A config passes when its KL interval's high end is at most ``max_kl``
    (nats per position) and its top-1 interval's low end at least ``min_top1``. Prompts: a
    first look of ``prompts``, doubled until each interval's width is at most ``width`` times
    its limit's margin (``max_kl``; ``1 − min_top1``) or ``max_prompts`` are scored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_kl: float = Field(default=0.01, ge=0.0)
    min_top1: float = Field(default=0.98, ge=0.0, le=1.0)
    prompts: int = Field(default=16, ge=2)
    max_prompts: int = Field(default=64, ge=2)
    tokens: int = Field(default=32, ge=1)
    top_k: int = Field(default=20, ge=1, le=20)
    width: float = Field(default=0.5, gt=0.0)
    level: float = Field(default=0.95, gt=0.5, lt=1.0)
    seed: int = 0

    @model_validator(mode="after")
    def _looks(self) -> LossyGate:
        if self.max_prompts < self.prompts:
            raise ValueError(f"max_prompts ({self.max_prompts}) < prompts ({self.prompts})")
        return self
