"""The ``[search]`` section of a campaign: what ``inferlab optimize`` searches and how long.

Each ``[[search.dim]]`` is one lever: a flag (its values, a numeric range, or its presence),
an environment variable, or a kernel-config ``files`` kind (a directory per value, ``"none"``
for the untuned default). The baseline is the campaign's first config; every trial is that
config with one value per dimension.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "SEARCH_KIND",
    "STOPPED",
    "TRIAL_KIND",
    "Objective",
    "SearchDim",
    "SearchSection",
    "short_name",
]

#: the analysis kind each finished trial of ``inferlab optimize`` is stored as
TRIAL_KIND = "search-trial"
#: the analysis kind a search's summary is stored as when it stops (the report reads it)
SEARCH_KIND = "search"

#: why a search stopped, in words (the command's output and the report say it)
STOPPED = {
    "budget_trials": "the trial budget is spent",
    "budget_minutes": "the time budget is spent",
    "patience": "the last trials in a row found nothing better",
    "exhausted": "every point of the space was tried or ruled out by a refusal",
    "repeats": "the sampler only repeated points already tried",
    "no_dimension": "no dimension is left: every bound is below the minimum effect",
    "bounds": "the bounds against the new incumbent say nothing is left",
}

#: what the search maximises or minimises, read at ``at`` (capacity: over the sweep)
Objective = Literal["output_tok_s", "tpot_ms", "goodput", "capacity"]

#: a value a dimension can take (TOML scalars)
Value = str | int | float | bool


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def short_name(key: str) -> str:
    """The initials of a flag or variable, for trial names: ``--max-num-seqs`` → ``mns``,
    ``NCCL_PROTO`` → ``np``."""
    words = [w for w in re.split(r"[-_.]+", key.lower()) if w]
    return "".join(w[0] for w in words) or "x"


class SearchDim(_Closed):
    """One searched lever: exactly one of ``flag``, ``env``, ``files``; for a flag, exactly one
    of ``values``, ``low``/``high`` (a numeric range; ``log`` for a log scale; integers when
    both ends are) or ``presence = true`` (the flag given or not)."""

    flag: str | None = None
    env: str | None = None
    files: Literal["fp8_gemm", "moe"] | None = None
    values: list[Value] | None = None
    low: float | None = None
    high: float | None = None
    log: bool = False
    presence: bool = False
    #: False: a value may change the model's outputs (``--kv-cache-dtype``, ``--dtype``, a
    #: quantization): the trials are gated by ``[verify] lossy`` against the baseline, not by
    #: greedy equivalence
    lossless: bool = True
    #: the dimension's part of a trial's name (default: the flag's initials)
    short: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9]*$")
    #: a flag's value built from the dimension's: ``{value}`` replaced by it (a JSON flag:
    #: ``--speculative-config``); the value ``false`` leaves the flag out
    template: str | None = None

    @field_validator("values")
    @classmethod
    def _some(cls, v: list[Value] | None) -> list[Value] | None:
        if v is not None and not v:
            raise ValueError("no values: an empty dimension has nothing to search")
        return v

    @model_validator(mode="after")
    def _one_kind(self) -> SearchDim:  # noqa: C901  one check per kind's fields, in turn
        kinds = [k for k in ("flag", "env", "files") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError("give exactly one of flag, env, files")
        if self.flag is not None and not self.flag.startswith("-"):
            raise ValueError(f"flag {self.flag!r}: a flag starts with '-'")
        ranged = self.low is not None or self.high is not None
        forms = sum([self.values is not None, ranged, self.presence])
        if forms != 1:
            raise ValueError("give exactly one of values, low/high, presence = true")
        if self.presence and self.flag is None:
            raise ValueError("presence = true is for a flag")
        if ranged:
            if self.flag is None:
                raise ValueError("low/high is for a flag")
            if self.low is None or self.high is None:
                raise ValueError("a range needs both low and high")
            if not self.low < self.high:
                raise ValueError(
                    f"empty range: low = {self.low:g} is not below high = {self.high:g}"
                )
            if self.log and self.low <= 0:
                raise ValueError("log = true needs low > 0")
        if self.values is not None and len(set(map(repr, self.values))) != len(self.values):
            raise ValueError("values repeat")
        if self.template is not None:
            if self.flag is None or self.presence:
                raise ValueError("template is for a flag with values or a range")
            if "{value}" not in self.template:
                raise ValueError(f"template {self.template!r} has no {{value}} to fill")
        return self

    def launched(self, value: Value) -> Value:
        """The flag's value a trial launches with: ``template`` filled (``false``: the flag
        left out), else the value itself."""
        if self.template is None or value is False:
            return value
        text = "true" if value is True else str(value)
        return self.template.replace("{value}", text)

    @property
    def key(self) -> str:
        """What the dimension sets: ``--max-num-seqs``, ``env NCCL_PROTO``, ``files fp8_gemm``."""
        if self.flag is not None:
            return self.flag
        if self.env is not None:
            return f"env {self.env}"
        return f"files {self.files}"

    @property
    def label(self) -> str:
        """Its part of a trial's name."""
        if self.short:
            return self.short
        return short_name(self.flag or self.env or f"files-{self.files}")

    @property
    def integer(self) -> bool:
        return (
            self.low is not None
            and self.high is not None
            and float(self.low).is_integer()
            and float(self.high).is_integer()
        )


class SearchSection(_Closed):
    """``inferlab optimize``: the objective, where it is read, the budget and the stop rules."""

    objective: Objective = "output_tok_s"
    #: the load point the objective is read at ("C=8"); not for capacity
    at: str | None = Field(default=None, pattern=r"^(C=\d+|rate=[0-9.]+/s)$")
    budget_trials: int = Field(default=12, ge=1, le=1000)
    budget_minutes: float | None = Field(default=None, gt=0)
    #: a dimension whose Amdahl bound is below this is pruned; the A/B's minimum effect too
    min_effect: float = Field(default=0.02, ge=0, lt=1)
    #: stop after this many trials in a row that did not beat the incumbent
    patience: int = Field(default=6, ge=1)
    #: tpe, gp (every dimension numeric; needs torch), auto (gp when it can run, else tpe),
    #: random, or grid (a seeded walk of every point)
    sampler: Literal["tpe", "gp", "auto", "random", "grid"] = "tpe"
    #: capacity: the highest concurrency a trial's bisection tries (it starts at ``at``, else
    #: at the campaign's first concurrency)
    capacity_up_to: int = Field(default=256, ge=1)
    #: capacity over open-loop request rate instead: the highest rate a trial's bisection
    #: tries (req/s), on a ladder ``capacity_rate_step`` apart (default: this / 32), from the
    #: campaign's first rate; each probe measures ``[load] requests`` (a count) or
    #: ``duration_s``
    capacity_rate_up_to: float | None = Field(default=None, gt=0)
    capacity_rate_step: float | None = Field(default=None, gt=0)
    #: ``optimize --ray``: trials measured at once (default: as many as the cluster holds)
    parallel: int | None = Field(default=None, ge=1, le=64)
    #: the winner's confirmation: this many fresh launches, half the baseline's and half the
    #: winner's, interleaved (baseline, winner, winner, baseline, ...; ``search.confirm``);
    #: 2 is one launch a side, decided only on a launch spread measured before (the
    #: campaign's repeated launches or the store's), else "undecided" and not recommended
    confirm_launches: int = Field(default=4, ge=2, le=32, multiple_of=2)
    seed: int = 0
    dim: list[SearchDim] = Field(min_length=1)

    @model_validator(mode="after")
    def _at(self) -> SearchSection:
        if self.objective != "capacity" and self.at is None:
            raise ValueError(f"objective {self.objective!r} needs at = 'C=N' (where it is read)")
        if self.capacity_rate_up_to is not None and self.objective != "capacity":
            raise ValueError("capacity_rate_up_to: only with objective = 'capacity'")
        if self.capacity_rate_step is not None and self.capacity_rate_up_to is None:
            raise ValueError("capacity_rate_step: only with capacity_rate_up_to")
        if self.capacity_rate_up_to is not None and self.at is not None:
            raise ValueError("capacity_rate_up_to: the bisection starts at [load] rate; give no at")
        keys = [d.key for d in self.dim]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise ValueError(f"dimension {dup[0]!r} is given twice")
        labels = [d.label for d in self.dim]
        clash = sorted({x for x in labels if labels.count(x) > 1})
        if clash:
            raise ValueError(
                f"two dimensions are both named {clash[0]!r} in trial names: set short"
            )
        return self
