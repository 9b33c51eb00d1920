"""The search space: each ``[[search.dim]]`` as an Optuna distribution, and a trial's values as
a stored config (a name built from its values, the baseline extended by them)."""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from inferlab.campaign.parts.plan import baseline_of
from inferlab.config.campaign import ConfigSpec
from inferlab.config.search import SearchDim, SearchSection
from inferlab.errors import ConfigError

__all__ = ["Params", "Space", "check_resumed", "distribution", "ordinal", "value_text"]

#: a trial's values, by dimension key (``--max-num-seqs``, ``env NCCL_PROTO``, ``files moe``)
Params = Mapping[str, Any]

#: a files dimension's value that means "the engine's default configs" (nothing installed)
UNTUNED = "none"


def ordinal(dim: SearchDim) -> bool:
    """Whether a listed dimension's values are numbers in ascending order: the sampler then
    sees their rank (an integer), so that neighbouring values inform each other."""
    vals = dim.values
    if vals is None or len(vals) < 3:
        return False
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in vals):
        return False
    return all(float(a) < float(b) for a, b in itertools.pairwise(vals))


def distribution(dim: SearchDim) -> BaseDistribution:
    """The Optuna distribution of one dimension (an ordinal one: the rank of its value)."""
    if dim.presence:
        return CategoricalDistribution([False, True])
    if dim.values is not None and ordinal(dim):
        return IntDistribution(0, len(dim.values) - 1)
    if dim.values is not None:
        return CategoricalDistribution(list(dim.values))
    assert dim.low is not None and dim.high is not None
    if dim.integer:
        return IntDistribution(int(dim.low), int(dim.high), log=dim.log)
    return FloatDistribution(dim.low, dim.high, log=dim.log)


def value_text(value: Any) -> str:
    """A value as its part of a trial's name: ``32``, ``simple``, ``on``/``off``, ``0.85``,
    ``n1`` for −1."""
    if value is True:
        return "on"
    if value is False:
        return "off"
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    text = re.sub(r"^-(?=[0-9.])", "n", text.strip())  # -1 → n1, not 1
    text = re.sub(r"[^A-Za-z0-9.+]+", "_", text.lower()).strip("_.")
    return text or "x"


def _rounded(dim: SearchDim, value: Any) -> Any:
    if isinstance(value, float) and not dim.integer and math.isfinite(value):
        return float(f"{value:.4g}")  # what the name says is what is launched
    return value


@dataclass(frozen=True)
class Space:
    """The dimensions of a search, in file order, over the campaign's baseline config."""

    dims: tuple[SearchDim, ...]
    baseline: ConfigSpec

    @classmethod
    def of(cls, section: SearchSection, configs: Sequence[ConfigSpec]) -> Space:
        if not configs:
            raise ConfigError("[search]: the campaign has no config to search from")
        return cls(tuple(section.dim), baseline_of(configs))

    def distributions(self) -> dict[str, BaseDistribution]:
        return {d.key: distribution(d) for d in self.dims}

    def encode(self, params: Params) -> dict[str, Any]:
        """A trial's values as the sampler sees them (an ordinal dimension: the rank)."""
        out = dict(params)
        for d in self.dims:
            if d.values is not None and ordinal(d) and d.key in out:
                out[d.key] = list(d.values).index(out[d.key])
        return out

    def decode(self, sampled: Params) -> dict[str, Any]:
        """The sampler's values as the trial's (an ordinal dimension's rank → its value)."""
        out = dict(sampled)
        for d in self.dims:
            if d.values is not None and ordinal(d) and d.key in out:
                out[d.key] = d.values[int(out[d.key])]
        return out

    def changed(self, params: Params) -> str | None:
        """How a stored trial's values do not fit this space, naming the dimension (None: they
        fit): one searched then and not now, one new, or a value this dimension no longer
        holds."""
        keys = {d.key for d in self.dims}
        gone = [k for k in params if k not in keys]
        if gone:
            return f"dimension {gone[0]!r} was searched and is not now"
        for d in self.dims:
            if d.key not in params:
                return f"dimension {d.key!r} is new"
            v = params[d.key]
            if d.presence and not isinstance(v, bool):
                return f"dimension {d.key!r}: the stored value {v!r} is not a presence"
            if d.values is not None and repr(v) not in map(repr, d.values):
                return f"dimension {d.key!r}: the stored value {v!r} is not among {d.values}"
            if d.low is not None and d.high is not None:
                num = isinstance(v, int | float) and not isinstance(v, bool)
                if not num or not d.low <= float(v) <= d.high:
                    return (
                        f"dimension {d.key!r}: the stored value {v!r} is outside "
                        f"[{d.low:g}, {d.high:g}]"
                    )
        return None

    def size(self) -> float:
        """How many distinct trials the space holds (``inf`` with a float range)."""
        n = 1.0
        for d in self.dims:
            dist = distribution(d)
            if isinstance(dist, CategoricalDistribution):
                n *= len(dist.choices)
            elif isinstance(dist, IntDistribution):
                n *= dist.high - dist.low + 1
            else:
                return math.inf
        return n

    def grid(self) -> dict[str, list[Any]]:
        """Every value of every dimension, for a grid search; refused with a float range."""
        out: dict[str, list[Any]] = {}
        for d in self.dims:
            dist = distribution(d)
            if d.values is not None:
                out[d.key] = list(d.values)
            elif isinstance(dist, CategoricalDistribution):
                out[d.key] = list(dist.choices)
            elif isinstance(dist, IntDistribution) and dist.high - dist.low < 4096:
                out[d.key] = list(range(dist.low, dist.high + 1))
            else:
                raise ConfigError(f"[search] dim {d.key}: a grid needs listed values")
        return out

    def grid_points(self, seed: int) -> list[dict[str, Any]]:
        """Every point of the grid, in an order shuffled by ``seed`` (a grid search's walk)."""
        grid = self.grid()
        points = [
            dict(zip(grid, combo, strict=True)) for combo in itertools.product(*grid.values())
        ]
        random.Random(seed).shuffle(points)
        return points

    def name(self, index: int, params: Params) -> str:
        """``t03-mns32-mnbt2048``: the trial's number and each dimension's value."""
        parts = [f"t{index:02d}"]
        parts += [f"{d.label}{value_text(params[d.key])}" for d in self.dims if d.key in params]
        return "-".join(parts)

    def config(self, index: int, params: Params) -> ConfigSpec:
        """The trial as a campaign config: the baseline extended by the trial's values."""
        missing = [d.key for d in self.dims if d.key not in params]
        if missing:
            raise ConfigError(f"[search]: trial {index} has no value for {', '.join(missing)}")
        flags: dict[str, str | int | float | bool] = {}
        env: dict[str, str] = {}
        files: dict[str, str] = {}
        for d in self.dims:
            v = _rounded(d, params[d.key])
            if d.flag is not None:
                flags[d.flag] = d.launched(v)  # True: the bare flag; False: removed
            elif d.env is not None:
                env[d.env] = str(v)
            elif d.files is not None and str(v) != UNTUNED:
                files[d.files] = str(v)
        return ConfigSpec.model_validate(
            {
                "name": self.name(index, params),
                "extends": self.baseline.name,
                "set": flags,
                "env": env,
                "files": files,
                "lossless": None if all(d.lossless for d in self.dims) else False,
                "description": "optimize trial: "
                + ", ".join(f"{d.key}={params[d.key]}" for d in self.dims),
            }
        )


def check_resumed(path: Any, space: Space, stored: Sequence[tuple[str, Params]]) -> None:
    """A resumed search's stored trials (name, values) must fit today's ``[search]`` (they are
    replayed into the sampler): refused, naming the dimension and what to do, when one does
    not (``path``: the campaign file)."""
    for name, params in stored:
        what = space.changed(params)
        if what is not None:
            raise ConfigError(
                f"{path}: search.dim: --resume: {what} (trial {name}): the stored trials were "
                "measured on another space. Restore [search] as it was to resume, or search "
                "afresh under another [campaign] name (or another --db)"
            )
