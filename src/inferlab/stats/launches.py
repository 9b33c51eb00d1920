"""Each launch's value of a metric with its own standard error, and the launch-to-launch spread
of a campaign's load points from the configs launched there more than once (``stats.spread``
has the model). A launch is one pass of a config at a point: its trials share a server, and
which runs form one is the store's to say (``store.launches``)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from inferlab.stats.groups import TrialGroup, batch_rates_of, group_value, per_request
from inferlab.stats.metrics import PerRequest, PerTrial
from inferlab.stats.metrics import metric as metric_row
from inferlab.stats.spread import LaunchSpread, launch_spread

__all__ = ["MIN_DF", "Launches", "launch_estimate", "launches_of"]


def launch_estimate(metric: str, g: TrialGroup) -> tuple[float, float] | None:
    """One launch's (log of ``metric``'s value, the standard error of that log), by the same
    estimator a one-launch A/B's interval uses, so that what the spread subtracts is what
    the A/B counts: output throughput's from its batch rates as independent
    (``throughput_ratio_batches``), or its trials' spread; a median's from an independent
    bootstrap of its requests (``sample_ratio``). Where that estimator misses error (batch
    rates or requests that are correlated in time) the spread holds it: wider, never narrower.
    A metric with no standard error of its own (another statistic, a per-trial count) gets 0,
    for the same reason. None when the value is not positive."""
    value = group_value(metric, g)
    if not (value > 0 and math.isfinite(value)):
        return None
    s = metric_row(metric).sampler
    se = 0.0
    if isinstance(s, PerTrial) and s.batch_rates and len(g.runs) == 1:
        rates = np.asarray(batch_rates_of(g.runs[0], g.records[0]), dtype=float)
        if rates.size >= 2 and rates.mean() > 0:
            se = float(rates.std(ddof=1) / rates.mean() / math.sqrt(rates.size))
    elif isinstance(s, PerTrial) and len(g.runs) >= 2:
        vals = [float(r.summary.get(metric) or 0.0) for r in g.runs]
        m = sum(vals) / len(vals)
        var = sum((v - m) ** 2 for v in vals) / (len(vals) - 1)
        se = math.sqrt(var / len(vals)) / m if m > 0 else 0.0
    elif isinstance(s, PerRequest) and s.statistic == "median":
        xs = np.asarray([x for recs in g.records for x in per_request(metric, recs)], dtype=float)
        if xs.size >= 2 and np.all(xs > 0):
            rng = np.random.default_rng(0)
            meds = np.median(xs[rng.integers(0, xs.size, (_RESAMPLES, xs.size))], axis=1)
            se = float(np.std(np.log(meds), ddof=1))
    return math.log(value), se if math.isfinite(se) else 0.0


#: bootstrap resamples of one launch's median
_RESAMPLES = 500


#: the least degrees of freedom a spread is counted with: one difference of two launches
#: (t quantile 12.7) is no estimate of a spread, and the recheck's A-B-A rule judges that case
MIN_DF = 2


@dataclass
class Launches:
    """Each config's launches at each load point, with each metric's ``launch_estimate``,
    and the run ids of each launch (a spread can leave out the launches it is judging)."""

    #: (label, metric) → each config's launches: (run ids, (log value, se))
    estimates: dict[tuple[str, str], list[list[tuple[frozenset[int], tuple[float, float]]]]]

    def spread(self, label: str, metric: str, without: Iterable[int] = ()) -> LaunchSpread | None:
        """The pooled spread at ``label`` of ``metric`` (``stats.spread``) from the launches
        with none of the runs ``without`` (an A/A pair leaves itself out: its own difference
        is what it tests); None below ``MIN_DF``."""
        skip = frozenset(without)
        configs = self.estimates.get((label, metric), [])
        got = launch_spread([[e for ids, e in c if not ids & skip] for c in configs])
        return got if got is not None and got.df >= MIN_DF else None

    def at(self, label: str, without: Iterable[int] = ()) -> dict[str, LaunchSpread]:
        """Metric → its spread at ``label`` (those that have one)."""
        ids = frozenset(without)
        out = {m: self.spread(lb, m, ids) for lb, m in self.estimates if lb == label}
        return {m: x for m, x in out.items() if x is not None}

    def all(self) -> dict[tuple[str, str], LaunchSpread]:
        """(label, metric) → every spread there is."""
        out = {k: self.spread(*k) for k in self.estimates}
        return {k: x for k, x in out.items() if x is not None}


def launches_of(
    launches: Mapping[str, Sequence[Sequence[TrialGroup]]], metrics: Sequence[str]
) -> Launches:
    """The estimates of ``metrics`` from ``launches``: label → each config's launches there
    (one group each, as ``store.launches.launch_groups`` reads them)."""
    est: dict[tuple[str, str], list[list[tuple[frozenset[int], tuple[float, float]]]]] = {}
    for label, configs in launches.items():
        for m in metrics:
            est[(label, m)] = [
                [
                    (frozenset(r.id for r in g.runs), e)
                    for g in groups
                    if (e := launch_estimate(m, g))
                ]
                for groups in configs
            ]
    return Launches(est)
