"""Load points read on the reference engine's model clock, with an injected client lag.

The seam (a clock) where verdicts and trust are made independent of the machine that measures:
``ModelClock`` gives each sweep against the reference engine a result sink, placed before the
store's, that clears the engine's ground truth as a point begins (``DELETE /truth``), reads it
back when it ends (``GET /truth``), re-times the point's records on the model clock
(``sim.clock``; a closed-loop point that was not interrupted also with its users' requests
back to back; a replay's requests sent at their scheduled times, ``late_ms`` after
them), puts the injected loop lag (ms, per load-point label; 0 elsewhere) in
place of the client's own, decides an adaptive point's stop again on the model clock
(``campaign.parts.clockstop``: the live sweep runs to its cap, ``ModelClock.live``), and derives
the point's summary, trust and warnings again (``load.point``). For the reference engine only;
what it removes is exactly what ``benchmarks/`` measures (the client's accuracy, trust under load).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from inferlab.campaign.parts.clockstop import live_config, replay_stop
from inferlab.config.bench import BenchConfig
from inferlab.errors import SimError
from inferlab.load.adaptive import BaselineRef
from inferlab.load.point import judge, summary_of
from inferlab.load.results import LoadPoint, PointResult
from inferlab.sim.clock import back_to_back, on_model_clock, on_schedule
from inferlab.stats.summary import describe

__all__ = ["ModelClock", "ModelClockSink"]


def _call(method: str, url: str) -> bytes:
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return bytes(r.read())
    except OSError as exc:
        raise SimError(
            f"{method} {url}: {exc} (the model clock needs the reference engine)"
        ) from exc


@dataclass(frozen=True)
class ModelClock:
    """Sweeps against the reference engine read on its model clock; ``lag_ms`` injects a
    client loop lag (ms) at the load points it names (``{"C=8": 2.0}``), 0 at the others, and
    ``late_ms`` a lateness of every send against the schedule at the replay points it names."""

    lag_ms: Mapping[str, float] = field(default_factory=dict)
    late_ms: Mapping[str, float] = field(default_factory=dict)

    def sink(
        self, url: str, cfg: BenchConfig, baselines: Mapping[str, BaselineRef] | None = None
    ) -> ModelClockSink:
        """The sink for one sweep of ``cfg`` against the engine at base URL ``url``;
        ``baselines``: the sequential A/B's reference points (label →), as the sweep's."""
        return ModelClockSink(url.rstrip("/"), cfg, self.lag_ms, self.late_ms, baselines)

    def live(
        self, cfg: BenchConfig, baselines: Mapping[str, BaselineRef] | None = None
    ) -> tuple[BenchConfig, dict[str, BaselineRef]]:
        """The config and baselines the live sweep runs with: adaptive points to their cap,
        their stop decided on the model clock by the sink (``campaign.parts.clockstop``)."""
        return live_config(cfg, baselines or {})


class ModelClockSink:
    """A result sink that re-times each point on the model clock (see the module docstring);
    ``retimed`` and ``kept`` count the records, over the sweep."""

    def __init__(
        self,
        url: str,
        cfg: BenchConfig,
        lag_ms: Mapping[str, float],
        late_ms: Mapping[str, float] | None = None,
        baselines: Mapping[str, BaselineRef] | None = None,
    ) -> None:
        self.url = url
        self.cfg = cfg
        self.baselines = dict(baselines or {})
        self.lag_ms = dict(lag_ms)
        self.late_ms = dict(late_ms or {})
        self.retimed = 0
        self.kept = 0

    def start(self, meta: dict[str, Any]) -> None:
        pass

    def begin(self, point: LoadPoint, trial: int) -> None:
        _call("DELETE", self.url + "/truth")

    def point(self, res: PointResult) -> None:
        body = _call("GET", self.url + "/truth").decode()
        truth = [json.loads(line) for line in body.splitlines() if line.strip()]
        done = on_model_clock(res.records, truth)
        pattern = res.point.pattern
        if pattern.loop_concurrency is not None and not res.interrupted:
            back_to_back(res.records, pattern.loop_concurrency)  # an adaptive point's too
        if pattern.lateness.on_schedule:
            on_schedule(res.records, int(self.late_ms.get(res.point.label, 0.0) * 1e6))
        self.retimed += done.retimed
        self.kept += done.kept
        replay_stop(self.cfg, res, self.baselines.get(res.point.label))
        res.summary = summary_of(self.cfg, res.records, res.stop)
        lag = self.lag_ms.get(res.point.label, 0.0)
        res.loop_lag_ms = describe([lag] * max(1, res.loop_lag_ms.count))
        judge(self.cfg, res)

    def close(self) -> None:
        pass
