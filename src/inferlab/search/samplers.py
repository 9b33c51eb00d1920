"""The Optuna sampler of a search, by ``[search] sampler``: ``tpe`` (multivariate TPE, mixed
and categorical spaces), ``gp`` (Optuna's GPSampler: every dimension numeric, and its
dependencies — torch — importable), ``random``, ``grid`` (the grid's points enqueued in a
seeded order, a random sampler under them) and ``auto`` (GP when it can run, TPE otherwise,
with the reason said). One builder per kind in ``BUILDERS``."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import optuna
from optuna.distributions import FloatDistribution, IntDistribution
from optuna.samplers import BaseSampler, GPSampler, RandomSampler, TPESampler

from inferlab.config.search import SearchSection
from inferlab.errors import ConfigError

from .space import Space, distribution

__all__ = ["BUILDERS", "Chosen", "choose", "gp_missing", "non_numeric"]

#: the modules Optuna's GPSampler imports when it first samples
GP_MODULES = ("torch", "scipy")


@dataclass(frozen=True)
class Chosen:
    """The sampler, how many of its first trials are random (its start-up), its kind and,
    for ``auto``, why that kind."""

    sampler: BaseSampler
    startup: int
    kind: str
    why: str = ""

    @property
    def label(self) -> str:
        """``TPE``, ``GP``, ``random sampler`` — with ``auto``'s reason."""
        name = {"tpe": "TPE", "gp": "GP"}.get(self.kind, f"{self.kind} sampler")
        return f"{name} (auto: {self.why})" if self.why else name

    def chosen_by(self, n: int) -> str:
        """Why trial ``n + 1`` was proposed: the start-up's random draw or the model."""
        if self.kind not in ("tpe", "gp"):
            return f"{self.kind} sampler"
        head = self.kind.upper()
        if n < self.startup:
            return f"{head} start-up (random, {n + 1} of {self.startup})"
        model = "multivariate, " if self.kind == "tpe" else ""
        return f"{head} ({model}from {n} trials)"


def gp_missing() -> str | None:
    """Why GPSampler cannot run here (a dependency that does not import), or None."""
    for mod in GP_MODULES:
        try:
            importlib.import_module(mod)
        except ImportError:
            return f"Optuna's GPSampler needs {mod}, which does not import in this Python"
    return None


def non_numeric(space: Space) -> str | None:
    """The first dimension that is not numeric (a flag's presence, listed strings), or None."""
    for d in space.dims:
        if not isinstance(distribution(d), IntDistribution | FloatDistribution):
            return d.key
    return None


def _startup(section: SearchSection) -> int:
    return max(2, min(5, section.budget_trials // 3))


def _tpe(section: SearchSection, parallel: int = 1) -> tuple[BaseSampler, int]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        tpe = TPESampler(
            seed=section.seed,
            n_startup_trials=_startup(section),
            multivariate=True,
            constant_liar=parallel > 1,  # the batch's pending trials are not proposed again
        )
    return tpe, _startup(section)


def _gp(section: SearchSection, parallel: int = 1) -> tuple[BaseSampler, int]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        gp = GPSampler(seed=section.seed, n_startup_trials=_startup(section))
    return gp, _startup(section)


def _random(section: SearchSection, parallel: int = 1) -> tuple[BaseSampler, int]:
    return RandomSampler(seed=section.seed), 0


#: sampler kind → its builder from the section and the trials measured at once (``grid``: a
#: random sampler under the enqueued grid)
BUILDERS: dict[str, Callable[[SearchSection, int], tuple[BaseSampler, int]]] = {
    "tpe": _tpe,
    "gp": _gp,
    "random": _random,
    "grid": _random,
}


def resolve(section: SearchSection, space: Space) -> tuple[str, str]:
    """The sampler kind to use and, for ``auto``, why; ``ConfigError`` for a ``gp`` that
    cannot run (a categorical dimension, a dependency missing)."""
    kind = section.sampler
    if kind not in ("gp", "auto"):
        return kind, ""
    other, missing = non_numeric(space), gp_missing()
    if kind == "gp":
        if other is not None:
            raise ConfigError(
                f"search.sampler: 'gp' is for numeric dimensions, and {other} is not; use "
                "'tpe' or 'auto'"
            )
        if missing is not None:
            raise ConfigError(f"search.sampler: 'gp': {missing}; use 'tpe' or 'auto'")
        return "gp", ""
    if other is not None:
        return "tpe", f"{other} is not numeric: TPE"
    if missing is not None:
        return "tpe", f"every dimension is numeric, but {missing}: TPE"
    return "gp", "every dimension is numeric and GPSampler's dependencies import: GP"


def choose(section: SearchSection, space: Space, parallel: int = 1) -> Chosen:
    """The search's sampler (see the module docstring); ``parallel``: trials asked at once
    (TPE then lies about the pending ones, its ``constant_liar``)."""
    kind, why = resolve(section, space)
    sampler, startup = BUILDERS[kind](section, parallel)
    return Chosen(sampler, startup, kind, why)
