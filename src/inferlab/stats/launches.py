"""Each launch's value of a metric with its own standard error, and the launch-to-launch spread
of a campaign's load points from the configs launched there more than once (``stats.spread``
has the model). A launch is one pass of a config at a point: its trials share a server, and
which runs form one is the store's to say (``store.launches``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from inferlab.stats.groups import TrialGroup, batch_rates_of, group_value, per_request
from inferlab.stats.metrics import PerRequest, PerTrial
from inferlab.stats.metrics import metric as metric_row
from inferlab.stats.spread import LaunchSpread, launch_spread

__all__ = ["launch_estimate", "spreads"]


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


def spreads(
    launches: Mapping[str, Sequence[Sequence[TrialGroup]]], metrics: Sequence[str]
) -> dict[tuple[str, str], LaunchSpread]:
    """(label, metric) → the launch-to-launch spread there, from ``launches``: label → each
    config's launches there (one group each). A point where no config was launched twice has
    none."""
    out: dict[tuple[str, str], LaunchSpread] = {}
    for label, configs in launches.items():
        for m in metrics:
            per = [[e for g in groups if (e := launch_estimate(m, g))] for groups in configs]
            spread = launch_spread(per)
            if spread is not None:
                out[(label, m)] = spread
    return out
