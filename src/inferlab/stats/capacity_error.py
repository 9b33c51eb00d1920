"""What a capacity bracket's confidence covers: an error budget over the probes of one
bisection, a launch term, and each probe's own bootstrap seed.

- **Error budget** (Bonferroni; e.g. Dunn 1961, "Multiple comparisons among means"): a
  bracket ``[holds_at, fails_at − 1]`` is wrong when any one probe's verdict is (a false
  *holds* above the capacity, or a false *fails* at or below it). A search makes at most
  ``probes`` verdicts (its budget), each over ``limits`` percentile limits, so deciding each
  limit with a one-sided error of ``α / (probes · limits)`` (a two-sided interval at level
  ``1 − 2α / (probes · limits)``) bounds the chance that the bracket misses by ``α``, whatever
  the dependence between the probes (the union bound needs none).
- **Launch term**: a probe reads one launch of the server; another launch reads its latencies
  ``e^u`` times higher or lower, ``u`` the launch's log offset (``stats.spread``: sd ``τ``
  estimated with ``df`` degrees of freedom). With a known spread every bootstrap replicate of
  a probe's percentiles is multiplied by ``e^u``, ``u`` drawn as ``τ · t_df`` (the predictive
  distribution of a new launch's offset), one draw per replicate shared by every probe of the
  search (they read the same launch): the bracket and the isotonic interval are then of the
  config's capacity. Without one, they are of this launch's capacity ("one launch").
- **Seeds**: each probe's bootstrap seed is derived from the search's seed, the ladder and the
  probe's index (``probe_seed``), distinct across probes and searches, and recorded.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from inferlab.stats.spread import LaunchSpread

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["ONE_LAUNCH", "ErrorBudget", "LaunchTerm", "launch_offsets", "probe_seed"]


def probe_seed(seed: int, unit: str, step: float, index: int, what: str = "probe") -> int:
    """A reproducible 63-bit seed of probe ``index`` on the ladder (``unit``, ``step``) of a
    search seeded ``seed`` (blake2b of the four; ``what`` separates uses)."""
    key = f"{what}:{seed}:{unit}:{step!r}:{index}".encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") >> 1


@dataclass(frozen=True)
class ErrorBudget:
    """A family confidence ``level`` for the whole bisection, spent evenly over at most
    ``probes`` probes of ``limits`` percentile limits each (Bonferroni)."""

    level: float = 0.95
    probes: int = 12
    limits: int = 1

    def __post_init__(self) -> None:
        if not 0 < self.level < 1:
            raise ValueError(f"level must be in (0, 1), got {self.level}")
        if self.probes < 1 or self.limits < 1:
            raise ValueError(f"probes and limits must be ≥ 1, got {self.probes}, {self.limits}")

    @property
    def one_sided(self) -> float:
        """Each limit's one-sided error at each probe: α / (probes · limits)."""
        return (1.0 - self.level) / (self.probes * self.limits)

    @property
    def probe_level(self) -> float:
        """The two-sided level of each limit's interval at each probe."""
        return 1.0 - 2.0 * self.one_sided

    @property
    def resamples(self) -> int:
        """Bootstrap resamples that leave ≥ 20 replicates beyond each tail's quantile (≥ 1000)."""
        return max(1000, math.ceil(20.0 / self.one_sided))

    def describe(self) -> str:
        """``95% for the whole bisection (Bonferroni: each of ≤ 12 probes at 99.58%)``."""
        per = f"{self.probe_level:.2%}"
        lim = f" × {self.limits} limits" if self.limits > 1 else ""
        return (
            f"{self.level:.0%} for the whole bisection "
            f"(Bonferroni: ≤ {self.probes} probes{lim}, each at {per})"
        )

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "level": self.level,
            "probes": self.probes,
            "limits": self.limits,
            "probe_level": self.probe_level,
            "method": "bonferroni",
        }


@dataclass(frozen=True)
class LaunchTerm:
    """A known launch-to-launch spread of the limited metric (``stats.spread``) and where it
    came from (``stored for sim/tiny on host-a``, ``--launch-spread``)."""

    spread: LaunchSpread
    source: str

    def describe(self) -> str:
        return f"across launches: {self.spread.describe()}, from {self.source}"

    def to_json(self) -> dict[str, JsonValue]:
        s = self.spread
        return {"tau": s.tau, "df": s.df, "launches": s.launches, "source": self.source}


#: what a capacity says of its launches when no spread is known
ONE_LAUNCH = "one launch: the capacity of this server's launch (no launch-to-launch spread known)"


def launch_offsets(term: LaunchTerm | None, resamples: int, seed: int) -> np.ndarray | None:
    """``resamples`` draws of a launch's log offset, ``τ · t_df`` (None without a term)."""
    if term is None:
        return None
    rng = np.random.default_rng(seed)
    s = term.spread
    draws = rng.standard_t(s.df, resamples) if s.df > 0 else rng.standard_normal(resamples)
    return np.asarray(s.tau * draws, dtype=float)
