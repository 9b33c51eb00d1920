"""``[verify] eval = {...}``: the task-score gate run by EleutherAI's lm-evaluation-harness
against each config's OpenAI endpoint (docs/verify.md, "lm-eval")."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["EvalGate"]


class EvalGate(BaseModel):
    """``eval = { harness = "lm-eval", tasks = ["gsm8k"], limit = 200 }``: the reference config
    is scored once by the harness; every other config passes when the ``level`` paired bootstrap
    interval of its score difference (config − reference, over the same documents) has its low
    end at or above ``−max_drop`` (score units: the metric's, 0..1 for exact_match).

    ``metric``/``filter``: which of each sample's scores is compared (default: the first
    metric the harness lists, under the task's first filter). ``include_path``: a folder of
    task YAMLs (the harness's ``--include_path``; relative to the working directory).
    ``python``: a Python that has ``lm_eval`` (default: inferlab's own when it has it, else the
    cached environment ``python -m inferlab.envs.lmeval`` builds). ``tokenizer``: a local
    tokenizer folder for loglikelihood tasks (``tokenizer_backend=huggingface``); without one,
    only ``generate_until`` tasks run (``tokenizer_backend=None``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    harness: Literal["lm-eval"] = "lm-eval"
    tasks: list[str] = Field(min_length=1)
    limit: int | None = Field(default=None, ge=1)  # documents per task; None: all
    max_drop: float = Field(default=0.02, ge=0.0, le=1.0)
    level: float = Field(default=0.95, gt=0.5, lt=1.0)
    include_path: str | None = None
    #: index the harness's own tasks too (false: only ``include_path``'s, about 20 s sooner)
    include_defaults: bool = True
    num_fewshot: int | None = Field(default=None, ge=0)
    metric: str | None = None
    filter: str | None = None
    api: Literal["completions", "chat"] = "completions"
    tokenizer: str | None = None
    python: str | None = None
    concurrency: int = Field(default=1, ge=1, le=256)  # the harness's num_concurrent
    timeout_s: float = Field(default=3600.0, gt=0.0)  # the whole harness run, seconds
    seed: int = 0  # the harness's seeds and the bootstrap's
